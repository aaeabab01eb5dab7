"""The kustomize remote-reference finder (kvalign/deploy/kustomize.py) pinned where a wrong
rule changes the answer, for its mutants (tests/mutation/run.py kustomize).

Expected values come from the kustomize documentation (kubectl.docs.kubernetes.io,
"kustomization": the file names ``kustomization.yaml``, ``kustomization.yml`` and
``Kustomization`` make a folder a root, tried in that order; ``resources`` /
``components`` entries are local paths or remote targets, a URL with a scheme, a Git
``git@host:`` reference or a ``host.tld/org/repo`` path; ``helmCharts`` entries name their
chart repository in ``repo``), kvalign's documented bound (``MAX_FILES`` kustomization
files) and the folders written in each test, read by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.deploy import kustomize
from kvalign.deploy.kustomize import entries, kustomization, remote_references


def _root(folder: Path, text: str, name: str = "kustomization.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


def test_the_kustomization_file_names_in_order(tmp_path: Path) -> None:
    assert kustomize.KUSTOMIZATIONS == ("kustomization.yaml", "kustomization.yml", "Kustomization")
    both = _root(tmp_path / "both", "", "kustomization.yml")
    (both / "kustomization.yaml").write_text("")
    assert kustomization(both) == both / "kustomization.yaml"
    yml = _root(tmp_path / "yml", "", "kustomization.yml")
    assert kustomization(yml) == yml / "kustomization.yml"
    bare = _root(tmp_path / "bare", "", "Kustomization")
    assert kustomization(bare) == bare / "Kustomization"
    (tmp_path / "none").mkdir()
    assert kustomization(tmp_path / "none") is None
    # a folder of that name is no kustomization file
    (tmp_path / "dir" / "kustomization.yaml").mkdir(parents=True)
    assert kustomization(tmp_path / "dir") is None


def test_list_entries_in_order() -> None:
    text = (
        "resources:\n"
        "- a.yaml\n"
        '  - "b c"\n'  # quoted: the first word (a path holds no blank in these tests)
        "\t-\t'd'  # a comment\n"
        "-e.yaml\n"
        "- f#g\n"
        "x: - no\n"  # a "-" after a key is no list entry
    )
    assert entries(text) == ["a.yaml", "b", "d", "e.yaml", "f"]


def test_remote_targets_and_helm_repositories(tmp_path: Path) -> None:
    root = _root(
        tmp_path / "r",
        "resources:\n"
        "- git+ssh://h/x\n"  # a scheme with "+"
        "- example.com/org/repo\n"  # host.tld/…
        "- a.b-c.d/x\n"
        "- git@host:org/repo\n"
        "- 9x://h/y\n"  # a scheme starts with a letter: neither remote nor present
        "- ../gone\n"  # missing and no host: not remote
        "- plain/sub\n"  # no dot before the first "/": a local path, missing
        "- example.com\n"  # no "/" after the host
        "- example.com/org/repo\n"  # named twice: listed once
        "helmCharts:\n"
        "- name: vllm\n"
        "  repo: 'oci://ghcr.io/charts'  # c\n"
        '-  repo:\t"https://charts.example.com"\n'
        "- repo: example.com/org/repo\n",  # already listed
    )
    assert remote_references(root) == [
        "git+ssh://h/x",
        "example.com/org/repo",
        "a.b-c.d/x",
        "git@host:org/repo",
        "oci://ghcr.io/charts",
        "https://charts.example.com",
    ]


def test_a_root_without_a_kustomization_names_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert remote_references(tmp_path / "empty") == []


def test_local_bases_are_followed_files_are_not(tmp_path: Path) -> None:
    # o names a file (not followed even though it holds "- https://…"), a folder with no
    # kustomization (nothing), and a base that names a remote target
    root = _root(tmp_path / "o", "resources:\n- app.yaml\n- plain\n- ../b\n")
    (root / "app.yaml").write_text("- https://file.example.com/x\n")
    (root / "plain").mkdir()
    (root / "plain" / "x.yaml").write_text("- https://plain.example.com/x\n")
    _root(tmp_path / "b", "resources:\n- https://b.example.com/x\n- ../o\n")
    assert remote_references(root) == ["https://b.example.com/x"]


def test_a_folder_named_twice_is_read_once(tmp_path: Path) -> None:
    # b through "b" and "./b": one folder (resolved), its entry listed once either way
    root = _root(tmp_path / "o", "resources:\n- b\n- ./b\n- c\n")
    _root(root / "b", "resources:\n- https://b.example.com/x\nhelmCharts:\n- repo: oci://r\n")
    _root(root / "c", "helmCharts:\n- repo: oci://r\n- repo: oci://c\n")
    assert remote_references(root) == ["https://b.example.com/x", "oci://r", "oci://c"]


@pytest.mark.parametrize(("bound", "found"), [(2, []), (3, ["https://c.example.com/x"])])
def test_at_most_max_files_kustomizations_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int, found: list[str]
) -> None:
    # a chain o -> b -> c: the remote target is in the third file read
    assert kustomize.MAX_FILES == 200
    monkeypatch.setattr(kustomize, "MAX_FILES", bound)
    root = _root(tmp_path / "o", "resources:\n- ../b\n")
    _root(tmp_path / "b", "resources:\n- ../c\n")
    _root(tmp_path / "c", "resources:\n- https://c.example.com/x\n")
    assert remote_references(root) == found


def test_a_helm_repository_named_twice_in_one_file_is_listed_once(tmp_path: Path) -> None:
    # two charts of one repository: one remote target, as an entry named twice is
    root = _root(
        tmp_path / "o", "helmCharts:\n- name: a\n  repo: oci://r\n- name: b\n  repo: oci://r\n"
    )
    assert remote_references(root) == ["oci://r"]
