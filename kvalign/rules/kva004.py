"""KVA004: the user's ``--block-size`` is silently overridden by hybrid alignment.

vLLM raises the block size until one attention page covers the Mamba state page
(``vllm/platforms/interface.py`` ``_align_hybrid_block_size``) and only logs it.
"""

from __future__ import annotations

from kvalign.policy import OVERRIDE_LEVEL
from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA004"
SEVERITY: Severity = OVERRIDE_LEVEL
TITLE = "--block-size silently overridden by hybrid alignment"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = "vllm/platforms/interface.py Platform._align_hybrid_block_size"
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "set a --block-size vLLM keeps (the finding names it), or drop the flag and expect "
    "the aligned size"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per pool whose rank result has ``block_size_overridden``, and one per
    pool whose ``--block-size`` vLLM raises only on another GPU class the pool may run on
    (no GPU given: ``group.fix.raised``)."""
    out: list[Finding] = []
    for result in group.pools:
        rank = result.rank
        if not rank.valid:
            continue
        if not rank.block_size_overridden:
            out += [
                Finding(
                    CODE, SEVERITY, (result.pool.label,), result.pool.location,
                    f"{line} (GPU not given: pass --gpu or a node label to check the one it "
                    "runs on)",
                    group.fix.text,
                )
                for line in group.fix.raised.get(result.pool.label, [])
            ]  # fmt: skip
            continue
        out.append(
            Finding(
                CODE, SEVERITY, (result.pool.label,), result.pool.location,
                f"--block-size {result.pool.settings.block_size} becomes {rank.block_size} at "
                f"TP {rank.tp} (hybrid alignment)",
                group.fix.text,
            )
        )  # fmt: skip
    return out
