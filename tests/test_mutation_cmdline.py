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

from pathlib import Path

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
        (["docker", "run", "img"], ("img", [])),
        (["docker", "run", "--entrypoint"], None),
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
        (["--model", "m", "--disaggregation-mode", "prefill"], "prefill"),
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
    # "source ./env.sh": a file kvalign does not read, noted by kvalign.shell at line 1
    text = f"source ./env.sh\nvllm serve {FALCON}\n"
    (note,) = evaluate(text).notes
    found = read(text, "x.sh")
    assert found.problems[0] == Problem(Location("x.sh", 1), f"shell: {note[1]}", blocking=False)
    assert note[0] == 1


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
        # a YAML file holding one string (no mapping, no list): as a command line
        ("k.yaml", "$VLLM serve m  # vllm\n", True),
    ],
)
def test_reader_matches(file: str, text: str, taken: bool) -> None:
    assert Reader().matches(Source(text, file)) is taken


def test_a_positional_argument_reaches_the_script() -> None:
    script = evaluate("vllm serve $1 -tp 2\n", positional=[FALCON])
    assert list(script.commands[0].words) == ["vllm", "serve", FALCON, "-tp", "2"]


def test_the_image_release_reaches_the_pool_settings() -> None:
    found = read(f"docker run vllm/vllm-openai:v0.33.0 {FALCON}\n", "x.sh")
    assert [p.settings.vllm_version for p in found.pools] == ["0.33.0"]
    # an image without a release tag gives none, and is no "different image"
    text = (
        f"docker run vllm/vllm-openai:latest {FALCON} --port $PREFILL_PORT\n"
        f"docker run vllm/vllm-openai:v0.33.0 {FALCON} --port $DECODE_PORT\n"
    )
    mixed = read(text, "x.sh")
    assert (mixed.vllm_version, mixed.version_source) == (
        "0.33.0",
        "image vllm/vllm-openai:v0.33.0",
    )
    assert all("different vLLM images" not in p.message for p in mixed.problems)
    assert [p.settings.vllm_version for p in mixed.pools] == [None, "0.33.0"]


def test_an_alternative_that_builds_no_pool_leaves_the_others() -> None:
    text = (
        f'if [ "$MODE" = a ]; then BS=big; else BS=16; fi\nvllm serve {FALCON} --block-size $BS\n'
    )
    found = read(text, "x.sh")
    assert [p.settings.block_size for p in found.pools] == [16]
    # the refused alternative's blocking problem: on a path not evaluated, a note
    (refusal,) = [p for p in found.problems if "big" in p.message]
    assert not refusal.blocking
    assert refusal.message.endswith(" (on another if/case path; not evaluated)")
    # with no other alternative it stays blocking
    alone = read(f"vllm serve {FALCON} --block-size big\n", "x.sh")
    assert [p.blocking for p in alone.problems if "big" in p.message] == [True]


def test_alternatives_differing_only_in_ignored_flags_are_one_pool() -> None:
    text = f'if [ "$MODE" = a ]; then P=8000; else P=8001; fi\nvllm serve {FALCON} --port $P\n'
    found = read(text, "x.sh")
    assert [p.name for p in found.pools] == ["command-1"]
    assert all("alternatives" not in p.message for p in found.problems)


def test_a_refused_config_file_leaves_the_other_alternative() -> None:
    text = (
        f'if [ "$MODE" = a ]; then C=a.yaml; else C=b.yaml; fi\nvllm serve {FALCON} --config $C\n'
    )

    def load(path: str) -> dict[str, object]:
        if path == "a.yaml":
            raise InvalidSettings("a.yaml: outside the folder")
        return {"tensor-parallel-size": 2}

    found = read(text, "x.sh", load)
    assert [p.tp for p in found.pools] == [2]
    assert [(p.location, p.message) for p in found.problems] == [
        (Location("x.sh", 2), "a.yaml: outside the folder (on another if/case path; not evaluated)")
    ]


