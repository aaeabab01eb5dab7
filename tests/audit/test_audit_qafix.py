"""Audit gate defects a QA trial found (no silent pass), each pinned by a test that failed
before the fix.

6. A kvalign-schema YAML whose ``model:`` is a relative path is resolved against the YAML
   file's folder (docs/inputs.md), and a message names the path tried.
7. A script over the shell budget names its file (``FILE: shell budget exceeded: …``): it
   is not evaluated (exit 3); the shell's text budget is the file cap, so any script kvalign
   reads is evaluated whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.safeio import MAX_FILE_BYTES
from kvalign.shell.expand import MAX_SCRIPT_BYTES
from tests.hostile.cases import GOOD_YAML

ROOT = Path(__file__).resolve().parents[2]
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
NANO_CONFIG = ROOT / "configs" / "models" / NANO / "config.json"
# prefill TP 8, decode TP 1 at --block-size 2096: `kvalign check` on these pools passes
# (the NR corpus case tests/deploy_corpus/not-read/deploy/nano-pd.yaml, exit 0 alone)
PAIR = GOOD_YAML.replace(NANO, "{model}")
runner = CliRunner()


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder other than the YAML file's."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_6_a_relative_model_path_is_resolved_against_the_yaml_folder(
    tmp_path: Path, elsewhere: Path
) -> None:
    folder = tmp_path / "deploy"
    (folder / "models" / "nano").mkdir(parents=True)
    (folder / "models" / "nano" / "config.json").write_bytes(NANO_CONFIG.read_bytes())
    for name, model in (("plain.yaml", "models/nano"), ("dotted.yaml", "./models/nano")):
        (folder / name).write_text(PAIR.format(model=model), encoding="utf-8")
        result = runner.invoke(app, ["audit", str(folder / name), "--format", "json"])
        assert result.exit_code == 0, result.stdout + result.stderr
        pools = [p for f in json.loads(result.stdout)["files"] for p in f["pools"]]
        assert [(p["role"], p["tp"]) for p in pools] == [("prefill", 8), ("decode", 1)]


def test_6_a_missing_relative_model_names_the_path_tried(tmp_path: Path, elsewhere: Path) -> None:
    folder = tmp_path / "deploy"
    folder.mkdir()
    (folder / "pd.yaml").write_text(PAIR.format(model="./missing"), encoding="utf-8")
    result = runner.invoke(app, ["audit", str(folder / "pd.yaml"), "--format", "json"])
    assert result.exit_code == 3
    messages = [p["message"] for p in json.loads(result.stdout)["unevaluated"]]
    assert messages and all(f"{folder / 'missing'}: no such file" in m for m in messages)


def test_6_a_hub_id_is_not_taken_for_a_path(tmp_path: Path, elsewhere: Path) -> None:
    (tmp_path / "pd.yaml").write_text(PAIR.format(model=NANO), encoding="utf-8")
    result = runner.invoke(app, ["audit", str(tmp_path / "pd.yaml")])
    assert result.exit_code == 0, result.stdout + result.stderr


def _script(pad: int) -> str:
    launch = f"vllm serve {NANO} --tensor-parallel-size 2\n"
    return "#!/bin/bash\n" + "#" * (pad - len(launch) - 13) + "\n" + launch


def test_7_a_script_over_the_shell_budget_names_its_file(tmp_path: Path) -> None:
    # 120,000 assignments: more than 100,000 evaluation steps (one per statement and one
    # per word expanded); the file is read, so it is not evaluated (exit 3), named
    script = tmp_path / "serve.sh"
    script.write_text(_script(200) + "A=1\n" * 120_000, encoding="utf-8")
    result = runner.invoke(app, ["audit", str(script)])
    assert result.exit_code == 3
    assert (
        f"not evaluated: {script}: shell budget exceeded: more than 100,000 evaluation "
        "steps (statements and expansions)"
    ) in result.stdout.splitlines()
    assert "kvalign: error" not in result.stderr


def test_7_the_shell_text_budget_is_the_file_cap(tmp_path: Path) -> None:
    # a script one byte over the file cap is not read at all (the file cap, exit 2)
    assert MAX_SCRIPT_BYTES == MAX_FILE_BYTES
    script = tmp_path / "serve.sh"
    script.write_text(_script(MAX_FILE_BYTES + 1), encoding="utf-8")
    assert os.path.getsize(script) == MAX_FILE_BYTES + 1
    result = runner.invoke(app, ["audit", str(script)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"kvalign: error: {script}: larger than 8 MiB"


def test_7_a_script_within_the_shell_budget_is_read(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(_script(MAX_FILE_BYTES), encoding="utf-8")
    result = runner.invoke(app, ["audit", str(script), "--format", "json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    pools = [p for f in json.loads(result.stdout)["files"] for p in f["pools"]]
    assert [(p["role"], p["tp"]) for p in pools] == [("server", 2)]


@pytest.mark.parametrize(("name", "code"), [("README.md", 0), ("notes.rst", 0), ("run.py", 3)])
def test_documentation_beside_a_good_pair_is_no_launch(
    tmp_path: Path, name: str, code: int
) -> None:
    """A README's ``vllm serve`` example is documentation, passed over in a folder scan; the
    same text in a file of another type no reader takes is listed as not read (exit 3)."""
    (tmp_path / "pd.yaml").write_text(GOOD_YAML)
    (tmp_path / name).write_text("Start it with:\n\n    vllm serve Qwen/Qwen3-8B -tp 8\n")
    result = runner.invoke(app, ["audit", str(tmp_path)])
    assert result.exit_code == code, result.stdout
    assert (f"not read: {tmp_path / name}" in result.stdout) == (code == 3)
