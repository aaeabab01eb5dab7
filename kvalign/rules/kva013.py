"""KVA013: a prefill or decode pool with no partner of the other role in its deployment.

A pool that sends (prefill) or receives (decode) KV over a connector was checked against
nothing: no pair rule ran on it, so a block-size mismatch with the partner it will meet in
production cannot be seen. It is a warning; it is an error when another pool of the run,
of the other role, has the same model or the same deployment-key value (``llm-d.ai/model``,
an application or release label) and so could be its partner: the two were grouped apart
(different namespaces, or ``--pair-by file``) and the pair that will run was never checked.
Standalone servers (no ``--kv-transfer-config``, or ``kv_both`` with no partner role in the
run) are never unpaired.
"""

from __future__ import annotations

from kvalign.grouping import MAX_PARTNERS
from kvalign.rules.base import Finding, GroupResult, Severity, pool_ref

CODE = "KVA013"
SEVERITY: Severity = "warning"
TITLE = "prefill or decode pool with no partner in its deployment"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py "
    "NixlConnectorWorker.add_remote_agent (the checks a pair meets; nothing checks a pool "
    "alone)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "audit the pool together with its partner: give both the same deployment label and "
    "namespace (--pair-by label), pass both files or their common folder, or use "
    "--pair-by model"
)


def find(group: GroupResult) -> list[Finding]:
    """One finding per unpaired pool; an error when ``group.partners`` holds a pool that
    could be its partner (the other role, the same model or deployment-key value)."""
    out: list[Finding] = []
    for result in group.unpaired:
        pool = result.pool
        other = "decode" if pool.role == "prefill" else "prefill"
        candidates = [
            p.pool
            for p in group.partners
            if p.pool.role == other
            and (
                p.pool.model == pool.model
                or (
                    p.pool.deployment_key is not None
                    and pool.deployment_key is not None
                    and p.pool.deployment_key.value == pool.deployment_key.value
                )
            )
        ]
        message = f"no {other} pool in its deployment ({group.grouping.how}): no pair check ran"
        if group.hidden:
            message += (
                f"; a pool of {', '.join(group.hidden)} could not be evaluated (its partner "
                "may be there)"
            )
        if candidates:
            names = ", ".join(pool_ref(c, pool.location.file) for c in candidates[:3])
            # at the bound the list was cut (kvalign.grouping.MAX_PARTNERS): a floor
            floor = "at least " if len(group.partners) >= MAX_PARTNERS else ""
            more = f" and {floor}{len(candidates) - 3} more" if len(candidates) > 3 else ""
            message += f"; {names}{more} could be its partner but was grouped apart"
            fix = (
                "put the partner in the same deployment (same deployment label and "
                "namespace: --pair-by label) or audit with --pair-by model"
            )
        else:
            fix = (
                f"audit it with its {other} pool (pass both files or their common folder), "
                "or, if it serves alone, drop its --kv-transfer-config"
            )
        out.append(
            Finding(
                CODE, "error" if candidates else SEVERITY, (pool.label,), pool.location,
                message, fix,
            )
        )  # fmt: skip
    return out
