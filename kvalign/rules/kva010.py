"""KVA010: a pool's tensor parallel size is invalid for the model.

vLLM requires ``num_attention_heads % TP == 0`` (``ModelConfig.verify_with_parallel_config``)
and state dimensions that shard evenly; the pool would not start.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA010"
SEVERITY: Severity = "error"
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
