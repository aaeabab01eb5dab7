"""A plain ``check`` imports neither the table library nor the command-line framework.

``kvalign check MODEL`` runs on the fast path (kvalign.cli.fast) and prints its table
without rich when stdout is no terminal (kvalign.report.plain); packaging is imported
only when a version range or a given version has to be parsed, and the cache's random
key generator only when a key is created. Of kvalign's own modules, the other commands,
the other report formats, the transformers-backed config builder and the Hub download
(with ``--hf-overrides``) stay unimported: a bundled or cached model needs none of them.
Each probe runs a real command in a fresh
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
#: kvalign modules a warm check (and a cold check of a bundled model) must not import
NOT_LOADED_KVALIGN = (
    "kvalign.cli.app",
    "kvalign.audit",
    "kvalign.deploy",
    "kvalign.shell",
    "kvalign.explain",
    "kvalign.plan",
    "kvalign.survey",
    "kvalign.rules",
    "kvalign.report.json_format",
    "kvalign.report.markdown",
    "kvalign.sources.build",
    "kvalign.sources.hub",
    "kvalign.sources.overrides",
)

_PROBE = """
import os
import sys
from kvalign.cli import main
try:
    main({args!r})
except SystemExit as exc:
    code = exc.code
names = sorted({{m.split('.')[0] for m in sys.modules}} | set(sys.modules))
# past kvalign's stderr guard, which bounds line length
os.write(2, f"\\nexit={{code}} loaded={{' '.join(names)}}\\n".encode())
"""


def _loaded(
    args: list[str], cache: Path, env: dict[str, str] | None = None
) -> tuple[int, set[str]]:
    """(exit code, modules loaded: each full name and its top-level package) of one
    ``kvalign`` run in a new process, stdout a pipe (no terminal)."""
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
    assert sorted(set(NOT_LOADED_KVALIGN) & loaded) == []


def test_cold_check_of_a_bundled_model_loads_no_table_library(tmp_path: Path) -> None:
    code, loaded = _loaded(["check", NANO, "--no-cache"], tmp_path)
    assert code == 0
    assert sorted(set(NOT_LOADED) & loaded) == []
    assert sorted(set(NOT_LOADED_KVALIGN) & loaded) == []


def test_an_hf_override_loads_the_override_module(tmp_path: Path) -> None:
    # the module set follows the need: --hf-overrides is applied to the parsed config, so
    # the bundled precomputed geometry is not used and the override module is imported
    _, loaded = _loaded(["check", NANO, "--hf-overrides", '{"mamba_head_dim": 64}'], tmp_path)
    assert "kvalign.sources.overrides" in loaded


def test_a_terminal_asked_for_is_rich_and_a_version_given_is_packaging(tmp_path: Path) -> None:
    # the module set follows the need: FORCE_COLOR asks for colour (only rich prints it),
    # --vllm-version is a version to parse
    _, loaded = _loaded(["check", NANO], tmp_path, {"FORCE_COLOR": "1"})
    assert "rich" in loaded and "typer" not in loaded
    _, loaded = _loaded(["check", NANO, "--vllm-version", "0.33.0rc1"], tmp_path)
    assert "packaging" in loaded and "rich" not in loaded
