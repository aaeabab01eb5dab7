"""The Docker Compose reader (kvalign/deploy/compose.py) pinned where a wrong rule changes
the answer, for its mutants (tests/mutation/run.py compose).

Expected values come from the Compose Specification (services.md: ``image``, ``command``
as a string or a list, ``environment`` as a mapping or a list of ``VAR=VALUE``, a null
mapping value, ``env_file`` as a string, a list, or the long form ``{path, required}``
with ``required`` true by default; env-file syntax: ``VAR=VAL`` lines, ``#`` comment
lines and blank lines ignored, ``environment`` winning over ``env_file``), vLLM 0.33.0's
``KVTransferConfig.kv_role`` (kv_producer = prefill, kv_consumer = decode), vLLM's image
tags (``vllm/vllm-openai:vX.Y.Z``) and the compose files written in each test, read by
hand (their lines, their services).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvalign.deploy.compose import Reader, matches, parse_env_file, read
from kvalign.deploy.interface import Source
from kvalign.deploy.model import DeploymentKey, Location, Problem
from kvalign.errors import InvalidConfig

PRODUCER = json.dumps(
    {"kv_connector": "NixlConnector", "kv_role": "kv_producer"}, separators=(",", ":")
)
CONSUMER = json.dumps(
    {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}, separators=(",", ":")
)

COMPOSE = f"""\
services:
  proxy:
    image: nginx:1.27
  prefill:
    image: vllm/vllm-openai:v0.14.0
    command: vllm serve Qwen/Qwen3-0.6B --block-size 32 --kv-transfer-config '{PRODUCER}'
    environment:
      LMCACHE_CHUNK_SIZE: 512
      EMPTY:
  decode:
    image: vllm/vllm-openai:v0.15.0
    command: ["Qwen/Qwen3-0.6B", "--tensor-parallel-size", 2, "--kv-transfer-config", '{CONSUMER}']
    environment: ["A=1", "B=x=y", "C"]
