"""``kvalign audit --format json`` (``schema_version`` 1; also the ``--baseline`` input)."""

from __future__ import annotations

import json
from typing import Any

from kvalign import __version__
from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool, Problem
from kvalign.report.indented_json import dumps_indented
from kvalign.rules.base import Finding, GroupResult


def finding_dict(finding: Finding) -> dict[str, Any]:
    """One finding as JSON-ready data."""
    return {
        "rule": finding.rule,
        "severity": finding.severity,
        "pools": list(finding.pools),
        "file": finding.location.file,
        "line": finding.location.line,
        "message": finding.message,
        "remediation": finding.remediation,
        "fingerprint": finding.fingerprint,
    }


def _problem(problem: Problem) -> dict[str, Any]:
    return {
        "file": problem.location.file,
        "line": problem.location.line,
        "message": problem.message,
    }


def _needs_fix(group: GroupResult) -> bool:
    """A pair of the group does not work as it is (any verdict but ``ok`` and
    ``nothing-to-align``)."""
    return any(o.pair.verdict not in ("ok", "nothing-to-align") for o in group.pairs)


def _pool_ref(pool: Pool) -> dict[str, Any]:
    return {"pool": pool.label, "file": pool.location.file, "line": pool.location.line}


def audit_to_dict(report: AuditReport) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    counts = {"error": 0, "warning": 0, "info": 0}
    for finding in report.findings:
        counts[finding.severity] += 1
    group_of = {id(result): group.grouping.key for group in report.groups for result in group.pools}
    files = []
    for file in report.files:
        pools = []
        for result in file.pools:
            pool, rank = result.pool, result.rank
            pools.append(
                {
                    "role": pool.role,
                    "name": pool.name,
                    "model": pool.model,
                    "tp": pool.tp,
                    "dp": pool.dp,
                    "file": pool.location.file,
                    "line": pool.location.line,
                    "role_source": pool.role_source,
                    "deployment_key": (
                        str(pool.deployment_key) if pool.deployment_key is not None else None
                    ),
                    "group": group_of.get(id(result)),
                    "block_size_flag": pool.settings.block_size,
                    "kv_cache_dtype": pool.settings.kv_cache_dtype,
                    "attention_backend": pool.settings.attention_backend,
                    "gpu": pool.settings.gpu,
                    "valid": rank.valid,
                    "block_size": rank.block_size,
                    "kernel_block_size": rank.kernel_block_size,
                    "unknown_flags": list(pool.args.unknown),
                }
            )
        files.append(
            {
                "file": file.deployment.source,
                "kind": file.deployment.kind,
                "vllm_rules": file.version_note,
                "pools": pools,
            }
        )
    groups = [
        {
            "key": group.grouping.key,
            "grouped_by": group.grouping.basis,
            "how": group.grouping.how,
            "files": [d.source for d in group.deployments],
            "vllm_rules": group.version_note,
            "pools": [_pool_ref(r.pool) for r in group.pools],
            "pairs": [
                {
                    "prefill": _pool_ref(o.prefill.pool),
                    "decode": _pool_ref(o.decode.pool),
                    "verdict": o.pair.verdict,
                    "block_size_ratio": o.pair.block_size_ratio,
                }
                for o in group.pairs
            ],
            "unpaired": [_pool_ref(r.pool) for r in group.unpaired],
            # the group's proven fix (what its findings' remediation names), for a group
            # with a pair that does not work; proven once per group
            "fix": {"text": group.fix.text} if _needs_fix(group) else None,
        }
        for group in report.groups
    ]
    return {
        "schema_version": 1,
        "kvalign_version": __version__,
        "pair_by": report.pair_by,
        "assumptions": list(report.assumptions),
        "files": files,
        "groups": groups,
        "findings": [finding_dict(f) for f in report.findings],
        "suppressed": [{**finding_dict(s.finding), "why": s.why} for s in report.suppressed],
        "unevaluated": [_problem(p) for p in report.unevaluated],
        "not_read": [{**_problem(p), "accepted": report.unread_accepted} for p in report.unread],
        "problems": [_problem(p) for p in report.problems],
        "skipped": list(report.skipped),
        "notes": list(report.notes),
        "fail_on": report.fail_on,
        "summary": {**counts, "failing": len(report.failing()), "not_read": len(report.unread)},
    }


def to_json(report: AuditReport) -> str:
    """Indented JSON text (``json.dumps(..., indent=2)``'s text, written by
    :func:`~kvalign.report.indented_json.dumps_indented`)."""
    return dumps_indented(audit_to_dict(report))


def error_to_json(message: str, exit_code: int, notes: list[Problem] | tuple[Problem, ...]) -> str:
    """The JSON document ``audit --format json`` prints when it stops on a usage or input
    error (exit 2): the same top-level keys as a report (empty), plus ``error`` with the
    message, the exit code and the reasons collected so far (``notes``, e.g. a container
    not read as a vLLM pool), so a CI consumer always has a document to parse."""
    document: dict[str, Any] = {
        "schema_version": 1,
        "kvalign_version": __version__,
        "error": {
            "message": " ".join(message.split()),
            "exit_code": exit_code,
            "reasons": [_problem(p) for p in notes],
        },
        "files": [],
        "groups": [],
        "findings": [],
        "suppressed": [],
        "unevaluated": [],
        "not_read": [],
        "problems": [],
        "skipped": [],
        "summary": {"error": 0, "warning": 0, "info": 0},
    }
    return json.dumps(document, indent=2)
