"""audit as an unattended gate.

* the no-silent-pass invariant, over the deploy corpus and over generated folders
  (hypothesis): every vLLM launch found is paired and evaluated, a standalone server, an
  unpaired pool reported by KVA013, or not evaluated (exit 3); with ``--fail-on warning``,
  exit 0 implies every launch is paired and evaluated or a standalone server;
* the sibling-folder, aggregated-server and cross-file baseRefs cases exit as ``check``
  does on the same pools;
* answer first: at 80 columns the verdict is line 1 and the first finding is within the
  first 15 lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvalign.audit import AuditReport, run_audit
from kvalign.cli import app
from kvalign.deploy import read_paths
from kvalign.deploy.model import Deployment, Problem

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "deploy_corpus"
runner = CliRunner()
FALCON = "tiiuae/Falcon-H1-0.5B-Base"


def _run(paths: list[str], fail_on: str = "error") -> tuple[list[Deployment], AuditReport]:
    unread: list[Problem] = []
    deployments, skipped = read_paths(paths, unread=unread)
    report = run_audit(deployments, skipped=tuple(skipped), fail_on=fail_on, unread=tuple(unread))
    return deployments, report


def _assert_no_silent_pass(deployments: list[Deployment], report: AuditReport) -> None:
    """Every launch ends in exactly one of the four states, and exit 0 at --fail-on
    warning means states 1 and 2 only."""
    unevaluated = {p.location.file for p in report.unevaluated}
    for deployment in deployments:  # no launch vanished: pools, or a reason
        if deployment.launches:
            assert deployment.pools or deployment.source in unevaluated, deployment.source
    kva013 = {(f.location.file, f.pools[0]) for f in report.findings if f.rule == "KVA013"}
    paired = {id(r) for g in report.groups for o in g.pairs for r in (o.prefill, o.decode)}
    states: dict[str, int] = {}
    for file in report.files:
        for result in file.pools:
            pool = result.pool
            state = (
                "paired" if id(result) in paired
                else "server" if pool.role == "server"
                else "unpaired" if (pool.location.file, pool.label) in kva013
                else "lost"
            )  # fmt: skip
            states[state] = states.get(state, 0) + 1
    assert "lost" not in states, states
    if report.exit_code("warning") == 0:
        assert set(states) <= {"paired", "server"}, states
        assert not report.unevaluated and not report.not_read


CASES = sorted({c["path"] for c in yaml.safe_load((CORPUS / "expectations.yaml").read_text())})


@pytest.mark.parametrize("path", CASES)
def test_no_silent_pass_over_the_corpus(path: str) -> None:
    try:
        deployments, report = _run([str(CORPUS / path)])
    except Exception as exc:  # a usage error (exit 2) is no pass either
        assert getattr(exc, "exit_code", None) == 2, repr(exc)
        return
    _assert_no_silent_pass(deployments, report)


def _pd(role: str, label: str, tp: int, namespace: str = "ns") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": f"{label}-{role}",
                "namespace": namespace,
                "labels": {"llm-d.ai/model": label, "llm-d.ai/role": role},
            },
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "vllm",
                                "image": "vllm/vllm-openai:v0.33.0",
                                "args": [
                                    "--model",
                                    FALCON,
                                    "--tensor-parallel-size",
                                    str(tp),
                                    "--kv-transfer-config",
                                    '{"kv_connector":"NixlConnector","kv_role":"kv_both"}',
                                ],
                            }
                        ]
                    }
                }
            },
        }
    )


SERVER = f"vllm serve {FALCON} --port 8000\n"
KV_BOTH = (
    f"vllm serve {FALCON} --kv-transfer-config "
    """'{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}'\n"""
)
VALUES = "engine:\n  image: vllm/vllm-openai:v0.33.0\n"
SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: vllm}\n"

_FILE = st.one_of(
    st.tuples(st.just("pd"), st.sampled_from(("prefill", "decode")),
              st.sampled_from(("a", "b")), st.sampled_from((1, 2, 8)),
              st.sampled_from(("ns", "other"))),
    st.tuples(st.sampled_from(("server", "kv_both", "values", "service"))),
)  # fmt: skip


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.sampled_from(("", "x/", "y/", "x/z/")), _FILE), min_size=1,
                max_size=6))  # fmt: skip
def test_no_silent_pass_over_generated_folders(
    tmp_path_factory: pytest.TempPathFactory, files: list[tuple[str, tuple[object, ...]]]
) -> None:
    root = tmp_path_factory.mktemp("deploy")
    for index, (folder, spec) in enumerate(files):
        (root / folder).mkdir(parents=True, exist_ok=True)
        kind = spec[0]
        if kind == "pd":
            _, role, label, tp, namespace = spec
            name, text = f"{index}.yaml", _pd(str(role), str(label), int(str(tp)), str(namespace))
        elif kind in ("server", "kv_both"):
            name, text = f"{index}.sh", SERVER if kind == "server" else KV_BOTH
        else:
            name, text = f"{index}.yaml", VALUES if kind == "values" else SERVICE
        (root / folder / name).write_text(text, encoding="utf-8")
    try:
        deployments, report = _run([str(root)], fail_on="warning")
    except Exception as exc:  # nothing found at all: exit 2, no pass
        assert getattr(exc, "exit_code", None) == 2, repr(exc)
        return
    _assert_no_silent_pass(deployments, report)


# ---- exits as check does -----------------------------------------------------------------
def _exit(args: list[str]) -> int:
    result = runner.invoke(app, args)
    assert "Traceback" not in result.stdout + result.stderr
    return result.exit_code


@pytest.mark.parametrize(
    ("path", "check"),
    [
        # deploy/prefill/ + deploy/decode/, TP 8 vs TP 16 (528 vs 272)
        ("folders/sibling", ["Qwen/Qwen3.5-397B-A17B", "--prefill-tp", "8", "--decode-tp", "16"]),
        # a good pair (--block-size 2096 at TP 8 and TP 1) beside an aggregated server
        ("servers", ["nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "--prefill-tp", "8",
                     "--decode-tp", "1", "--block-size", "2096"]),
        # baseRefs in another file: prefill TP 8 (208) vs decode TP 1 (800)
        ("kserve/baserefs-files", [FALCON, "--prefill-tp", "8", "--decode-tp", "1"]),
    ],
)  # fmt: skip
def test_audit_exits_as_check_does_on_the_same_pools(path: str, check: list[str]) -> None:
    for fail_on in ("error", "warning", "info"):
        audited = _exit(["audit", str(CORPUS / path), "--fail-on", fail_on])
        checked = _exit(["check", *check, "--fail-on", fail_on])
        assert audited == checked, (path, fail_on)


# ---- answer first ------------------------------------------------------------------------
def test_the_verdict_is_line_one_and_the_first_finding_within_15_lines_at_80_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")  # a terminal 80 columns wide
    result = runner.invoke(app, ["audit", "configs/deployments/"])
    lines = result.stdout.splitlines()
    assert result.exit_code == 1
    assert lines[0].startswith("FAIL (exit 1, --fail-on error): ")
    assert "9 of 18 pair(s) fail the gate; fix: set" in lines[0]  # 9 *-bad examples
    first = next(i for i, line in enumerate(lines) if "KVA0" in line)
    assert first < 15, lines[:20]
    assert all(len(line) <= 80 for line in lines)
    # not a terminal: the same answer first, one plain line per finding, no padding
    monkeypatch.delenv("COLUMNS")
    plain = runner.invoke(app, ["audit", "configs/deployments/"]).stdout.splitlines()
    assert plain[0].startswith("FAIL (exit 1, --fail-on error): ") and plain[1] == "Findings:"
    assert " KVA001 error: " in plain[2]
    assert all(line == line.rstrip() for line in plain)
    quiet = runner.invoke(app, ["audit", "configs/deployments/", "--quiet"]).stdout.splitlines()
    assert quiet[0] == plain[0] and not any(line.startswith("Pools") for line in quiet)
    assert len(quiet) < len(plain)


def test_each_message_is_printed_once(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    role = """'{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'"""
    script.write_text(f"vllm serve {FALCON} $ARGS --kv-transfer-config {role}\n")
    result = runner.invoke(app, ["audit", str(script)])
    assert result.exit_code == 3
    both = result.stdout + result.stderr
    assert both.count("unresolved variable(s)") == 1, both
