"""KVA001: prefill and decode logical block sizes differ (prefix-cache granularity drift).

Prefix-cache block hashes are computed over ``block_size``-token blocks
(``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``); pools on different grids never
share a hash, so prefix hits learned on one side do not carry over.
"""

from __future__ import annotations

from kvalign.alignment import common_block_size
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels

CODE = "KVA001"
SEVERITY: Severity = "warning"
TITLE = "logical block sizes differ between prefill and decode"


def recommend(group: GroupResult) -> str:
    """``--block-size B`` that makes every pool agree (spec §7), or a generic hint."""
    if not group.pools:
        return "set the same --block-size on every pool"
    first = group.pools[0]
    found = common_block_size(first.geometry, first.pool.settings, [p.pool.tp for p in group.pools])
    if found is None:
        return "set the same --block-size on every pool"
    return f"set --block-size {found[0]} on every prefill and decode pool"


def find(group: GroupResult) -> list[Finding]:
    """One finding per prefill × decode pair whose logical block sizes differ."""
    out: list[Finding] = []
    for outcome in group.pairs:
        pair = outcome.pair
        if pair.verdict in ("invalid", "attention-free") or not pair.prefix_cache_drift:
            continue
        out.append(
            Finding(
                CODE, SEVERITY, pair_labels(outcome), outcome.decode.pool.location,
                f"logical block size {pair.prefill_block_size} (prefill TP {pair.prefill_tp}) "
                f"vs {pair.decode_block_size} (decode TP {pair.decode_tp}): prefix-cache "
                "hashes never match across pools",
                recommend(group),
            )
        )  # fmt: skip
    return out
