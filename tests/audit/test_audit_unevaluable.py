"""audit behaviour beyond reading: one unevaluable pool hides nothing, a JSON document and the
reasons on exit 2, --skip-unrelated and vLLM launches that yield no pool."""

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
    # the decode pool left unpaired is a KVA013 finding (was a problem)
    assert [f.rule for f in report.findings] == ["KVA010", "KVA013"]
    assert [r.pool.label for f in report.files for r in f.pools] == ["decode/decode"]
    assert report.exit_code("error") == 3
    assert "could not be evaluated" in report.findings[1].message


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


def test_a_roleless_launch_is_not_evaluated_even_with_skip_unrelated(tmp_path: Path) -> None:
    # two kv_both launches of one model are a P/D pair whose roles are not named
    # (a launch with no --kv-transfer-config is now a standalone server: see below)
    script = tmp_path / "serve.sh"
    both = """--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'"""
    script.write_text(f"vllm serve org/m --port 8000 {both}\nvllm serve org/m --port 8001 {both}\n")
    strict = runner.invoke(app, ["audit", str(script)])
    assert strict.exit_code == 3
    # printed once, in the report (was on stderr as well)
    assert "launches vLLM but no prefill/decode pool was read: command-1: role unknown" in (
        strict.stdout
    )
    assert "role unknown" not in strict.stderr
    # --skip-unrelated skips only files with no vLLM launch or connector: a launch found
    # but not understood is still not evaluated (it was skipped with a warning, exit 0)
    relaxed = runner.invoke(app, ["audit", str(script), "--skip-unrelated"])
    assert relaxed.exit_code == 3
    assert "command-1: role unknown" in relaxed.stdout
    assert "skipped (--skip-unrelated)" not in relaxed.stderr


def test_launches_without_kv_transfer_config_are_standalone_servers(tmp_path: Path) -> None:
    # no --kv-transfer-config means no P/D pool: two aggregated servers, each a
    # note, exit 0; their own rules still run (Nemotron 3 Nano has n_groups 8: TP 16 is
    # invalid, KVA010)
    script = tmp_path / "serve.sh"
    script.write_text(f"vllm serve {NANO} --port 8000\nvllm serve {NANO} -tp 16 --port 8001\n")
    result = runner.invoke(app, ["audit", str(script), "--format", "json"])
    report = json.loads(result.stdout)
    assert [p["role"] for f in report["files"] for p in f["pools"]] == ["server", "server"]
    assert [f["rule"] for f in report["findings"]] == ["KVA010"]
    assert sum("standalone server" in n for n in report["notes"]) == 2
    assert result.exit_code == 1  # KVA010 is an error


def test_stdin_without_a_deployment_lists_every_input_kind() -> None:
    result = runner.invoke(app, ["audit", "-", "--format", "json"], input=NOT_VLLM)
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["message"].startswith("-: stdin holds no deployment kvalign can read (prefill:")
    assert "KServe LLMInferenceService" in error["message"]
    assert [r["line"] for r in error["reasons"]] == [3]
