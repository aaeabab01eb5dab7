"""The llm-d-benchmark scenario reader (kvalign/deploy/llmdbench.py) pinned where a wrong
rule changes the answer, for its mutants (tests/mutation/run.py llmdbench).

Sources: llm-d-benchmark's own layout (scenarios/*.sh are ``export LLMDBENCH_…=…`` lines
that setup/env.sh sources; argument strings are one word list joined by ``____``,
optionally in ``[ ]``, with ``REPLACE_ENV_NAME`` standing for the value of ``NAME``;
``LLMDBENCH_DEPLOY_MODEL_LIST`` is comma-separated; ``LLMDBENCH_DEPLOY_METHODS`` names
``modelservice`` and/or ``standalone``; ``LLMDBENCH_VLLM_COMMON_AFFINITY`` is
``LABEL:VALUE``; setup/env.sh, llm-d/llm-d-benchmark 01e0a46, defaults
``LLMDBENCH_DEPLOY_MODEL_LIST`` to ``meta-llama/Llama-3.2-1B-Instruct``,
``LLMDBENCH_DEPLOY_METHODS`` to ``modelservice``, ``LLMDBENCH_VLLM_COMMON_REPLICAS`` and
``…_ACCELERATOR_NR`` to 1, each role's ``REPLICAS`` to the common one,
``TENSOR_PARALLELISM`` and ``DATA_PARALLELISM`` to 1, ``MODEL_COMMAND`` to ``vllmServe``
and ``EXTRA_ARGS`` to a list ending ``--tensor-parallel-size`` the role's
``ACCELERATOR_NR``), the reader's documented rules (its module docstring: REPLICAS 0
leaves a role out, ``custom`` makes EXTRA_ARGS the whole command, a TENSOR_PARALLELISM
that disagrees with ``--tensor-parallel-size`` is refused, only some defaults are
noted), NVIDIA GPU feature discovery's ``nvidia.com/gpu.product`` label
(``NVIDIA-H100-80GB-HBM3`` is an H100), and the scenarios written in each test, read by
hand (which variable is on which line).
"""

from __future__ import annotations

from typing import Any

import pytest

from kvalign.deploy.interface import Source
from kvalign.deploy.llmdbench import (
    Reader,
    _after_serve,
    _int,
    _tp_flag,
    _Values,
    matches,
    read,
    words,
)
from kvalign.deploy.model import DeploymentKey, Location, Problem
from kvalign.shell.commands import unresolved

MS = "LLMDBENCH_VLLM_MODELSERVICE_"
FALCON = "tiiuae/Falcon-H1-0.5B-Base"
H100 = "nvidia.com/gpu.product:NVIDIA-H100-80GB-HBM3"
DEFAULTS_NOTE = "scenario: not set, llm-d-benchmark's defaults (setup/env.sh) assumed for "


def _read(text: str) -> Any:
    return read(Source(text, "s.sh"))


def _pools(found: Any) -> list[tuple[Any, ...]]:
    return [
        (p.role, p.name, p.model, p.tp, p.dp, p.location.line, p.settings.gpu, p.role_source,
         p.deployment_key)
        for p in found.pools
    ]  # fmt: skip


def _key(model: str) -> DeploymentKey:
    return DeploymentKey("llm-d-benchmark scenario", model, single_object=True)


# ---- matches ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n", True),
        ("LLMDBENCH_VLLM_COMMON_AFFINITY=x\n", True),
        (" \texport\t LLMDBENCH_VLLM_X=1\n", True),
        ("# a scenario\nexport LLMDBENCH_DEPLOY_METHODS=standalone\n", True),  # 2nd line
        ("LLMDBENCH_HARNESS_NAME=x\n", False),  # neither VLLM_ nor DEPLOY_
        ("echo LLMDBENCH_VLLM_X=1\n", False),  # not at a line's start
        ("# LLMDBENCH_VLLM_X=1\n", False),
        ("export LLMDBENCH_VLLM_X\n", False),  # no assignment
        ("exportLLMDBENCH_VLLM_X=1\n", False),
    ],
)
def test_matches(text: str, expected: bool) -> None:
    assert matches(text) is expected
    # the reader takes such text only from a file that is not YAML
    assert Reader().matches(Source(text, "s.sh")) is expected
    assert Reader().matches(Source(text, "s.yaml")) is False


