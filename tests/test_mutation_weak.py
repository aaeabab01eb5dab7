"""Strengthened versions of weak tests: where an existing test checked only an
exit code although a value is available, the value is asserted here (the originals stay,
so their assertions are kept). docs/mutation-report.md lists them."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvalign.cli import app

ROOT = Path(__file__).resolve().parent.parent
SPLIT_BAD = ROOT / "configs" / "deployments" / "kubernetes" / "split-bad"
runner = CliRunner()


def _audit(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, ["audit", str(SPLIT_BAD), *args, "--format", "json"])
    data = json.loads(result.stdout)
    data["exit"] = result.exit_code
    return data  # type: ignore[no-any-return]


def test_pair_by_names_the_pairs_and_their_verdicts() -> None:
    # was tests/audit/test_audit_pairing.py::test_pair_by_on_the_command_line (exit codes only).
    # Qwen3.5-397B-A17B, FLASH_ATTN, prefix caching on: TP 8 → 528, TP 16 → 272 (golden
    # oracle vllm-0.33.0-oracle.jsonl); 272 % 528 != 0, gcd 16, max(33, 17) = 33 units ≤ 128:
    # NIXL splits (base_worker.py _split_remote_blocks): verdict split, an error.
    by_label = _audit()
    assert by_label["exit"] == 1 and by_label["pair_by"] == "label"
    (group,) = by_label["groups"]
    (pair,) = group["pairs"]
    assert pair["prefill"]["pool"] == "prefill/ms-qwen35-llm-d-modelservice-prefill"
    assert pair["decode"]["pool"] == "decode/ms-qwen35-llm-d-modelservice-decode"
    assert (pair["verdict"], pair["block_size_ratio"]) == ("split", None)
    # one group per file: each holds one half, so nothing is paired; each half
    # is a KVA013 error (the other file holds its partner), so the gate fails (was exit 0)
    by_file = _audit("--pair-by", "file")
    assert by_file["exit"] == 1
    assert [g["pairs"] for g in by_file["groups"]] == [[], []]
    # by model: the two halves meet again
    by_model = _audit("--pair-by", "model")
    assert by_model["exit"] == 1
    assert [p["verdict"] for g in by_model["groups"] for p in g["pairs"]] == ["split"]
