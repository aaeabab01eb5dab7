"""KVA002: kernel block sizes differ but divide (``block_size_ratio != 1``).

NIXL computes ``block_size_ratio = decode kernel block // prefill kernel block``
(``vllm/distributed/kv_transfer/kv_connector/utils.py``) and takes the heterogeneous-block
path. Hybrid models are accepted there only from vLLM 0.27, the release that merged vLLM PR
49612 (``Profile.nixl_hetero_hybrid``): on earlier releases the handshake fails, from 0.27
on every transfer takes the heterogeneous-block path. Either way the verdict is ``ratio``,
an error under the policy (``docs/policy.md``), as in ``check``.
"""

from __future__ import annotations

from kvalign.policy import verdict_level
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels

CODE = "KVA002"
#: the policy's severity of verdict ``ratio`` (:mod:`kvalign.policy`).
SEVERITY: Severity = verdict_level("ratio", True, True) or "error"
TITLE = "kernel block sizes differ (block_size_ratio != 1)"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/distributed/kv_transfer/kv_connector/utils.py block_size_ratio; "
    "nixl/base_worker.py (heterogeneous-block transfer path)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "set one common --block-size on every pool so the kernel block sizes match (the "
    "finding names it)"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per pair with verdict ``ratio`` (an error under the policy; on releases
    without heterogeneous-block support for hybrid models the message says NIXL rejects
    it)."""
    out: list[Finding] = []
    for outcome in group.pairs:
        pair = outcome.pair
        if pair.verdict != "ratio":
            continue
        hybrid = outcome.prefill.geometry.is_hybrid
        severity: Severity = SEVERITY
        why = (
            f"vLLM {group.profile.name} NIXL rejects heterogeneous blocks for hybrid models"
            if hybrid and not group.profile.nixl_hetero_hybrid
            else "heterogeneous-block path on every transfer"
        )
        out.append(
            Finding(
                CODE, severity, pair_labels(outcome), outcome.decode.pool.location,
                f"block_size_ratio {pair.block_size_ratio}: decode kernel block "
                f"{pair.decode_kernel_block_size} vs prefill {pair.prefill_kernel_block_size}; "
                f"{why}",
                group.fix.text,
            )
        )  # fmt: skip
    return out
