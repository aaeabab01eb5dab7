"""Snapshots of ``check`` at 80 and 200 columns: the answer comes first,
nothing is truncated, no cell folds into a tower. Regenerate after an intended change with
``KVALIGN_UPDATE_SNAPSHOTS=1 make test`` and review the diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app

SNAPSHOTS = Path(__file__).resolve().parents[1] / "snapshots"
runner = CliRunner()

CASES = {
    "check-nano-8-1": ["check", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
                       "--prefill-tp", "8", "--decode-tp", "1"],
    "check-qwen35-397b-8-1": ["check", "Qwen/Qwen3.5-397B-A17B", "--prefill-tp", "8",
                              "--decode-tp", "1"],
    "check-nano-flashinfer-no-prefix-caching": [
        "check", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--prefill-tp", "8",
        "--decode-tp", "1", "--attention-backend", "FLASHINFER", "--no-enable-prefix-caching"],
    "check-nano-tp-stable": ["check", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
                             "--prefill-tp", "8", "--decode-tp", "1", "--alignment", "tp-stable"],
}  # fmt: skip


#: the snapshots hold vLLM 0.33's numbers: pinned, so a newer profile does not change them
PINNED = ["--vllm-version", "0.33.0"]


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("name", sorted(CASES))
def test_check_snapshot(name: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    result = runner.invoke(app, [*CASES[name], *PINNED])
    assert result.exit_code in (0, 1), result.stderr
    out = result.stdout
    path = SNAPSHOTS / f"{name}-{width}.txt"
    if os.environ.get("KVALIGN_UPDATE_SNAPSHOTS"):
        path.write_text(out, encoding="utf-8")
    assert out == path.read_text(encoding="utf-8"), f"{path.name} differs"
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines)
    assert "…" not in out  # nothing truncated
    # the answer first: the verdict line, each pair in words, then the fix
    assert lines[0].startswith(("PASS (exit 0", "FAIL (exit 1"))
    assert any(line.startswith("Fix: ") for line in lines[:8])
    # no tower: no table row (a line with a vertical bar) carries a cell of 3 characters
    # or fewer folded from a wider one, i.e. no run of 4+ rows whose last cell is short
    rows = [line for line in lines if line.startswith("│")]
    cells = [line.rstrip("│ ").rsplit("│", 1)[-1].strip() for line in rows]
    assert not any(all(0 < len(c) <= 3 for c in cells[i : i + 4]) for i in range(len(cells)))


def test_snapshot_exit_codes_follow_the_policy() -> None:
    codes = {name: runner.invoke(app, [*argv, *PINNED]).exit_code for name, argv in CASES.items()}
    assert codes == {
        "check-nano-8-1": 1,  # 528 vs 2096: incompatible
        "check-qwen35-397b-8-1": 1,  # 528 vs 2096: incompatible
        "check-nano-flashinfer-no-prefix-caching": 0,  # drift with caching off: info
        "check-nano-tp-stable": 1,  # the what-if never clears vLLM's verdict
    }