# ---- words / _after_serve / _int / _tp_flag --------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[--a____1]", ["--a", "1"]),
        ("  [ --a ____ 1 ]  ", ["--a", "1"]),
        ("--a____1", ["--a", "1"]),
        ("[--a____1", ["[--a", "1"]),  # no closing bracket: kept
        ("--a____1]", ["--a", "1]"]),
        ("a________b", ["a", "b"]),  # an empty word is dropped
        ('\'{"k":1}\'____"x y"', ['{"k":1}', "x y"]),  # one pair of quotes dropped
        ("'a\"____'", ["'a\"", "'"]),  # mismatched quotes, a lone quote: kept
        ("''____\"\"____z", ["z"]),  # an empty quoted word is dropped
        ("''x''", ["'x'"]),  # only one pair
        ("XyX", ["XyX"]),  # only quotes are dropped
        ("", []),
        ("[]", []),
    ],
)
def test_words(value: str, expected: list[str]) -> None:
    assert words(value) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["vllm", "serve", "m", "--port", "1"], ["m", "--port", "1"]),
        (["/opt/venv/bin/vllm", "serve", "m"], ["m"]),
        (["env", "A=1", "vllm", "serve"], []),
        (["vllm"], None),
        (["serve", "vllm"], None),
        (["vllm", "run", "serve"], None),
        (["myvllm", "serve", "m"], None),
        ([], None),
        (["python", "vllm", "vllm", "serve", "x"], ["x"]),
    ],
)
def test_after_serve(command: list[str], expected: list[str] | None) -> None:
    assert _after_serve(command) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("3", 3), (" 12 ", 12), ("0", 0), ("-1", None), ("x", None), ("", None), (None, None)],
)
def test_int(text: str | None, expected: int | None) -> None:
    assert _int(text) == expected


def test_tp_flag() -> None:
    # vLLM 0.33.0 EngineArgs: --tensor-parallel-size / -tp takes an int
    assert _tp_flag(["m", "--tensor-parallel-size", "4"]) == 4
    assert _tp_flag(["m", "-tp", "2"]) == 2
    assert _tp_flag(["m"]) is None
    assert _tp_flag(["m", "--tensor-parallel-size", "four"]) is None


# ---- _Values ---------------------------------------------------------------------------
def test_values_scenario_first_then_defaults_noted_once() -> None:
    known = _Values({"LLMDBENCH_DEPLOY_METHODS": "standalone"})
    assert known.get("LLMDBENCH_DEPLOY_METHODS") == "standalone"
    assert known.defaulted == []
    # setup/env.sh: LLMDBENCH_VLLM_COMMON_REPLICAS defaults to 1
    assert known.get("LLMDBENCH_VLLM_COMMON_REPLICAS") == "1"
    assert known.get("LLMDBENCH_VLLM_COMMON_REPLICAS") == "1"
    assert known.defaulted == ["LLMDBENCH_VLLM_COMMON_REPLICAS"]
    assert known.get("LLMDBENCH_NOT_A_VARIABLE") is None
    assert known.defaulted == ["LLMDBENCH_VLLM_COMMON_REPLICAS"]


def test_values_replace_references_to_eight_levels() -> None:
    # V0 -> V1 -> … : references resolve while fewer than 8 lookups deep; the reference
    # made at depth 8 stays unresolved
    chain = {f"V{i}": f"REPLACE_ENV_V{i + 1}" for i in range(8)}
    assert _Values({**chain, "V8": "end"}).get("V0") == "end"
    deeper = {**chain, "V8": "REPLACE_ENV_V9", "V9": "end"}
    assert _Values(deeper).get("V0") == unresolved("REPLACE_ENV_V9")
    assert _Values(deeper).get("V1") == "end"
    # a reference with nothing behind it, between other text
    assert _Values({"A": "x-REPLACE_ENV_NOPE_1____y"}).get("A") == (
        f"x-{unresolved('REPLACE_ENV_NOPE_1')}____y"
    )
    assert _Values({"B": "2"}).replace("REPLACE_ENV_B/REPLACE_ENV_B") == "2/2"
    # replace() on its own starts at depth 0: its first reference is lookup 1, so
    # V0 … V7 (eight lookups) still resolve, a ninth does not
    seven = {f"V{i}": f"REPLACE_ENV_V{i + 1}" for i in range(7)}
    assert _Values({**seven, "V7": "end"}).replace("REPLACE_ENV_V0") == "end"
    assert _Values({**seven, "V7": "REPLACE_ENV_V8", "V8": "end"}).replace(
        "REPLACE_ENV_V0"
    ) == unresolved("REPLACE_ENV_V8")


