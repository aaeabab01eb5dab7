"""Every command prints a JSON error document on stdout when ``--format json`` stops on
bad input (exit 2); the one-line message still goes to stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    "args",
    [
        ["check", "{missing}"],
        ["matrix", "{missing}"],
        ["explain", "{missing}"],
        ["survey", "{missing}"],
        ["verify", "{missing}"],
        ["rules", "KVA999"],
        ["survey", "--tp", "0"],  # an out-of-range TP list is kvalign's check, not click's
    ],
)
def test_json_error_document(args: list[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-model")
    argv = [a.replace("{missing}", missing) for a in args] + ["--format", "json"]
    result = runner.invoke(app, argv)
    assert result.exit_code == 2, result.output
    document = json.loads(result.stdout)
    assert document["error"]["exit_code"] == 2
    message = document["error"]["message"]
    assert message and f"kvalign: error: {message}" in result.stderr
