"""Helm chart folders and kustomize roots in a folder scan: rendered with the
renderer on PATH, each pool keeping its source file and line; with none on PATH, not
evaluated (exit 3) naming the command to render and pipe. Both branches by PATH:
kubectl is a real renderer here; helm is replaced by a stand-in that prints what
``helm template`` prints for the chart (the ``# Source:`` comments included), since helm
cannot be installed on this machine."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app

ROOT = Path(__file__).resolve().parents[2]
SPLIT_GOOD = ROOT / "configs" / "deployments" / "kubernetes" / "split-good"
runner = CliRunner()


def _kustomize(tmp_path: Path) -> Path:
    deploy = tmp_path / "deploy"
    base, overlay = deploy / "base", deploy / "overlay"
    base.mkdir(parents=True)
    overlay.mkdir()
    for name in ("prefill.yaml", "decode.yaml"):
        shutil.copy(SPLIT_GOOD / name, base / name)
    (base / "kustomization.yaml").write_text("resources:\n- prefill.yaml\n- decode.yaml\n")
    (overlay / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: prod-\n")
    return deploy


def _path_with(tmp_path: Path, *tools: str) -> str:
    """A PATH holding only this interpreter's folder and the named tools."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    return f"{folder}{os.pathsep}{Path(sys.executable).parent}"


def _need_kubectl() -> None:
    """Skip without kubectl, but fail when CI is set (.ci/run installs it)."""
    if shutil.which("kubectl") is None:
        if os.environ.get("CI"):
            pytest.fail("kubectl is not on PATH (CI is set: .ci/run installs it)")
        pytest.skip("kubectl not on PATH")


def test_a_kustomize_overlay_is_rendered_and_keeps_its_source_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _need_kubectl()
    deploy = _kustomize(tmp_path)
    monkeypatch.setenv("PATH", _path_with(tmp_path, "kubectl"))
    result = runner.invoke(app, ["audit", str(deploy), "--format", "json"])
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    # the base is read through the overlay, once: one pair, TP 8 on both sides
    pools = [(p["role"], p["tp"], p["name"], p["file"], p["line"])
             for f in report["files"] for p in f["pools"]]  # fmt: skip
    base = deploy / "base"
    assert pools == [
        ("prefill", 8, "prod-ms-qwen35-llm-d-modelservice-prefill", str(base / "prefill.yaml"), 9),
        ("decode", 8, "prod-ms-qwen35-llm-d-modelservice-decode", str(base / "decode.yaml"), 8),
    ]  # lines of `name: ms-qwen35-llm-d-modelservice-…` in those files
    assert [f["file"] for f in report["files"]] == [str(deploy / "overlay" / "kustomization.yaml")]


def test_without_a_renderer_the_folder_is_not_evaluated_and_the_command_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy = _kustomize(tmp_path)
    monkeypatch.setenv("PATH", _path_with(tmp_path))
    result = runner.invoke(app, ["audit", str(deploy)])
    assert result.exit_code == 3
    assert f"`kubectl kustomize {deploy / 'overlay'} | kvalign audit -" in result.stdout
    chart = _chart(tmp_path)
    result = runner.invoke(app, ["audit", str(chart.parent)])
    assert result.exit_code == 3
    assert f"`helm template vllm-pd {chart} | kvalign audit -`" in result.stdout


def _chart(tmp_path: Path) -> Path:
    chart = tmp_path / "charts" / "vllm-pd"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: vllm-pd\nversion: 0.1.0\n")
    for name in ("prefill.yaml", "decode.yaml"):
        text = (SPLIT_GOOD / name).read_text().replace('"8"', '"{{ .Values.tp }}"')
        (chart / "templates" / name).write_text(text)
    (chart / "values.yaml").write_text("tp: 8\n")
    return chart


def test_a_helm_chart_is_rendered_with_helm_and_keeps_its_template_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = _chart(tmp_path)
    # the stand-in prints `helm template vllm-pd CHART` for this chart: each template with
    # its values filled in, under the `# Source: vllm-pd/templates/FILE` line helm writes
    rendered = "".join(
        f"---\n# Source: vllm-pd/templates/{name}\n"
        + (chart / "templates" / name).read_text().replace("{{ .Values.tp }}", "8")
        for name in ("decode.yaml", "prefill.yaml")
    )
    (tmp_path / "rendered.yaml").write_text(rendered)
    folder = tmp_path / "bin"
    folder.mkdir()
    helm = folder / "helm"
    helm.write_text(
        f'#!/bin/sh\n[ "$1 $2 $3 $4" = "template -- vllm-pd {chart}" ] || exit 9\n'
        f"cat {tmp_path / 'rendered.yaml'}\n"
    )
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin")
    result = runner.invoke(app, ["audit", str(chart.parent), "--format", "json"])
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    pools = [
        (p["role"], p["tp"], p["file"], p["line"]) for f in report["files"] for p in f["pools"]
    ]
    templates = chart / "templates"
    # line within each template: the workload's `metadata:` block (the pool's line)
    lines = {
        n: next(
            i
            for i, s in enumerate((templates / n).read_text().splitlines(), 1)
            if s.startswith("  name:")
        )
        for n in ("decode.yaml", "prefill.yaml")
    }
    assert [(r, tp, Path(f).name) for r, tp, f, _ in pools] == [
        ("decode", 8, "decode.yaml"), ("prefill", 8, "prefill.yaml"),
    ]  # fmt: skip
    assert all(str(templates) in f for _, _, f, _ in pools)
    assert [line for *_, line in pools] == [lines["decode.yaml"], lines["prefill.yaml"]]


def test_the_folders_a_root_search_looks_at(tmp_path: Path) -> None:
    # every folder below the path, as rglob("*") + is_dir() finds them: nested and
    # hidden folders, a symbolic link to a folder (listed, not entered), not files nor
    # a dangling link
    from kvalign.deploy.render import _folders

    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / ".hidden" / "d").mkdir(parents=True)
    (tmp_path / "a" / "file.yaml").write_text("x: 1\n")
    (tmp_path / "elsewhere" / "inside").mkdir(parents=True)
    (tmp_path / "a" / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "dangling").symlink_to(tmp_path / "missing")
    expected = {
        tmp_path / name
        for name in (
            "a", "a/b", "a/b/c", ".hidden", ".hidden/d", "elsewhere", "elsewhere/inside",
            "a/link",
        )
    }  # fmt: skip
    assert set(_folders(tmp_path)) == expected
    assert sorted(_folders(tmp_path)) == sorted(p for p in tmp_path.rglob("*") if p.is_dir())
