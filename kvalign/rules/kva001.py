"""KVA001: prefill and decode logical block sizes differ (prefix-cache granularity drift).

Prefix-cache block hashes are computed over ``block_size``-token blocks
(``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``); pools on different grids never
share a hash, so prefix hits learned on one side do not carry over. Severity (the policy,
``docs/policy.md``): error when prefix caching is on for both pools, warning when on for one
only, info when off on both (logical blocks then matter only once it is turned on). The fix
is proven: every pool keeps it on every GPU class it may run on (:mod:`kvalign.fixes`).
"""

from __future__ import annotations

from kvalign.policy import drift_level
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels

CODE = "KVA001"
#: usual severity; each finding's is the policy's (:func:`kvalign.policy.drift_level`):
#: error with prefix caching on both pools, warning on one, info on neither.
SEVERITY: Severity = "error"
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


def _consequence(prefill_caching: bool, decode_caching: bool) -> str:
    if prefill_caching and decode_caching:
        return "prefix-cache hashes never match across pools"
    if prefill_caching or decode_caching:
        side = "prefill" if prefill_caching else "decode"
        return f"prefix caching is on for the {side} pool only, so no prefix is shared anyway"
    return "prefix caching is off on both pools, so this costs nothing until it is turned on"


def find(group: GroupResult) -> list[Finding]:
    """One finding per prefill × decode pair whose logical block sizes differ."""
    out: list[Finding] = []
    for outcome in group.pairs:
        pair = outcome.pair
        if pair.verdict in ("invalid", "nothing-to-align") or not pair.prefix_cache_drift:
            continue
        level = drift_level(pair.prefill_prefix_caching, pair.decode_prefix_caching)
        out.append(
            Finding(
                CODE, level, pair_labels(outcome), outcome.decode.pool.location,
                f"logical block size {pair.prefill_block_size} (prefill TP {pair.prefill_tp}) "
                f"vs {pair.decode_block_size} (decode TP {pair.decode_tp}): "
                + _consequence(pair.prefill_prefix_caching, pair.decode_prefix_caching),
                group.fix.text,
            )
        )  # fmt: skip
    return out
