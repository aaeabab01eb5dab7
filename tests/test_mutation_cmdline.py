"""The shell-script / command-line reader (kvalign/deploy/cmdline.py) pinned where a wrong
rule changes the answer, for its mutants (tests/mutation/run.py cmdline).

Expected values come from the Docker CLI reference (``docker run [OPTIONS] IMAGE [COMMAND]
[ARG...]``: options before the image, ``--`` ends them, a value option takes the next word
unless written ``--opt=value``; ``--entrypoint`` replaces the image's entrypoint), Dynamo's
vLLM worker flags (``--is-prefill-worker``, ``--is-decode-worker``,
``--disaggregation-mode``), the vLLM image's entrypoint (``vllm serve``, vllm/vllm-openai's
Dockerfile), or the scripts written in each test, read by hand (which command is on which
line, what each launch says).
"""

from __future__ import annotations

import pytest

from kvalign.deploy.cmdline import Reader, container_image, dynamo_mode, evaluate, matches, read
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, Location, Problem
from kvalign.errors import InvalidSettings


@pytest.mark.parametrize(
    ("words", "found"),
    [
        (["docker", "run", "--gpus", "all", "-p", "8000:8000", "vllm/vllm-openai:v0.33.0",
          "--model", "m"], ("vllm/vllm-openai:v0.33.0", ["--model", "m"])),
        (["podman", "create", "--name=x", "img", "a"], ("img", ["a"])),
        (["/usr/bin/nerdctl", "run", "--rm", "img"], ("img", [])),
        (["docker", "run", "--", "img", "b"], ("img", ["b"])),
        (["docker", "run", "--entrypoint", "vllm", "img", "serve", "m"],
         ("img", ["vllm", "serve", "m"])),
        (["docker", "run", "--entrypoint=/bin/sh", "img", "-c", "x"],
         ("img", ["/bin/sh", "-c", "x"])),
        (["docker", "build", "img"], None),
        (["docker", "run"], None),
        (["docker", "run", "--rm"], None),
        (["kubectl", "run", "img"], None),
    ],
)  # fmt: skip
def test_container_image(words: list[str], found: tuple[str, list[str]] | None) -> None:
    assert container_image(words) == found


@pytest.mark.parametrize(
    ("args", "mode"),
    [
        (["--model", "m", "--is-prefill-worker"], "prefill"),
        (["--is-decode-worker", "--is-prefill-worker"], "decode"),  # the first one given
        (["--disaggregation-mode", "decode"], "decode"),
        (["--disaggregation-mode=prefill"], "prefill"),
        (["--disaggregation-mode"], ""),
        (["--model", "m"], None),
    ],
)
def test_dynamo_mode(args: list[str], mode: str | None) -> None:
    assert dynamo_mode(args) == mode


def test_matches_plain_and_evaluated_launches() -> None:
    assert matches("vllm serve m")
    assert matches("python -m vllm.entrypoints.openai.api_server --model m")
    assert matches("python3 -m dynamo.vllm --model m")
    assert not matches("$VLLM serve m")  # only an evaluation shows it launches vLLM
    assert matches("$VLLM serve m  # vllm", strict=False)
    assert not matches("serve the app", strict=False)  # no vllm at all
    assert matches("docker run vllm/vllm-openai:v0.33.0 m", strict=False)


# ---- read(): whole results of scripts written here ------------------------------------------
# Falcon-H1-0.5B: a model the tests read offline (bundled config); only roles, names, lines,
# sizes and notes are pinned, each read off the script by hand.

FALCON = "tiiuae/Falcon-H1-0.5B-Base"
NIXL = '{"kv_connector":"NixlConnector","kv_role":"%s"}'


def _pools(deployment: Deployment) -> list[tuple[object, ...]]:
    return [(p.role, p.name, p.tp, p.role_source, p.location.line) for p in deployment.pools]


