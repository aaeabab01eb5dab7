"""KVA010: a pool's tensor parallel size is invalid for the model.

vLLM requires ``num_attention_heads % TP == 0`` (``ModelConfig.verify_with_parallel_config``)
and state dimensions that shard evenly; the pool would not start.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA010"
SEVERITY: Severity = "error"
TITLE = "tensor parallel size invalid for the model"


def find(group: GroupResult) -> list[Finding]:
    """One finding per pool whose rank result is not valid."""
    return [
        Finding(
            CODE,
            SEVERITY,
            (r.pool.label,),
            r.pool.location,
            f"TP {r.pool.tp} is invalid for {r.pool.model}: {r.rank.problem}",
            "choose a tensor parallel size that divides the model's heads",
        )
        for r in group.pools
        if not r.rank.usable
    ]
