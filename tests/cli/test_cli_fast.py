"""kvalign.cli.fast: plain check/matrix command lines skip typer's (pydantic) parsing and
give exactly what typer gives; anything else is left to typer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.cli.check import check
from kvalign.cli.fast import parse
from kvalign.cli.output import OutputFormat

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
    assert parse(check, args) is None


def test_values_as_declared() -> None:
    kwargs = parse(
        check,
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
        "sys.stderr.write(f'exit={code} pydantic={\"pydantic\" in sys.modules}\\n')\n"
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(tmp_path), COLUMNS="120")
    fast = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    typer_path = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert fast.stderr.strip().splitlines()[-1] == f"exit={typer_path.exit_code} pydantic=False"
    assert fast.stdout == typer_path.stdout
