"""Issue #31, bounds: every reader and the pairing stay bounded inside the documented
caps, and bad input in them is one line with exit 2 or 3, never 70.

Each hostile input is generated into the test's folder (the large ones are megabytes) and
run through ``python -m kvalign audit`` in a subprocess under the limits of
``test_hostile.py`` (1 GiB of address space, 10 s of CPU): the exit code, one error line
(exit 2) or the ``not evaluated:`` / ``not read:`` line that names the cause (exit 3), no
traceback, no file changed. Before the fix: the pairs, roles, models, applications and
unpaired-pool cases ran out of CPU (minutes), the YAML dates/sets/binaries, ``²`` and
non-UTF-8 stdin were exit 70, and the FIFOs were skipped (exit 0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from kvalign.deploy import MAX_POOLS, read_paths
from kvalign.deploy.aibrix import MAX_ROLES
from kvalign.deploy.llmdbench import MAX_MODELS
from kvalign.deploy.model import Pool
from kvalign.deploy.rayserve import MAX_APPLICATIONS
from kvalign.errors import InvalidConfig, InvalidSettings
from kvalign.grouping import MAX_PAIRS, MAX_PARTNERS, Grouping, check_pair_budget
from tests.hostile.cases import ROOT, sandbox_env
from tests.hostile.test_hostile import (
    CPU_SECONDS,
    MEMORY_LIMIT,
    WALL_SECONDS,
    _limits,
    _snapshot,
    run_limited,
)

FIXTURES = Path(__file__).parent / "fixtures" / "bounds"
MODEL = "tiiuae/Falcon-H1-0.5B-Base"
ROLES = (("prefill", "kv_producer"), ("decode", "kv_consumer"))


def _audit(folder: Path, *argv: str, stdin: bytes | None = None) -> tuple[int, str, str, float]:
    """``python -m kvalign audit ARGV`` in ``folder`` under the hostile limits; returns
    ``(exit code, stdout, stderr, CPU seconds)`` and checks that no file changed."""
    env = sandbox_env(folder, COLUMNS="160")
    before = _snapshot(folder)
    done, cpu, peak = run_limited(["audit", *argv], folder, env, b"" if stdin is None else stdin)
    assert _snapshot(folder) == before, "an input changed"
    assert peak < MEMORY_LIMIT
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr[-800:]
    return done.returncode, stdout, stderr, cpu


def _one_error(code: int, stderr: str) -> str:
    """The one ``kvalign: error:`` line of an exit-2 run."""
    assert code == 2, stderr[-800:]
    errors = [line for line in stderr.splitlines() if line.startswith("kvalign: error:")]
    assert len(errors) == 1, stderr[-800:]
    return errors[0]


def _not_evaluated(code: int, stdout: str, stderr: str, kind: str = "not evaluated") -> list[str]:
    """The ``not evaluated:`` (or ``not read:``) lines of an exit-3 run."""
    assert code == 3, (stdout + stderr)[-800:]
    return [line for line in stdout.splitlines() if line.startswith(f"{kind}: ")]


def _deployment(name: str, kv_role: str, label: str | None = None) -> str:
    labels = f"\n  labels: {{app.kubernetes.io/part-of: {label}}}" if label else ""
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}{labels}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: ["vllm", "serve", "{MODEL}", "--tensor-parallel-size", "1",
          "--kv-transfer-config", '{{"kv_connector":"NixlConnector","kv_role":"{kv_role}"}}']
"""


# ---- bounds: time and memory inside every documented cap ------------------------------
def test_thousand_by_thousand_pools_under_one_label_stop_at_the_pair_budget(
    tmp_path: Path,
) -> None:
    # 2,000 Deployments (under 1 MB) under one label: 1,000,000 pairs (was ~20 s CPU, 480 MB)
    docs = [_deployment(f"{role}-{i}", kv, "big") for role, kv in ROLES for i in range(1000)]
    (tmp_path / "pairs.yaml").write_text("---\n".join(docs), encoding="utf-8")
    code, _, stderr, cpu = _audit(tmp_path, "pairs.yaml")
    line = _one_error(code, stderr)
    assert line == (
        "kvalign: error: pairs.yaml: label app.kubernetes.io/part-of=big in ./: 1,000 prefill "
        "× 1,000 decode pools make 1,000,000 pairs (1,000,000 in the run); a run pairs at "
        "most 30,000 (budget: pairs per run): audit the deployments apart"
    )
    assert cpu < CPU_SECONDS


