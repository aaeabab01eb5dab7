"""The checked-in JSON Schemas (kvalign/schemas/<command>.json) against real outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from typer.testing import CliRunner

from kvalign.cli import app

runner = CliRunner()
SCHEMAS = Path(__file__).resolve().parents[2] / "kvalign" / "schemas"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN = "Qwen/Qwen3.5-397B-A17B"
COMMANDS = ("check", "matrix", "explain", "survey", "verify", "audit", "models", "rules", "plan")


def _validator(command: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{command}.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _run(args: list[str]) -> object:
    done = runner.invoke(app, [*args, "--format", "json"], env={"VLLM_LOGGING_LEVEL": "ERROR"})
    return json.loads(done.stdout)


def test_one_schema_per_command() -> None:
    assert sorted(p.stem for p in SCHEMAS.glob("*.json")) == sorted(COMMANDS)


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("check", ["check", NANO, "--prefill-tp", "2", "--decode-tp", "1,8"]),
        ("check", ["check", QWEN, "--prefill-tp", "8", "--decode-tp", "1", "--gpu", "H200"]),
        ("matrix", ["matrix", NANO, "--tp", "1,4", "--alignment", "tp-stable"]),
        ("explain", ["explain", NANO, "--tp", "8"]),
        ("survey", ["survey", NANO, QWEN, "--tp", "1,2,4"]),
        ("models", ["models"]),
        ("rules", ["rules"]),
        ("rules", ["rules", "KVA001"]),
        ("plan", ["plan", QWEN, "--prefill-tp", "4", "--decode-tp", "2"]),
        ("verify", ["verify", NANO, "--tp", "1"]),  # a verification, or the error without vLLM
    ],
)
def test_real_outputs_match_their_schema(command: str, args: list[str]) -> None:
    _validator(command).validate(_run(args))


@pytest.mark.parametrize("folder", ["kvalign", "command-line", "kubernetes", "llm-d"])
def test_audit_output_matches_its_schema(folder: str) -> None:
    deployments = SCHEMAS.parents[1] / "configs" / "deployments" / folder
    _validator("audit").validate(_run(["audit", str(deployments)]))


@pytest.mark.parametrize("command", ["check", "matrix", "explain", "survey", "verify", "plan"])
def test_error_documents_match_the_schema(command: str) -> None:
    doc = _run([command, "no/such-model-anywhere", "--no-cache"])
    assert isinstance(doc, dict) and doc["error"]["exit_code"] == 2
    _validator(command).validate(doc)


def test_a_document_missing_a_key_or_with_a_wrong_verdict_fails() -> None:
    validator = _validator("check")
    doc = _run(["check", NANO, "--prefill-tp", "8", "--decode-tp", "4"])
    assert isinstance(doc, dict)
    without = {k: v for k, v in doc.items() if k != "pairs"}
    assert not validator.is_valid(without)
    doc["pairs"][0]["verdict"] = "fine"  # not one of the policy's verdicts
    assert not validator.is_valid(doc)
