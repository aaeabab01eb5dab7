"""audit behaviour issue 10 asks for beyond reading: D2 (one unevaluable pool hides nothing),
D4 (a JSON document and the reasons on exit 2), A5 (--skip-unrelated and vLLM launches)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvalign.audit import run_audit
from kvalign.cli import app
from kvalign.deploy import read_paths

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
NOT_VLLM = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: prefill}
spec:
  template:
    spec:
      containers:
      - {name: server, image: registry.example.com/infer:1, args: [--workers, "2"]}
"""


def test_a_pool_whose_model_cannot_load_hides_nothing(tmp_path: Path) -> None:
    # the prefill pool names a model that is nowhere (offline, not bundled): that pool is
    # not evaluated; the decode pool's TP 16 is still found invalid (KVA010: Nemotron 3
    # Nano has n_groups 8, so TP 16 does not divide it)
    path = tmp_path / "pd.yaml"
    path.write_text(
        f"model: {NANO}\nprefill: {{model: ./no/such/model, tp: 1}}\ndecode: {{tp: 16}}\n",
        encoding="utf-8",
    )
    deployments, _ = read_paths([str(path)])
    report = run_audit(deployments)
    assert [p.message.split(":")[0] for p in report.unevaluated] == ["prefill/prefill"]
    assert [f.rule for f in report.findings] == ["KVA010"]
    assert [r.pool.label for f in report.files for r in f.pools] == ["decode/decode"]
    assert report.exit_code("error") == 3
    assert any(
        "could not be evaluated (listed as not evaluated)" in p.message for p in report.problems
    )


def test_json_error_document_goes_to_output_and_keeps_the_reason(tmp_path: Path) -> None:
    manifest = tmp_path / "d.yaml"
    manifest.write_text(NOT_VLLM, encoding="utf-8")
    out = tmp_path / "report.json"
    result = runner.invoke(
        app, ["audit", str(manifest), "--format", "json", "--output", str(out), "--verbose"]
    )
    assert result.exit_code == 2
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["error"]["exit_code"] == 2
    assert "no prefill/decode deployment found" in document["error"]["message"]
    (reason,) = document["error"]["reasons"]
    assert reason["line"] == 3 and "is not a vllm image" in reason["message"]
    assert f"kvalign: note: {manifest}:3: prefill: container 'server'" in result.stderr


def test_json_error_document_on_an_empty_scan(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(tmp_path), "--format", "json"])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["findings"] == [] and document["files"] == []
    assert "kvalign reads: kvalign YAML" in document["error"]["message"]


def test_a_roleless_launch_is_not_evaluated_unless_skip_unrelated(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("vllm serve org/m --port 8000\nvllm serve org/m --port 8001\n")
    strict = runner.invoke(app, ["audit", str(script)])
    assert strict.exit_code == 3
    assert "launches vLLM but no prefill/decode pool was read: command-1: role unknown" in (
        strict.stderr
    )
    relaxed = runner.invoke(app, ["audit", str(script), "--skip-unrelated"])
    assert relaxed.exit_code == 0
    assert "command-1: role unknown" in relaxed.stderr and "skipped (--skip-unrelated)" in (
        relaxed.stderr
    )


def test_stdin_without_a_deployment_lists_every_input_kind() -> None:
    result = runner.invoke(app, ["audit", "-", "--format", "json"], input=NOT_VLLM)
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["message"].startswith("-: stdin holds no deployment kvalign can read (prefill:")
    assert "KServe LLMInferenceService" in error["message"]
    assert [r["line"] for r in error["reasons"]] == [3]