def test_storm_service_of_10000_roles_is_not_evaluated(tmp_path: Path) -> None:
    role = (
        """      - name: {name}
        template:
          spec:
            containers:
            - name: {name}
              image: vllm/vllm-openai:v0.33.0
              args: ["vllm", "serve", "MODEL", "--tensor-parallel-size", "1"]
"""
    ).replace("MODEL", MODEL)
    roles = "".join(role.format(name=("prefill", "decode")[i % 2]) for i in range(10_000))
    text = (
        "apiVersion: orchestration.aibrix.ai/v1alpha1\nkind: StormService\n"
        "metadata:\n  name: storm\nspec:\n  template:\n    spec:\n      roles:\n" + roles
    )
    (tmp_path / "storm.yaml").write_text(text, encoding="utf-8")
    code, stdout, stderr, _ = _audit(tmp_path, "storm.yaml")
    assert _not_evaluated(code, stdout, stderr) == [
        "not evaluated: storm.yaml:1: StormService storm: 10,000 roles, more than 256 in one "
        "object (budget: roles per StormService)"
    ]


def test_scenario_of_20000_models_is_not_evaluated(tmp_path: Path) -> None:
    models = ",".join(f"o/m{i}" for i in range(20_000))
    (tmp_path / "scenario.sh").write_text(
        f"export LLMDBENCH_DEPLOY_MODEL_LIST={models}\n"
        "export LLMDBENCH_VLLM_MODELSERVICE_PREFILL_REPLICAS=1\n",
        encoding="utf-8",
    )
    code, stdout, stderr, _ = _audit(tmp_path, "scenario.sh")
    assert _not_evaluated(code, stdout, stderr) == [
        "not evaluated: scenario.sh:1: scenario: LLMDBENCH_DEPLOY_MODEL_LIST names 20,000 "
        "models, more than 256 (budget: models per scenario)"
    ]


def _ray_apps(count: int) -> str:
    block = "{model_loading_config: {model_id: %s}, engine_kwargs: {tensor_parallel_size: 1}}"
    return "applications:\n" + "".join(
        f"- name: a{i}\n  args:\n    prefill_config: {block % MODEL}\n"
        f"    decode_config: {block % MODEL}\n"
        for i in range(count)
    )


def test_ray_serve_file_of_30000_applications_is_not_evaluated(tmp_path: Path) -> None:
    (tmp_path / "serve.yaml").write_text(_ray_apps(30_000), encoding="utf-8")
    code, stdout, stderr, _ = _audit(tmp_path, "serve.yaml")
    assert _not_evaluated(code, stdout, stderr) == [
        "not evaluated: serve.yaml:1: 30,000 Ray Serve applications, more than 256 in one "
        "file (budget: applications per file)"
    ]


def test_unpaired_pools_of_one_model_find_partners_in_linear_time(tmp_path: Path) -> None:
    # 1,500 prefill and 1,500 decode files, each its own group (--pair-by file): every
    # pool is unpaired and every pool of the other role could be its partner (was
    # quadratic: ~150 s CPU)
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    for i in range(1500):
        for role, kv in ROLES:
            (deploy / f"{role}-{i}.yaml").write_text(_deployment(f"{role}-{i}", kv), "utf-8")
    code, stdout, _, cpu = _audit(tmp_path, "deploy", "--pair-by", "file", "--format", "json")
    assert code == 1
    findings = json.loads(stdout)["findings"]
    assert len(findings) == 3000 and {f["rule"] for f in findings} == {"KVA013"}
    assert "and at least 97 more could be its partner" in findings[0]["message"]
    assert cpu < CPU_SECONDS


