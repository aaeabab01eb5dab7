"""KVA001: prefill and decode logical block sizes differ (prefix-cache granularity drift).

Prefix-cache block hashes are computed over ``block_size``-token blocks
(``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``); pools on different grids never
share a hash, so prefix hits learned on one side do not carry over.
"""

from __future__ import annotations

from kvalign.alignment import common_block_size_for
from kvalign.errors import KvalignError
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels
from kvalign.rules.kva005 import settings_differ

CODE = "KVA001"
SEVERITY: Severity = "warning"
TITLE = "logical block sizes differ between prefill and decode"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/v1/core/kv_cache_utils.py hash_block_tokens, get_request_block_hasher "
    "(prefix-cache block hashes over block_size tokens)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "set the same --block-size on every prefill and decode pool: the smallest one every "
    "pool keeps unchanged (check's recommendation; the finding names it)"
)


def recommend(group: GroupResult) -> str:
    """``--block-size B`` that makes every pool choose exactly ``B`` (spec §7), or a hint.

    ``B`` is computed with each pool's own settings
    (:func:`kvalign.alignment.common_block_size_for`), so pools that differ in KV-cache
    dtype, state dtypes, speculative tokens or backend all land on ``B``. When the pools'
    KV-cache settings differ (KVA005), the text says to fix that first: ``B`` still works
    then, but a smaller one may.
    """
    generic = "set the same --block-size on every pool"
    if not group.pools:
        return generic
    try:
        found = common_block_size_for([(r.geometry, r.engine, r.pool.tp) for r in group.pools])
    except KvalignError:  # pragma: no cover - the pools were analysed with these settings
        found = None
    if found is None:
        return generic
    text = f"set --block-size {found} on every prefill and decode pool"
    if any(settings_differ(o) for o in group.pairs):
        text += (
            " (each pool's own settings; their KV-cache settings differ: fix KVA005 "
            "first, then a smaller --block-size may do)"
        )
    return text


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