"""


def _read(text: str, base: Path | None = None, file: str = "c.yaml") -> Any:
    return read(yaml.safe_load(text), text, file, base)


def test_a_whole_compose_file() -> None:
    found = _read(COMPOSE)
    assert (found.source, found.kind, found.launches, found.problems) == (
        "c.yaml",
        "compose",
        2,
        (),
    )
    # the first vLLM image's release; nginx is no vLLM image (not a launch)
    assert (found.vllm_version, found.version_source) == (
        "0.14.0", "image vllm/vllm-openai:v0.14.0",
    )  # fmt: skip
    key = DeploymentKey("compose file", "c.yaml", single_object=True)
    pools = [
        (p.role, p.role_source, p.name, p.model, p.tp, p.location, p.env, p.deployment_key,
         p.settings.vllm_version, p.settings.block_size)
        for p in found.pools
    ]  # fmt: skip
    assert pools == [
        # line 4 "prefill:"; "vllm serve" dropped from the string command (split as a shell
        # would: the quoted JSON is one word); a null environment value is empty
        ("prefill", "args", "prefill", "Qwen/Qwen3-0.6B", 1, Location("c.yaml", 4),
         (("EMPTY", ""), ("LMCACHE_CHUNK_SIZE", "512")), key, "0.14.0", 32),
        # line 10 "decode:"; a list command with an integer word; list environment: the
        # value after the first "=", a bare name empty
        ("decode", "args", "decode", "Qwen/Qwen3-0.6B", 2, Location("c.yaml", 10),
         (("A", "1"), ("B", "x=y"), ("C", "")), key, "0.15.0", None),
    ]  # fmt: skip
    assert found.pools[0].args.lmcache_chunk_size == 512


def test_the_reader_reads_the_source() -> None:
    text = "services:\n  p:\n    image: vllm/vllm-openai:v0.33.0\n    command: m/x\n"
    found = Reader().read(Source(text, "d.yaml", None))
    assert [(p.role, p.name, p.model, p.location) for p in found.pools] == [
        ("server", "p", "m/x", Location("d.yaml", 2))
    ]
    assert found.vllm_version == "0.33.0"


def test_the_reader_reads_env_files_from_the_folder(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("A=1\n")
    text = "services:\n  p:\n    image: vllm/vllm-openai\n    command: m/x\n    env_file: a.env\n"
    reader = Reader()
    source = Source(text, "d.yaml", tmp_path)
    assert reader.kind == "compose"
    assert reader.matches(source)
    assert not reader.matches(Source("services: {a: {image: nginx}}\n", "d.yaml", tmp_path))
    found = reader.read(source)
    assert (found.kind, found.problems) == ("compose", ())
    assert found.pools[0].env == (("A", "1"),)


def test_matches() -> None:
    assert matches(yaml.safe_load(COMPOSE))
    assert matches({"services": {"a": {"image": "nginx"}, "b": {"image": "vllm/vllm-openai"}}})
    assert not matches({"services": {"a": {"image": "nginx"}}})
    assert not matches({"kind": "Pod", "services": {"b": {"image": "vllm/vllm-openai"}}})
    assert not matches({"services": [{"image": "vllm/vllm-openai"}]})
    assert not matches({"services": {"a": "vllm/vllm-openai", "b": {"image": 3}}})
    assert not matches(["services"])


def test_environment_wins_over_env_files(tmp_path: Path) -> None:
    (tmp_path / "a.env").write_text("A=from-a\nB=from-a\n")
    (tmp_path / "b.env").write_text("B=from-b\nC=from-b\n")
    text = (
        "services:\n  p:\n    image: vllm/vllm-openai\n    command: m/x\n"
        "    env_file: [a.env, {path: gone.env, required: false}, {path: b.env}]\n"
        "    environment: {C: env}\n"
    )
    found = _read(text, tmp_path)
    assert found.problems == ()
    # later files win over earlier ones, environment over every file; an optional missing
    # file is skipped (and the files after it still read)
    assert found.pools[0].env == (("A", "from-a"), ("B", "from-b"), ("C", "env"))
    single = "services:\n  p:\n    image: vllm/vllm-openai\n    command: m/x\n    env_file: a.env\n"
    assert _read(single, tmp_path).pools[0].env == (("A", "from-a"), ("B", "from-a"))


@pytest.mark.parametrize(
    ("env_file", "base", "message"),
    [
        ("a.env", None, "p: env_file a.env: not read (stdin has no folder)"),
        ("../a.env", "tmp", "p: env_file ../a.env: outside the compose file's folder; not read"),
        ("/etc/hostname", "tmp", "p: env_file /etc/hostname: outside the compose file's folder; "
         "not read"),
        ("[{path: gone.env, required: true}]", "tmp", "p: env_file gone.env: cannot be read ("),
        # the long form without required: required (the spec's default is true)
        ("[{path: gone.env}]", "tmp", "p: env_file gone.env: cannot be read ("),
        ("gone.env", "tmp", "p: env_file gone.env: cannot be read ("),
        ("[{required: false}]", "tmp", "p: env_file : outside the compose file's folder; not read"),
    ],
)  # fmt: skip
def test_an_env_file_that_cannot_be_read(
    tmp_path: Path, env_file: str, base: str | None, message: str
) -> None:
    text = (
        "services:\n  q:\n    image: vllm/vllm-openai\n    command: m/y\n"
        f"  p:\n    image: vllm/vllm-openai\n    command: m/x\n    env_file: {env_file}\n"
        "  r:\n    image: vllm/vllm-openai\n    command: m/z\n"
    )
    found = _read(text, tmp_path if base else None)
    # the service is not evaluated (no pool), but is a launch; the others are read
    assert [p.name for p in found.pools] == ["q", "r"]
    assert found.launches == 3
    assert len(found.problems) == 1
    problem = found.problems[0]
    assert (problem.location, problem.blocking) == (Location("c.yaml", 5), True)
    assert problem.message.startswith(message)
    if message.endswith("("):
        assert problem.message.endswith(")")


def test_parse_env_file() -> None:
    text = (
        "# a comment\n"
        "\n"
        "  A = 1  \n"
        "B='quoted'\n"
        'C="double"\n'
        "D='mismatched\"\n"
        "E=$HOME\n"
        "F=''\n"
        "G='\n"
        "no equals sign\n"
        "H=a=b\n"
        "I=XyX\n"
        "  # indented comment=x\n"
    )
    assert parse_env_file(text) == {
        "A": "1",
        "B": "quoted",
        "C": "double",
        "D": "'mismatched\"",  # no matching pair: kept
        "E": "$HOME",  # nothing expanded
        "F": "",
        "G": "'",  # one quote alone is no pair
        "H": "a=b",
        "I": "XyX",  # only quotes are stripped
    }


@pytest.mark.parametrize(
    ("service", "message"),
    [
        ("p: nginx", "c.yaml: services.p: expected a mapping"),
        ("p: {image: vllm/vllm-openai, command: \"m/x 'open\"}",
         "c.yaml: services.p.command: No closing quotation"),
        ("p: {image: vllm/vllm-openai, command: [m/x, {a: 1}]}",
         "c.yaml: services.p.command: expected a string or a list of strings"),
        ("p: {image: vllm/vllm-openai, command: 3}",
         "c.yaml: services.p.command: expected a string or a list of strings"),
        ("p: {image: vllm/vllm-openai, command: m/x, environment: A=1}",
         "c.yaml: services.p.environment: expected a mapping or a list"),
    ],
)  # fmt: skip
def test_malformed_services_are_refused(service: str, message: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        _read(f"services:\n  {service}\n")
    assert str(caught.value) == message


def test_a_service_without_command_or_model() -> None:
    found = _read("services:\n  decode:\n    image: vllm/vllm-openai:latest\n")
    assert found.pools == ()
    assert found.problems == (Problem(Location("c.yaml", 2), "decode/decode: no model given"),)
    assert (found.launches, found.vllm_version, found.version_source) == (1, None, None)


def test_a_leading_vllm_serve_is_read_once() -> None:
    # vLLM 0.33.0's --served-model-name takes one or more names (ModelConfig
    # served_model_name: str | list[str], a list field → nargs="+" in arg_utils), so
    # `vllm serve m/x --served-model-name vllm serve` serves m/x under the names "vllm"
    # and "serve": the model is m/x (the second "vllm serve" is two names, no launch)
    text = (
        "services:\n  p:\n    image: vllm/vllm-openai\n"
        "    command: vllm serve m/x --served-model-name vllm serve\n"
    )
    found = _read(text)
    assert found.problems == ()
    assert [(p.role, p.model) for p in found.pools] == [("server", "m/x")]
