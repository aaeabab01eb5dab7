"""Defects a QA run found on main (task fixa), each pinned by a test that failed before.

A. A folder scan reports a symbolic link loop as a path not read whatever its name (exit 3
   unless ``--skip-unrelated``, docs/audit.md's exit-code table), and follows a symbolic link
   to a folder, reading each real folder once (docs/security.md).
B. Input-derived text in the ``not evaluated`` / ``not read`` lines reaches stdout with its
   control characters escaped (docs/security.md), in the table, plain and GitHub formats.
C. ``COLUMNS`` that is not positive is ignored like ``abc`` (200 columns); a tiny one is
   raised to 80, the width every verdict line fits, so line 1 stays the whole verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.numbers import columns

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "configs" / "deployments" / "kvalign" / "nemotron-nano-good.yaml"
runner = CliRunner()


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "good.yaml").write_bytes(GOOD.read_bytes())  # a passing pair: exit 0 alone
    return folder


def test_a_symlink_loop_without_suffix_is_a_path_not_read(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    result = runner.invoke(app, ["audit", str(folder), "--format", "json"])
    assert result.exit_code == 3, result.stderr
    doc = json.loads(result.stdout)
    assert [e["file"] for e in doc["not_read"]] == [str(folder / "a"), str(folder / "b")]
    assert all("loops" in e["message"] for e in doc["not_read"])
    accepted = runner.invoke(app, ["audit", str(folder), "--skip-unrelated"])
    assert accepted.exit_code == 0, accepted.stderr
    assert f"not read: {folder / 'a'}: " in accepted.stdout
    assert "(accepted)" in accepted.stdout


def test_a_symlink_to_a_folder_is_followed_and_each_real_folder_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file under a symlinked folder is not skipped silently: the link is followed (the
    # scan once listed real folders only and dropped other/more.yaml with a note); the
    # link stays inside the working tree (tmp_path), the bound of a scan's links
    monkeypatch.chdir(tmp_path)
    folder = _folder(tmp_path)
    (folder / "self").symlink_to(folder, target_is_directory=True)
    other = tmp_path / "other"
    other.mkdir()
    (other / "more.yaml").write_bytes(GOOD.read_bytes())
    (folder / "elsewhere").symlink_to(other, target_is_directory=True)
    result = runner.invoke(app, ["audit", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    files = [f["file"] for f in json.loads(result.stdout)["files"]]
    # good.yaml once (not again through `self`), more.yaml through `elsewhere`
    assert files == [str(folder / "elsewhere" / "more.yaml"), str(folder / "good.yaml")]
    assert any(
        line.startswith(f"kvalign: warning: {folder / 'self'}: a symbolic link to a folder")
        and "read once" in line
        for line in result.stderr.splitlines()
    ), result.stderr


def test_a_symlink_out_of_the_scanned_folder_and_the_tree_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # #31's threat model: a pull request is hostile. A link planted in the tree to a file
    # or a folder elsewhere on the CI machine is listed as not read (exit 3), and nothing
    # of the file it points to is read or quoted (an attacker run found a line of such a
    # file quoted in a "not evaluated" message)
    tree = tmp_path / "tree"
    tree.mkdir()
    monkeypatch.chdir(tree)
    folder = _folder(tree)
    secret = tmp_path / "host" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text("token: hf_SECRET\nvllm serve x --kv-transfer-config '{'\n")
    (folder / "leak.yaml").symlink_to(secret)
    (folder / "hostdir").symlink_to(secret.parent, target_is_directory=True)
    result = runner.invoke(app, ["audit", str(folder), "--format", "json"])
    assert result.exit_code == 3, result.stdout
    report = json.loads(result.stdout)
    assert [f["file"] for f in report["files"]] == [str(folder / "good.yaml")]
    why = "a symbolic link out of the scanned folder and the working tree: not read"
    assert sorted((u["file"], u["message"].split(" (")[0]) for u in report["not_read"]) == [
        (str(folder / "hostdir"), why),
        (str(folder / "leak.yaml"), why),
    ]
    assert "SECRET" not in result.stdout + result.stderr


#: a model id carrying a CSI "clear screen", an OSC "set title" and a BEL, as real bytes.
EVIL = "\x1b[2J\x1b]0;x\x07nvidia/evil"


@pytest.mark.parametrize(
    ("args", "columns"),
    [(["--format", "table"], None), (["--format", "table"], "120"), (["--format", "github"], None)],
    ids=["plain", "terminal", "github"],
)
def test_b_not_evaluated_lines_escape_control_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], columns: str | None
) -> None:
    script = tmp_path / "evil.sh"
    script.write_bytes(f'vllm serve "{EVIL}" --tensor-parallel-size 1\n'.encode())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # plain lines, as in a pipe
    else:
        monkeypatch.setenv("COLUMNS", columns)  # rich sections, as on a terminal
    result = runner.invoke(app, ["audit", str(script), *args])
    assert result.exit_code == 3, result.stderr  # no such model: not evaluated
    assert not any(c in result.stdout for c in "\x1b\x07"), repr(result.stdout)
    assert "\\x1b[2J\\x1b]0;x\\x07nvidia/evil" in result.stdout
    assert "not evaluated" in result.stdout


NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def test_c_columns_ignores_non_positive_values_and_floors_tiny_ones() -> None:
    assert [columns(v) for v in (None, "", "abc", "0", "-5", " -1 ")] == [200] * 6
    # under 40 columns is no real terminal: laid out at 80; 40 and up are honoured
    # (``rules ID`` at 50 columns wraps at 50: tests/cli/test_cli_layout.py)
    assert [columns(v) for v in ("1", "10", "39", "40", "79", "120")] == [80, 80, 80, 40, 79, 120]
    assert columns("99999") == 10_000


@pytest.mark.parametrize("value", ["0", "1", "10", "-5"])
def test_c_tiny_or_invalid_columns_keep_the_verdict_on_line_one(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("COLUMNS", value)
    argv = ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 1, result.stderr  # kernel block 2096 (TP 1) vs 528 (TP 8)
    lines = result.stdout.splitlines()
    assert lines[0] == "FAIL (exit 1, --fail-on error): 1 of 1 pair(s) fail"
    assert lines[1].startswith("  prefill TP 8 → decode TP 1: fails (incompatible): ")
    width = 200 if int(value) <= 0 else 80
    assert max(len(line) for line in lines) <= width
    monkeypatch.chdir(ROOT)
    audit = runner.invoke(app, ["audit", "configs/deployments/"]).stdout.splitlines()
    # the 9 *-bad examples fail (tests/audit/test_audit_gate.py): the verdict, then the fix
    assert audit[0].startswith("FAIL (exit 1, --fail-on error): 9 of 18 pair(s) fail the gate")
    assert max(len(line) for line in audit) <= width
