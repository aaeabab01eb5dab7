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
from kvalign.deploy.kustomize import (
    kustomization,
    looks_remote,
    named_folders,
    remote_references,
    walk,
)


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


@pytest.mark.parametrize(
    ("entry", "remote"),
    [
        ("https://h/x", True), ("git+ssh://h/x", True), ("git::https://h/x", True),
        ("ssh:h/x", True), ("file:///etc", True), ("git@github.com:o/r", True),
        ("org-1@github.com:o/r", True), ("example.com/org/repo", True),
        ("a.b-c.d/x", True), ("host.tld:8080/x", True), ("  https://h/x", True),
        ("plain/sub//deep", True), ("base?ref=v1", True),
        ("../gone", False), ("plain/sub", False), ("example.com", False), ("app.yaml", False),
        ("9x/y", False), ("./a.b/c", False), ("-x", False),
    ],
)  # fmt: skip
def test_what_looks_remote(entry: str, remote: bool) -> None:
    # kustomize's remote targets: a scheme, a Git "user@host:" reference, "host.tld/…",
    # a "//" subfolder or a "?ref=" query
    assert looks_remote(entry) is remote


def test_remote_targets_and_helm_repositories(tmp_path: Path) -> None:
    root = _root(
        tmp_path / "r",
        "resources:\n"
        "- git+ssh://h/x\n"  # a scheme with "+"
        "- example.com/org/repo\n"  # host.tld/…
        "- a.b-c.d/x\n"
        "- git@host:org/repo\n"
        "- 9x://h/y\n"  # no scheme (starts with a digit), but a "//": remote
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
        "9x://h/y",
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


@pytest.mark.parametrize(
    ("bound", "found", "truncated"),
    [(2, [], True), (3, ["https://c.example.com/x"], False)],
)
def test_at_most_max_files_kustomizations_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int, found: list[str], truncated: bool
) -> None:
    # a chain o -> b -> c: the remote target is in the third file read; a walk stopped
    # by the bound says so (the root is then refused, never rendered unchecked)
    assert kustomize.MAX_FILES == 200
    monkeypatch.setattr(kustomize, "MAX_FILES", bound)
    root = _root(tmp_path / "o", "resources:\n- ../b\n")
    _root(tmp_path / "b", "resources:\n- ../c\n")
    _root(tmp_path / "c", "resources:\n- https://c.example.com/x\n")
    walked = walk(root)
    assert (walked.remote, walked.truncated) == (found, truncated)
    assert walked.folders == [root, tmp_path / "o/../b", tmp_path / "o/../b/../c"][:bound]


def test_every_field_that_names_a_path_is_checked(tmp_path: Path) -> None:
    # one remote entry per field kustomize loads a file, folder or URL from; the local
    # ones (files, folders) are recorded, the folders followed
    root = _root(
        tmp_path / "o",
        "resources: [https://r.example/x]\n"
        "bases: [https://b.example/x]\n"
        "components: [https://c.example/x]\n"
        "crds: [https://crd.example/x]\n"
        "configurations: [https://conf.example/x]\n"
        "patchesStrategicMerge: [https://smp.example/x]\n"
        "patches: [{path: https://p.example/x}, {patch: 'see https://no.example/x'}]\n"
        "patchesJson6902: [{path: https://j.example/x}]\n"
        "replacements: [{path: https://rep.example/x}]\n"
        "configMapGenerator: [{files: [k=https://f.example/x], envs: [https://e.example/x]}]\n"
        "secretGenerator: [{env: https://env.example/x, literals: [k=https://no.example/l]}]\n"
        "helmCharts: [{name: c, repo: local-looking-repo, valuesFile: https://v.example/x}]\n"
        "helmGlobals: {chartHome: https://home.example/x}\n"
        "openapi: {path: https://api.example/x}\n"
        "generators: [https://g.example/x]\n"
        "transformers: [https://t.example/x]\n"
        "validators: [https://val.example/x]\n"
        "commonAnnotations: {docs: https://no.example/a}\n"
        "images: [{name: x, newName: gcr.io/no/image}]\n",
    )
    assert remote_references(root) == [
        "https://r.example/x", "https://b.example/x", "https://c.example/x",
        "https://crd.example/x", "https://conf.example/x", "https://smp.example/x",
        "https://g.example/x", "https://t.example/x", "https://val.example/x",
        "https://p.example/x", "https://j.example/x", "https://rep.example/x",
        "https://f.example/x", "https://e.example/x", "https://env.example/x",
        "local-looking-repo", "https://v.example/x", "https://home.example/x",
        "https://api.example/x",
    ]  # fmt: skip


def test_plugin_configurations_are_read_for_urls(tmp_path: Path) -> None:
    # a transformer configuration (a file, or inline) loads what its strings name: only
    # what is a URL for sure counts there (an image name looks like a host path)
    root = _root(
        tmp_path / "o",
        "transformers:\n- t.yaml\n- |\n  kind: PatchTransformer\n  path: git::https://i/x\n"
        "  image: gcr.io/fn/x\n- plugins\n",
    )
    (root / "t.yaml").write_text("kind: PatchTransformer\npath: https://t.example/p\n")
    _root(root / "plugins", "resources: [git@h:o/r]\n")
    walked = walk(root)
    assert walked.remote == ["https://t.example/p", "git::https://i/x", "git@h:o/r"]
    assert walked.files == [root / "kustomization.yaml", root / "t.yaml",
                            root / "plugins" / "kustomization.yaml"]  # fmt: skip
    assert named_folders(root) == [root / "plugins"]


def test_a_kustomization_written_as_json(tmp_path: Path) -> None:
    root = _root(tmp_path / "o", '{"resources": ["app.yaml", "github.com/o/r//x?ref=v1"]}')
    (root / "app.yaml").write_text("kind: Pod\n")
    assert remote_references(root) == ["github.com/o/r//x?ref=v1"]
    assert walk(root).files == [root / "kustomization.yaml", root / "app.yaml"]


def test_a_helm_repository_named_twice_in_one_file_is_listed_once(tmp_path: Path) -> None:
    # two charts of one repository: one remote target, as an entry named twice is
    root = _root(
        tmp_path / "o", "helmCharts:\n- name: a\n  repo: oci://r\n- name: b\n  repo: oci://r\n"
    )
    assert remote_references(root) == ["oci://r"]
