"""The deployment corpus (tests/deploy_corpus/): real-world shapes from llm-d, KServe, Dynamo,
vLLM's examples, LMCache and production-stack, each read as its author meant it.

tests/deploy_corpus/expectations.yaml says, per input, the pools an operator reads from it
(role, TP, GPU), the release profile, the pairs and the messages; this test runs
``kvalign audit PATH --format json`` on each and compares. Every class in ``CLASSES`` has
a positive and a negative case.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.versions import newest

CORPUS = Path(__file__).resolve().parents[1] / "deploy_corpus"
EXPECTED: list[dict[str, Any]] = yaml.safe_load(
    (CORPUS / "expectations.yaml").read_text(encoding="utf-8")
)
#: the input classes the corpus covers, each with a positive and a negative case
CLASSES = [
    # pools that must not be dropped
    "A1",  # KServe service with a non-`vllm` image, or vLLM arguments from spec.baseRefs
    "A2",  # combined shell options (`bash -exc "vllm serve …"`) taken as `-c`
    "A3",  # the launcher in a variable (`python3 -m "$WORKER_MODULE"`, `$VLLM serve`)
    "A4",  # a command built in a variable, then run with `eval`
    "A5",  # a scanned file that launches vLLM but yields no pool: not evaluated (exit 3)
    # shell values read as bash reads them
    "B1",  # a variable set in both branches of an if/else: each alternative evaluated
    "B2",  # `MODEL=${MODEL:-"org/model"}` does not keep the quotes
    "B3",  # `SCRIPT_DIR="$(cd "$(dirname …)" && pwd)"` is not cut at `$(cd`
    "B4",  # `> $LOG_DIR/prefill.log 2>&1 &` is a redirection, not arguments
    "B5",  # `docker run … vllm/vllm-openai:vX MODEL …` (image entrypoint form)
    # settings read
    "C1",  # GPU pins in nodeSelector / affinity / `gpu:`, the release from a vLLM image tag
    "C2",  # unresolved values that cannot change sizing or role are noted, not fatal
    # messages
    "D1",  # weights on a PVC: the model name read from spec.model.name, or which field to set
    "D2",  # one unevaluable pool hides no other pool's findings
    "D3",  # shell variables printed as written (`$2`, never `$(2)`)
    "D4",  # "no deployment found" lists every input kind and the reason; JSON on exit 2
    # roles and pairing
    "R1",  # the role decided per command, not from the file name
    "R2",  # several Helm releases of one model in one folder: pairs within each release
    "G",  # production-stack Helm values
    # the shell as bash runs it with no arguments, launch forms, layouts (legend in
    # expectations.yaml)
    *(f"S{n}" for n in range(1, 13)),
    "SV",  # standalone (aggregated) server: a note, its own rules run
    "U",  # unpaired prefill/decode pool: KVA013
    "F",  # pairing across folders (--pair-by label)
    "NR",  # a path no reader takes although it may hold a launch: not read
    "LM",  # an aggregated LMCache kv_both server: KVA007 runs
    "RS",  # Ray Serve LLM P/D configs
    "ST",  # AIBrix StormService
    "X",  # references across files of one run (KServe baseRefs, LMCACHE_CONFIG_FILE)
    "LB",  # llm-d-benchmark scenario files (LLMDBENCH_* variables)
    "HC",  # Helm chart folders: rendered with `helm template`, or exit 3 naming it
    "KZ",  # kustomize bases and overlays: rendered with `kubectl kustomize`
    "HV",  # Helm values beside a chart folder: the chart rendered with each (`-f`)
    "Q1",  # a scanned file of any name: upper-case suffixes and shebang scripts read, other
    # files that mention vLLM listed as not read, hidden folders read
    "Q2",  # launches in tmux/screen, $( … ), heredocs to bash: read; a container of
    # another image given vLLM flags: not evaluated
    "Q3",  # `ROLE=${1:-prefill}; case "$ROLE"`: each role branch evaluated; `source FILE`
    # not read: named, and the defaults used after it noted
    "Q4",  # --skip-unrelated skips files with no launch, never a launch not understood
    "Q5",  # kv_both with a connector that cannot transfer (CPU offloading): a server
]
#: a stand-in for ``helm`` (not installable here): ``helm template -- NAME CHART`` prints
#: the fixed manifest ``CHART/helm-template.out`` (what helm prints for that chart, written
#: by hand with its ``# Source:`` lines), ``helm template --values VALUES -- NAME CHART``
#: ``CHART/helm-template-STEM.out`` (VALUES: kvalign's copy, of the same file name);
#: anything else fails.
FAKE_HELM = (  # shell builtins only: nothing else is on PATH
    '#!/bin/sh\n[ "$1" = template ] || exit 9\n'
    'if [ "$2" = -- ]; then out="$4/helm-template.out"\n'
    # `--values VALUES` (a values file beside the chart): CHART/helm-template-STEM.out
    'elif [ "$2" = --values ] && [ "$4" = -- ]; then\n'
    '  v="${3##*/}"; out="$6/helm-template-${v%.yaml}.out"\nelse exit 9; fi\n'
    'while IFS= read -r line; do printf \'%s\\n\' "$line"; done < "$out"\n'
)

runner = CliRunner()


def _audit(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["audit", str(path), "--format", "json", *args])
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code, json.loads(result.stdout)


def _messages(report: dict[str, Any]) -> str:
    lines = [p["message"] for key in ("problems", "unevaluated", "not_read") for p in report[key]]
    lines += report.get("assumptions", []) + report.get("notes", [])
    lines += [f"{f['rule']}: {f['message']}" for f in report.get("findings", [])]
    error = report.get("error")
    if error:
        lines += [error["message"], *(r["message"] for r in error["reasons"])]
    return "\n".join(lines)


def _id(case: dict[str, Any]) -> str:
    return " ".join([case["path"], *case.get("args", [])])


def _tools(tools: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH holds only ``tools``: ``helm`` is :data:`FAKE_HELM`, others the real one
    (the case is skipped when it is not installed)."""
    folder.mkdir()
    for tool in tools:
        if tool == "helm":
            (folder / "helm").write_text(FAKE_HELM, encoding="utf-8")
            (folder / "helm").chmod(0o755)
            continue
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not on PATH")
        (folder / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(folder))


