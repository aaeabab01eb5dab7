"""A plain ``check`` imports neither the table library nor the command-line framework.

``kvalign check MODEL`` runs on the fast path (kvalign.cli.fast) and prints its table
without rich when stdout is no terminal (kvalign.report.plain); packaging is imported
only when a version range or a given version has to be parsed, and the cache's random
key generator only when a key is created. Each probe runs a real command in a fresh
interpreter and lists the modules it loaded (a module set, not a timing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
#: what a warm check (and a cold check of a bundled model) must not import
NOT_LOADED = ("rich", "typer", "click", "pydantic", "packaging", "secrets")

_PROBE = """
import sys
from kvalign.cli import main
try:
    main({args!r})
except SystemExit as exc:
    code = exc.code
top = sorted({{m.split('.')[0] for m in sys.modules}})
sys.stderr.write(f"exit={{code}} loaded={{' '.join(top)}}\\n")
"""


def _loaded(
    args: list[str], cache: Path, env: dict[str, str] | None = None
) -> tuple[int, set[str]]:
    """(exit code, top-level modules loaded) of one ``kvalign`` run in a new process,
    stdout a pipe (no terminal)."""
    run_env = dict(os.environ, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=str(cache), COLUMNS="200")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        run_env.pop(name, None)
    run_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(args=args)],
        cwd=ROOT, env=run_env, capture_output=True, text=True,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1]
    code, _, names = last.partition(" loaded=")
    return int(code.removeprefix("exit=")), set(names.split())


@pytest.mark.parametrize(
    "args",
    [
        ["check", NANO],  # passes
        ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1"],  # fails: the fix is proved
        ["check", NANO, "--alignment", "tp-stable", "--prefill-tp", "8", "--decode-tp", "1,2"],
    ],
)
def test_warm_check_loads_no_table_library(args: list[str], tmp_path: Path) -> None:
    first, _ = _loaded(args, tmp_path)  # writes the cache (and its key)
    code, loaded = _loaded(args, tmp_path)
    assert code == first and code in (0, 1)
    assert "kvalign" in loaded and "json" in loaded  # the probe saw the run's modules
    assert sorted(set(NOT_LOADED) & loaded) == []


def test_cold_check_of_a_bundled_model_loads_no_table_library(tmp_path: Path) -> None:
    code, loaded = _loaded(["check", NANO, "--no-cache"], tmp_path)
    assert code == 0
    assert sorted(set(NOT_LOADED) & loaded) == []


def test_a_terminal_asked_for_is_rich_and_a_version_given_is_packaging(tmp_path: Path) -> None:
    # the module set follows the need: FORCE_COLOR asks for colour (only rich prints it),
    # --vllm-version is a version to parse
    _, loaded = _loaded(["check", NANO], tmp_path, {"FORCE_COLOR": "1"})
    assert "rich" in loaded and "typer" not in loaded
    _, loaded = _loaded(["check", NANO, "--vllm-version", "0.33.0rc1"], tmp_path)
    assert "packaging" in loaded and "rich" not in loaded
