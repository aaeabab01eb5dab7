"""``kvalign survey`` on a terminal: readable at 80 columns, the full table when it fits.

Snapshots of the output at ``COLUMNS=80`` and ``COLUMNS=200`` are committed under
``tests/snapshots/``; after an intended change of the layout or the numbers, regenerate them
with ``KVALIGN_UPDATE_SNAPSHOTS=1 make test`` (or the same variable on ``pytest
tests/cli/test_survey_layout.py``) and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.sources import catalog

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
#: one model per kind: short conv (LFM2), attention-free (Mamba-Codestral), mamba2 hybrid
#: with a TP that cannot load (Nemotron 3 Nano, TP 16), gated delta net (Qwen3.5).
MODELS = (
    "LiquidAI/LFM2-1.2B",
    "mistralai/Mamba-Codestral-7B-v0.1",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
    "Qwen/Qwen3.5-397B-A17B",
)
runner = CliRunner()


def survey(columns: int, *args: str) -> str:
    result = runner.invoke(app, ["survey", *args], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("columns", [80, 200])
def test_survey_matches_its_snapshot(columns: int) -> None:
    out = survey(columns, *MODELS, "--vllm-version", "0.33.0")  # 0.33's numbers, pinned
    path = SNAPSHOTS / f"survey-{columns}.txt"
    if os.environ.get("KVALIGN_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(out, encoding="utf-8")
    assert out == path.read_text(encoding="utf-8"), (
        f"{path.name} differs: review, then KVALIGN_UPDATE_SNAPSHOTS=1 to regenerate"
    )


def test_200_columns_is_the_table_80_is_one_block_per_model() -> None:
    wide, narrow = survey(200, *MODELS), survey(80, *MODELS)
    assert "┃ Model" in wide and "one block per model" not in wide
    # the table needs 184 columns here: 1 + (widest cell or header line + 3) per column =
    # 1 + 45 (model id) + 13 + 8 + 9 + 10 + 10 + 11 + 9 + 10 + 10 + 11 + 11 + 15 + 11,
    # and that is the width rich draws it at
    top = next(line for line in wide.splitlines() if line.startswith("┏"))
    assert len(top) == 184
    assert "┃" not in narrow
    assert "(one block per model: the table needs 184 columns)" in " ".join(narrow.split())
    # Nano over TP 1,2,4,8 (16 cannot load), hand counts in tests/cli/test_survey_cli.py:
    # 16 pairs, 10 differ, 10 ratio != 1, 9 not divisible; fix --block-size 2096
    block = narrow.split("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16\n", 1)[1]
    lines = block.splitlines()
    assert lines[0] == "  TPs       1,2,4,8, pairs 16"
    assert lines[1] == "  vLLM      differ 10, ratio≠1 10, not div 9, pad max 1.34%"
    assert lines[2].startswith("  TP-stable differ 0, ratio≠1 0, not div 0, pad max 302.30%")
    assert lines[3] == "  fix       --block-size 2096, pad max 302.30%"
    # the attention-free model has no counts, only its note
    free = narrow.split("mistralai/Mamba-Codestral-7B-v0.1\n", 1)[1].splitlines()
    assert free[0] == "  TPs       1,2,4,8, pairs –"
    assert free[1].startswith("  note      attention-free: vLLM does no block alignment")


def test_whole_catalog_at_80_columns_cuts_nothing() -> None:
    out = survey(80)
    assert "…" not in out
    assert all(len(line) <= 80 for line in out.splitlines())
    data = json.loads(runner.invoke(app, ["survey", "--format", "json"]).stdout)
    for model in data["models"]:
        assert f"\n{model['id']}\n" in out  # every id whole, on its own line
        vllm = model["alignments"].get("vllm")
        if vllm is None:
            continue
        block = out.split(f"\n{model['id']}\n", 1)[1].split("\n", 3)
        expected = (
            f"differ {vllm['block_size_differs']}, ratio≠1 {vllm['block_size_ratio_not_1']}, "
            f"not div {vllm['not_divisible']}, pad max {vllm['padding_max_pct']:.2f}%"
        )
        assert block[1] == f"  vLLM      {expected}", model["id"]
        fix = model["fix"]["block_size"]
        if fix is not None and model["fix"]["needed"]:
            assert re.match(rf"  fix       --block-size {fix}, pad max [\d.]+%\n", block[3])
        elif fix is not None:  # every pair already works: no fix to print (as check says)
            assert block[3].startswith("  fix       none needed\n"), model["id"]
    assert data["summary"]["models"] == len(catalog.entries())
