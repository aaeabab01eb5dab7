"""Shared inputs of the per-rule tests (``tests/rules/test_kva0NN.py``).

Block sizes quoted in those files come from the arithmetic ``kvalign matrix`` prints
(vLLM 0.33 per-rank alignment, golden-tested in tests/fidelity/):
Falcon-H1-0.5B 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8; Qwen3.5-397B-A17B 528 / 272 at
TP 8 / 16.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from kvalign.audit import AuditReport, run_audit
from kvalign.deploy import read_paths, read_text
from tests.conftest import ROOT

FALCON = "tiiuae/Falcon-H1-0.5B-Base"
EXAMPLES = ROOT / "configs" / "deployments"
SPLIT_BAD = EXAMPLES / "kubernetes" / "split-bad"


def own(prefill: str, decode: str, extra: str = "") -> str:
    """A kvalign-schema deployment of Falcon-H1-0.5B with the given pool bodies."""
    return f"model: {FALCON}\nprefill: {{{prefill}}}\ndecode: {{{decode}}}\n{extra}"


def audit_own(prefill: str, decode: str, extra: str = "") -> AuditReport:
    """Audit :func:`own`'s document as the file ``x.yaml``."""
    deployment = read_text(own(prefill, decode, extra), "x.yaml")
    assert deployment is not None
    return run_audit([deployment])


#: one case: the prefill pool's body, the decode pool's body, extra top-level YAML.
Case = tuple[str, str, str]
POOLS = ("prefill", "decode", "extra")


def fires(rule: str, cases: list[Case]) -> Callable[[str, str, str], None]:
    """A test, parametrized over ``cases``, that ``rule`` is among the findings of each."""

    @pytest.mark.parametrize(POOLS, cases)
    def test(prefill: str, decode: str, extra: str) -> None:
        assert rule in {f.rule for f in audit_own(prefill, decode, extra).findings}

    return test


def quiet(cases: list[Case]) -> Callable[[str, str, str], None]:
    """A test, parametrized over ``cases``, that no rule at all fires on each (the
    matching side of a rule)."""

    @pytest.mark.parametrize(POOLS, cases)
    def test(prefill: str, decode: str, extra: str) -> None:
        assert audit_own(prefill, decode, extra).findings == ()

    return test


def audit(*paths: str | Path, pair_by: str = "label") -> AuditReport:
    """Audit files or folders as ``kvalign audit PATH… --pair-by PAIR_BY`` does."""
    deployments, skipped = read_paths([str(p) for p in paths])
    return run_audit(deployments, skipped=tuple(skipped), pair_by=pair_by)  # type: ignore[arg-type]


def write(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` (dedented) to ``folder/name`` and return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: falcon-{role}
  labels: {{llm-d.ai/role: {role}}}
spec:
  leaderWorkerTemplate:
    size: {size}
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: ["{model}", {args}]
          resources: {resources}
"""


def lws(folder: Path, size: str, args: str, resources: str) -> Path:
    """A LeaderWorkerSet P/D pair of Falcon-H1-0.5B: prefill of ``size`` pods with ``args``
    and ``resources``, decode one pod at TP 1."""
    docs = [
        LWS.format(role="prefill", size=size, args=args, resources=resources, model=FALCON),
        LWS.format(role="decode", size="1", args='"-tp", "1"', resources="{}", model=FALCON),
    ]
    return write(folder, "lws.yaml", "---\n".join(docs))
