"""kvalign.cli.fast serves plain ``audit PATH...`` lines without typer (and click and
pydantic): the same stdout, stderr and exit code as typer's command, which runs the same
body (kvalign.cli.audit_run.execute); any other audit line is left to typer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from enum import Enum
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.cli.app import main as typer_main
from kvalign.cli.fast import audit_options, parse_audit
from kvalign.cli.fast import main as fast_main
from tests.cli.entry import outcome

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "deployments"


def test_fast_audit_options_are_typers() -> None:
    # each option the fast path reads is declared so by typer's click command: its
    # spellings (no --no- form), a flag setting True or an enum value, and its default
    import typer

    params = {p.name: p for p in typer.main.get_command(app).commands["audit"].params}
    for name, (default, spelled) in audit_options().items():
        param = params[name]
        assert sorted(param.opts) == sorted(spelled) and not param.secondary_opts, name
        assert param.default == default, name
        kinds = set(map(repr, spelled.values()))
        assert len(kinds) == 1, name
        (kind,) = set(spelled.values())
        if param.is_flag:
            assert kind is True, name
        else:
            assert isinstance(kind, type) and issubclass(kind, Enum), name
            assert isinstance(default, kind), name


@pytest.mark.parametrize(
    "args",
    [
        [],  # PATH missing: typer's message
        ["--help"],
        ["-"],  # stdin
        [""],
        ["a", "--format", "JSON"],  # not a value as spelled
        ["a", "--format=json"],
        ["a", "--format"],
        ["a", "--gpu", "H100"],  # an option the fast path does not read
        ["a", "--verbose", "--verbose"],
        ["a", "-qv"],
    ],
)
def test_left_to_typer(args: list[str]) -> None:
    assert parse_audit(args) is None


def test_values_as_declared() -> None:
    kwargs = parse_audit(["a", "--format", "json", "b", "-q", "--fail-on", "warning"])
    assert kwargs is not None
    assert kwargs["paths"] == ["a", "b"] and kwargs["quiet"] is True
    assert kwargs["output_format"].value == "json" and kwargs["fail_on"].value == "warning"
    assert kwargs["verbose"] is False and kwargs["pair_by"].value == "label"


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("audit") / "examples"
    shutil.copytree(EXAMPLES, folder)
    return folder


def _lines(folder: Path) -> list[list[str]]:
    one = str(folder / "command-line" / "falcon-h1-bad.sh")
    return [
        ["audit", str(folder)],  # findings and not-evaluated files: exit 3 or 1
        ["audit", str(folder), "--format", "json"],
        ["audit", str(folder), "--verbose", "--pair-by", "file"],
        ["audit", one, "--quiet", "--fail-on", "warning"],
        ["audit", one, "--format", "markdown", "--no-cache"],
        ["audit", str(folder / "no-such-file.yaml"), "--format", "json"],  # exit 2
        ["audit", str(folder / "command-line" / "falcon-h1-common.yaml")],  # no pool: exit 2
        ["audit", str(folder / "kvalign"), "--skip-unrelated", "--format", "sarif"],
    ]


def test_known_lines_match_typer(examples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args in _lines(examples):
        assert parse_audit(args[1:]) is not None, args
        typer_outcome = outcome(typer_main, args, capsys)
        fast_outcome = outcome(fast_main, args, capsys)
        assert fast_outcome == typer_outcome, args
        out, _err, code = fast_outcome
        assert code in (0, 1, 2, 3), args
        if "json" in args:
            json.loads(out)  # a document, also on an error


def test_a_plain_audit_imports_no_cli_framework(examples: Path, tmp_path: Path) -> None:
    args = ["audit", str(examples / "command-line" / "falcon-h1-bad.sh"), "--format", "json"]
    probe = (
        "import sys\n"
        "from kvalign.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', "
        "'pydantic', 'rich'))\n"
        "sys.stderr.write(f'exit={code} loaded={loaded}\\n')\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(tmp_path), COLUMNS="120")
    fast = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    typer_path = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert fast.stderr.strip().splitlines()[-1] == f"exit={typer_path.exit_code} loaded=[]"
    assert fast.stdout == typer_path.stdout
