"""Every CI snippet in the README's "The CI gate" section is run, so none can rot.

* the shell gate: each block is run with bash (``-eo pipefail``, as CI runners do) in a
  folder whose ``deploy/`` holds this repository's example deployments;
* pre-commit: ``rev:`` must name a commit of this repository that ships the hook in its
  ``.pre-commit-hooks.yaml``; the hook is then run as pre-commit runs it (the manifest's
  hook with the snippet's keys on top; ``files`` / ``exclude`` select the files, passed as
  arguments unless ``pass_filenames: false``), with the ``kvalign`` this test suite imports;
* GitHub Actions: every ``run:`` step is run in order in the same folder, stopping at the
  first failure as a job does; the install step is checked, not run (it needs the network):
  it must install this project by its name from the same repository at a ref that exists;
  ``uses:`` steps must pin a major version, and the SARIF upload must name the file a
  ``run:`` step wrote.

Each is run twice: on good deployments (the gate passes) and with a broken pair added (the
gate fails). The broken pair is Nemotron 3 Nano prefill TP 8 / decode TP 1 (528 vs 2096-token
kernel blocks, not divisible, 131 > 128 split units: KVA003 error, a NIXL hard failure).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "deployments" / "kvalign"
#: how the README names the Git repository kvalign is hosted in.
REPO_URL = "https://git.example.com/infra/kvalign"
#: a Kubernetes object with no vLLM pool: the pre-commit hook must skip it, not fail.
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: vllm}\nspec: {ports: [{port: 80}]}\n"


def _ci_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("\n## The CI gate\n", 1)[1].split("\n## ", 1)[0]


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _ci_section(), re.DOTALL)


def _pre_commit_configs() -> list[dict[str, Any]]:
    return [c for c in map(yaml.safe_load, _blocks("yaml")) if "repos" in c]


def _workflows() -> list[dict[str, Any]]:
    return [c for c in map(yaml.safe_load, _blocks("yaml")) if "jobs" in c]


SPLIT_GOOD = ROOT / "configs" / "deployments" / "kubernetes" / "split-good"
SPLIT_BAD = ROOT / "configs" / "deployments" / "kubernetes" / "split-bad"
#: an aggregated vLLM server (no --kv-transfer-config): a standalone server, exit 0.
SERVER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: chat}
spec:
  template:
    spec:
      containers:
      - {name: vllm, image: vllm/vllm-openai:v0.33.0, args: [--model, tiiuae/Falcon-H1-0.5B-Base]}
"""


def _helm_stand_in(folder: Path, chart: Path) -> None:
    """``helm`` cannot be installed on this machine: a stand-in on PATH prints what
    ``helm template NAME CHART`` prints for ``chart`` (each template under its
    ``# Source:`` line, ``{{ .Values.tp }}`` filled in) and refuses anything else."""
    rendered = folder / "rendered.yaml"
    rendered.write_text(
        "".join(
            f"---\n# Source: {chart.name}/templates/{t.name}\n"
            + t.read_text().replace("{{ .Values.tp }}", "8")
            for t in sorted((chart / "templates").iterdir())
        )
    )
    helm = folder / "helm"
    helm.write_text(f'#!/bin/sh\n[ "$1" = template ] || exit 9\ncat {rendered}\n')
    helm.chmod(0o755)


