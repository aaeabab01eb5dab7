"""Wall time, CPU time and peak RSS of kvalign's main commands (``make bench``).

Each figure is the median over ``--repeat`` runs of a fresh ``kvalign`` process:
``time.perf_counter`` around the subprocess for wall time, and the child's own CPU time
(user + sys) and peak RSS from ``os.wait4``. CPU time is what a loaded machine inflates
least, so every figure is also given as a ratio to a bare interpreter (``python -c pass``)
measured the same way in the same run. Children run with bytecode writing on (kvalign is
byte-compiled first), as an installed package runs. Writes ``BENCHMARKS.md`` (with the
machine description) unless ``--no-write``.

    python benchmarks/bench.py [--repeat 7] [--files 10000] [--no-write] [--only check|audit]

``--only check`` measures the bare interpreter and the bundled-model ``check`` rows
(cold and warm) only; ``--only audit`` the bare interpreter and the audit rows only. Both
print their rows and never write ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "configs" / "models"
EXAMPLES = ROOT / "configs" / "deployments"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
KVALIGN = [sys.executable, "-m", "kvalign"]


@dataclass(frozen=True)
class Figure:
    """One benchmark row: median wall and CPU seconds and peak RSS (MiB) over the runs.

    ``target_ratio`` is a bound on the CPU-time ratio to the bare interpreter,
    ``target_s`` a bound in CPU seconds (``over`` seconds subtracted first: the
    reference the target is stated "beyond")."""

    name: str
    median_s: float
    min_s: float
    max_s: float
    median_cpu: float
    peak_rss_mib: float
    runs: int
    target_s: float | None = None
    target_ratio: float | None = None
    over: float = 0.0
    note: str = ""

    def ratio(self, bare: Figure) -> float:
        """CPU-time ratio to the bare interpreter."""
        return self.median_cpu / bare.median_cpu if bare.median_cpu > 0 else float("inf")

    def target(self) -> str:
        if self.target_ratio is not None:
            return f"≤ {self.target_ratio:g}× CPU"
        if self.target_s is not None:
            beyond = " beyond the reference" if self.over else ""
            return f"≤ {self.target_s:g} s CPU{beyond}"
        return ""

    def verdict(self, bare: Figure) -> str:
        if self.target_ratio is not None:
            return "meets" if self.ratio(bare) <= self.target_ratio else "misses"
        if self.target_s is not None:
            return "meets" if self.median_cpu - self.over <= self.target_s else "misses"
        return ""


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds (user + sys), peak RSS MiB, exit code) of one child."""
    start = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, child.returncode  # ru_maxrss: KiB on Linux


def measure(
    name: str,
    argvs: Callable[[], list[list[str]]],
    env: dict[str, str],
    repeat: int,
    *,
    target: float | None = None,
    ratio: float | None = None,
    over: float = 0.0,
    ok_codes: tuple[int, ...] = (0, 1),
    before: Callable[[], None] | None = None,
    note: str = "",
) -> Figure:
    """Median wall and CPU time of running every argv in ``argvs()`` once, ``repeat``
    times."""
    walls: list[float] = []
    cpus: list[float] = []
    peak = 0.0
    for _ in range(repeat):
        if before is not None:
            before()
        total = total_cpu = 0.0
        for argv in argvs():
            wall, cpu, rss, code = run_once(argv, env)
            if code not in ok_codes:
                raise SystemExit(f"bench: {' '.join(argv)} exited {code}")
            total += wall
            total_cpu += cpu
            peak = max(peak, rss)
        walls.append(total)
        cpus.append(total_cpu)
    print(f"  {name}: {statistics.median(cpus):.3f} s CPU", file=sys.stderr, flush=True)
    return Figure(
        name, statistics.median(walls), min(walls), max(walls), statistics.median(cpus),
        peak, repeat, target, ratio, over, note,
    )  # fmt: skip