def test_partner_count_is_exact_below_the_partner_bound(tmp_path: Path) -> None:
    # ordinary input: the count is exact ("and 47 more"), as before the bound
    (tmp_path / "prefill.yaml").write_text(_deployment("prefill", "kv_producer"), "utf-8")
    for i in range(50):
        (tmp_path / f"decode-{i:02}.yaml").write_text(_deployment(f"d{i}", "kv_consumer"), "utf-8")
    code, stdout, _, _ = _audit(tmp_path, ".", "--pair-by", "file", "--format", "json")
    assert code == 1
    prefill = next(f for f in json.loads(stdout)["findings"] if "prefill" in f["pools"][0])
    assert prefill["message"].endswith(
        "decode/d0 (decode-00.yaml), decode/d1 (decode-01.yaml), decode/d2 (decode-02.yaml) "
        "and 47 more could be its partner but was grouped apart"
    )
    assert MAX_PARTNERS == 100


# ---- the run-wide budgets, at their boundary (in process) -----------------------------
def _pools(role: str, count: int, file: str = "d.yaml") -> list[Any]:
    return [SimpleNamespace(role=role, location=SimpleNamespace(file=file))] * count


def test_pair_budget_takes_exactly_max_pairs() -> None:
    group = Grouping("label:x", "label", "label x")
    exact = cast(list[Pool], _pools("prefill", 150) + _pools("decode", 200))
    check_pair_budget([(group, exact)])  # 150 × 200 = 30,000: within
    over = cast(list[Pool], _pools("prefill", 1, "e.yaml") + _pools("decode", 1, "e.yaml"))
    with pytest.raises(InvalidSettings) as refused:
        check_pair_budget([(group, exact), (Grouping("file:e", "file", "file e"), over)])
    assert str(refused.value) == (
        "d.yaml: label x: 150 prefill × 200 decode pools make 30,000 pairs (30,001 in the "
        "run); a run pairs at most 30,000 (budget: pairs per run): audit the deployments apart"
    )
    assert MAX_PAIRS == 30_000
    # servers pair with nothing: no budget used
    check_pair_budget([(group, cast(list[Pool], _pools("server", 40_000)))])


def test_pool_budget_names_the_file_that_passes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.yaml").write_text(
            "---\n".join(_deployment(f"{name}-{role}", kv) for role, kv in ROLES), "utf-8"
        )
    monkeypatch.setattr("kvalign.deploy.MAX_POOLS", 4)
    deployments, _ = read_paths([str(tmp_path)])  # 4 pools: within
    assert sum(len(d.pools) for d in deployments) == 4
    monkeypatch.setattr("kvalign.deploy.MAX_POOLS", 3)
    with pytest.raises(InvalidSettings) as refused:
        read_paths([str(tmp_path)])
    assert str(refused.value) == (
        f"{tmp_path / 'b.yaml'}: the run holds more than 3 pools with this file (budget: "
        "pools per run): audit fewer files at once"
    )
    assert MAX_POOLS == 30_000


def test_reader_budgets_are_documented_values() -> None:
    assert (MAX_ROLES, MAX_MODELS, MAX_APPLICATIONS) == (256, 256, 256)


def test_reader_budgets_take_exactly_their_cap(tmp_path: Path) -> None:
    # 256 applications are read (no budget problem); 257 are refused
    from kvalign.deploy import read_text

    within = read_text(_ray_apps(256), str(tmp_path / "serve.yaml"))
    assert within is not None and len(within.pools) == 512
    over = read_text(_ray_apps(257), str(tmp_path / "serve.yaml"))
    assert over is not None and not over.pools
    assert [p.message for p in over.problems] == [
        "257 Ray Serve applications, more than 256 in one file (budget: applications per file)"
    ]
    models = ",".join(f"o/m{i}" for i in range(256))
    scenario = f"export LLMDBENCH_DEPLOY_MODEL_LIST={models}\n"
    read = read_text(scenario, str(tmp_path / "s.sh"))
    assert read is not None and len(read.pools) == 512
    refused = read_text(scenario.replace("\n", ",o/x\n"), str(tmp_path / "s.sh"))
    assert refused is not None and not refused.pools
    assert [p.message for p in refused.problems if p.blocking] == [
        "scenario: LLMDBENCH_DEPLOY_MODEL_LIST names 257 models, more than 256 (budget: "
        "models per scenario)"
    ]


