"""KVA011: a LeaderWorkerSet's GPUs disagree with its parallel sizes (info).

A LeaderWorkerSet group is ``spec.leaderWorkerTemplate.size`` pods; with the vLLM container
asking for ``G`` GPUs each, one replica holds ``size × G`` GPUs. vLLM uses exactly
``tensor_parallel_size × pipeline_parallel_size × data_parallel_size`` of them
(``vllm/config/parallel.py``: ``ParallelConfig.world_size`` is TP × PP,
``world_size_across_dp`` multiplies it by DP). kvalign always takes TP from
the arguments, as vLLM does; when the product differs, the TP (and so the block size) the
pool is audited with may not be the one intended, e.g. a multi-node group whose
``--tensor-parallel-size`` was left at one node's GPUs.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA011"
SEVERITY: Severity = "info"
TITLE = "LeaderWorkerSet size × GPUs per pod disagrees with TP × PP × DP"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = "vllm/config/parallel.py ParallelConfig.world_size, world_size_across_dp"
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "make LeaderWorkerSet size × GPUs per pod equal TP × PP × DP (usually: raise "
    "--tensor-parallel-size to the group's GPUs)"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per pool with a known LeaderWorkerSet size and GPU count whose
    ``size × GPUs`` differs from ``TP × PP × DP``."""
    out: list[Finding] = []
    for result in group.pools:
        pool = result.pool
        if pool.nodes is None or pool.gpus_per_node is None:
            continue
        gpus = pool.nodes * pool.gpus_per_node
        pp = pool.args.pipeline_parallel_size or 1
        used = pool.tp * pp * pool.dp
        if gpus == used:
            continue
        fix = (
            f"if the group is meant to run one engine on all {gpus} GPUs, set "
            f"--tensor-parallel-size × --pipeline-parallel-size to {gpus // (pp * pool.dp)}"
            if gpus % (pp * pool.dp) == 0
            else "make size × GPUs per pod equal TP × PP × DP"
        )
        out.append(
            Finding(
                CODE, SEVERITY, (pool.label,), pool.location,
                f"LeaderWorkerSet size {pool.nodes} × {pool.gpus_per_node} GPU(s) per pod = "
                f"{gpus} GPUs, but TP {pool.tp} × PP {pp} × DP {pool.dp} = {used}; audited "
                f"at TP {pool.tp} (from the arguments)",
                fix,
            )
        )  # fmt: skip
    return out
