"""KVA006: another component's block size disagrees with the engines' block size.

KV-cache-aware routers and indexers (llm-d ``tokenProcessorConfig.blockSize`` /
``blockSizeTokens``, Dynamo's ``--kv-cache-block-size`` / ``DYN_KV_CACHE_BLOCK_SIZE``) hash
prompts into blocks themselves; they must use the block size vLLM actually chose (after
hybrid alignment), or their hashes never match the engines' KV events.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity, pool_ref

CODE = "KVA006"
SEVERITY: Severity = "error"
TITLE = "router / indexer / frontend block size disagrees"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "not vLLM: llm-d tokenProcessorConfig.blockSize / blockSizeTokens, Dynamo "
    "--kv-cache-block-size / DYN_KV_CACHE_BLOCK_SIZE; vLLM's side is the aligned block "
    "size (vllm/platforms/interface.py Platform._align_hybrid_block_size)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "set the router / indexer / frontend block size to the block size vLLM uses after "
    "hybrid alignment (the finding names it)"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per component whose block size is not every pool's logical block size."""
    out: list[Finding] = []
    for component in group.components:
        here = component.location.file
        sizes = {
            pool_ref(r.pool, here): r.rank.block_size for r in group.pools if r.rank.block_size
        }
        if not sizes:
            continue
        wrong = {label: size for label, size in sizes.items() if size != component.value}
        if not wrong:
            continue
        engines = ", ".join(f"{label} {size}" for label, size in sorted(wrong.items()))
        target = sorted(set(sizes.values()))
        fix = (
            f"set {component.component} to {target[0]}"
            if len(target) == 1
            else "make every pool use one block size first (KVA001), then match it here"
        )
        out.append(
            Finding(
                CODE, SEVERITY, tuple(sorted(wrong)), component.location,
                f"{component.component} = {component.value} tokens but vLLM uses {engines}",
                fix,
            )
        )  # fmt: skip
    return out