# ---- exit 70 only for kvalign's own bugs ----------------------------------------------
RAY_ODD = FIXTURES / "ray-engine-kwargs.yaml"


ARG = " is not an engine argument (quote it as text)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2024-01-01", f"kv_transfer_config: a YAML date{ARG}"),
        ("2024-01-01 10:00:00", f"kv_transfer_config: a YAML timestamp{ARG}"),
        ("{x: 2024-01-01}", f"kv_transfer_config.x: a YAML date{ARG}"),
        ("!!set {a, b}", f"kv_transfer_config: a YAML set{ARG}"),
        ("!!binary aGVsbG8=", f"kv_transfer_config: a YAML binary{ARG}"),
        ("[1, !!binary aGVsbG8=]", f"kv_transfer_config[1]: a YAML binary{ARG}"),
        ("{x: !!set {a}}", f"kv_transfer_config.x: a YAML set{ARG}"),
        ("{2024-01-01: 1}", "kv_transfer_config: a key of type date is not an engine argument"),
    ],
)
def test_ray_serve_engine_kwargs_of_yaml_types_are_one_line(
    tmp_path: Path, value: str, message: str
) -> None:
    text = RAY_ODD.read_text(encoding="utf-8").replace("ODD", value)
    (tmp_path / "serve.yaml").write_text(text, encoding="utf-8")
    code, stdout, stderr, _ = _audit(tmp_path, "serve.yaml")
    assert _not_evaluated(code, stdout, stderr) == [
        f"not evaluated: serve.yaml:8: pd.decode_config.engine_kwargs.{message}"
    ]


def test_ray_serve_plain_engine_kwargs_still_read() -> None:
    from kvalign.deploy import read_text

    text = RAY_ODD.read_text(encoding="utf-8").replace(
        "ODD", "{kv_connector: NixlConnector, kv_connector_extra_config: {null: 1, 7: [2024]}}"
    )  # a null or number key, a number: plain data, as JSON writes it
    found = read_text(text, "serve.yaml")
    assert found is not None and [p.role for p in found.pools] == ["prefill", "decode"]
    assert found.pools[1].args.kv_connector == "NixlConnector"


@pytest.mark.parametrize("variable", ["PREFILL_REPLICAS", "DECODE_TENSOR_PARALLELISM"])
def test_scenario_superscript_number_is_one_line(tmp_path: Path, variable: str) -> None:
    text = (FIXTURES / "scenario-superscript.sh").read_text(encoding="utf-8")
    text = text.replace(f"{variable}=1", f"{variable}=²")
    (tmp_path / "scenario.sh").write_text(text, encoding="utf-8")
    code, stdout, stderr, _ = _audit(tmp_path, "scenario.sh")
    lines = _not_evaluated(code, stdout, stderr)
    role = variable.split("_")[0].lower()
    line = text.splitlines().index(f"export LLMDBENCH_VLLM_MODELSERVICE_{variable}=²") + 1
    assert lines == [
        f"not evaluated: scenario.sh:{line}: {role}: LLMDBENCH_VLLM_MODELSERVICE_{variable}: "
        "'²' is not an integer (ASCII digits 0-9 only)"
    ]


def test_stdin_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    code, _, stderr, _ = _audit(tmp_path, "-", stdin=b"vllm serve \xff\xfe model\n")
    assert _one_error(code, stderr) == "kvalign: error: -: not UTF-8 text (byte 11)"


