"""KVA001: prefill and decode logical block sizes differ (prefix-cache granularity drift).

Prefix-cache block hashes are computed over ``block_size``-token blocks
(``vllm/v1/core/kv_cache_utils.py`` ``hash_block_tokens``); pools on different grids never
share a hash, so prefix hits learned on one side do not carry over. Severity (the policy,
``docs/policy.md``): error when prefix caching is on for both pools, warning when on for one
only, info when off on both (logical blocks then matter only once it is turned on). The fix
is proven: every pool keeps it on every GPU class it may run on (:mod:`kvalign.fixes`).
"""

from __future__ import annotations

from kvalign.errors import KvalignError
from kvalign.fixes import FixPool, prove_fix
from kvalign.policy import drift_level
from kvalign.rules.base import Finding, GroupResult, Severity, pair_labels
from kvalign.rules.kva005 import settings_differ

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


#: the last group's recommendation: every finding of a group names the same fix, and
#: rules run group by group, so one entry (matched by identity) proves each group once.
_LAST: list[tuple[GroupResult, str]] = []


def recommend(group: GroupResult) -> str:
    """:func:`_recommend` for ``group``, proven once per group (findings of one group
    share it: an audit of 24 prefill x 24 decode pools in one group proved it 720 times)."""
    if _LAST and _LAST[0][0] is group:
        return _LAST[0][1]
    text = _recommend(group)
    _LAST[:] = [(group, text)]
    return text


def _recommend(group: GroupResult) -> str:
    """The proven fix (:func:`kvalign.fixes.prove_fix`): ``--block-size B`` that every
    pool keeps, with its own settings, on every GPU class it may run on (its
    ``nodeSelector`` GPU or ``--gpu``, else each class), or what would fix the pairs
    when no block size can. When the pools' KV-cache settings differ (KVA005), the text
    says to fix that first: ``B`` still works then, but a smaller one may.
    """
    generic = "set the same --block-size on every pool"
    if not group.pools:
        return generic
    index = {id(r): i for i, r in enumerate(group.pools)}
    pools = [FixPool(r.geometry, r.pool.settings, r.pool.tp, r.pool.label) for r in group.pools]
    pairs = [(index[id(o.prefill)], index[id(o.decode)]) for o in group.pairs]
    try:
        fix = prove_fix(pools, pairs, group.profile)
    except KvalignError:  # pragma: no cover - the pools were analysed with these settings
        return generic
    if fix.blockers:
        return "no --block-size can fix this: " + "; ".join(fix.blockers)
    if fix.block_size is None:
        return f"no --block-size fixes every pair: {fix.unproven}" if fix.unproven else generic
    text = f"set --block-size {fix.block_size} on every prefill and decode pool ({fix.holds_on})"
    if any(settings_differ(o) for o in group.pairs):
        text += (
            " (each pool's own settings; their KV-cache settings differ: fix KVA005 "
            "first, then a smaller --block-size may do)"
        )
    return text


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
                recommend(group),
            )
        )  # fmt: skip
    return out
