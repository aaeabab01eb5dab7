"""KVA009: ``--max-model-len`` below the aligned block size (prefix caching never hits).

Only full blocks are hashed for prefix caching; a request shorter than one block never fills
one, so with hybrid alignment's large blocks nothing is ever cached. Checked only for pools
with prefix caching on.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA009"
SEVERITY: Severity = "warning"
TITLE = "max_model_len below the aligned block size"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = "vllm/v1/core/kv_cache_utils.py get_request_block_hasher (only full blocks are hashed)"
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "raise --max-model-len to at least the aligned block size, or disable prefix caching "
    "on that pool"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per pool with prefix caching on and ``max_model_len < block_size``."""
    out: list[Finding] = []
    for result in group.pools:
        limit, block = result.pool.args.max_model_len, result.rank.block_size
        if limit is None or not block or limit >= block:
            continue
        if not result.engine.prefix_caching:
            continue
        out.append(
            Finding(
                CODE, SEVERITY, (result.pool.label,), result.pool.location,
                f"--max-model-len {limit} is below the aligned block size {block}: no request "
                "fills a block, prefix caching never hits",
                f"raise --max-model-len to at least {block} or disable prefix caching",
            )
        )  # fmt: skip
    return out
