"""KVA010: a pool's tensor parallel size is invalid for the model.

vLLM requires ``num_attention_heads % TP == 0`` (``ModelConfig.verify_with_parallel_config``)
and state dimensions that shard evenly; the pool would not start.
"""

from __future__ import annotations

from kvalign.fixes import valid_tps
from kvalign.policy import verdict_level
from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA010"
SEVERITY: Severity = verdict_level("invalid", True, True) or "error"
TITLE = "tensor parallel size invalid for the model"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/config/model.py ModelConfig.verify_with_parallel_config; model-load checks of "
    "the state layers (e.g. MambaMixer2 n_groups)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "choose a tensor parallel size the model accepts (one that divides its attention "
    "heads and state groups)"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per pool whose rank result is not valid; the fix names valid TPs
    (:func:`kvalign.fixes.valid_tps`): no ``--block-size`` can help, except where a
    pipeline stage without attention keeps its block (``--block-size`` the aligned block)."""
    out: list[Finding] = []
    for r in group.pools:
        if r.rank.usable:
            continue
        if r.rank.stage_block_problem:  # a pipeline stage keeps its block: fixable
            out.append(
                Finding(
                    CODE, SEVERITY, (r.pool.label,), r.pool.location,
                    f"TP {r.pool.tp} fails for {r.pool.model}: {r.rank.problem}",
                    f"--block-size {r.rank.block_size} (every pipeline stage then keeps it)",
                )
            )  # fmt: skip
            continue
        choices = ", ".join(map(str, valid_tps(r.geometry, r.engine))) or "none"
        out.append(
            Finding(
                CODE, SEVERITY, (r.pool.label,), r.pool.location,
                f"TP {r.pool.tp} is invalid for {r.pool.model}: {r.rank.problem}",
                f"use a valid tensor parallel size ({choices}); no --block-size can fix this",
            )
        )  # fmt: skip
    return out
