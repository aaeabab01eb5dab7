"""Audit reads what a deployment refers to in other files of the run (QA defects A-C).

Each case is built so that the one variable or flag the other file sets decides a rule:
``VLLM_SSM_CONV_STATE_LAYOUT=DS`` on prefill only is KVA008 (docs/rules.md); with the
reference not read, both pools look alike (SD default) and nothing fires.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from kvalign.audit import run_audit
from kvalign.deploy import read_paths

_ARGS = (
    "[tiiuae/Falcon-H1-0.5B-Base, --tensor-parallel-size, '1', --kv-transfer-config, "
    '\'{{"kv_connector":"NixlConnector","kv_role":"{role}"}}\']'
)


def _workload(role: str, kv_role: str, env_from: str = "") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: falcon-{role}, labels: {{role: {role}}}}}
        spec:
          template:
            metadata: {{labels: {{role: {role}}}}}
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.18.0
                  args: {_ARGS.format(role=kv_role)}
        """
    ) + (f"          envFrom:\n            - {env_from}\n" if env_from else "")


def _manifests(tmp_path: Path, env_from: str) -> Path:
    (tmp_path / "pd.yaml").write_text(
        _workload("prefill", "kv_producer", env_from) + "---\n" + _workload("decode", "kv_consumer")
    )
    return tmp_path / "pd.yaml"


_LAYOUT_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: layout}\n"
_LAYOUT_CM += "data: {VLLM_SSM_CONV_STATE_LAYOUT: DS}\n"


def _rules(paths: list[str]) -> set[str]:
    deployments, _ = read_paths(paths)
    return {f.rule for f in run_audit(deployments).findings}


def test_envfrom_configmap_in_another_file_is_read(tmp_path: Path) -> None:
    manifest = _manifests(tmp_path, "configMapRef: {name: layout}")
    (tmp_path / "cm.yaml").write_text(_LAYOUT_CM)
    # the folder, and the two files by name: both see the ConfigMap
    assert "KVA008" in _rules([str(tmp_path)])
    assert "KVA008" in _rules([str(manifest), str(tmp_path / "cm.yaml")])
    deployments, _ = read_paths([str(tmp_path)])
    notes = [p.message for d in deployments for p in d.problems if not p.blocking]
    assert f"vllm: envFrom ConfigMap layout read from {tmp_path / 'cm.yaml'}" in notes


def test_envfrom_missing_from_the_run_is_a_note_naming_it(tmp_path: Path) -> None:
    manifest = _manifests(tmp_path, "secretRef: {name: vllm-env}")
    deployments, _ = read_paths([str(manifest)])
    (deployment,) = deployments
    assert len(deployment.pools) == 2  # still evaluated with what is known
    notes = [p for p in deployment.problems if "vllm-env" in p.message]
    assert len(notes) == 1 and not notes[0].blocking
    assert "envFrom Secret vllm-env is not in the audited files" in notes[0].message
    assert notes[0].location.line == 12  # envFrom: is line 12 of _workload (count above)
    manifest = _manifests(tmp_path, "configMapRef: {name: layout}")
    (deployment,) = read_paths([str(manifest)])[0]
    assert any("envFrom ConfigMap layout is not in" in p.message for p in deployment.problems)


def _serve(config: str, role: str, tp: int | None = None) -> str:
    kv = "kv_producer" if role == "prefill" else "kv_consumer"
    flags = f"--config {config}" if tp is None else f"-tp {tp}"
    return (
        f"vllm serve tiiuae/Falcon-H1-0.5B-Base {flags} "
        f'--kv-transfer-config \'{{"kv_connector":"NixlConnector","kv_role":"{kv}"}}\'\n'
    )


def test_absolute_config_inside_the_folder_is_read(tmp_path: Path) -> None:
    (tmp_path / "p.cfg.yaml").write_text("tensor-parallel-size: 4\n")
    script = tmp_path / "pd.sh"
    config = tmp_path / "p.cfg.yaml"
    script.write_text(_serve(str(config), "prefill") + _serve("", "decode", tp=1))
    (deployment,) = read_paths([str(tmp_path)])[0]
    assert not [p.message for p in deployment.problems if p.blocking]
    # the config's TP 4 is read: 400-token blocks vs 800 at TP 1 (test_audit's KVA001 case)
    assert sorted(p.tp for p in deployment.pools) == [1, 4]


def test_config_outside_the_folder_is_not_evaluated_for_that_launch_only(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from kvalign.cli import app

    outside = tmp_path / "elsewhere.cfg.yaml"
    outside.write_text("tensor-parallel-size: 4\n")
    folder = tmp_path / "audited"
    folder.mkdir()
    (folder / "a.sh").write_text(_serve(str(outside), "prefill") + _serve("", "decode", 1))
    (folder / "b.sh").write_text(_serve("", "prefill", 4) + _serve("", "decode", 1))
    result = CliRunner().invoke(app, ["audit", str(folder)])
    assert result.exit_code == 3, result.output  # not 2: the run is not aborted
    assert f"--config {outside}: outside the audited folder" in result.output
    assert "KVA001" in result.output  # b.sh's TP 4 / TP 1 pair is still reported


def _compose(env_file: str) -> str:
    def service(role: str, extra: str) -> str:
        command = _serve("", role, 1).removeprefix("vllm serve ").strip()
        return f"  {role}:\n    image: vllm/vllm-openai:v0.18.0\n    command: {command}\n{extra}"

    return "services:\n" + service("prefill", env_file) + service("decode", "")


def test_compose_env_file_is_read(tmp_path: Path) -> None:
    # comments, quotes removed, no expansion; `environment` overrides the file (Compose)
    (tmp_path / "p.env").write_text(
        "# layout\nVLLM_SSM_CONV_STATE_LAYOUT='DS'\nHOME_X=$HOME\nOVERRIDDEN=file\n"
    )
    compose = tmp_path / "compose.yaml"
    compose.write_text(_compose("    env_file: [p.env]\n    environment: {OVERRIDDEN: service}\n"))
    (deployment,) = read_paths([str(compose)])[0]
    env = dict(next(p for p in deployment.pools if p.role == "prefill").env)
    assert env["VLLM_SSM_CONV_STATE_LAYOUT"] == "DS"
    assert env["HOME_X"] == "$HOME"
    assert env["OVERRIDDEN"] == "service"
    assert "KVA008" in _rules([str(compose)])


def test_compose_env_file_not_read_is_not_evaluated(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kvalign.cli import app

    folder = tmp_path / "audited"
    folder.mkdir()
    (tmp_path / "outside.env").write_text("VLLM_SSM_CONV_STATE_LAYOUT=DS\n")
    for env_file in ("missing.env", "../outside.env"):
        compose = folder / "compose.yaml"
        compose.write_text(_compose(f"    env_file: {env_file}\n"))
        result = CliRunner().invoke(app, ["audit", str(compose)])
        assert result.exit_code == 3, result.output
        assert f"env_file {env_file}" in result.output