def test_reader_read_looks_config_files_up_beside_the_file(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("tensor-parallel-size: 4\n")
    text = f"vllm serve {FALCON} --config c.yaml\n"
    found = Reader().read(Source(text, str(tmp_path / "x.sh"), base=tmp_path))
    assert [p.tp for p in found.pools] == [4]


def test_the_alternatives_note_shows_the_variables_used_that_differ() -> None:
    # A differs but the command does not use it; P is unset on the else path; Q, R, S, tp
    # differ and are used: the first four used, sorted (P, Q, R, S), each alternative's value
    text = (
        'if [ "$MODE" = a ]; then A=1; P=1; Q=1; R=1; S=1; tp=2; '
        "else A=2; Q=2; R=2; S=2; tp=4; fi\n"
        f"vllm serve {FALCON} -tp $tp --port $P$Q$R$S\n"
    )
    conditions = [c.alternative for c in evaluate(text).commands]
    found = read(text, "x.sh")
    assert [p.tp for p in found.pools] == [2, 4]
    assert found.problems[-1].message == (
        "command-1: its if/case/loop alternatives give 2 different pools, each evaluated: "
        f"command-1.a: P=1 Q=1 R=1 S=1 [{conditions[0][0]}]; "
        f"command-1.b: P=(unset) Q=2 R=2 S=2 [{conditions[1][0]}]"
    )


def test_the_alternatives_note_without_conditions_or_unused_variables() -> None:
    # a loop's alternatives carry no condition: "otherwise"; B is the same on both paths
    text = f"B=x\nfor tp in 2 4; do vllm serve {FALCON} -tp $tp --port $B; done\n"
    found = read(text, "x.sh")
    assert found.problems[-1].message == (
        "command-1: its if/case/loop alternatives give 2 different pools, each evaluated: "
        "command-1.a: tp=2 [otherwise]; command-1.b: tp=4 [otherwise]"
    )
    # nested conditions are joined with "and"
    nested = (
        'if [ "$A" = 1 ]; then if [ "$B" = 1 ]; then TP=2; fi; fi\n'
        f"vllm serve {FALCON} -tp ${{TP:-4}}\n"
    )
    alternatives = [c.alternative for c in evaluate(nested).commands]
    two = [a for a in alternatives if len(a) == 2]
    assert two, alternatives
    message = read(nested, "x.sh").problems[-1].message
    assert f"[{two[0][0]} and {two[0][1]}]" in message


def test_a_variable_the_command_does_not_use_is_not_shown() -> None:
    # A differs per alternative but is not in the command; tp (lowercase) is
    text = f"for tp in 2 4; do A=$tp; vllm serve {FALCON} -tp $tp; done\n"
    assert read(text, "x.sh").problems[-1].message == (
        "command-1: its if/case/loop alternatives give 2 different pools, each evaluated: "
        "command-1.a: tp=2 [otherwise]; command-1.b: tp=4 [otherwise]"
    )


def test_when_no_alternative_builds_a_pool_the_refusals_stay_blocking() -> None:
    text = (
        f'if [ "$MODE" = a ]; then BS=big; else BS=huge; fi\nvllm serve {FALCON} --block-size $BS\n'
    )
    found = read(text, "x.sh")
    assert found.pools == ()
    refusals = [p for p in found.problems if "--block-size" in p.message]
    assert len(refusals) == 2 and all(p.blocking for p in refusals)


# ---- limits of the shell evaluator: a launch not read is a blocking problem (issue #31) ----
_PAIR = (
    "vllm serve m -tp 4 --kv-transfer-config "
    '\'{"kv_connector":"NixlConnector","kv_role":"kv_producer"}\' &\n'
    "vllm serve m -tp 4 --kv-transfer-config "
    '\'{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}\' &\n'
)


def test_a_launch_nested_too_deep_is_a_blocking_problem_and_the_rest_is_read() -> None:
    # lines 1-2: a pair, read; lines 3-152: 150 nested groups around a launch (line 153)
    text = _PAIR + "{\n" * 150 + "vllm serve m -tp 2\n" + "}\n" * 150
    found = read(text, "run.sh")
    assert [(p.role, p.tp) for p in found.pools] == [("prefill", 4), ("decode", 4)]
    assert found.problems == (
        Problem(
            Location("run.sh", 102),
            "shell: nested deeper than 100 levels: a vLLM launch there not read",
        ),
    )


def test_a_part_too_deep_without_a_launch_is_a_note() -> None:
    found = read(_PAIR + "{\n" * 150 + "echo hi\n" + "}\n" * 150, "run.sh")
    assert found.problems == (
        Problem(Location("run.sh", 102), "shell: nested deeper than 100 levels: not read", False),
    )


def test_a_launch_with_a_word_too_long_to_read_is_not_evaluated() -> None:
    # line 1: A of 300,000 characters (past MAX_WORD); line 2 launches with it; line 3 not
    text = "A=" + "a" * 300_000 + '\nvllm serve m -tp 2 --served-model-name "$A"\n'
    found = read(text + "vllm serve m -tp 4\n", "run.sh")
    assert [(p.name, p.tp) for p in found.pools] == [("command-2", 4)]
    assert [p for p in found.problems if p.blocking] == [
        Problem(
            Location("run.sh", 2),
            "shell: an argument expands to more than 262144 characters: this launch not evaluated",
        )
    ]


def test_could_launch_is_the_loose_match() -> None:
    from kvalign.deploy.cmdline import could_launch

    assert could_launch("vllm serve m")
    assert could_launch("docker run vllm/vllm-openai:v0.33.0 m")
    assert could_launch("python -m dynamo.vllm --model m")
    assert not could_launch("echo hi")
    assert not could_launch("run serve m")  # serve, but nothing of vLLM


def test_a_script_another_file_runs_stops_that_file_at_a_limit() -> None:
    # a container's `bash -c` script (read by kvalign.deploy.k8s through evaluate): a launch
    # a limit kept from being read stops the file (not evaluated), naming line and limit
    from kvalign.deploy.cmdline import ShellLimitReached, evaluate_script

    deep = "{\n" * 150 + "vllm serve m\n" + "}\n" * 150
    with pytest.raises(ShellLimitReached) as stopped:
        evaluate(deep)
    assert str(stopped.value) == (
        "a shell script it runs, line 100: nested deeper than 100 levels: a vLLM launch "
        "there not read"
    )
    assert evaluate_script(deep).stops == [
        (100, "nested deeper than 100 levels: a vLLM launch there not read")
    ]
    too_long = "A=" + "a" * 300_000 + '\nvllm serve m --x "$A"\n'
    with pytest.raises(ShellLimitReached) as cut:
        evaluate(too_long)
    assert str(cut.value) == (
        "a shell script it runs, line 2: an argument expands to more than 262144 "
        "characters: this launch not evaluated"
    )
    # a word too long in a command that launches nothing is no stop
    assert [c.words[0] for c in evaluate(too_long.replace("vllm serve m", "echo")).commands] == [
        "echo"
    ]
