"""The hostile corpus: one case per broken guarantee class, built at run time.

Each case builds its files in an empty folder and returns the command line; the runner
(``test_hostile.py``) runs it in a subprocess under ``resource`` limits and checks the
exit code, one-line stderr, no file changed, CPU time and memory.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "configs" / "models"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"

GOOD_SCRIPT = """#!/usr/bin/env bash
vllm serve tiiuae/Falcon-H1-0.5B-Base --tensor-parallel-size 4 \\
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' &
vllm serve tiiuae/Falcon-H1-0.5B-Base --tensor-parallel-size 4 \\
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}' &
"""

GOOD_YAML = """model: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
prefill:
  tp: 8
  args: --block-size 2096
decode:
  tp: 1
  args: --block-size 2096
"""


@dataclass(frozen=True)
class Case:
    """One hostile input: ``build(folder)`` writes files, returns the argv after
    ``kvalign``; the run must exit with one of ``codes``."""

    name: str
    klass: str  # the guarantee class it belongs to
    build: Callable[[Path], list[str]]
    codes: frozenset[int]
    env: dict[str, str] = field(default_factory=dict)
    #: extra check on (stdout, stderr, folder); returns a failure message or None
    check: Callable[[str, str, Path], str | None] | None = None
    #: run before the measured run, with the run's environment (e.g. warm the cache)
    before: Callable[[Path, dict[str, str]], None] | None = None


def sandbox_env(folder: Path, **extra: str) -> dict[str, str]:
    """The whole environment of a ``python -m kvalign`` run on a hostile tree: this
    checkout on ``PYTHONPATH``, ``PATH``, and every home and cache inside
    ``folder/.cache`` (which the no-file-changed checks leave out), offline; ``extra``
    adds or replaces variables (``LANG``, ``COLUMNS``, a stand-in's log, …)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder / ".cache" / "home"),
        "XDG_CACHE_HOME": str(folder / ".cache"),
        "HF_HOME": str(folder / ".cache" / "hf"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def model_copy(folder: Path, model: str, name: str = "model", **changes: object) -> Path:
    """A copy of a bundled model's config.json in ``folder/name`` with ``changes``."""
    config = json.loads((MODELS / model / "config.json").read_text(encoding="utf-8"))
    config.update(changes)
    target = folder / name
    target.mkdir()
    (target / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _fifo(folder: Path, name: str) -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


# ---- 1. outputs never overwrite inputs ---------------------------------------------
def _out_project(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML)
    write(f, ".kvalign.yaml", "ignore: []\n")
    return ["audit", "d.yaml", "--output", ".kvalign.yaml"]


def _out_hardlink(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML)
    os.link(f / "d.yaml", f / "alias.txt")
    return ["audit", "d.yaml", "--output", "alias.txt"]


def _out_vllm_config(f: Path) -> list[str]:
    write(f, "serve.yaml", "block-size: 64\n")
    write(
        f,
        "run.sh",
        GOOD_SCRIPT.replace(
            "--tensor-parallel-size 4 \\", "--config serve.yaml --tensor-parallel-size 4 \\"
        ),
    )
    return ["audit", "run.sh", "--output", "serve.yaml"]


def _out_model_config(f: Path) -> list[str]:
    model_copy(f, NANO)
    write(f, "d.yaml", GOOD_YAML.replace(NANO, "model"))
    return ["audit", "d.yaml", "--output", "model/config.json"]


def _out_json_error(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML)
    return ["audit", "d.yaml", "--select", "BOGUS", "--format", "json", "--output", "d.yaml"]


def _out_plot_model(f: Path) -> list[str]:
    config = json.loads((MODELS / NANO / "config.json").read_text(encoding="utf-8"))
    write(f, "model.svg", json.dumps(config))
    return ["survey", "model.svg", "--tp", "1,2", "--plot", "model.svg"]


def _out_fifo(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML)
    _fifo(f, "out.txt")
    return ["audit", "d.yaml", "--output", "out.txt"]


# ---- 2. budgets: hangs and memory --------------------------------------------------
def _layers(value: int, model: str = QWEN_NEXT) -> Callable[[Path], list[str]]:
    def build(f: Path) -> list[str]:
        model_copy(f, model, num_hidden_layers=value)
        return ["check", "model", "--no-cache"]

    return build


def _overrides_layers(f: Path) -> list[str]:
    write(
        f,
        "d.yaml",
        GOOD_YAML.replace(
            "  args: --block-size 2096\n",
            "  args: --block-size 2096 --hf-overrides '{\"num_hidden_layers\": 1000000000}'\n",
        ),
    )
    return ["audit", "d.yaml"]


def _regex_ignore(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML + "# kvalign: ignore=" + "A " * 120_000 + "\n")
    return ["audit", "d.yaml"]


def _regex_image(f: Path) -> list[str]:
    write(f, "m.yaml", "kind: Pod\nspec:\n  containers:\n  - image: " + "image:" * 40_000 + "\n")
    return ["audit", "m.yaml"]


def _regex_self_dir(f: Path) -> list[str]:
    write(f, "run.sh", "X=$(" + "dirname " * 30_000 + ")\n" + GOOD_SCRIPT)
    return ["audit", "run.sh"]


def _shell_arrays(f: Path) -> list[str]:
    text = "B=(" + "a " * 50_000 + ")\n" + 'C=("${B[@]}" "${B[@]}")\n' * 200 + GOOD_SCRIPT
    write(f, "run.sh", text)
    return ["audit", "run.sh"]


def _shell_long_echo(f: Path) -> list[str]:
    write(f, "run.sh", "echo " + "x" * 2_000_000 + "\n" + GOOD_SCRIPT)
    return ["audit", "run.sh"]


def _steps_budget_named(stdout: str, stderr: str, folder: Path) -> str | None:
    """The script over the step budget is listed as not evaluated, naming the budget."""
    wanted = (
        "not evaluated: run.sh: shell budget exceeded: more than 100,000 evaluation steps "
        "(statements and expansions)"
    )
    return None if wanted in stdout.splitlines() else f"no {wanted!r} line"


def _long_echo_read(stdout: str, stderr: str, folder: Path) -> str | None:
    """The 2 MB echo is no launch: noted as not read; the pair after it is judged (passes)."""
    if "PASS (exit 0" not in stdout:
        return "the pair after the long echo was not judged"
    warning = "kvalign: warning: run.sh:1: shell: expands to more than 262144 characters: not read"
    return None if stderr.splitlines() == [warning] else f"stderr: {stderr[-300:]!r}"


def _tp_count(f: Path) -> list[str]:
    return ["matrix", NANO, "--tp", ",".join(str(n) for n in range(1, 4097))]


def _fifo_config(f: Path) -> list[str]:
    (f / "model").mkdir()
    _fifo(f / "model", "config.json")
    return ["check", "model"]


def _device_config(f: Path) -> list[str]:
    return ["check", "/dev/zero"]


def _fifo_cache_entry(f: Path) -> list[str]:
    return ["check", NANO]  # the entry paths are FIFOs, made by the runner's env hook


# ---- 3. internal errors where one line is promised ---------------------------------
def _huge_int_config(f: Path) -> list[str]:
    model_copy(f, NANO)
    path = f / "model" / "config.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace('"num_attention_heads": 32', '"num_attention_heads": ' + "9" * 5000),
        encoding="utf-8",
    )
    return ["check", "model", "--no-cache"]


def _superscript_tp(f: Path) -> list[str]:
    return ["check", NANO, "--prefill-tp", "²"]


def _huge_version(f: Path) -> list[str]:
    return ["check", NANO, "--vllm-version", "1" * 5000]


def _huge_baseline(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML)
    write(f, "base.json", '{"findings": [{"fingerprint": ' + "7" * 5000 + "}]}")
    return ["audit", "d.yaml", "--baseline", "base.json"]


def _bash_digits(f: Path) -> list[str]:
    write(
        f, "run.sh", "shift " + "9" * 5000 + "\necho ${" + "9" * 5000 + "}\nshift ²\n" + GOOD_SCRIPT
    )
    return ["audit", "run.sh"]


def _k8s_gpu_digits(f: Path) -> list[str]:
    pod = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: prefill
    image: vllm/vllm-openai:v0.33.0
    command: [vllm, serve, tiiuae/Falcon-H1-0.5B-Base,
      --kv-transfer-config, '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}']
    resources: {limits: {nvidia.com/gpu: "²"}}
"""
    write(f, "pod.yaml", pod)
    return ["audit", "pod.yaml"]


def _lmcache_digits(f: Path) -> list[str]:
    write(f, "lm.yaml", "chunk_size: '" + "9" * 5000 + "'\n")
    write(f, "run.sh", "export LMCACHE_CONFIG_FILE=lm.yaml\n" + GOOD_SCRIPT)
    return ["audit", "run.sh"]


def _non_utf8_name(f: Path) -> list[str]:
    (f / "deploy").mkdir()
    write(f, "deploy/d.yaml", GOOD_YAML)
    (f / "deploy" / os.fsdecode(b"bad\xff\x1b[31m.yaml")).write_text("x: [", encoding="utf-8")
    return ["audit", "deploy", "--format", "sarif"]


def _long_model_path(f: Path) -> list[str]:
    return ["check", "a/" + "b" * 5000]


def _markup_pool(f: Path) -> list[str]:
    write(
        f,
        "d.yaml",
        GOOD_YAML.replace("prefill:\n", "prefill:\n  name: '[/bold][link=http://x]p[/link]'\n"),
    )
    return ["audit", "d.yaml"]


def _columns(value: str) -> Callable[[Path], list[str]]:
    def build(f: Path) -> list[str]:
        return ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1"]

    return build


def _verdict_printed(stdout: str, stderr: str, folder: Path) -> str | None:
    return None if "FAIL" in stdout or "PASS" in stdout else f"no verdict in {stdout[:200]!r}"


# ---- 4. a forgeable cache ----------------------------------------------------------
def _forged_cache(f: Path) -> list[str]:
    return ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "json"]


def warm(folder: Path, env: dict[str, str], argv: list[str]) -> None:
    """Run ``kvalign argv`` once (fills the geometry cache under ``env``)."""
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "kvalign", *argv], cwd=folder, env=env,
                   capture_output=True, timeout=120, check=False)  # fmt: skip


def _cache_root(env: dict[str, str]) -> Path:
    return Path(env["XDG_CACHE_HOME"])


def _forge_before(folder: Path, env: dict[str, str]) -> None:
    warm(folder, env, _forged_cache(folder))
    forge_cache(_cache_root(env))


def _fifo_before(folder: Path, env: dict[str, str]) -> None:
    warm(folder, env, ["check", NANO])
    for entry in (_cache_root(env) / "kvalign").glob("geometry-*.json"):
        entry.unlink()
        os.mkfifo(entry)


def forge_cache(cache: Path) -> None:
    """Edit every cached geometry (head size ×2) and recompute a plain sha256 digest
    and an HMAC keyed with a guessed (all-zero) secret: neither may be trusted."""
    for entry in (cache / "kvalign").glob("geometry-*.json"):
        payload = json.loads(entry.read_text(encoding="utf-8"))
        geometry = payload["geometry"]
        geometry["attention"]["head_size"] *= 2
        canonical = json.dumps(geometry, sort_keys=True).encode("utf-8")
        payload["digest"] = hashlib.sha256(canonical).hexdigest()
        message = json.dumps({"key": payload["key"], "geometry": geometry}, sort_keys=True)
        payload["hmac"] = hmac.new(b"\0" * 32, message.encode(), hashlib.sha256).hexdigest()
        entry.write_text(json.dumps(payload), encoding="utf-8")


# ---- 5. terminal and log injection -------------------------------------------------
def _esc_model_type(f: Path) -> list[str]:
    model_copy(f, NANO, model_type="nemotron_h\x1b]8;;http://evil\x07\x1b[2J")
    return ["check", "model", "--no-cache"]


def _huge_model_type(f: Path) -> list[str]:
    model_copy(f, NANO, model_type="x" * 1_000_000)
    return ["check", "model", "--no-cache"]


def _esc_model_arg(f: Path) -> list[str]:
    return ["check", "nvidia/\x1b[31mevil\x1b]0;title\x07"]


def _junit_control(f: Path) -> list[str]:
    (f / "deploy").mkdir()
    write(f, "deploy/d.yaml", GOOD_YAML)
    write(f, "deploy/bad\x01\x1b.yaml", "x: [")
    return ["audit", "deploy", "--format", "junit"]


def _junit_parses(stdout: str, stderr: str, folder: Path) -> str | None:
    import xml.etree.ElementTree as ET

    try:
        ET.fromstring(stdout.split("\n", 1)[1])
    except ET.ParseError as exc:
        return f"invalid JUnit XML: {exc}"
    return None


def _markdown_heading(f: Path) -> list[str]:
    write(f, "d.yaml", GOOD_YAML.replace("prefill:\n", 'prefill:\n  name: "p\\n# Injected | x"\n'))
    return ["audit", "d.yaml", "--format", "markdown"]


def _no_injected_heading(stdout: str, stderr: str, folder: Path) -> str | None:
    bad = [line for line in stdout.splitlines() if line.startswith("# ")]
    return f"injected heading {bad}" if bad else None


# ---- 6. silent passes ---------------------------------------------------------------
def _symlink_loop(f: Path) -> list[str]:
    (f / "deploy").mkdir()
    write(f, "deploy/d.yaml", GOOD_YAML)
    os.symlink("loop.yaml", f / "deploy" / "loop.yaml")
    return ["audit", "deploy"]


def _fifo_in_scan(f: Path) -> list[str]:
    (f / "deploy").mkdir()
    write(f, "deploy/d.yaml", GOOD_YAML)
    _fifo(f / "deploy", "pipe.yaml")
    return ["audit", "deploy"]


def _absolute_config(f: Path) -> list[str]:
    write(f, "host/serve.yaml", "block-size: 2096\n")
    script = GOOD_SCRIPT.replace(
        "--tensor-parallel-size 4 \\",
        f"--config {f / 'host' / 'serve.yaml'} --tensor-parallel-size 4 \\",
    )
    write(f, "deploy/run.sh", script)
    return ["audit", "deploy/run.sh"]


def _revision(f: Path) -> list[str]:
    return ["check", "org/model", "--revision", "../../../X"]


def _epoch(f: Path) -> list[str]:
    return ["check", NANO, "--vllm-version", "1!0.10"]


def _local_tag(f: Path) -> list[str]:
    return ["check", NANO, "--vllm-version", "0.33.0+cu128"]


C2 = frozenset({2})
C3 = frozenset({3})

CASES: tuple[Case, ...] = (
    Case("output-over-project-file", "outputs", _out_project, C2),
    Case("output-over-hard-link", "outputs", _out_hardlink, C2),
    Case("output-over-vllm-config", "outputs", _out_vllm_config, C2),
    Case("output-over-model-config", "outputs", _out_model_config, C2),
    Case("json-error-keeps-input", "outputs", _out_json_error, C2),
    Case("plot-over-model-file", "outputs", _out_plot_model, C2),
    Case("output-to-fifo", "outputs", _out_fifo, C2),
    Case("layers-10e9", "budgets", _layers(10**9), C2),
    Case("layers-10e30", "budgets", _layers(10**30), C2),
    Case("layers-2e63", "budgets", _layers(2**63, NANO), C2),
    Case("hf-overrides-layers", "budgets", _overrides_layers, frozenset({2, 3})),
    Case("regex-ignore", "budgets", _regex_ignore, frozenset({0, 1})),
    Case("regex-image", "budgets", _regex_image, C2),
    Case("regex-self-dir", "budgets", _regex_self_dir, frozenset({0, 1, 3})),
    # a shell budget stops the evaluation: the file is not evaluated (exit 3), named or
    # scanned; a 2 MB one-line echo is within the text budget (the file cap) and is read
    Case("shell-array-expansion", "budgets", _shell_arrays, C3, check=_steps_budget_named),
    Case("shell-long-echo", "budgets", _shell_long_echo, frozenset({0}), check=_long_echo_read),
    Case("tp-count", "budgets", _tp_count, C2),
    Case("fifo-config", "budgets", _fifo_config, C2),
    Case("device-config", "budgets", _device_config, C2),
    Case("fifo-cache-entry", "budgets", _fifo_cache_entry, frozenset({0}), before=_fifo_before),
    Case("int-5000-digits-config", "numbers", _huge_int_config, C2),
    Case("superscript-tp", "numbers", _superscript_tp, C2),
    Case("version-5000-digits", "numbers", _huge_version, C2),
    Case("baseline-5000-digits", "numbers", _huge_baseline, C2),
    Case("bash-digits", "numbers", _bash_digits, frozenset({0, 1})),
    Case("k8s-gpu-superscript", "numbers", _k8s_gpu_digits, frozenset({0, 1, 3})),
    Case("lmcache-digits", "numbers", _lmcache_digits, C3),
    Case("non-utf8-file-name-sarif", "numbers", _non_utf8_name, C3),
    Case("model-path-too-long", "numbers", _long_model_path, C2),
    Case("pool-name-markup", "sanitising", _markup_pool, frozenset({0, 1})),
    Case(
        "columns-empty",
        "sanitising",
        _columns(""),
        frozenset({0, 1}),
        {"COLUMNS": ""},
        _verdict_printed,
    ),
    Case(
        "columns-abc",
        "sanitising",
        _columns("abc"),
        frozenset({0, 1}),
        {"COLUMNS": "abc"},
        _verdict_printed,
    ),
    Case(
        "columns-0",
        "sanitising",
        _columns("0"),
        frozenset({0, 1}),
        {"COLUMNS": "0"},
        _verdict_printed,
    ),
    Case(
        "columns-minus-5",
        "sanitising",
        _columns("-5"),
        frozenset({0, 1}),
        {"COLUMNS": "-5"},
        _verdict_printed,
    ),
    Case("forged-cache-entry", "cache", _forged_cache, frozenset({1}), before=_forge_before),
    Case("esc-in-model-type", "sanitising", _esc_model_type, C2),
    Case("megabyte-model-type", "sanitising", _huge_model_type, C2),
    Case("esc-in-model-argument", "sanitising", _esc_model_arg, C2),
    Case("junit-control-file-name", "sanitising", _junit_control, C3, check=_junit_parses),
    Case(
        "markdown-heading-injection",
        "sanitising",
        _markdown_heading,
        frozenset({0, 1}),
        check=_no_injected_heading,
    ),
    Case("symlink-loop-in-scan", "silent-pass", _symlink_loop, C3),
    Case("fifo-in-scan", "silent-pass", _fifo_in_scan, C3),
    # outside the audited folder: that launch is not evaluated (exit 3); the others still report
    Case("absolute-config-path", "confinement", _absolute_config, C3),
    Case("revision-dot-dot", "confinement", _revision, C2),
    Case("version-epoch", "versions", _epoch, C2),
    Case("version-local-tag", "versions", _local_tag, C2),
)