@pytest.fixture(params=["good", "bad"])
def work(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, bool]:
    """A checkout-like folder with a realistic ``deploy/``: a kvalign pair, the
    prefill and decode halves of one deployment in sibling folders, one aggregated
    server, a Service, one Helm chart and one kustomize overlay; ``True`` when it also
    holds a broken pair: ``bad``, one file holding both pools; ``split-bad``, the prefill
    and decode of one deployment in two files of sibling folders (what a hook that splits
    the file list across processes would pass)."""
    deploy = tmp_path / "work" / "deploy"
    deploy.mkdir(parents=True)
    shutil.copy(EXAMPLES / "nemotron-nano-good.yaml", deploy / "nano.yaml")
    (deploy / "service.yaml").write_text(SERVICE, encoding="utf-8")
    for role in ("prefill", "decode"):
        (deploy / role).mkdir()
        shutil.copy(SPLIT_GOOD / f"{role}.yaml", deploy / role / f"{role}.yaml")
    (deploy / "chat.yaml").write_text(SERVER, encoding="utf-8")
    chart = deploy / "charts" / "falcon-pd"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: falcon-pd\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("tp: 8\n")
    for name in ("prefill.yaml", "decode.yaml"):
        text = (SPLIT_GOOD / name).read_text().replace("ms-qwen35", "hm-qwen35")
        (chart / "templates" / name).write_text(text.replace('"8"', '"{{ .Values.tp }}"'))
    base, overlay = deploy / "kustomize" / "base", deploy / "kustomize" / "prod"
    base.mkdir(parents=True)
    overlay.mkdir()
    for name in ("prefill.yaml", "decode.yaml"):
        text = (SPLIT_GOOD / name).read_text().replace("ms-qwen35", "kz-qwen35")
        (base / name).write_text(text)
    (base / "kustomization.yaml").write_text("resources:\n- prefill.yaml\n- decode.yaml\n")
    (overlay / "kustomization.yaml").write_text("resources:\n- ../base\nnamePrefix: prod-\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    _helm_stand_in(tools, chart)
    broken = request.param != "good"
    if request.param == "bad":
        shutil.copy(EXAMPLES / "nemotron-nano-bad.yaml", deploy / "nano-tp8-tp1.yaml")
    if request.param == "split-bad":
        for role in ("prefill", "decode"):
            text = (SPLIT_BAD / f"{role}.yaml").read_text().replace("ms-qwen35", "sb-qwen35")
            (deploy / f"{role}-b").mkdir()
            (deploy / f"{role}-b" / f"{role}.yaml").write_text(text, encoding="utf-8")
    return tmp_path / "work", broken


def _env() -> dict[str, str]:
    """The test's environment with the ``kvalign`` of this suite's interpreter first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _env_in(cwd: Path) -> dict[str, str]:
    """:func:`_env` with the fixture's renderer stand-ins (``bin/`` beside ``work/``)
    first on PATH (kubectl, when on this machine, is the real one)."""
    env = _env()
    env["PATH"] = f"{cwd.parent / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd, env=_env_in(cwd), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )


def _assert_real_ref(rev: str) -> None:
    """``rev`` names a commit of this repository whose hook manifest has ``kvalign-audit``."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the pinned ref cannot be checked")
    # a branch may exist only as origin/BRANCH in a clone of another branch
    for name in (rev, f"origin/{rev}"):
        found = _git("rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
        if found.returncode == 0:
            break
    assert found.returncode == 0, f"rev {rev!r} names nothing in this repository"
    manifest = _git("show", f"{found.stdout.strip()}:.pre-commit-hooks.yaml")
    assert manifest.returncode == 0, f"{rev} has no .pre-commit-hooks.yaml"
    assert "kvalign-audit" in [h["id"] for h in yaml.safe_load(manifest.stdout)]


def test_the_deploy_folder_is_read_whole(work: tuple[Path, bool]) -> None:
    # the layout the snippets run on, every part evaluated (none silently skipped): the
    # kvalign pair, the prefill/ and decode/ siblings paired by their label, the
    # aggregated server, the Helm chart (through the stand-in helm) and the kustomize
    # overlay (its base read through it), each pool at its own file
    cwd, broken = work
    path = _env_in(cwd)["PATH"]
    if not any(shutil.which(tool, path=path) for tool in ("kubectl", "kustomize")):
        pytest.skip("neither kubectl nor kustomize on PATH: the overlay cannot render")
    result = subprocess.run(
        [sys.executable, "-m", "kvalign", "audit", "deploy/", "--format", "json"],
        cwd=cwd, env=_env_in(cwd), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == (1 if broken else 0), result.stderr
    report = json.loads(result.stdout)
    assert report["unevaluated"] == [] and report["not_read"] == []
    pools = sorted(
        (str(Path(p["file"]).relative_to("deploy")) if p["file"].startswith("deploy")
         else p["file"], p["role"])
        for f in report["files"] for p in f["pools"]
    )  # fmt: skip
    expected = [
        ("chat.yaml", "server"),
        ("charts/falcon-pd/templates/decode.yaml", "decode"),
        ("charts/falcon-pd/templates/prefill.yaml", "prefill"),
        ("decode/decode.yaml", "decode"),
        ("kustomize/base/decode.yaml", "decode"),
        ("kustomize/base/prefill.yaml", "prefill"),
        ("nano.yaml", "decode"),
        ("nano.yaml", "prefill"),
        ("prefill/prefill.yaml", "prefill"),
    ]
    if broken:
        expected += [("nano-tp8-tp1.yaml", "decode"), ("nano-tp8-tp1.yaml", "prefill")]
    assert pools == sorted(expected)
    siblings = [g for g in report["groups"] if "ms-qwen35" in g["how"]]
    assert len(siblings) == 1 and len(siblings[0]["pairs"]) == 1  # paired across folders


def test_the_section_has_every_kind_of_snippet() -> None:
    assert len(_blocks("bash")) == 1
    assert len(_pre_commit_configs()) == 2
    assert len(_workflows()) == 1
    assert "v0.1.0" not in _ci_section()  # no tag that does not exist


def test_shell_gate(work: tuple[Path, bool]) -> None:
    cwd, broken = work
    (script,) = _blocks("bash")
    result = _bash(script, cwd)
    assert result.returncode == (1 if broken else 0), result.stderr
    suite = ET.parse(cwd / "kvalign-junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (int(suite.get("failures", "-1")) > 0) is broken


@pytest.mark.parametrize("work", ["good", "bad", "split-bad"], indirect=True)
@pytest.mark.parametrize("index", [0, 1])
def test_pre_commit_snippet(index: int, work: tuple[Path, bool]) -> None:
    cwd, broken = work
    config = _pre_commit_configs()[index]
    (repo,) = config["repos"]
    assert repo["repo"] == REPO_URL
    _assert_real_ref(str(repo["rev"]))
    manifest = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    for override in repo["hooks"]:
        hook = {**manifest[override["id"]], **override}
        files = [
            path.relative_to(cwd).as_posix() for path in sorted(cwd.rglob("*")) if path.is_file()
        ]
        chosen = [
            f
            for f in files
            if re.search(hook.get("files", ""), f) and not re.search(hook.get("exclude", "^$"), f)
        ]
        assert "deploy/service.yaml" in chosen  # the hook sees the unrelated file too
        command = shlex.split(hook["entry"]) + list(hook.get("args", []))
        # without require_serial pre-commit may split the files across processes (one
        # run per CPU): the worst split, one file a run, is what such a hook must survive
        serial = hook.get("require_serial") is True
        batches = [chosen] if serial else [[f] for f in chosen]
        results = [
            subprocess.run(
                command + (batch if hook.get("pass_filenames", True) else []), cwd=cwd,
                env=_env_in(cwd), capture_output=True, text=True, timeout=300, check=False,
            )
            for batch in batches
        ]  # fmt: skip
        code = max(r.returncode for r in results)
        assert code == (1 if broken else 0), [r.stderr for r in results]
        if broken:
            assert any("KVA003" in r.stdout for r in results)


def test_github_actions_workflow(work: tuple[Path, bool]) -> None:
    cwd, broken = work
    (workflow,) = _workflows()
    (job,) = workflow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"  # needed by upload-sarif
    written: set[str] = set()
    failed: int | None = None
    steps = job["steps"]
    for index, step in enumerate(steps):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", step["uses"]), step["uses"]
            if step["uses"].startswith("github/codeql-action/upload-sarif@"):
                assert step["with"]["sarif_file"] in written
            continue
        script = step["run"]
        if script.startswith("pip install"):
            (spec,) = shlex.split(script)[2:]
            requirement = Requirement(spec)
            assert requirement.name == metadata("kvalign")["Name"]  # pyproject's name
            url, _, ref = (requirement.url or "").rpartition("@")
            assert url == f"git+{REPO_URL}"
            _assert_real_ref(ref)
            continue
        result = _bash(script, cwd)
        written |= {m for m in re.findall(r"--output (\S+)", script) if (cwd / m).is_file()}
        if result.returncode != 0:
            failed = index
            assert result.returncode == 1, result.stderr
            assert "::error file=deploy/nano-tp8-tp1.yaml" in result.stdout
            break
    assert failed == (len(steps) - 1 if broken else None)
    sarif = json.loads((cwd / "kvalign.sarif").read_text(encoding="utf-8"))
    results = sarif["runs"][0]["results"]
    assert bool(results) is broken
