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


# ---- the fix has one key: ``fix`` in check, matrix and audit --------------------------------
ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "configs" / "deployments" / "kvalign"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


@pytest.mark.parametrize("command", [["check", NANO, "--prefill-tp", "8"], ["matrix", NANO]])
def test_check_and_matrix_name_the_fix_fix(command: list[str]) -> None:
    data = json.loads(runner.invoke(app, [*command, "--format", "json"]).stdout)
    # Nemotron 3 Nano TP 8 vs TP 1: 2096 is the common block size (docs/why.md)
    assert data["fix"]["block_size"] == 2096
    assert data["recommendation"] == data["fix"]  # the former name, until schema_version 2


def test_audit_groups_carry_the_fix_their_findings_name() -> None:
    bad = json.loads(
        runner.invoke(
            app, ["audit", str(DEPLOY / "nemotron-nano-bad.yaml"), "--format", "json"]
        ).stdout
    )
    (group,) = bad["groups"]
    assert group["fix"]["text"].startswith("set --block-size 2096 on every prefill and decode")
    assert {f["remediation"] for f in bad["findings"]} == {group["fix"]["text"]}
    good = runner.invoke(
        app, ["audit", str(DEPLOY / "nemotron-nano-good.yaml"), "--format", "json"]
    )
    assert [g["fix"] for g in json.loads(good.stdout)["groups"]] == [None]