def test_closed_stdin_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kvalign", "audit", "-"],
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT),
             "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / ".cache")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=WALL_SECONDS,
        preexec_fn=lambda: (_limits(), os.close(0)),
        check=False,
    )  # fmt: skip
    stderr = done.stderr.decode("utf-8", "replace")
    assert _one_error(done.returncode, stderr) == (
        "kvalign: error: -: no standard input (it is closed)"
    )


# ---- FIFOs named like deployment files, and .kvalign.yaml -----------------------------
GOOD = """model: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
prefill: {tp: 8, args: --block-size 2096}
decode: {tp: 1, args: --block-size 2096}
"""


@pytest.mark.parametrize(
    "name",
    [
        "pipe.yaml", "serve.sh", "Justfile", "docker-compose.yml", "scenario.sh",
        ".kvalign.yaml", "launch.json", "Dockerfile", "run", "start.py",
    ],
)  # fmt: skip
def test_fifo_named_like_a_deployment_file_is_not_read(tmp_path: Path, name: str) -> None:
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "d.yaml").write_text(GOOD, encoding="utf-8")
    os.mkfifo(deploy / name)
    code, stdout, stderr, _ = _audit(tmp_path, "deploy")
    assert _not_evaluated(code, stdout, stderr, "not read") == [
        f"not read: deploy/{name}: not a regular file (a FIFO, socket or device): not read; "
        "--skip-unrelated accepts it"
    ]


def test_fifo_named_like_documentation_is_no_deployment(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "d.yaml").write_text(GOOD, encoding="utf-8")
    os.mkfifo(tmp_path / "deploy" / "README.md")  # never sniffed: passes as before
    code, stdout, _, _ = _audit(tmp_path, "deploy")
    assert code == 0 and "not read" not in stdout


def test_project_file_that_is_a_fifo_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(GOOD, encoding="utf-8")
    os.mkfifo(tmp_path / ".kvalign.yaml")
    code, _, stderr, _ = _audit(tmp_path, "d.yaml")
    assert _one_error(code, stderr) == (
        "kvalign: error: .kvalign.yaml: not a regular file (a FIFO, socket or device): the "
        "project file is not read"
    )


def test_config_option_naming_a_fifo_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(GOOD, encoding="utf-8")
    os.mkfifo(tmp_path / "project.yaml")
    code, _, stderr, _ = _audit(tmp_path, "d.yaml", "--config", "project.yaml")
    assert _one_error(code, stderr) == (
        "kvalign: error: project.yaml: not a regular file (a FIFO, socket or device): the "
        "project file is not read"
    )


def test_project_file_that_is_a_folder_is_still_no_project_file(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / ".kvalign.yaml").mkdir()
    code, _, _, _ = _audit(tmp_path, "d.yaml")
    assert code == 0


def test_project_file_of_20000_ignores_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text(GOOD, encoding="utf-8")
    entries = "".join(f"- {{rule: KVA001, reason: r, path: 'x{i}/*'}}\n" for i in range(20_000))
    (tmp_path / ".kvalign.yaml").write_text("ignore:\n" + entries, encoding="utf-8")
    code, _, stderr, _ = _audit(tmp_path, "d.yaml")
    assert _one_error(code, stderr) == (
        "kvalign: error: .kvalign.yaml: ignore: 20,000 entries, more than 1,000 (budget: "
        "ignores per project file)"
    )


def test_ignore_budget_takes_exactly_its_cap(tmp_path: Path) -> None:
    from kvalign.deploy.project import MAX_IGNORES, load_ignores

    entry = "- {rule: KVA002, reason: known, path: 'deploy/*'}\n"
    (tmp_path / "p.yaml").write_text("ignore:\n" + entry * 1000, encoding="utf-8")
    ignores, problems = load_ignores(tmp_path / "p.yaml")
    assert len(ignores) == MAX_IGNORES == 1000 and not problems
    (tmp_path / "p.yaml").write_text("ignore:\n" + entry * 1001, encoding="utf-8")
    with pytest.raises(InvalidConfig, match="1,001 entries, more than 1,000"):
        load_ignores(tmp_path / "p.yaml")
