"""kvalign.cli.fast: plain check/matrix command lines skip typer (and click, pydantic and
the other command modules) and give exactly what typer gives; anything else is left to
typer."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import typing
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.cli.app import main as typer_main
from kvalign.cli.check import check
from kvalign.cli.fast import COMMANDS, parse
from kvalign.cli.fast import main as fast_main
from kvalign.cli.matrix import matrix
from kvalign.cli.output import OutputFormat
from tests.cli.entry import outcome

ROOT = Path(__file__).resolve().parents[2]
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        [NANO, "--help"],
        [],  # MODEL missing: typer's message
        [NANO, "other"],  # two arguments
        [NANO, "--block-size", "0"],  # below the declared minimum
        [NANO, "--block-size", "08"],  # a spelling typer judges
        [NANO, "--block-size", "-1"],
        [NANO, "--format", "JSON"],  # not an enum value as spelled
        [NANO, "--gpu", "H100", "--gpu", "B200"],  # repeated
        [NANO, "--no-such-flag"],
        [NANO, "--use-replayssm=yes"],
        [NANO, "--gpu"],  # value missing
    ],
)
def test_left_to_typer(args: list[str]) -> None:
    assert parse("check", args) is None


def test_values_as_declared() -> None:
    kwargs = parse(
        "check",
        [NANO, "--prefill-tp=8", "--decode-tp", "1,2", "--no-enable-prefix-caching",
         "--block-size", "64", "--format", "json", "--no-cache", "--use-replayssm"],
    )  # fmt: skip
    assert kwargs is not None
    assert (kwargs["model"], kwargs["prefill_tp"], kwargs["decode_tp"]) == (NANO, "8", "1,2")
    assert kwargs["enable_prefix_caching"] is False and kwargs["block_size"] == 64
    assert kwargs["output_format"] is OutputFormat.json
    assert kwargs["no_cache"] is True and kwargs["use_replayssm"] is True
    # not given: the declared defaults
    assert kwargs["gpu"] is None and kwargs["dtype"] == "auto" and kwargs["max_model_len"] is None


@pytest.mark.parametrize(
    "args",
    [
        ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "json"],
        ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--block-size", "2096"],
        ["matrix", NANO, "--tp", "1,2,4", "--enable-prefix-caching", "--format", "markdown"],
    ],
)
def test_same_answer_as_typer_without_pydantic(args: list[str], tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from kvalign.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', "
        "'pydantic') or m.startswith('kvalign.cli.') and m.split('.')[2] not in "
        "('fast', 'sizing', 'output', 'exit'))\n"
        'sys.stderr.write(f\'exit={code} pydantic={"pydantic" in sys.modules} '
        "loaded={loaded}\\n')\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(tmp_path), COLUMNS="120")
    fast = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    typer_path = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    # neither typer nor click nor pydantic nor another command module was imported
    last = fast.stderr.strip().splitlines()[-1]
    assert last == f"exit={typer_path.exit_code} pydantic=False loaded=[]"
    assert fast.stdout == typer_path.stdout


# ---- the fast path's option table is typer's declarations, option by option ------------
def _typer_options(command: Callable[..., None]) -> dict[str, tuple[Any, dict[str, Any]]]:
    """``{parameter: (default, {spelling: kind})}`` read from the command's typer
    signature, in the fast path's notation (``str``, ``(min, max)``, an Enum, or the
    value a flag sets)."""
    table: dict[str, tuple[Any, dict[str, Any]]] = {}
    for param in inspect.signature(command, eval_str=True).parameters.values():
        kind, info = typing.get_args(param.annotation)[:2]
        if type(info).__name__ == "ArgumentInfo":
            continue
        if isinstance(kind, UnionType) or typing.get_origin(kind) is typing.Union:
            (kind,) = [k for k in typing.get_args(kind) if k is not NoneType]
        names = [n.strip() for decl in [info.default, *info.param_decls] for n in decl.split("/")]
        if kind is bool:  # "--x/--no-x": the first sets True, the second False
            spelled: dict[str, Any] = {name: index == 0 for index, name in enumerate(names)}
        elif kind is int:
            spelled = dict.fromkeys(names, (info.min, info.max))
        else:
            assert kind is str or issubclass(kind, Enum), (param.name, kind)
            spelled = dict.fromkeys(names, kind)
        table[param.name] = (param.default, spelled)
    return table


@pytest.mark.parametrize("command", [check, matrix], ids=["check", "matrix"])
def test_fast_table_is_typers(command: Callable[..., None]) -> None:
    assert COMMANDS[command.__name__] == _typer_options(command)
    assert list(COMMANDS[command.__name__]) == list(_typer_options(command))  # same order


# ---- same stdout, stderr and exit code as typer ------------------------------------------
def _same_as_typer(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str, object]:
    typer_outcome = outcome(typer_main, args, capsys)
    fast_outcome = outcome(fast_main, args, capsys)
    assert fast_outcome == typer_outcome
    return fast_outcome


NANO_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4"
QWEN = "Qwen/Qwen3.5-397B-A17B"
#: values tried per option: valid ones (the fast path serves them) and ones the command
#: itself rejects (typed errors: one line, exit 2; JSON error document with --format json)
VALUES: dict[str, list[str]] = {
    "--prefill-tp": ["8", "1,2", "2,4,8", "0", "x", "3"],
    "--decode-tp": ["1", "2,4", "16", "1,1"],
    "--tp": ["1,2,4", "8", "2,x"],
    "--block-size": ["16", "2096", "1056"],
    "--gpu": ["H100", "B200", "MI300X", "Z9"],
    "--format": ["table", "json", "markdown"],
    "--fail-on": ["error", "warning", "info"],
    "--alignment": ["vllm", "tp-stable"],
    "--vllm-version": ["0.33.0", "0.17.0", "0.27.1", "99.0", "bogus"],
    "--kv-cache-dtype": ["auto", "fp8", "int3"],
    "--mamba-cache-mode": ["none", "align", "all"],
    "--mamba-ssm-cache-dtype": ["auto", "float32"],
    "--num-speculative-tokens": ["0", "1", "3"],
    "--hf-overrides": ['{"n_groups": 4}', "nope", "{}"],
    "--max-model-len": ["1", "4096"],
    "--pipeline-parallel-size": ["1", "6"],
    "--pp-layer-partition": ["24,28", "x"],
    "--attention-backend": ["auto", "FLASHINFER", "TRITON_ATTN", "NOPE"],
    "--enable-prefix-caching": [],
    "--no-enable-prefix-caching": [],
    "--use-replayssm": [],
    "--no-cache": [],
    "--trust-remote-code": [],
}
MODELS = [NANO, NANO_NVFP4, QWEN, "no-such-org/no-such-model", "tests/no/such/config.json"]


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    """A check or matrix command line in the forms the fast path serves: MODEL anywhere,
    each option at most once, ``--name value`` or ``--name=value``."""
    command = draw(st.sampled_from(["check", "matrix"]))
    allowed = [n for n in VALUES if (n == "--tp") == (command == "matrix") or n not in
               ("--tp", "--prefill-tp", "--decode-tp")]  # fmt: skip
    names = draw(st.lists(st.sampled_from(allowed), unique=True, max_size=5))
    if "--enable-prefix-caching" in names and "--no-enable-prefix-caching" in names:
        names.remove("--no-enable-prefix-caching")
    tokens: list[str] = []
    for name in names:
        if not VALUES[name]:
            tokens.append(name)
            continue
        value = draw(st.sampled_from(VALUES[name]))
        tokens += [f"{name}={value}"] if draw(st.booleans()) else [name, value]
    position = draw(st.integers(0, len(tokens)))
    while position and tokens[position - 1].startswith("--") and "=" not in tokens[
        position - 1] and VALUES[tokens[position - 1]]:  # fmt: skip
        position -= 1  # never between an option and its value
    tokens.insert(position, draw(st.sampled_from(MODELS)))
    return [command, *tokens]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(args=command_lines())
def test_fast_path_matches_typer(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Every generated line is served by the fast path (it parses), and prints exactly
    what typer prints, with the same exit code."""
    assert parse(args[0], args[1:]) is not None, args
    _same_as_typer(args, capsys)


