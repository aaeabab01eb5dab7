"""Input text in plain (non-terminal) output: ``audit`` written to a pipe or CI log,
``explain``, JUnit. A pool name, a ``name:``, a file name or a model path holding ESC/OSC
sequences, BEL, a bidi override or a newline is printed escaped (``\\x1b``, ``\\u202e``,
``\\n``): no terminal sequence reaches the log and no input forges a line of its own."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from kvalign.cli import app
from tests.conftest import CATALOG

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
RAW = ("\x1b", "\x07", "\u202e")
HOSTILE_NAME = "a\x1b]0;T\x07\u202e\nb"
DOC = (
    'name: "\\e[2J\\u202eevil"\n'
    f"model: {NANO}\n"
    'prefill: {{tp: 8, name: "{pool}"}}\n'
    "decode: {{tp: 1}}\n"
)


def _audit(tmp_path: Path, pool: str, file: str, *extra: str) -> str:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / f"{file}.yaml").write_text(DOC.format(pool=pool))
    result = runner.invoke(app, ["audit", str(tmp_path), "--verbose", *extra])
    assert result.exit_code == 1  # TP 8 / TP 1: 528 vs 2096, the split path fails
    return result.stdout


def test_audit_plain_output_escapes_names_and_keeps_one_line_per_item(tmp_path: Path) -> None:
    hostile = _audit(tmp_path / "h", "\\e]8;;http://evil\\a", HOSTILE_NAME)
    plain = _audit(tmp_path / "p", "prefill", "ab")
    assert not any(ch in hostile for ch in RAW)
    assert "prefill/\\x1b]8;;http://evil\\x07" in hostile
    assert "a\\x1b]0;T\\x07\\u202e\\nb.yaml:4: KVA001 error" in hostile
    # the newline in the file name forged no line: as many lines as with plain names
    assert len(hostile.splitlines()) == len(plain.splitlines())


def test_junit_escapes_bidi_overrides(tmp_path: Path) -> None:
    junit = _audit(tmp_path, "prefill", HOSTILE_NAME, "--format", "junit")
    assert not any(ch in junit for ch in RAW)
    assert "\\u202e" in junit


def test_explain_escapes_a_model_path(tmp_path: Path) -> None:
    folder = tmp_path / "d\x1b]0;T\x07"
    folder.mkdir()
    shutil.copy(CATALOG / NANO / "config.json", folder / "config.json")
    result = runner.invoke(app, ["explain", str(folder), "--tp", "8"])
    assert result.exit_code == 0
    assert not any(ch in result.stdout for ch in RAW)
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"Model: {tmp_path}/d\\x1b]0;T\\x07 (nemotron_h")
