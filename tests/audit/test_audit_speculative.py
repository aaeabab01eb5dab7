"""audit on launches with ``--speculative-config`` fields it cannot read: the launch is not
evaluated (exit 3), naming the field; never a silent pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app

runner = CliRunner()
LFM2 = "LiquidAI/LFM2-1.2B"


def _pair(tmp_path: Path, spec: str) -> Path:
    transfer = '\'{"kv_connector":"NixlConnector","kv_role":"%s"}\''
    base = f"vllm serve {LFM2} --speculative-config '{spec}'"
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"{base} --kv-transfer-config {transfer % 'kv_producer'} &\n"
        f"{base} --kv-transfer-config {transfer % 'kv_consumer'} &\n",
        encoding="utf-8",
    )
    return script


@pytest.mark.parametrize(
    ("method", "shown"),
    [
        # vLLM validates SpeculativeConfig.method as one of its names, a string
        # (vllm/config/speculative.py, SpeculativeMethod): none of these can start
        ('{"name": "extract_hidden_states"}', '\'{"name": "extract_hidden_states"}\''),
        ("7", "'7'"),
        ('["mtp"]', "'[\"mtp\"]'"),
    ],
)
def test_a_method_that_is_not_a_string_is_not_evaluated(
    tmp_path: Path, method: str, shown: str
) -> None:
    script = _pair(tmp_path, '{"method": ' + method + ', "num_speculative_tokens": 1}')
    done = runner.invoke(app, ["audit", str(script)])
    assert done.exit_code == 3, done.output
    expected = f"--speculative-config.method: expected a method name (a JSON string), got {shown}"
    assert done.output.count(expected) == 2  # both launches
    assert "Traceback" not in done.output


def test_a_method_that_is_not_a_string_is_an_unevaluated_file_in_json(tmp_path: Path) -> None:
    script = _pair(tmp_path, '{"method": 7}')
    done = runner.invoke(app, ["audit", str(script), "--format", "json"])
    assert done.exit_code == 3
    document = json.loads(done.stdout)
    assert document["groups"] == []
    text = json.dumps(document)
    assert "--speculative-config.method: expected a method name (a JSON string)" in text