# ---- read: modelservice ----------------------------------------------------------------
PD = f"""\
export LLMDBENCH_DEPLOY_MODEL_LIST="{FALCON}"
export {MS}PREFILL_REPLICAS=1
export {MS}PREFILL_TENSOR_PARALLELISM=2
export {MS}PREFILL_DATA_PARALLELISM=3
export {MS}PREFILL_EXTRA_ARGS="[--block-size____64]"
export {MS}DECODE_REPLICAS=2
export {MS}DECODE_TENSOR_PARALLELISM=4
export {MS}DECODE_EXTRA_ARGS="[--tensor-parallel-size____4]"
export LLMDBENCH_VLLM_COMMON_AFFINITY={H100}
"""


def test_a_prefill_decode_scenario() -> None:
    found = _read(PD)
    assert (found.source, found.kind, found.launches) == ("s.sh", "llm-d-benchmark", 2)
    assert _pools(found) == [
        # prefill at its EXTRA_ARGS line (5): TP 2 from TENSOR_PARALLELISM (the arguments
        # give none), DP 3; the GPU from the affinity label
        ("prefill", "prefill", FALCON, 2, 3, 5, "H100", "field", _key(FALCON)),
        # decode at line 8: TP 4 from its arguments (equal to TENSOR_PARALLELISM)
        ("decode", "decode", FALCON, 4, 1, 8, "H100", "field", _key(FALCON)),
    ]
    assert found.pools[0].settings.block_size == 64
    # every noted variable is set (MODEL_COMMAND, DATA_PARALLELISM, METHODS are not noted)
    assert found.problems == ()


def test_where_falls_back_to_tensor_parallelism_then_the_model_list() -> None:
    text = (
        f"# scenario\nexport {MS}DECODE_TENSOR_PARALLELISM=1\n"
        f"export LLMDBENCH_DEPLOY_MODEL_LIST={FALCON}\n"
    )
    found = _read(text)
    # prefill sets neither EXTRA_ARGS nor TENSOR_PARALLELISM: the model list's line (3);
    # decode: its TENSOR_PARALLELISM line (2)
    assert [(p.role, p.location) for p in found.pools] == [
        ("prefill", Location("s.sh", 3)),
        ("decode", Location("s.sh", 2)),
    ]
    # none of the three assigned: line 1 (a comment here)
    found = _read(f"# scenario\nexport {MS}DECODE_REPLICAS=0\n")
    assert [(p.role, p.location) for p in found.pools] == [("prefill", Location("s.sh", 1))]


def test_defaults_are_noted_except_common_ones() -> None:
    found = _read("export LLMDBENCH_DEPLOY_METHODS=modelservice\n")
    # setup/env.sh's model, one replica and TP 1 each
    assert _pools(found) == [
        ("prefill", "prefill", "meta-llama/Llama-3.2-1B-Instruct", 1, 1, 1, None, "field",
         _key("meta-llama/Llama-3.2-1B-Instruct")),
        ("decode", "decode", "meta-llama/Llama-3.2-1B-Instruct", 1, 1, 1, None, "field",
         _key("meta-llama/Llama-3.2-1B-Instruct")),
    ]  # fmt: skip
    # in the order they were first used; the COMMON_ ones they refer to are not named
    assert found.problems == (
        Problem(
            Location("s.sh", 1),
            DEFAULTS_NOTE
            + ", ".join(
                [f"{MS}PREFILL_REPLICAS", f"{MS}DECODE_REPLICAS", f"{MS}PREFILL_EXTRA_ARGS",
                 f"{MS}PREFILL_TENSOR_PARALLELISM", f"{MS}DECODE_EXTRA_ARGS",
                 f"{MS}DECODE_TENSOR_PARALLELISM"]
            ),
            blocking=False,
        ),
    )  # fmt: skip