def generate_deployments(folder: Path, count: int) -> int:
    """``count`` deployment files: copies of every example kind (Kubernetes, llm-d,
    Dynamo, KServe, shell scripts with their --config) and kvalign-schema files that pair
    every bundled model at several TP sizes. Returns the number of files written."""
    models = sorted(
        f"{p.parent.parent.name}/{p.parent.name}" for p in CATALOG.glob("*/*/config.json")
    )
    written = 0
    copy = 0
    while written < count // 2:
        for kind in sorted(EXAMPLES.iterdir()):
            target = folder / f"copy-{copy:03d}" / kind.name
            shutil.copytree(kind, target)
            written += sum(1 for p in target.iterdir() if p.suffix in (".yaml", ".sh"))
        copy += 1
    pairs = [(8, 1), (4, 2), (2, 2), (1, 1), (4, 4), (2, 1)]
    index = 0
    while written < count:
        model = models[index % len(models)]
        prefill, decode = pairs[index % len(pairs)]
        text = (
            f'model: {model}\nprefill: {{tp: {prefill}, args: "--block-size 64"}}\n'
            f'decode: {{tp: {decode}, args: "--block-size 64"}}\n'
        )
        (folder / "own").mkdir(exist_ok=True)
        (folder / "own" / f"pair-{index:04d}.yaml").write_text(text, encoding="utf-8")
        written += 1
        index += 1
    return written


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return {
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load": load,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


HEADER = (
    "| command | median wall s | min – max wall s | median CPU s | CPU ratio | peak RSS MiB "
    "| target | notes |\n|---|---:|---:|---:|---:|---:|---|---|"
)


def render(
    figures: list[Figure], bare: Figure, info: dict[str, str], repeat: int, files: int,
    evaluated: int,
) -> str:  # fmt: skip
    rows = "\n".join(
        f"| {f.name} | {f.median_s:.3f} | {f.min_s:.3f} – {f.max_s:.3f} | {f.median_cpu:.3f} | "
        f"{f.ratio(bare):.1f}× | {f.peak_rss_mib:.0f} | {f.target()} {f.verdict(bare)} | "
        f"{f.note} |"
        for f in figures
    )
    return f"""# Benchmarks

Measured by `make bench` (`benchmarks/bench.py`): each figure is the median of
{repeat} runs of a fresh `kvalign` process (`python -m kvalign …`): wall time
(`time.perf_counter` around the subprocess) and the child's CPU time (user + sys) and
peak RSS (`os.wait4` rusage). The **ratio** column is the median CPU time over that of a
bare interpreter (`python -c pass`, {bare.median_cpu:.3f} s CPU, {bare.median_s:.3f} s wall)
measured the same way in the same run; CPU time is what a loaded machine inflates least,
so the targets of issue 18 are judged on it. "Cold" = `--no-cache`; "warm" = the geometry
cache (`$XDG_CACHE_HOME/kvalign`) already holds the model. All runs offline
(`HF_HUB_OFFLINE=1`); the cache lives in a temporary folder. kvalign is byte-compiled
before the runs and the children may write bytecode (`PYTHONDONTWRITEBYTECODE` is dropped),
as an installed package runs: without `.pyc` files every process recompiles kvalign's
modules (about 0.25 s CPU per process on this machine).

Machine: {info["nproc"]} CPUs ({info["cpu"]}), Python {info["python"]}, {info["platform"]};
load average at start {info["load"]} (other jobs shared the machine); {info["date"]}.

{HEADER}
{rows}

`audit` inputs: {files} deployment files generated into a temporary folder (copies of every
example kind under `configs/deployments/` plus kvalign-schema pairs of every bundled model);
{evaluated} are evaluated, the rest are the `--config` YAMLs the shell scripts read (skipped as
files of their own). The `matrix` rows are the total of one process per bundled model.
The "new local config" row is a copy of a bundled config in a folder of its own, checked
with an empty cache (so it goes through transformers); its target is its CPU time minus
the reference row (the transformers import alone).

## Closing note: issue 18's speed targets in this run

{closing(figures, bare, files)}
"""


#: deployment files issue 18's audit target is stated for, and its bound (CPU seconds):
#: a run of fewer files is held to the same rate per file.
TARGET_FILES = 10_000
AUDIT_TARGET_S = 5.0


def closing(figures: list[Figure], bare: Figure, files: int) -> str:
    """One line per figure that has a target: the measured CPU figure and the verdict."""
    lines = []
    if files < TARGET_FILES:
        lines.append(
            f"* The audit rows ran {files} files, not the {TARGET_FILES:,} the target is "
            f"stated for (`--files {TARGET_FILES}`); their bound is the target's rate, "
            f"{AUDIT_TARGET_S:g} s × {files}/{TARGET_FILES:,} = "
            f"{AUDIT_TARGET_S * files / TARGET_FILES:g} s CPU."
        )
    for f in figures:
        if f.target_ratio is not None:
            got = f"{f.ratio(bare):.1f}× a bare interpreter's CPU time"
        elif f.target_s is not None and f.over:
            got = f"{f.median_cpu - f.over:.3f} s CPU beyond the reference"
        elif f.target_s is not None:
            got = f"{f.median_cpu:.3f} s CPU"
        else:
            continue
        lines.append(f"* {f.name}: {got} (target {f.target()}): **{f.verdict(bare)}**.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--only",
        choices=["check", "audit"],
        help="only the bare interpreter and the check (or audit) rows; implies --no-write",
    )
    opts = parser.parse_args()
    if opts.only:
        opts.no_write = True
    compileall.compile_dir(ROOT / "kvalign", quiet=1)

    with tempfile.TemporaryDirectory(prefix="kvalign-bench-") as tmp:
        base = Path(tmp)
        cache_home = base / "xdg"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(cache_home),
               "HF_HOME": str(base / "hf"), "COLUMNS": "200"}  # fmt: skip
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        deploy = base / "deployments"
        deploy.mkdir()
        files = 0 if opts.only == "check" else generate_deployments(deploy, opts.files)
        local = base / "local-model"
        local.mkdir()
        shutil.copy(CATALOG / NANO / "config.json", local / "config.json")
        models = [
            f"{p.parent.parent.name}/{p.parent.name}"
            for p in sorted(CATALOG.glob("*/*/config.json"))
        ]

        def clear_cache() -> None:
            shutil.rmtree(cache_home, ignore_errors=True)

        def prime() -> None:
            for argv in ([*KVALIGN, "survey", "--tp", "1"], [*KVALIGN, "check", NANO]):
                run_once(argv, env)

        r = opts.repeat
        short = NANO.split("/")[1]
        bare = measure(
            "bare interpreter (python -c pass)", lambda: [[sys.executable, "-c", "pass"]], env, r
        )

        def check_rows() -> list[Figure]:
            """The bundled-model ``check`` rows, cold then warm."""
            return [
                measure(
                    f"check {short} cold (bundled, --no-cache)",
                    lambda: [[*KVALIGN, "check", NANO, "--no-cache"]],
                    env,
                    r,
                    ratio=12,
                    before=clear_cache,
                ),
                measure(
                    f"check {short} warm",
                    lambda: [[*KVALIGN, "check", NANO]],
                    env,
                    r,
                    ratio=6,
                    before=prime,
                ),
            ]

        if opts.only == "check":
            figures = [bare, *check_rows()]
            for f in figures:
                print(f"{f.name:66s} {f.median_cpu:7.3f} s CPU {f.ratio(bare):6.1f}×")
            return
        audit_runs = max(1, r // 3)

        def audit_argvs(extra: list[str]) -> Callable[[], list[list[str]]]:
            return lambda: [[*KVALIGN, "audit", str(deploy), *extra]]

        def audit_rows() -> list[Figure]:
            return [
                measure(
                    f"audit {files} files, {label}",
                    audit_argvs(extra),
                    env,
                    audit_runs,
                    target=AUDIT_TARGET_S * files / TARGET_FILES,  # the same rate per file
                    ok_codes=(0, 1, 3),
                    before=before,
                )
                for label, extra, before in (
                    ("JSON, cold", ["--format", "json", "--no-cache"], clear_cache),
                    ("JSON, warm", ["--format", "json"], prime),
                    ("table, warm", [], prime),
                )
            ]

        if opts.only == "audit":
            figures = [bare, *audit_rows()]
            for f in figures:
                per_file = f.median_cpu / files * 1000
                print(f"{f.name:66s} {f.median_cpu:7.3f} s CPU ({per_file:.3f} ms a file)")
            return
        reference = measure(
            "import transformers config classes (reference)",
            lambda: [
                [
                    sys.executable,
                    "-c",
                    "import transformers.models.auto.configuration_auto as m; "
                    "m.CONFIG_MAPPING['nemotron_h']",
                ]
            ],
            env,
            r,
            note="what a check of a new local config pays on top of warm",
        )
        figures = [
            bare,
            measure("kvalign --version", lambda: [[*KVALIGN, "--version"]], env, r),
            measure("kvalign --help", lambda: [[*KVALIGN, "--help"]], env, r),
            reference,
            *check_rows(),
            measure(
                "check of a new local config (first run)",
                lambda: [[*KVALIGN, "check", str(local)]],
                env,
                r,
                target=0.3,
                over=reference.median_cpu,
                before=clear_cache,
            ),
            measure(
                f"matrix --tp 1,2,4,8,16 × {len(models)} bundled models, warm (total)",
                lambda: [[*KVALIGN, "matrix", m, "--tp", "1,2,4,8,16"] for m in models],
                env,
                max(1, r // 3),
                before=prime,
                note=f"{len(models)} processes per run",
            ),
            *audit_rows(),
        ]
        done = subprocess.run(
            [*KVALIGN, "audit", str(deploy), "--format", "json"],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        evaluated = len(json.loads(done.stdout)["files"])

    info = machine()
    for f in figures:
        target = f" (target {f.target()}: {f.verdict(bare)})" if f.target() else ""
        print(
            f"{f.name:66s} {f.median_s:7.3f} s wall {f.median_cpu:7.3f} s CPU "
            f"{f.ratio(bare):6.1f}× {f.peak_rss_mib:5.0f} MiB{target}"
        )
    print(f"audit evaluated {evaluated} of {files} files")
    if not opts.no_write:
        (ROOT / "BENCHMARKS.md").write_text(
            render(figures, bare, info, opts.repeat, files, evaluated), "utf-8"
        )
        print("wrote BENCHMARKS.md")


if __name__ == "__main__":
    main()
