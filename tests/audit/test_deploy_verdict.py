"""Audit's first lines for a folder of several models: the verdict names the fix of each
failing model (short: at most three, then how many more), not only the first group's;
JSON keeps the fix per group.

The folder holds two corpus deployments that fail for different reasons:

* ``folders/sibling``: Qwen3.5-397B prefill TP 8 / decode TP 16 (528 vs 272-token kernel
  blocks); ``kvalign check Qwen/Qwen3.5-397B-A17B --prefill-tp 8 --decode-tp 16`` prints
  ``Fix: --block-size 576 on every prefill and decode pool``;
* ``ray-serve/pd-config-split.yaml``: Falcon-H1-0.5B prefill TP 8 / decode TP 1 (208 vs
  800); ``kvalign check tiiuae/Falcon-H1-0.5B-Base --prefill-tp 8 --decode-tp 1`` prints
  ``Fix: --block-size 800 …``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app

CORPUS = Path(__file__).resolve().parents[1] / "deploy_corpus"
EXAMPLES = Path(__file__).resolve().parents[2] / "configs" / "deployments"
runner = CliRunner()


def _folder(tmp_path: Path, *, falcon: bool = True) -> Path:
    deploy = tmp_path / "deploy"
    shutil.copytree(CORPUS / "folders" / "sibling" / "deploy", deploy)
    if falcon:
        shutil.copy(CORPUS / "ray-serve" / "pd-config-split.yaml", deploy / "falcon.yaml")
    return deploy


def test_the_headline_names_the_fix_of_each_failing_model(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(_folder(tmp_path))])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "FAIL (exit 1, --fail-on error): 2 of 2 pair(s) fail the gate; fix: "
        "set --block-size 576 for Qwen/Qwen3.5-397B-A17B; "
        "set --block-size 800 for tiiuae/Falcon-H1-0.5B-Base"
    )
    assert lines[1] == "Findings:"


def test_at_80_columns_the_fixes_stay_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # four fixes (Nemotron 3 Nano needs 2096 in one file, 1056 in the other): two named,
    # then how many more; the verdict fits in four 80-column lines, findings follow
    deploy = _folder(tmp_path)
    for name in ("kvalign/nemotron-nano-bad.yaml", "kubernetes/nemotron-deployments-bad.yaml"):
        shutil.copy(EXAMPLES / name, deploy / Path(name).name)
    monkeypatch.setenv("COLUMNS", "80")
    lines = runner.invoke(app, ["audit", str(deploy)]).stdout.splitlines()
    verdict = lines[: lines.index("Findings")]
    assert len(verdict) <= 4 and all(len(line) <= 80 for line in verdict), verdict
    assert " ".join(verdict).endswith("2 more (each finding names its fix)")


def test_json_keeps_the_fix_of_each_group(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(_folder(tmp_path)), "--format", "json"])
    report = json.loads(result.stdout)
    fixes = sorted(g["fix"]["text"].split(" (holds on")[0] for g in report["groups"])
    assert fixes == [
        "set --block-size 576 on every prefill and decode pool",
        "set --block-size 800 on every prefill and decode pool",
    ]


def test_one_failing_model_keeps_its_fix_on_the_headline(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(_folder(tmp_path, falcon=False))])
    assert result.exit_code == 1
    first, second = result.stdout.splitlines()[:2]
    assert first.startswith(
        "FAIL (exit 1, --fail-on error): 1 of 1 pair(s) fail the gate; fix: set --block-size "
        "576 on every prefill and decode pool"
    )
    assert second == "Findings:"
