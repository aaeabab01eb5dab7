"""KVA003: kernel block sizes do not divide (the stronger case of KVA002).

vLLM asserts ``decode_kernel % prefill_kernel == 0`` unless the release splits blocks into
gcd-sized units (``nixl/base_worker.py`` ``_split_remote_blocks``, at most
``_MAX_HYBRID_BLOCK_SPLIT`` units): error when no split path applies (NIXL hard failure),
warning when the profile's split path carries the pair.
"""

from __future__ import annotations

from kvalign.policy import verdict_level
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels
from kvalign.rules.kva001 import recommend

CODE = "KVA003"
SEVERITY: Severity = "error"
TITLE = "kernel block sizes do not divide (NIXL hard failure)"


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
                pair.reason, recommend(group),
            )
        )  # fmt: skip
    return out
