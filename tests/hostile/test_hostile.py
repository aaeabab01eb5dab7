"""Every hostile case exits as promised, in bounded CPU time and
memory, with one line on stderr and no file changed.

Each case runs ``python -m kvalign`` in a subprocess of its own folder (so cases can run
side by side) under ``resource`` limits: 1 GiB of address space (a run that needs more
dies with MemoryError, which would show as exit 70 or a signal) and 10 s of CPU time
(``RLIMIT_CPU``: the limit the corpus sets; wall time on a shared CI machine is also
bounded, by a 60 s timeout that catches a run blocked on a FIFO or device). Files are
hashed (bytes and mode) before and after the run.
"""

from __future__ import annotations

import hashlib
import os
import resource
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.hostile.cases import CASES, Case, sandbox_env

MEMORY_LIMIT = 1 << 30  # bytes of address space
CPU_SECONDS = 10
WALL_SECONDS = 60


def _limits() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mode of every regular file under ``folder`` (the cache excluded)."""
    found: dict[str, tuple[str, int]] = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != ".cache"]
        for name in files:
            path = Path(root) / name
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                digest = stat.filemode(info.st_mode)
            found[os.fsdecode(path.relative_to(folder))] = (digest, info.st_mode)
    return found


def _run(
    case: Case, folder: Path
) -> tuple[subprocess.CompletedProcess[bytes], float, int, dict, dict]:
    folder.mkdir()
    env = sandbox_env(folder, **{"COLUMNS": "160", **case.env})
    argv = case.build(folder)
    if case.before is not None:
        case.before(folder, env)
    before = _snapshot(folder)
    done, cpu, peak = run_limited(argv, folder, env)
    return done, cpu, peak, before, _snapshot(folder)


def run_limited(
    argv: list[str], folder: Path, env: dict[str, str], stdin: bytes | None = None
) -> tuple[subprocess.CompletedProcess[bytes], float, int]:
    """``python -m kvalign ARGV`` in ``folder`` with ``env`` under the hostile limits
    (:data:`MEMORY_LIMIT` of address space, :data:`CPU_SECONDS` of CPU,
    :data:`WALL_SECONDS` of wall clock); ``stdin``: bytes to feed (``None``: none, the
    child inherits no terminal). Returns the run, its CPU seconds and the peak RSS (bytes)
    of this process's children so far."""
    start = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "kvalign", *argv],
        cwd=folder,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=WALL_SECONDS,
        preexec_fn=_limits,
        check=False,
    )
    end = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime)
    return done, cpu, end.ru_maxrss * 1024


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """Every case, two at a time (the machine's cores), each in its own folder."""
    base = tmp_path_factory.mktemp("hostile")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {case.name: pool.submit(_run, case, base / case.name) for case in CASES}
        return {name: future.result() for name, future in futures.items()}


def test_corpus_covers_every_guarantee_class() -> None:
    classes = {case.klass for case in CASES}
    assert classes == {
        "outputs", "budgets", "numbers", "cache", "sanitising", "silent-pass",
        "confinement", "versions",
    }  # fmt: skip
    assert len({case.name for case in CASES}) == len(CASES) >= 40


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_hostile_case(case: Case, results: dict[str, tuple]) -> None:
    done, cpu, maxrss, before, after = results[case.name]
    stderr = done.stderr.decode("utf-8", "replace")
    stdout = done.stdout.decode("utf-8", "replace")
    assert done.returncode in case.codes, (case.name, done.returncode, stderr[-500:])
    assert "Traceback" not in stderr and "internal error" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("kvalign: error:")]
    if done.returncode == 2:
        assert len(errors) == 1, stderr[-1000:]
    assert all(len(line) <= 2100 for line in stderr.splitlines())
    assert "\x1b" not in stderr and "\x1b" not in stdout  # no raw escape reaches a log
    assert before == after, f"files changed: {set(before.items()) ^ set(after.items())}"
    assert cpu < 10, f"{cpu:.1f} s of CPU"
    assert maxrss < MEMORY_LIMIT
    if case.check is not None:
        problem = case.check(stdout, stderr, Path())
        assert problem is None, problem
