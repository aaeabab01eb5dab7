"""The deployment readers' registry (kvalign/deploy/registry.py): one Reader per layout,
tried in order, the first that takes a file reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.deploy.interface import Source
from kvalign.deploy.registry import READERS, reader_for
from kvalign.errors import InvalidConfig

SERVE = "vllm serve org/m -tp 2\n"


def test_readers_are_tried_in_their_documented_order() -> None:
    assert [r.kind for r in READERS] == [
        "helm-template",
        "justfile",
        "kvalign",
        "production-stack",
        "compose",
        "ray-serve",  # Ray Serve LLM P/D configs
        "aibrix",  # AIBrix StormService
        "kubernetes",
        "llm-d-benchmark",  # llm-d-benchmark scenarios (LLMDBENCH_* variables)
        "command-line",
    ]


@pytest.mark.parametrize(
    ("file", "text", "kind"),
    [
        ("values.yaml", "image: {{ .Values.image }}\n", "helm-template"),
        ("Justfile", f"serve:\n    {SERVE}", "justfile"),
        ("pd.yaml", "model: org/m\nprefill: {tp: 1}\ndecode: {tp: 1}\n", "kvalign"),
        ("v.yaml", "servingEngineSpec:\n  modelSpec: []\n", "production-stack"),
        ("compose.yaml", "services:\n  p: {image: vllm/vllm-openai:v0.33.0}\n", "compose"),
        ("c.yaml", "services:\n  web: {image: nginx}\n", None),  # no vLLM image: not a pool
        ("d.yaml", "kind: Deployment\nspec: {}\n", "kubernetes"),
        ("s.sh", "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n", "llm-d-benchmark"),
        ("s.sh", f"LLMDBENCH_X=1 {SERVE}", "command-line"),  # no scenario variable
        ("run.sh", "echo hi\n", "command-line"),  # every .sh is a script
        ("cmd.txt", SERVE, "command-line"),
        ("notes.txt", "nothing here\n", None),
    ],
)
def test_the_first_reader_that_takes_a_file_reads_it(
    file: str, text: str, kind: str | None
) -> None:
    reader = reader_for(Source(text, file, Path(".")))
    assert (reader.kind if reader is not None else None) == kind


def test_a_yaml_error_is_raised_unless_stdin_is_a_command_line() -> None:
    broken = "a: [1\n" + SERVE
    with pytest.raises(InvalidConfig):
        reader_for(Source(broken, "x.yaml"))
    found = reader_for(Source(broken, "-", None, stdin_command_line=True))
    assert found is not None and found.kind == "command-line"


def test_the_path_of_a_malformed_containers_list() -> None:
    # the first `containers` that is not a list of mappings, as a dotted path with list
    # indices (what "NAME: PATH: expected a list of containers" names)
    from kvalign.deploy.k8s import _malformed_containers

    ok = {"spec": {"template": {"spec": {"containers": [{"name": "vllm"}]}}}}
    assert _malformed_containers(ok) is None
    assert _malformed_containers({"spec": {"containers": "vllm"}}) == "spec.containers"
    roles = {"spec": {"roles": [{"containers": []}, {"template": {"containers": ["x"]}}]}}
    assert _malformed_containers(roles) == "spec.roles[1].template.containers"
    assert _malformed_containers([{"a": 1}, {"containers": {}}]) == "[1].containers"
    # the first in document order wins
    two = {"a": {"containers": 1}, "b": {"containers": 2}}
    assert _malformed_containers(two) == "a.containers"
    assert _malformed_containers({"containers": None}, "spec") == "spec.containers"


@pytest.mark.parametrize(
    ("file", "named"),
    [
        ("justfile", True), ("a/Justfile", True), ("a/.justfile", True), ("x.just", True),
        ("a/b.just/", True), ("a/justfile/.", True), ("a//justfile", True), ("..", False),
        (".", False), ("a/b", False), ("a/.just", True), ("a/b/./JUSTFILE", True),
        ("a/justfile.yaml", False),
    ],
)  # fmt: skip
def test_a_justfile_is_told_by_its_last_path_component(file: str, named: bool) -> None:
    # the name just looks for, whatever the folders before it (a trailing "/" or "/."
    # names the folder before it, as pathlib reads the path)
    from kvalign.deploy.justfile import is_justfile

    assert is_justfile(file) is named