def test_two_launches_take_their_roles_from_kv_role() -> None:
    text = (
        "#!/bin/bash\n"
        f"vllm serve {FALCON} -tp 2 --kv-transfer-config '{NIXL % 'kv_producer'}' &\n"
        f"vllm serve {FALCON} -tp 4 --kv-transfer-config '{NIXL % 'kv_consumer'}' &\n"
    )
    found = read(text, "pd.sh")
    assert _pools(found) == [
        ("prefill", "command-1", 2, "args", 2),
        ("decode", "command-2", 4, "args", 3),
    ]
    assert (found.kind, found.source, found.launches, found.problems) == (
        "command-line", "pd.sh", 2, ()
    )  # fmt: skip
    assert (found.vllm_version, found.version_source) == (None, None)


def test_container_images_give_the_release_and_differing_images_are_noted() -> None:
    # the vLLM image's entrypoint is vllm serve: the words after the image are its
    # arguments; its tag v0.33.0 is the release. The role comes from the port variable.
    text = (
        f"docker run --gpus all vllm/vllm-openai:v0.33.0 {FALCON} -tp 2 --port $PREFILL_PORT\n"
        f"docker run --gpus all vllm/vllm-openai:v0.31.0 {FALCON} --port $DECODE_PORT\n"
    )
    found = read(text, "x.sh")
    assert _pools(found) == [
        ("prefill", "command-1", 2, "name", 1),
        ("decode", "command-2", 1, "name", 2),
    ]
    assert (found.vllm_version, found.version_source) == (
        "0.33.0",
        "image vllm/vllm-openai:v0.33.0",
    )
    assert found.problems[-1] == Problem(
        Location("x.sh"),
        "launches different vLLM images (vllm/vllm-openai:v0.33.0, vllm/vllm-openai:v0.31.0); "
        "the release profile is taken from the first (0.33.0)",
        blocking=False,
    )
    same = read(text.replace("v0.31.0", "v0.33.0"), "x.sh")
    assert all("different vLLM images" not in p.message for p in same.problems)
    assert same.vllm_version == "0.33.0"
    # a shell as --entrypoint replaces vllm serve: no launch
    shell = read(
        f"docker run --entrypoint /bin/sh vllm/vllm-openai:v0.33.0 -c 'echo {FALCON}'\n", "x.sh"
    )
    assert (shell.pools, shell.launches) == ((), 0)
    other = read(f"docker run --gpus all nginx:1 {FALCON}\n", "x.sh")
    assert other.launches == 0


def test_the_file_name_names_the_role_of_a_single_launch_only() -> None:
    line = f"vllm serve {FALCON}\n"
    assert _pools(read(line, "prefill.sh")) == [("prefill", "command-1", 1, "name", 1)]
    # "disagg" in the name names no role (a disagg_prefill script may start both)
    assert _pools(read(line, "disagg_prefill.sh")) == [("server", "command-1", 1, "standalone", 1)]
    two = read(line + line.replace("serve", "serve --port 8001"), "prefill.sh")
    assert [p.role for p in two.pools] == ["server", "server"]


def test_a_dynamo_worker_without_a_role_flag_is_the_decode_of_the_prefill_worker() -> None:
    text = (
        f"python -m dynamo.vllm --model {FALCON} --is-prefill-worker &\n"
        f"python -m dynamo.vllm --model {FALCON} -tp 2 &\n"
    )
    assert _pools(read(text, "x.sh")) == [
        ("prefill", "command-1", 1, "args", 1),
        ("decode", "command-2", 2, "dynamo pair", 2),
    ]
    # without a prefill worker, nothing pairs it
    alone = read(f"python -m dynamo.vllm --model {FALCON} -tp 2 &\n", "x.sh")
    assert [(p.role, p.role_source) for p in alone.pools] == [("server", "standalone")]
    # a worker that says decode keeps its own role source
    said = read(text.replace("-tp 2 &", "-tp 2 --is-decode-worker &"), "x.sh")
    assert [(p.role, p.role_source) for p in said.pools] == [
        ("prefill", "args"), ("decode", "args")
    ]  # fmt: skip


