"""The answer first: audit's verdict line, and which pairs and pools the detail shows.

Pure: reads an :class:`~kvalign.audit.AuditReport`, returns text. The verdict names the
exit code as ``check``'s first line does (:func:`kvalign.report.cells.answer_lines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool
from kvalign.policy import fails
from kvalign.rules.base import Finding, PairOutcome, PoolResult, pair_labels, pool_ref


def _names(outcome: PairOutcome) -> set[str]:
    return set(pair_labels(outcome))


def _names_pool(finding: Finding, pool: Pool) -> bool:
    """Whether ``finding`` is about ``pool`` (labels carry their file when the pool is
    declared in another file than the finding's: :func:`kvalign.rules.base.pool_ref`)."""
    return (
        pool_ref(pool, finding.location.file) in finding.pools
        or pool_ref(pool, "") in finding.pools  # pair_labels of pools in two files
    )


class _Naming:
    """Which of ``findings`` name a pool (:func:`_names_pool`), found through an index of
    their pool labels instead of asking every finding about every pool (a 10,000-file
    audit has thousands of both)."""

    def __init__(self, findings: Sequence[Finding]) -> None:
        self.findings = findings
        #: label → findings naming it; (label, finding's file) → the same, per file
        self.by_name: dict[str, list[int]] = {}
        self.by_file: dict[tuple[str, str], list[int]] = {}
        for index, finding in enumerate(findings):
            for name in finding.pools:
                self.by_name.setdefault(name, []).append(index)
                self.by_file.setdefault((name, finding.location.file), []).append(index)

    def of(self, pool: Pool) -> set[int]:
        """Indices of the findings naming ``pool``: as ``role/name`` when the finding is in
        the pool's file (or the pool has no file), else as ``role/name (its file)``
        (:func:`kvalign.rules.base.pool_ref`)."""
        label, file = pool.label, pool.location.file
        candidates = {
            *self.by_file.get((label, file), ()),
            *self.by_name.get(f"{label} ({file})", ()),
            *(self.by_name.get(label, ()) if file == "" else ()),
        }
        return {i for i in candidates if _names_pool(self.findings[i], pool)}

    def about_pair(self, outcome: PairOutcome) -> set[int]:
        """Indices of the findings naming both pools of ``outcome``."""
        return self.of(outcome.prefill.pool) & self.of(outcome.decode.pool)


def failing_pairs(report: AuditReport) -> list[PairOutcome]:
    """Pairs that fail the gate: their verdict's level reaches ``--fail-on``, or a finding
    that reaches it names both of their pools."""
    naming = _Naming(report.failing())
    return [
        o
        for g in report.groups
        for o in g.pairs
        if fails(o.pair.level, report.fail_on) or naming.about_pair(o)
    ]


def shown_pools(
    report: AuditReport, verbose: bool, bad: list[PairOutcome] | None = None
) -> list[PoolResult]:
    """The pools whose detail is printed: every pool with ``verbose``, else the pools of
    failing pairs and of other failing findings (file order). ``bad``: the report's
    :func:`failing_pairs`, when the caller has them already."""
    pools = [r for f in report.files for r in f.pools]
    if verbose:
        return pools
    bad = failing_pairs(report) if bad is None else bad
    wanted = {id(o.prefill) for o in bad} | {id(o.decode) for o in bad}
    naming = _Naming(report.failing())
    return [r for r in pools if id(r) in wanted or naming.of(r.pool)]


def _fix(finding: Finding) -> str:
    return finding.remediation.rstrip(".")


def _short(fix: str) -> str:
    """A fix for one line: without the GPU classes it holds on and the pools it is set
    on (the finding lines keep both)."""
    fix = fix.split(" (holds on ", 1)[0]
    return fix.replace(" on every prefill and decode pool", "")


#: most per-model fixes the headline names (the findings name every fix).
MAX_FIXES = 3


def group_fixes(report: AuditReport) -> list[tuple[str, str, list[str]]]:
    """``(model, fix, files)`` per model and fix that fails the gate, in group order: the
    fix of each failing deployment's first such finding, with the files of the
    deployments that need it."""
    failing = report.failing()
    naming = _Naming(failing)
    found: dict[tuple[str, str], list[str]] = {}
    for group in report.groups:
        # the first failing finding (report order) that names one of the group's pools
        mine = set().union(*(naming.of(r.pool) for r in group.pools))
        if mine:
            model = ", ".join(dict.fromkeys(r.pool.model for r in group.pools))
            files = found.setdefault((model, _fix(failing[min(mine)])), [])
            files += [d.source for d in group.deployments[:1]]
    return [(model, fix, files) for (model, fix), files in found.items()]


def fixes_clause(report: AuditReport) -> str | None:
    """The headline's fix when the failing deployments need different fixes (``None``
    when they need one): ``FIX for MODEL`` per model and fix, short (the findings keep the
    detail), joined by ``; ``; a model that needs different fixes in different
    deployments names the first file of each (``(bad.sh, +1)``); at most
    :data:`MAX_FIXES`, then how many more."""
    fixes = group_fixes(report)
    if len({fix for _, fix, _ in fixes}) < 2:
        return None
    models = [model for model, _, _ in fixes]
    parts = []
    for model, fix, files in fixes:
        where = ""
        if models.count(model) > 1 and files:
            more = f", +{len(files) - 1}" if len(files) > 1 else ""
            where = f" ({PurePath(files[0]).name}{more})"
        parts.append(f"{_short(fix)} for {model}{where}")
    if len(parts) > MAX_FIXES:
        rest = len(parts) - MAX_FIXES + 1
        parts = [*parts[: MAX_FIXES - 1], f"{rest} more (each finding names its fix)"]
    return "; ".join(parts)


def headline(report: AuditReport, bad: list[PairOutcome] | None = None) -> str:
    """Line 1 of audit: the verdict in words with the exit code and the fix, e.g.
    ``FAIL (exit 1, --fail-on error): 2 of 7 pair(s) fail the gate; fix: …``; when the
    failing deployments need different fixes, one per model (:func:`fixes_clause`:
    ``fix: set --block-size 576 for MODEL-A; set --block-size 800 for MODEL-B``).
    ``bad``: the report's :func:`failing_pairs`, when the caller has them already."""
    code = report.exit_code()
    pairs = [o for g in report.groups for o in g.pairs]
    servers = sum(1 for f in report.files for r in f.pools if r.pool.role == "server")
    failing = report.failing()
    unread = len(report.unread) if not report.unread_accepted else 0
    if code == 3:
        count = len(report.unevaluated) + unread
        head = (
            f"NOT EVALUATED (exit 3): {count} launch(es) or file(s) could not be evaluated; "
            "fix: what each 'not evaluated' / 'not read' line below names"
        )
        if failing:
            head += f" ({len(failing)} finding(s) fail --fail-on {report.fail_on} as well)"
        return head
    bad = failing_pairs(report) if bad is None else bad
    if code == 1:
        naming = _Naming(failing)
        about = {i for o in bad for i in naming.about_pair(o)}
        others = [f for i, f in enumerate(failing) if i not in about]
        parts = [f"{len(bad)} of {len(pairs)} pair(s) fail the gate"] if bad else []
        if others:
            parts.append(f"{len(others)} {'other ' if bad else ''}finding(s) fail it")
        fix = fixes_clause(report) or _fix(failing[0])
        return f"FAIL (exit 1, --fail-on {report.fail_on}): {', '.join(parts)}; fix: {fix}"
    what = f"{len(pairs)} pair(s) pass the gate" if pairs else "no pair to check"
    if servers:
        what += f", {servers} standalone server(s)"
    rest = len(report.findings)
    if rest:
        what += f"; {rest} finding(s) below --fail-on {report.fail_on}"
    if report.unread:
        what += f"; {len(report.unread)} path(s) not read (accepted: --skip-unrelated)"
    return f"PASS (exit 0, --fail-on {report.fail_on}): {what}"
