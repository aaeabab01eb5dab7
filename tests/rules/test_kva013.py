"""KVA013: prefill or decode pool with no partner in its deployment.

Qwen3.5-397B-A17B in configs/deployments/kubernetes/split-bad: prefill and decode in two
files with the same llm-d.ai/model label.
"""

from __future__ import annotations

from pathlib import Path

from tests.rules.harness import FALCON, SPLIT_BAD, audit, write


def test_file_mode_keeps_the_old_behaviour_and_reports_unpaired_pools() -> None:
    report = audit(SPLIT_BAD, pair_by="file")
    # nothing pairs within either file, so each half is a KVA013 finding, an
    # error because the other file holds a pool of the other role with the same
    # llm-d.ai/model label that could be its partner (was a non-blocking problem)
    assert [g.grouping.basis for g in report.groups] == ["file", "file"]
    assert sorted((f.rule, f.severity, f.pools[0]) for f in report.findings) == [
        ("KVA013", "error", "decode/ms-qwen35-llm-d-modelservice-decode"),
        ("KVA013", "error", "prefill/ms-qwen35-llm-d-modelservice-prefill"),
    ]
    assert all("could be its partner" in f.message for f in report.findings)
    assert report.problems == ()


def test_an_unevaluated_half_leaves_the_other_unpaired(tmp_path: Path) -> None:
    write(tmp_path, "p.yaml", f"model: {FALCON}\nname: pd\nprefill: {{args: --model $(M)}}\n")
    write(tmp_path, "d.yaml", f"model: {FALCON}\nname: pd\ndecode: {{tp: 1}}\n")
    report = audit(tmp_path)
    assert report.exit_code("error") == 3
    assert "unresolved variable(s) --model: $(M)" in report.unevaluated[0].message
    # the unpaired half is a KVA013 finding (was a non-blocking problem)
    assert [(f.rule, f.pools) for f in report.findings] == [("KVA013", ("decode/decode",))]