def test_alternatives_of_one_command_are_one_pool_each_and_noted() -> None:
    text = (
        'if [ "$MODE" = prefill ]; then TP=2; else TP=4; fi\n'
        f"vllm serve {FALCON} -tp $TP --port $PREFILL_PORT\n"
    )
    # the alternatives' conditions as kvalign.shell states them (not the reader under test)
    conditions = [" and ".join(c.alternative) for c in evaluate(text).commands]
    assert len(conditions) == 2
    found = read(text, "x.sh")
    assert _pools(found) == [
        ("prefill", "command-1.a", 2, "name", 2),
        ("prefill", "command-1.b", 4, "name", 2),
    ]
    assert found.problems[-1] == Problem(
        Location("x.sh", 2),
        "command-1: its if/case/loop alternatives give 2 different pools, each evaluated: "
        f"command-1.a: TP=2 [{conditions[0]}]; command-1.b: TP=4 [{conditions[1]}]",
        blocking=False,
    )
    assert found.launches == 1
    # alternatives that give the same pool are one pool, with no note
    same = read(text.replace("TP=4", "TP=2"), "x.sh")
    assert _pools(same) == [("prefill", "command-1", 2, "name", 2)]
    assert all("alternatives" not in p.message for p in same.problems)


def test_config_files_are_loaded_for_their_launch() -> None:
    text = f"vllm serve {FALCON} --config c.yaml\n"
    asked: list[str] = []

    def load(path: str) -> dict[str, object] | None:
        asked.append(path)
        return {"tensor-parallel-size": 2}

    found = read(text, "x.sh", load)
    assert asked == ["c.yaml"] and [p.tp for p in found.pools] == [2]

    def refuse(path: str) -> None:
        raise InvalidSettings(f"{path}: outside the folder")

    refused = read(text + text, "x.sh", refuse)
    assert refused.pools == ()
    assert [(p.location.line, p.message, p.blocking) for p in refused.problems] == [
        (1, "c.yaml: outside the folder", True), (2, "c.yaml: outside the folder", True)
    ]  # fmt: skip
    # an unresolved path is not looked up; nor is --config at the end of the line
    asked.clear()
    read(f"vllm serve {FALCON} --config $CFG\n", "x.sh", load)
    read(f"vllm serve {FALCON} --config\n", "x.sh", load)
    assert asked == []


def test_shell_notes_are_non_blocking_problems() -> None:
    script = evaluate(f"vllm serve {FALCON} -tp ${{TP:?}}\n")
    found = read(f"vllm serve {FALCON} -tp ${{TP:?}}\n", "x.sh")
    shell_notes = [p for p in found.problems if p.message.startswith("shell: ")]
    assert [(p.location.line, p.message) for p in shell_notes] == [
        (line, f"shell: {note}") for line, note in script.notes
    ]
    assert all(not p.blocking for p in shell_notes)


@pytest.mark.parametrize(
    ("file", "text", "taken"),
    [
        ("run.sh", "echo hi\n", True),
        ("RUN.BASH", "echo hi\n", True),
        ("run", "#!/usr/bin/env bash\necho hi\n", True),
        ("run", "#! /bin/sh\necho\n", True),
        ("run", "#!/usr/bin/env -S zsh\necho\n", True),
        ("run", "#!/usr/bin/python3\nprint()\n", False),
        ("notes.txt", f"vllm serve {FALCON}\n", True),
        ("notes.txt", "nothing here\n", False),
        ("notes.txt", "$VLLM serve m  # vllm\n", True),  # confirmed by the evaluation
        # a YAML mapping: only a plain launch counts
        ("k.yaml", "cmd: $VLLM serve m  # vllm\n", False),
        ("k.yaml", "cmd: vllm serve m\n", True),
    ],
)
def test_reader_matches(file: str, text: str, taken: bool) -> None:
    assert Reader().matches(Source(text, file)) is taken