@pytest.mark.parametrize("case", EXPECTED, ids=[_id(c) for c in EXPECTED])
def test_corpus_input_is_read_as_its_author_meant(
    case: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = CORPUS / case["path"]
    if "tools" in case:  # renderers: exactly these on PATH
        _tools(case["tools"], tmp_path / "bin", monkeypatch)
    code, report = _audit(path, *case.get("args", []))
    messages = _messages(report)
    assert code == case["exit"], messages
    pools = [
        {"role": p["role"], "tp": p["tp"], "gpu": p["gpu"]}
        for f in report["files"]
        for p in f["pools"]
    ]
    assert pools == case["pools"], messages
    if "profile" in case:
        rules = {f["vllm_rules"] for f in report["files"]}
        profile = newest().name if case["profile"] == "newest" else case["profile"]
        assert rules and all(f"vLLM {profile} rules" in r for r in rules), rules
    if "pairs" in case:
        assert sum(len(g["pairs"]) for g in report["groups"]) == case["pairs"]
    if "groups" in case:
        assert len(report["groups"]) == case["groups"]
    if "rules" in case:
        assert sorted({f["rule"] for f in report["findings"]}) == case["rules"]
    for text in case.get("says", []):
        assert text in messages, messages
    if "at" in case:  # findings keep their source file and line (relative to the corpus)
        at = [f"{Path(f['file']).relative_to(CORPUS)}:{f['line']}" for f in report["findings"]]
        assert sorted(set(at)) == case["at"], at
    for text in case.get("once", []):
        assert messages.count(text) == 1, messages
    for text in case.get("never", []):
        assert text not in messages, messages
    if "skipped" in case:
        assert sorted(str(Path(s).relative_to(path)) for s in report["skipped"]) == sorted(
            case["skipped"]
        )
    if code == 2:  # D4: a JSON document even on a usage / input error
        assert report["error"]["exit_code"] == 2 and report["findings"] == []
    else:
        assert "error" not in report


def test_every_class_has_a_positive_and_a_negative_case() -> None:
    seen: dict[str, set[str]] = {name: set() for name in CLASSES}
    for case in EXPECTED:
        for name, kinds in case["covers"].items():
            assert name in seen, name
            seen[name].update([kinds] if isinstance(kinds, str) else kinds)
    assert {name: sorted(kinds) for name, kinds in seen.items()} == {
        name: ["negative", "positive"] for name in CLASSES
    }


def test_every_corpus_file_is_in_the_expectations() -> None:
    named = {CORPUS / c["path"] for c in EXPECTED}
    inputs = {
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix in (".sh", ".yaml") and p.name != "expectations.yaml"
    }
    uncovered = {p for p in inputs if not any(p == n or n in p.parents for n in named)}
    # LMCache config files are read through LMCACHE_CONFIG_FILE, not audited on their own
    assert {p.name for p in uncovered} == {
        "lmcache-prefiller-config.yaml",
        "lmcache-decoder-config.yaml",
    }


def test_a_scan_of_the_whole_corpus_never_skips_a_vllm_launch() -> None:
    # A5: the only files a scan skips are those that launch no vLLM at all
    _, report = _audit(CORPUS)
    skipped = sorted(Path(s).name for s in report["skipped"])
    assert skipped == [
        "bench.sh",
        "config.yaml",  # kserve/baserefs-files: a base read through service.yaml's baseRefs
        "deployment-not-vllm.yaml",
        "docker_run_other.sh",
        "lmcache-decoder-config.yaml",
        # lmcache/run-files*: three LMCache configs of one name in this run (ambiguous)
        "lmcache-offload.yaml",
        "lmcache-offload.yaml",
        "lmcache-offload.yaml",
        "lmcache-prefiller-config.yaml",
        "service.yaml",  # skip-unrelated/deploy: a Service, no launch
        "sglang_launch.sh",
        "tokenizer.yaml",  # launch-forms/other-quiet: another image's own args
        "values-split.yaml",  # helm-values/two-charts: beside two charts, no launch
    ]
    # a file no reader takes that mentions vLLM is listed as not read (exit 3),
    # never skipped: this folder's own expectations.yaml is one (it was skipped)
    assert {Path(p["file"]).name for p in report["not_read"]} == {
        "expectations.yaml",
        "values.yaml",
        "Dockerfile",  # scan-names/mentions: a file of a name no reader reads
    }
    unevaluated = {Path(p["file"]).name for p in report["unevaluated"]}
    assert {"serve.sh", "print_command.sh", "deploy-shell-script-file.yaml"} <= unevaluated
