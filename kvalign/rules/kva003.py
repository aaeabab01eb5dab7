"""KVA003: kernel block sizes do not divide (the stronger case of KVA002).

vLLM asserts ``decode_kernel % prefill_kernel == 0`` unless the release splits blocks into
gcd-sized units (``nixl/base_worker.py`` ``_split_remote_blocks``, at most
``_MAX_HYBRID_BLOCK_SPLIT`` units). Verdict ``incompatible`` when no split path applies
(NIXL hard failure: releases before 0.33, or a split that needs more units), ``split`` when
the release's split path carries the pair on every transfer; both are errors under the
policy (``docs/policy.md``), as in ``check``.
"""

from __future__ import annotations

from kvalign.policy import verdict_level
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels

CODE = "KVA003"
SEVERITY: Severity = verdict_level("split", True, True) or "error"
TITLE = "kernel block sizes do not divide (NIXL hard failure)"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py "
    "_split_remote_blocks, _MAX_HYBRID_BLOCK_SPLIT"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "set one common --block-size on every pool so the kernel block sizes match (the "
    "finding names it)"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per pair with verdict ``split`` or ``incompatible``."""
    out: list[Finding] = []
    for outcome in group.pairs:
        pair = outcome.pair
        if pair.verdict not in ("split", "incompatible"):
            continue
        severity: Severity = verdict_level(pair.verdict, True, True) or SEVERITY
        out.append(
            Finding(
                CODE, severity, pair_labels(outcome), outcome.decode.pool.location,
                pair.reason, group.fix.text,
            )
        )  # fmt: skip
    return out
