"""kvalign audit: readers, formats and the exit-code contract (each rule: tests/rules/).

Block sizes quoted below come from the same arithmetic `kvalign matrix` prints (vLLM 0.33
per-rank alignment, golden-tested elsewhere): Nemotron 3 Nano 2096 / 1056 / 528 at TP 1 / 4 / 8;
Falcon-H1-0.5B 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8; Qwen3.5-397B 1056 / 528 at TP 4 / 8.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.audit import run_audit
from kvalign.cli import app
from kvalign.deploy import read_paths

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "deployments"
DATA = Path(__file__).resolve().parents[1] / "audit_data"
runner = CliRunner()

#: the golden answer for `kvalign audit configs/deployments/`: (file, rule, severity).
EXPECTED = {
    ("command-line/falcon-h1-bad.sh", "KVA001", "error"),  # 400 (TP 4) vs 800 (TP 1)
    ("command-line/falcon-h1-bad.sh", "KVA002", "error"),  # 800 / 400 = ratio 2
    ("command-line/falcon-h1-bad.sh", "KVA008", "error"),  # DS on decode only
    ("command-line/falcon-h1-bad.sh", "KVA009", "warning"),  # max-model-len 512 < 800
    ("dynamo/falcon-h1-graph-v1alpha1-bad.yaml", "KVA006", "error"),  # router 16 vs 800
    ("dynamo/qwen35-graph-v1beta1-bad.yaml", "KVA001", "error"),  # 528 vs 1056
    ("dynamo/qwen35-graph-v1beta1-bad.yaml", "KVA002", "error"),  # ratio 2
    ("dynamo/qwen35-graph-v1beta1-bad.yaml", "KVA006", "error"),  # frontend 16
    ("kserve/falcon-h1-llmisvc-bad.yaml", "KVA001", "error"),  # fp8 decode: 1584 vs 800
    ("kserve/falcon-h1-llmisvc-bad.yaml", "KVA003", "error"),  # 1584 % 800 != 0, gcd 16
    ("kserve/falcon-h1-llmisvc-bad.yaml", "KVA005", "error"),  # bfloat16 vs fp8_e4m3
    ("kubernetes/nemotron-deployments-bad.yaml", "KVA001", "error"),  # 1088 vs 576
    ("kubernetes/nemotron-deployments-bad.yaml", "KVA003", "error"),  # gcd 64, 17 units
    ("kubernetes/nemotron-deployments-bad.yaml", "KVA004", "warning"),  # 64 -> 1088 / 576
    ("kubernetes/nemotron-deployments-bad.yaml", "KVA006", "error"),  # router 64
    ("kvalign/nemotron-nano-bad.yaml", "KVA001", "error"),  # 528 vs 2096
    ("kvalign/nemotron-nano-bad.yaml", "KVA003", "error"),  # 2096/gcd 16 = 131 > 128 units
    ("llm-d/falcon-h1-modelservice-bad.yaml", "KVA001", "error"),  # 208 vs 800
    ("llm-d/falcon-h1-modelservice-bad.yaml", "KVA003", "error"),  # 800 % 208, 50 units
    ("llm-d/falcon-h1-modelservice-bad.yaml", "KVA007", "warning"),  # 256 % 800
    ("llm-d/qwen35-disaggregatedset-bad.yaml", "KVA003", "error"),  # 1056 % 544
    ("llm-d/qwen35-disaggregatedset-bad.yaml", "KVA005", "error"),  # ssm bf16 vs fp32
    # added with --pair-by (the entries above are unchanged): prefill.yaml and decode.yaml
    # of split-bad/ pair through their shared llm-d.ai/model label. Qwen3.5-397B at TP 8
    # (prefill) = 528 vs TP 16 (decode LeaderWorkerSet) = 272; findings sit on the decode pool.
    ("kubernetes/split-bad/decode.yaml", "KVA001", "error"),  # 528 vs 272
    ("kubernetes/split-bad/decode.yaml", "KVA003", "error"),  # 528 % 272 != 0, gcd 16
    ("kubernetes/split-bad/decode.yaml", "KVA008", "error"),  # DS on prefill only
}


def _audit(
    *paths: str | Path, stdin: str | None = None
) -> tuple[set[tuple[str, str, str]], object]:
    deployments, skipped = read_paths([str(p) for p in paths], stdin)
    report = run_audit(deployments, skipped=tuple(skipped))
    found = {(f.location.file, f.rule, f.severity) for f in report.findings}
    return found, report


def test_golden_examples_report_exactly_the_expected_findings() -> None:
    deployments, skipped = read_paths([str(EXAMPLES)])
    report = run_audit(deployments)
    found = {
        (str(Path(f.location.file).relative_to(EXAMPLES)), f.rule, f.severity)
        for f in report.findings
    }
    assert found == EXPECTED
    # KVA004 fires once per pool (both overridden): 2 findings in that file
    assert sum(1 for f in report.findings if f.rule == "KVA004") == 2
    # every good example is evaluated and clean (8 files + the 2 halves of split-good/)
    goods = {d.source for d in deployments if "-good" in d.source}
    assert len(goods) == 10
    assert not {f.location.file for f in report.findings} & goods
    # the in-file ignore suppresses KVA001 (544 vs 1056) in the DisaggregatedSet example
    assert [(s.finding.rule, s.why) for s in report.suppressed] == [
        ("KVA001", "ignored: prefix-cache drift accepted while the SSM dtype is being fixed")
    ]
    # the vLLM --config file is not a deployment on its own
    assert [Path(s).name for s in skipped] == ["falcon-h1-common.yaml"]


@pytest.mark.parametrize(
    ("name", "kind", "blocks"),
    [
        ("kvalign/nemotron-nano-bad.yaml", "kvalign", [("prefill", 8, 528), ("decode", 1, 2096)]),
        (
            "command-line/falcon-h1-good.sh",
            "command-line",
            [("prefill", 2, 800), ("decode", 2, 800)],
        ),
        (
            "kubernetes/nemotron-lws-good.yaml",
            "kubernetes",
            [("prefill", 4, 2096), ("decode", 8, 2096)],
        ),
        (
            "llm-d/qwen35-disaggregatedset-good.yaml",
            "kubernetes",
            [("prefill", 4, 1056), ("decode", 4, 1056)],
        ),
        (
            "llm-d/falcon-h1-modelservice-bad.yaml",
            "kubernetes",
            [("prefill", 8, 208), ("decode", 1, 800)],
        ),
        (
            "dynamo/qwen35-graph-v1beta1-bad.yaml",
            "kubernetes",
            [("prefill", 8, 528), ("decode", 4, 1056)],
        ),
        (
            "dynamo/falcon-h1-graph-v1alpha1-good.yaml",
            "kubernetes",
            [("prefill", 1, 800), ("decode", 2, 800)],
        ),
        (
            "kserve/falcon-h1-llmisvc-good.yaml",
            "kubernetes",
            [("prefill", 2, 1584), ("decode", 2, 1584)],
        ),
    ],
)
def test_every_input_kind_finds_its_pools(
    name: str, kind: str, blocks: list[tuple[str, int, int]]
) -> None:
    deployments, _ = read_paths([str(EXAMPLES / name)])
    report = run_audit(deployments)
    assert deployments[0].kind == kind
    got = [(r.pool.role, r.pool.tp, r.rank.block_size) for r in report.groups[0].pools]
    assert got == blocks


def test_k8s_variables_resolve_from_env_and_configmaps() -> None:
    deployments, _ = read_paths([str(EXAMPLES / "kubernetes/nemotron-deployments-bad.yaml")])
    pools = deployments[0].pools
    # $(MODEL_ID) from a configMapKeyRef (prefill, /bin/sh -c form) and from envFrom (decode)
    assert [p.model for p in pools] == ["nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"] * 2
    assert [p.role_source for p in pools] == ["label", "label"]


def test_unresolved_variable_makes_the_file_unevaluable() -> None:
    _, report = _audit(DATA / "unresolved.yaml")
    assert report.exit_code("error") == 3  # type: ignore[attr-defined]
    assert "unresolved variable(s) MODEL: $(MODEL_ID)" in report.unevaluated[0].message  # type: ignore[attr-defined]


def test_helm_template_is_not_rendered() -> None:
    _, report = _audit(DATA / "helm-template.yaml")
    assert "helm template" in report.unevaluated[0].message  # type: ignore[attr-defined]


def test_stdin_and_role_from_kv_role() -> None:
    script = textwrap.dedent(
        """\
        vllm serve tiiuae/Falcon-H1-0.5B-Base -tp 8 \\
          --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
        vllm serve tiiuae/Falcon-H1-0.5B-Base -tp 1 \\
          --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}'
        """
    )
    found, report = _audit("-", stdin=script)
    # 208 (TP 8) vs 800 (TP 1): drift (prefix caching on both: error) and a non-dividing
    # pair on the gcd-16 split path (split: error under the policy)
    assert found == {("-", "KVA001", "error"), ("-", "KVA003", "error")}
    assert [p.pool.role_source for p in report.groups[0].pools] == ["args", "args"]  # type: ignore[attr-defined]


# ---- CLI: formats, exit codes, ignores, baseline -------------------------------------------
BAD = str(EXAMPLES / "kvalign/nemotron-nano-bad.yaml")
GOOD = str(EXAMPLES / "kvalign/nemotron-nano-good.yaml")


def test_exit_codes(tmp_path: Path) -> None:
    assert runner.invoke(app, ["audit", GOOD]).exit_code == 0
    assert runner.invoke(app, ["audit", BAD]).exit_code == 1  # KVA003 error
    warn = str(EXAMPLES / "dynamo/qwen35-graph-v1beta1-good.yaml")
    assert runner.invoke(app, ["audit", warn, "--fail-on", "warning"]).exit_code == 0
    # drift + split (both errors under the policy) and KVA007 (a warning): fails by default
    bad_sh = str(EXAMPLES / "llm-d/falcon-h1-modelservice-bad.yaml")
    assert runner.invoke(app, ["audit", bad_sh]).exit_code == 1
    # only a warning (KVA007) left: passes at --fail-on error, fails at warning
    only_warning = "ignore:\n- {rule: KVA001, reason: t}\n- {rule: KVA003, reason: t}\n"
    config = tmp_path / "ignore-pair-rules.yaml"
    config.write_text(only_warning)
    args = ["audit", bad_sh, "--config", str(config)]
    assert runner.invoke(app, args).exit_code == 0
    assert runner.invoke(app, [*args, "--fail-on", "warning"]).exit_code == 1
    missing = runner.invoke(app, ["audit", "no/such/file.yaml"])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    syntax = runner.invoke(app, ["audit", str(DATA / "bad-syntax.yaml")])
    assert syntax.exit_code == 2 and "bad-syntax.yaml:" in syntax.stderr
    assert "Traceback" not in syntax.stderr
    assert runner.invoke(app, ["audit", str(DATA / "unresolved.yaml")]).exit_code == 3
    assert runner.invoke(app, ["audit", GOOD, "--fail-on", "fatal"]).exit_code == 2


def test_json_and_baseline(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", BAD, "--format", "json"])
    data = json.loads(result.stdout)
    assert [(f["rule"], f["severity"]) for f in data["findings"]] == [
        ("KVA001", "error"), ("KVA003", "error"),
    ]  # fmt: skip
    assert data["files"][0]["vllm_rules"] == "vLLM 0.33 rules (for --vllm-version 0.33.0)"
    baseline = tmp_path / "baseline.json"
    baseline.write_text(result.stdout)
    again = runner.invoke(app, ["audit", BAD, "--baseline", str(baseline), "--format", "json"])
    assert again.exit_code == 0
    assert [s["why"] for s in json.loads(again.stdout)["suppressed"]] == ["baseline"] * 2
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    assert runner.invoke(app, ["audit", BAD, "--baseline", str(broken)]).exit_code == 2


def test_project_ignore_needs_a_reason(tmp_path: Path) -> None:
    config = tmp_path / "kvalign.yaml"
    config.write_text(
        "ignore:\n- {rule: KVA003, reason: tracked in OPS-12}\n"
        "- {rule: KVA001, reason: tracked in OPS-12}\n"
    )
    ok = runner.invoke(app, ["audit", BAD, "--config", str(config)])
    assert ok.exit_code == 0  # both errors are ignored
    # as for an in-file comment, an entry without a reason is not honoured and
    # warned about (it used to exit 2 while the comment only warned): KVA003 counts again
    config.write_text("ignore:\n- {rule: KVA003}\n")
    result = runner.invoke(app, ["audit", BAD, "--config", str(config)])
    assert result.exit_code == 1
    assert "ignore[0] (KVA003) without reason is not honoured" in result.stderr


def test_sarif_shape() -> None:
    sarif = json.loads(runner.invoke(app, ["audit", BAD, "--format", "sarif"]).stdout)
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [f"KVA{n:03d}" for n in range(1, 14)]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == 9  # the decode: block
        assert result["message"]["text"]
    assert [r["level"] for r in run["results"]] == ["error", "error"]


def test_sarif_rules_link_their_docs_section() -> None:
    """Every rule's helpUri points at its own ``## KVA0xx: …`` section of docs/rules.md,
    as GitHub names the anchor (e.g. ``KVA002: … (block_size_ratio != 1)`` → ``…ratio--1``)."""
    import re

    headings = re.findall(r"^## (KVA\d{3}: .*)$", (ROOT / "docs/rules.md").read_text(), re.M)
    anchors = {
        re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-"): h.split(":")[0] for h in headings
    }
    sarif = json.loads(runner.invoke(app, ["audit", BAD, "--format", "sarif"]).stdout)
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        page, _, anchor = rule["helpUri"].partition("#")
        assert page.endswith("/docs/rules.md") and anchors[anchor] == rule["id"]
    assert "kva002-kernel-block-sizes-differ-block_size_ratio--1" in anchors


def test_junit_parses_as_xml() -> None:
    out = runner.invoke(app, ["audit", BAD, GOOD, "--format", "junit"]).stdout
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "2", "0")
    assert [f.get("type") for f in suite.iter("failure")] == ["KVA001:error", "KVA003:error"]


def test_github_annotations_and_markdown_and_output(tmp_path: Path) -> None:
    lines = runner.invoke(app, ["audit", BAD, "--format", "github"]).stdout.splitlines()
    assert lines[0].startswith(f"::error file={BAD},line=9,title=KVA001 ")
    assert lines[1].startswith(f"::error file={BAD},line=9,title=KVA003 ")
    md = runner.invoke(app, ["audit", BAD, "--format", "markdown"]).stdout
    assert "| KVA003 | error |" in md
    target = tmp_path / "report.txt"
    result = runner.invoke(app, ["audit", BAD, "--output", str(target)])
    assert result.exit_code == 1 and result.stdout == ""
    assert "KVA003" in target.read_text()


def test_verbose_lists_unknown_flags_on_stderr() -> None:
    result = runner.invoke(
        app, ["audit", str(EXAMPLES / "command-line/falcon-h1-good.sh"), "--verbose"]
    )
    assert result.exit_code == 0
    assert "ignored flags: --port" in result.stderr
