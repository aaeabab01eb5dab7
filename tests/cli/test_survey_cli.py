"""``kvalign survey`` through CliRunner: formats, the SVG plot and its optional extra."""

from __future__ import annotations

import csv
import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.sources import catalog

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def catalog_json() -> dict[str, object]:
    result = runner.invoke(app, ["survey", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_default_surveys_every_bundled_model(catalog_json: dict) -> None:  # type: ignore[type-arg]
    ids = [m["id"] for m in catalog_json["models"]]
    assert ids == [e.model_id for e in catalog.entries()]
    assert catalog_json["tps"] == [1, 2, 4, 8, 16]
    assert "alignment" not in catalog_json["settings"]


def test_catalog_nano_row_matches_hand_counts(catalog_json: dict) -> None:  # type: ignore[type-arg]
    # Hand-derived in tests/cli/test_survey.py: blocks 2096, 2096, 1056, 528 at TP 1..8 (TP 16
    # cannot load: n_groups 8) -> 16 pairs, 10 differ, 10 ratio != 1, 9 not divisible;
    # TP-stable 2096 everywhere.
    row = next(m for m in catalog_json["models"] if m["id"] == NANO)
    vllm, stable = row["alignments"]["vllm"], row["alignments"]["tp-stable"]
    assert (vllm["pairs"], vllm["block_size_differs"], vllm["block_size_ratio_not_1"]) == (
        16, 10, 10,
    )  # fmt: skip
    assert vllm["not_divisible"] == 9
    assert (stable["block_size_differs"], stable["not_divisible"]) == (0, 0)
    # TP 8 TP-stable padding: 2096 * 512 = 1,073,152 vs m = 266,752 -> 302.30 %
    assert stable["padding_pct"]["8"] == pytest.approx(
        100 * (1_073_152 - 266_752) / 266_752, abs=1e-3
    )
    assert "16" not in stable["padding_pct"]
    assert row["fix"]["block_size"] == 2096


def test_catalog_summary_is_the_sum_of_rows(catalog_json: dict) -> None:  # type: ignore[type-arg]
    models, summary = catalog_json["models"], catalog_json["summary"]
    for alignment in ("vllm", "tp-stable"):
        for key in ("pairs", "block_size_differs", "block_size_ratio_not_1", "not_divisible"):
            total = sum(m["alignments"][alignment][key] for m in models if m["alignments"])
            assert summary["alignments"][alignment][key] == total
    # the two attention-free models (Mamba-Codestral, falcon-mamba) have no pairs
    free = [m["id"] for m in models if m["kind"] == "attention-free"]
    assert free == ["mistralai/Mamba-Codestral-7B-v0.1", "tiiuae/falcon-mamba-7b"]
    assert all(m["alignments"] == {} for m in models if m["kind"] == "attention-free")
    assert summary["models_with_pairs"] == len(models) - 2
    # TP-stable never leaves two valid TPs on different blocks in the bundled catalog
    assert summary["alignments"]["tp-stable"]["block_size_differs"] == 0


def test_markdown_and_table() -> None:
    code, out, err = run("survey", NANO, "--tp", "1,2,4,8", "--format", "markdown")
    assert code == 0 and err == ""
    row = next(line for line in out.splitlines() if line.startswith(f"| {NANO} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # Pairs, vLLM differ / ratio!=1 / not divisible (hand-derived: 16, 10, 10, 9)
    assert cells[1:6] == ["1,2,4,8", "16", "10", "10", "9"]
    assert cells[12] == "2096"  # the common --block-size fix
    assert "| **All models (1)** |" in out
    code, out, _ = run("survey", NANO, "--tp", "1,2,4,8")
    assert code == 0
    assert "All models (1)" in out and "302.30" in out


def test_csv_rows() -> None:
    code, out, _ = run(
        "survey", NANO, "tiiuae/falcon-mamba-7b", "--tp", "1,2,4,8", "--format", "csv"
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["model"] for r in rows] == [NANO, "tiiuae/falcon-mamba-7b", "ALL"]
    nano, free, total = rows
    assert (nano["pairs"], nano["vllm_block_size_differs"], nano["vllm_not_divisible"]) == (
        "16", "10", "9",
    )  # fmt: skip
    assert nano["tp_stable_pad_max_pct"] == "302.3033"
    assert free["pairs"] == "" and "no pairs to count" in free["note"]
    assert total["pairs"] == "16" and total["vllm_ratio_not_1"] == "10"


def test_plot_writes_valid_svg_with_block_sizes(tmp_path: Path) -> None:
    target = tmp_path / "nano.svg"
    code, out, err = run(
        "survey", NANO, "--tp", "1,2,4,8", "--format", "csv", "--plot", str(target)
    )
    assert code == 0, err
    assert out.startswith("model,")  # data still on stdout
    assert f"wrote {target}" in err
    root = ET.fromstring(target.read_bytes())
    assert root.tag == f"{SVG_NS}svg"
    texts = {"".join(t.itertext()).strip() for t in root.iter(f"{SVG_NS}text")}
    # vLLM panel: P8 -> D1 is 528 -> 2096 (FAIL); TP-stable panel: 2096 -> 2096 everywhere
    for label in ("528→2096", "1056→528", "2096→2096", "FAIL", "SPLIT", "RATIO"):
        assert any(label in t for t in texts), label
    # deterministic: a second run writes the same bytes
    again = tmp_path / "again.svg"
    run("survey", NANO, "--tp", "1,2,4,8", "--format", "csv", "--plot", str(again))
    assert again.read_bytes() == target.read_bytes()


def test_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    target = tmp_path / "x.svg"
    code, out, err = run("survey", NANO, "--tp", "1,2", "--plot", str(target))
    assert code == 2
    assert "pip install '.[plot]' in a kvalign checkout" in err
    assert out == "" and not target.exists()


def test_plot_of_attention_free_only_is_refused(tmp_path: Path) -> None:
    code, _, err = run("survey", "tiiuae/falcon-mamba-7b", "--plot", str(tmp_path / "x.svg"))
    assert code == 2 and "no model in the survey has prefill/decode pairs" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--tp", "1,zero"), "--tp"),
        (("./missing-dir/config.json", "--tp", "1"), "missing-dir"),
        ((NANO, "--plot", "grid.png"), "only SVG"),
        ((NANO, "--kv-cache-dtype", "int3"), "int3"),
    ],
)
def test_bad_input_exits_2(args: tuple[str, ...], message: str) -> None:
    code, out, err = run("survey", *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert out == ""
