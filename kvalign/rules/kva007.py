"""KVA007: LMCache ``chunk_size`` is not a multiple of the pool's block size.

LMCache stores KV in ``chunk_size``-token chunks; a chunk that is not a whole number of vLLM
blocks splits blocks across chunks (partial-block saves and misses). Read, in LMCache's
order of precedence, from ``--kv-transfer-config`` ``kv_connector_extra_config.chunk_size``,
``LMCACHE_CHUNK_SIZE``, or the ``chunk_size`` of the ``LMCACHE_CONFIG_FILE`` YAML when that
file is found next to the manifest (:mod:`kvalign.deploy.lmcache`).
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA007"
SEVERITY: Severity = "warning"
TITLE = "LMCache chunk_size not a multiple of the block size"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "not vLLM: LMCache chunk_size; vLLM's side is the aligned block size "
    "(vllm/platforms/interface.py Platform._align_hybrid_block_size)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = "set LMCache chunk_size to a multiple of the pool's block size"


def find(group: GroupResult) -> list[Finding]:
    """One finding per pool whose LMCache chunk size does not divide by its block size."""
    out: list[Finding] = []
    for result in group.pools:
        chunk, block = result.pool.args.lmcache_chunk_size, result.rank.block_size
        if chunk is None or not block or chunk % block == 0:
            continue
        multiple = block * max(1, round(chunk / block))
        out.append(
            Finding(
                CODE, SEVERITY, (result.pool.label,), result.pool.location,
                f"LMCache chunk_size {chunk} (from {result.pool.args.lmcache_chunk_source}) "
                f"is not a multiple of block size {block}",
                f"set LMCache chunk_size to a multiple of {block} (e.g. {multiple})",
            )
        )  # fmt: skip
    return out
