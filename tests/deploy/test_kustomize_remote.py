"""kustomize roots that name remote resources are found before anything is rendered
(kvalign reaches no network; ``kubectl kustomize`` would run ``git fetch``)."""

from __future__ import annotations

from pathlib import Path

from kvalign.deploy.kustomize import remote_references


def _kustomization(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kustomization.yaml").write_text(text)
    return folder


def test_remote_entries_are_found_directly_and_through_local_bases(tmp_path: Path) -> None:
    base = _kustomization(
        tmp_path / "base",
        "resources:\n"
        "- deployment.yaml\n"
        "- https://github.com/example/does-not-exist//deploy?ref=main\n"
        "- github.com/example/other/deploy?ref=v1\n"
        "- git@github.com:example/private.git\n",
    )
    (base / "deployment.yaml").write_text("kind: Deployment\n")
    overlay = _kustomization(
        tmp_path / "overlay",
        "resources:\n- ../base\ncomponents:\n- 'ssh://git@example.com/comp.git'\n"
        "helmCharts:\n- name: vllm\n  repo: https://charts.example.com\n",
    )
    assert remote_references(overlay) == [
        "ssh://git@example.com/comp.git",
        "https://charts.example.com",
        "https://github.com/example/does-not-exist//deploy?ref=main",
        "github.com/example/other/deploy?ref=v1",
        "git@github.com:example/private.git",
    ]


def test_a_local_file_named_like_a_host_is_local(tmp_path: Path) -> None:
    """kustomize reads a file entry from disk first: ``github.com/x.yaml`` that exists
    is local; ``app.yaml`` and a base are local as ever (a cycle ends)."""
    root = _kustomization(tmp_path / "o", "resources:\n- github.com/x.yaml\n- app.yaml\n- ../b\n")
    (root / "github.com").mkdir()
    (root / "github.com" / "x.yaml").write_text("kind: Deployment\n")
    (root / "app.yaml").write_text("kind: Deployment\n")
    _kustomization(tmp_path / "b", "resources:\n- ../o\n")
    assert remote_references(root) == []


def test_a_planted_folder_never_clears_a_remote_entry(tmp_path: Path) -> None:
    """kustomize fetches ``http(s)://`` entries before it looks on disk, and tries a
    folder entry as a Git repository first: a folder (or file) planted under the same
    spelling (``Path`` folds ``//`` into ``/``) must not make the entry local."""
    text = (
        "resources:\n- github.com/org/repo\n- http://127.0.0.1:8123/x.yaml\n"
        "- git@github.com:org/repo\npatches:\n- path: https://127.0.0.1/p.yaml\n"
    )
    root = _kustomization(tmp_path / "o", text)
    (root / "github.com" / "org" / "repo").mkdir(parents=True)
    (root / "http:" / "127.0.0.1:8123").mkdir(parents=True)
    (root / "http:" / "127.0.0.1:8123" / "x.yaml").write_text("kind: ConfigMap\n")
    (root / "git@github.com:org" / "repo").mkdir(parents=True)
    (root / "https:" / "127.0.0.1").mkdir(parents=True)
    (root / "https:" / "127.0.0.1" / "p.yaml").write_text("kind: ConfigMap\n")
    assert remote_references(root) == [
        "github.com/org/repo",
        "http://127.0.0.1:8123/x.yaml",
        "git@github.com:org/repo",
        "https://127.0.0.1/p.yaml",
    ]


def test_audit_does_not_render_a_root_with_remote_resources(tmp_path: Path) -> None:
    """Exit 3 naming the entry and the command to render it by hand; the renderer is
    never started (a stand-in on PATH would have printed a manifest)."""
    import os
    import stat

    from typer.testing import CliRunner

    from kvalign.cli import app

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("kubectl", "kustomize"):
        fake = bin_dir / tool
        fake.write_text('#!/bin/sh\necho started > "$0.ran"\nexit 0\n')
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    root = _kustomization(tmp_path / "kz", "resources:\n- https://example.com/deploy.yaml\n")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = CliRunner().invoke(app, ["audit", str(root)], env=env)
    assert result.exit_code == 3
    assert (
        f"{root}/kustomization.yaml: a kustomize folder: not rendered: it names the remote "
        "resource https://example.com/deploy.yaml, which kustomize would fetch"
    ) in result.stdout
    assert not list(bin_dir.glob("*.ran"))
