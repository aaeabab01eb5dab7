"""The fast path and the cyclic garbage collector (kvalign.cli.fast.run).

A plain ``check`` turns the collector off while it runs and restores it after. When the
command line is the process's own (``main()`` reading ``sys.argv``: the console script,
``python -m kvalign``) the process exits next, so the run's objects are frozen
(:func:`gc.freeze`) first: the collections at interpreter exit skip them. A caller that
hands ``main`` its own arguments (a test, a library) gets no frozen objects. Each probe
is a fresh interpreter (a state, not a timing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"

_PROBE = """
import gc
import os
import sys
from kvalign.cli import main
{setup}
try:
    {call}
except SystemExit as exc:
    code = exc.code
state = f"frozen={{gc.get_freeze_count() > 0}} on={{gc.isenabled()}}"
os.write(2, f"\\nexit={{code}} {{state}}\\n".encode())
"""


def _probe(setup: str, call: str, cache: Path) -> str:
    env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(cache), COLUMNS="200")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(setup=setup, call=call)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(("args", "code"), [(["check", NANO], 0), (["matrix", NANO], 1)])
def test_the_process_command_line_freezes_the_run_objects(
    args: list[str], code: int, tmp_path: Path
) -> None:
    setup = f"sys.argv = ['kvalign', *{args!r}]"
    assert _probe(setup, "main()", tmp_path) == f"exit={code} frozen=True on=True"


def test_arguments_handed_to_main_freeze_nothing(tmp_path: Path) -> None:
    assert _probe("", f"main(['check', {NANO!r}])", tmp_path) == "exit=0 frozen=False on=True"
    # the collector's state is the caller's: off stays off
    last = _probe("gc.disable()", f"main(['check', {NANO!r}])", tmp_path)
    assert last == "exit=0 frozen=False on=False"


def test_a_command_line_typer_runs_freezes_nothing(tmp_path: Path) -> None:
    # ``models`` is not served by the fast path: typer runs it, the collector as always
    setup = "sys.argv = ['kvalign', 'models']"
    assert _probe(setup, "main()", tmp_path) == "exit=0 frozen=False on=True"