@pytest.mark.parametrize(
    "args",
    [
        ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1"],  # flagged: exit 1
        ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "json"],
        ["check", QWEN, "--prefill-tp", "8", "--decode-tp", "1", "--block-size", "2096"],
        ["check", NANO, "--prefill-tp", "x", "--format", "json"],  # JSON error document
        ["check", "no-such-org/no-such-model"],  # exit 2, one line
        ["matrix", NANO, "--tp", "1,2,4,8", "--format", "markdown"],
        ["matrix", NANO, "--vllm-version", "99.0"],  # the beyond-newest warning
        ["check", NANO, "-pp", "6", "--prefill-tp", "1"],  # a stage keeps 16: invalid
        ["check", NANO, "-pp=2", "--pp-layer-partition", "24,28"],
        ["check", NANO, "--hf-overrides", '{"n_groups": 4}', "--trust-remote-code"],
        # not served: typer's own answers
        ["check", NANO, "--block-size", "0"],
        ["check", NANO, "--format", "JSON"],
        ["check", NANO, "--gpu", "H100", "--gpu", "B200"],
        ["check"],
        ["matrix", NANO, "--prefill-tp", "8"],
        ["check", "--help"],
    ],
)
def test_known_lines_match_typer(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out, _err, code = _same_as_typer(args, capsys)
    assert code != "returned"  # main always exits with the command's code
    if "--format" in args and args[args.index("--format") + 1] == "json" and code in (0, 1, 2):
        json.loads(out)  # a document even on an error


def test_exit_codes_of_known_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """The fast path's codes themselves: Nemotron-3 Nano at prefill TP 8 → decode TP 1
    fails the gate (exit 1, the README's demo: `make demo` accepts only 1); an unknown
    model is bad input (2); ``--block-size 0`` is below typer's minimum (usage, 2)."""
    assert outcome(fast_main, ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1"],
                    capsys)[2] == 1  # fmt: skip
    assert outcome(fast_main, ["check", "no-such-org/no-such-model"], capsys)[2] == 2
    assert outcome(fast_main, ["check", NANO, "--block-size", "0"], capsys)[2] == 2