def test_no_prefill_makes_decode_a_server_and_custom_commands_name_the_model() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}PREFILL_REPLICAS=0\n"
        f"export {MS}DECODE_REPLICAS=3\n"
        f"export {MS}DECODE_MODEL_COMMAND=custom\n"
        f'export {MS}DECODE_EXTRA_ARGS="[/opt/venv/bin/vllm____serve____other/m____'
        '--port____8200]"\n'
    )
    found = _read(text)
    # custom: the command's own model, not the list's; no prefill and no
    # --kv-transfer-config: an aggregated server; TP from TENSOR_PARALLELISM's default 1
    assert _pools(found) == [("server", "decode", "other/m", 1, 1, 5, None, "standalone",
                              _key("org/m"))]  # fmt: skip
    assert found.problems == (
        Problem(Location("s.sh", 1), DEFAULTS_NOTE + f"{MS}DECODE_TENSOR_PARALLELISM",
                blocking=False),
    )  # fmt: skip
    assert found.launches == 1


def test_no_decode_leaves_prefill_a_prefill_pool() -> None:
    text = f"export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\nexport {MS}DECODE_REPLICAS=0\n"
    found = _read(text)
    assert [(p.role, p.name) for p in found.pools] == [("prefill", "prefill")]


def test_a_custom_command_without_vllm_serve_is_refused() -> None:
    long = "x" * 90
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}PREFILL_MODEL_COMMAND=custom\n"
        f"export {MS}PREFILL_EXTRA_ARGS=[python____{long}]\n"
        f"export {MS}DECODE_REPLICAS=0\n"
    )
    found = _read(text)
    assert found.pools == () and found.launches == 0
    # the next role is still read after the refusal
    decode = _read(text.replace(f"export {MS}DECODE_REPLICAS=0\n", ""))
    assert [p.role for p in decode.pools] == ["decode"]
    shown = f"[python____{long}]"[:80]
    assert found.problems[0] == Problem(
        Location("s.sh", 3),
        f"prefill: {MS}PREFILL_MODEL_COMMAND is custom and {MS}PREFILL_EXTRA_ARGS ({shown}) "
        "holds no vllm serve command kvalign can read (a command written to a temporary "
        "file is not read): write it in the scenario as [vllm____serve____MODEL____…]",
    )


def test_tensor_parallelism_disagreeing_with_the_arguments_is_refused() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}PREFILL_TENSOR_PARALLELISM=2\n"
        f'export {MS}PREFILL_EXTRA_ARGS="[-tp____4]"\n'
        f"export {MS}DECODE_REPLICAS=0\n"
    )
    found = _read(text)
    assert found.pools == () and found.launches == 0
    assert found.problems[0] == Problem(
        Location("s.sh", 3),
        f"prefill: {MS}PREFILL_TENSOR_PARALLELISM is 2 but its EXTRA_ARGS give vLLM "
        "--tensor-parallel-size 4: set them equal",
    )
    # the next role is still read after a refusal
    decode = text.replace(f"export {MS}DECODE_REPLICAS=0\n", "")
    assert [p.role for p in _read(decode).pools] == ["decode"]


def test_an_unknown_gpu_label_is_a_note_and_no_gpu() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}DECODE_REPLICAS=0\n"
        "export LLMDBENCH_VLLM_COMMON_AFFINITY=nvidia.com/gpu.product:Tesla-Z999\n"
    )
    found = _read(text)
    assert [(p.role, p.settings.gpu) for p in found.pools] == [("prefill", None)]
    assert found.problems[0] == Problem(
        Location("s.sh", 1),
        "prefill: GPU node label Tesla-Z999: no GPU model kvalign knows (the --gpu default "
        "is used)",
        blocking=False,
    )


@pytest.mark.parametrize(
    "affinity", ["nvidia.com/gpu.product", "nvidia.com/gpu.product:", "$(pick_gpu)"]
)
def test_an_affinity_without_a_value_pins_no_gpu(affinity: str) -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}DECODE_REPLICAS=0\n"
        f"export LLMDBENCH_VLLM_COMMON_AFFINITY={affinity}\n"
    )
    found = _read(text)
    assert [(p.role, p.settings.gpu) for p in found.pools] == [("prefill", None)]
    assert not any("GPU" in p.message for p in found.problems)


