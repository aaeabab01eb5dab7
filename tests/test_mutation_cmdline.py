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

from kvalign.deploy.cmdline import container_image, dynamo_mode, matches


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