def test_an_unresolved_affinity_with_a_colon_pins_no_gpu() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}DECODE_REPLICAS=0\n"
        "export LLMDBENCH_VLLM_COMMON_AFFINITY=nvidia.com/gpu.product:$(pick_gpu)\n"
    )
    found = _read(text)
    assert [(p.role, p.settings.gpu) for p in found.pools] == [("prefill", None)]
    assert not any("GPU" in p.message for p in found.problems)


# ---- read: standalone, several models, paths -------------------------------------------
def test_standalone_servers_one_per_model() -> None:
    text = (
        'export LLMDBENCH_DEPLOY_MODEL_LIST=" a/m, b/m,"\n'
        "export LLMDBENCH_DEPLOY_METHODS=standalone\n"
        f"export LLMDBENCH_VLLM_COMMON_AFFINITY={H100}\n"
        'export LLMDBENCH_VLLM_STANDALONE_ARGS="true____;____vllm____serve____'
        'REPLACE_ENV_LLMDBENCH_DEPLOY_CURRENT_MODEL____--tensor-parallel-size____2"\n'
    )
    found = _read(text)
    # the list's empty third entry is no model; ";" ends the first command
    assert _pools(found) == [
        ("server", "standalone", "a/m", 2, 1, 4, "H100", "standalone", _key("a/m")),
        ("server", "standalone", "b/m", 2, 1, 4, "H100", "standalone", _key("b/m")),
    ]
    assert found.problems == () and found.launches == 2


def test_standalone_without_vllm_serve_is_refused_at_the_methods_line() -> None:
    long = "y" * 90
    text = "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\nexport LLMDBENCH_DEPLOY_METHODS=standalone\n"
    found = _read(text + f"export LLMDBENCH_VLLM_STANDALONE_ARGS=python____{long}\n")
    assert found.pools == ()
    assert found.problems == (
        Problem(
            Location("s.sh", 3),
            f"standalone: LLMDBENCH_VLLM_STANDALONE_ARGS ({f'python____{long}'[:80]}) holds "
            "no vllm serve command kvalign can read",
        ),
    )
    # STANDALONE_ARGS not assigned: the METHODS line (2); its default runs vllm serve
    found = _read(text)
    assert [(p.role, p.name, p.location.line) for p in found.pools] == [("server", "standalone", 2)]


def test_both_methods() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        "export LLMDBENCH_DEPLOY_METHODS=modelservice,standalone\n"
        f"export {MS}PREFILL_REPLICAS=0\n"
        f"export {MS}DECODE_REPLICAS=0\n"
    )
    found = _read(text)
    assert [(p.role, p.name) for p in found.pools] == [("server", "standalone")]
    # both methods with both roles deployed: the chart's two pools and the server
    both = _read(text.replace(f"export {MS}PREFILL_REPLICAS=0\nexport {MS}DECODE_REPLICAS=0\n", ""))
    assert [(p.role, p.name) for p in both.pools] == [
        ("prefill", "prefill"), ("decode", "decode"), ("server", "standalone")
    ]  # fmt: skip
    assert both.launches == 3
    # neither method named: nothing deployed, no launch
    found = _read("export LLMDBENCH_DEPLOY_METHODS=none\n")
    assert found.pools == () and found.launches == 0


def test_paths_of_the_scenario_dedupe_pools_and_problems() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        'if [ "$X" = 1 ]; then export LLMDBENCH_Q=1; else export LLMDBENCH_Q=2; fi\n'
        f'export {MS}PREFILL_EXTRA_ARGS="[--max-model-len____REPLACE_ENV_LLMDBENCH_NOPE]"\n'
        f"export {MS}DECODE_TENSOR_PARALLELISM=1\n"
    )
    found = _read(text)
    # two paths (LLMDBENCH_Q 1 or 2), each with two launches; the same decode pool and
    # the same problems once
    assert found.launches == 4
    assert _pools(found) == [("decode", "decode", "org/m", 1, 1, 4, None, "field", _key("org/m"))]
    assert found.problems == (
        Problem(
            Location("s.sh", 3),
            "prefill/prefill: unresolved variable(s) --max-model-len: REPLACE_ENV_LLMDBENCH_NOPE",
        ),
        Problem(
            Location("s.sh", 1),
            DEFAULTS_NOTE + f"{MS}PREFILL_REPLICAS, {MS}DECODE_REPLICAS, "
            f"{MS}PREFILL_TENSOR_PARALLELISM, {MS}DECODE_EXTRA_ARGS",
            blocking=False,
        ),
    )


def test_paths_that_differ_give_each_pool() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}DECODE_REPLICAS=0\n"
        f"export {MS}PREFILL_TENSOR_PARALLELISM=1\n"
        f'export {MS}PREFILL_EXTRA_ARGS="[--block-size____16]"\n'
        f'if [ "$X" = 1 ]; then export {MS}PREFILL_TENSOR_PARALLELISM=2; fi\n'
    )
    found = _read(text)
    # $X is not known: both paths (TP 2 when the if is taken, else 1), one pool each
    assert sorted(p.tp for p in found.pools) == [1, 2]
    assert found.launches == 2


def test_a_scenario_every_path_of_which_exits() -> None:
    found = _read("export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\nexit 0\n")
    assert found.pools == () and found.launches == 0
    assert found.problems == (
        Problem(
            Location("s.sh", 1),
            "scenario: every path through the file ends before its last line (exit / exec), "
            "so the variables it leaves to llm-d-benchmark are not known",
        ),
    )


def test_shell_notes_become_scenario_notes() -> None:
    text = f"export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\nexport {MS}DECODE_REPLICAS=0\nsource x.sh\n"
    found = _read(text)
    notes = [p for p in found.problems if p.message.startswith("scenario: ")]
    assert notes and all(p.blocking is False for p in notes)
    assert any(p.location == Location("s.sh", 3) for p in notes)


def test_empty_values_fall_back_to_nothing() -> None:
    # EXTRA_ARGS set empty: vllm serve MODEL and nothing else (no default arguments)
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f'export {MS}DECODE_REPLICAS=0\nexport {MS}PREFILL_EXTRA_ARGS=""\n'
    )
    found = _read(text)
    assert [(p.role, p.model, p.tp) for p in found.pools] == [("prefill", "org/m", 1)]
    assert not [p for p in found.problems if p.blocking]
    # an empty model list: no model, no pool, no launch
    found = _read('export LLMDBENCH_DEPLOY_MODEL_LIST=""\n')
    assert found.pools == () and found.launches == 0
    # STANDALONE_ARGS set empty: no command, named as the empty value it is
    found = _read(
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\nexport LLMDBENCH_DEPLOY_METHODS=standalone\n"
        'export LLMDBENCH_VLLM_STANDALONE_ARGS=""\n'
    )
    assert found.problems == (
        Problem(
            Location("s.sh", 3),
            "standalone: LLMDBENCH_VLLM_STANDALONE_ARGS () holds no vllm serve command "
            "kvalign can read",
        ),
    )


def test_a_standalone_command_ends_at_a_semicolon_and_notes_its_gpu() -> None:
    # the arguments run as a shell command: a trailing ";" ends it, vLLM never sees it
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\nexport LLMDBENCH_DEPLOY_METHODS=standalone\n"
        "export LLMDBENCH_VLLM_COMMON_AFFINITY=nvidia.com/gpu.product:Tesla-Z999\n"
        'export LLMDBENCH_VLLM_STANDALONE_ARGS="vllm____serve____org/m____'
        '--block-size____16____;"\n'
    )
    found = _read(text)
    assert [(p.role, p.name, p.settings.block_size, p.settings.gpu) for p in found.pools] == [
        ("server", "standalone", 16, None)
    ]
    assert found.problems == (
        Problem(
            Location("s.sh", 4),
            "standalone: GPU node label Tesla-Z999: no GPU model kvalign knows (the --gpu "
            "default is used)",
            blocking=False,
        ),
    )


def test_an_empty_custom_command_is_named_as_empty() -> None:
    text = (
        "export LLMDBENCH_DEPLOY_MODEL_LIST=org/m\n"
        f"export {MS}DECODE_REPLICAS=0\nexport {MS}PREFILL_MODEL_COMMAND=custom\n"
        f'export {MS}PREFILL_EXTRA_ARGS=""\n'
    )
    found = _read(text)
    assert found.pools == ()
    assert found.problems[0] == Problem(
        Location("s.sh", 4),
        f"prefill: {MS}PREFILL_MODEL_COMMAND is custom and {MS}PREFILL_EXTRA_ARGS () holds "
        "no vllm serve command kvalign can read (a command written to a temporary file is "
        "not read): write it in the scenario as [vllm____serve____MODEL____…]",
    )
