"""``kvalign audit --format table`` (default): the answer first, then the detail.

Line 1 is the verdict with the exit code (:func:`kvalign.report.audit.answer.headline`);
the findings follow, each with its fix; pool and pair detail only for failing pairs unless
``verbose``; ``quiet`` stops after the findings. :func:`to_table` renders for a terminal
(rich sections that fit the width: locations, labels, model ids and numbers are never
truncated, free text folds, and a section that does not fit is printed one block per row);
:func:`to_text` renders the same content as plain lines, neither wrapped nor padded, for
output that is no terminal (a pipe, a CI log, ``--output``), and costs little per pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool
from kvalign.report.audit.answer import failing_pairs, headline, shown_pools
from kvalign.report.plain import Cell, Column, Line, Part, Section, Styled, render
from kvalign.rules.base import GroupResult, PairOutcome, PoolResult
from kvalign.sanitize import clean

if TYPE_CHECKING:
    from rich.console import RenderableType

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
#: width of a table written with ``--output`` (kept for callers; ``--output`` is plain text).
FILE_WIDTH = 400
#: narrowest a folding (free-text) column may become before the vertical layout is used.
MIN_TEXT_WIDTH = 16


def _where(pool: Pool) -> str:
    return f"{pool.label} ({pool.location})"


def _section(
    title: str,
    columns: tuple[Column, ...],
    rows: tuple[tuple[Cell, ...], ...],
    width: int | None,
) -> Section:
    """A table when its fixed columns fit in ``width``, else one block per row
    (:func:`kvalign.report.layout.section`, free-text columns down to 16 characters)."""
    return Section(title, columns, rows, width, MIN_TEXT_WIDTH)


def _version_lines(report: AuditReport, files: set[str] | None = None) -> list[str]:
    """Which vLLM rules applied to which files (one line when all files share them)."""
    by_note: dict[str, list[str]] = {}
    for file in report.files:
        if files is None or file.deployment.source in files:
            by_note.setdefault(file.version_note, []).append(file.deployment.source)
    if len(by_note) == 1:
        note = next(iter(by_note))
        return [f"vLLM rules for every file: {note}"]
    return [f"vLLM rules {note}: {', '.join(files)}" for note, files in by_note.items()]


Row = tuple[GroupResult, PairOutcome | PoolResult]


def _pairs(
    report: AuditReport, verbose: bool, bad: list[PairOutcome], pools: list[PoolResult]
) -> list[Row]:
    """Pairs (and unpaired pools) to show: every one with ``verbose``, else the failing
    (``bad``: :func:`failing_pairs`) and the unpaired pools among ``pools``
    (:func:`shown_pools`)."""
    failing = {id(o) for o in bad}
    shown = {id(r) for r in pools}
    rows: list[Row] = []
    for group in report.groups:
        rows += [(group, o) for o in group.pairs if verbose or id(o) in failing]
        rows += [(group, r) for r in group.unpaired if verbose or id(r) in shown]
    return rows


def _summary(report: AuditReport) -> str:
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in STYLE}
    unread = f", {len(report.unread)} not read" if report.unread else ""
    return (
        f"{len(report.files)} file(s) evaluated, {len(report.unevaluated)} not evaluated"
        f"{unread}; {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['info']} info; {len(report.suppressed)} suppressed; "
        f"{len(report.failing())} fail --fail-on {report.fail_on}"
    )


def _hidden(report: AuditReport, verbose: bool, shown: int) -> str | None:
    """The line saying what the detail leaves out (``--verbose`` shows it); ``shown``:
    how many pools the detail shows."""
    if verbose:
        return None
    pools = sum(len(f.pools) for f in report.files)
    pairs = sum(len(g.pairs) for g in report.groups)
    if pools == shown:
        return None
    return (
        f"detail of {pools - shown} of {pools} pool(s) in {pairs} pair(s) left out: they "
        "pass the gate (--verbose shows every pool and pair)"
    )


def _unevaluated_lines(report: AuditReport) -> list[str]:
    """One ``not evaluated: …`` line per file, controls escaped (the path and message
    come from the input)."""
    return [
        clean(f"not evaluated: {p.location}: {p.message}", newlines=False)
        for p in report.unevaluated
    ]


def _unread_lines(report: AuditReport) -> list[str]:
    accepted = " (accepted)" if report.unread_accepted else ""
    return [
        clean(f"not read: {p.location}: {p.message}{accepted}", newlines=False)
        for p in report.unread
    ]


def _pool_cells(r: PoolResult) -> list[str]:
    return [
        str(r.pool.location), r.pool.label, r.pool.model, str(r.pool.tp),
        str(r.rank.block_size or "-"), str(r.rank.kernel_block_size or "-"),
    ]  # fmt: skip


def _pair_cells(group: GroupResult, item: PairOutcome | PoolResult) -> list[str]:
    if isinstance(item, PairOutcome):
        return [group.grouping.how, _where(item.prefill.pool), _where(item.decode.pool),
                item.pair.verdict]  # fmt: skip
    cells = [_where(item.pool), "-"] if item.pool.role == "prefill" else ["-", _where(item.pool)]
    return [group.grouping.how, *cells, "not paired"]


def table_parts(
    report: AuditReport, width: int | None = None, *, verbose: bool = False, quiet: bool = False
) -> list[Part]:
    """What :func:`to_table` prints, as lines and sections (:mod:`kvalign.report.plain`)."""
    code = report.exit_code()
    bad = failing_pairs(report)
    parts: list[Part] = [Line(headline(report, bad), "bold red" if code else "bold green")]
    if report.findings:
        finding_rows = tuple(
            (f.rule, Styled(f.severity, STYLE[f.severity]), str(f.location),
             ", ".join(f.pools), f.message, f.remediation)
            for f in report.findings
        )  # fmt: skip
        finding_columns = (
            Column("Rule", True), Column("Severity", True), Column("Location", True),
            Column("Pools", False), Column("Message", False), Column("Fix", False),
        )  # fmt: skip
        parts.append(_section("Findings", finding_columns, finding_rows, width))
    parts += [Line(line, "bold red") for line in _unevaluated_lines(report)]
    parts += [Line(line, "bold red") for line in _unread_lines(report)]
    if quiet:
        return parts
    pools = shown_pools(report, verbose, bad)
    if pools:
        columns = tuple(Column(n, True) for n in
                        ("File", "Pool", "Model", "TP", "Block size", "Kernel block"))  # fmt: skip
        rows = tuple(tuple(_pool_cells(r)) for r in pools)
        parts.append(_section("Pools", columns, rows, width))
        files = None if verbose else {r.pool.location.file for r in pools}
        parts += [Line(line) for line in _version_lines(report, files)]
    parts += [Line(f"assumed: {line}") for line in report.assumptions]
    pairs = _pairs(report, verbose, bad, pools)
    if pairs:
        pair_columns = (Column("Grouped by", False), Column("Prefill", True),
                        Column("Decode", True), Column("Verdict", True))  # fmt: skip
        pair_rows = tuple(tuple(_pair_cells(g, i)) for g, i in pairs)
        parts.append(
            _section(f"Pairs (--pair-by {report.pair_by})", pair_columns, pair_rows, width)
        )
    hidden = _hidden(report, verbose, len(pools))
    if hidden:
        parts.append(Line(hidden, "dim"))
    parts += [Line(f"note: {note}", "dim") for note in report.notes]
    parts.append(Line(_summary(report)))
    return parts


def to_table(
    report: AuditReport, width: int | None = None, *, verbose: bool = False, quiet: bool = False
) -> RenderableType:
    """The report for a terminal ``width`` characters wide (``None`` = unlimited): the
    verdict, the findings with their fixes, then (not with ``quiet``) pools and pairs of
    failing pairs (every one with ``verbose``), assumptions, notes, files not evaluated
    and the summary line."""
    from kvalign.report.layout import to_rich

    return to_rich(table_parts(report, width, verbose=verbose, quiet=quiet))


def to_plain_table(
    report: AuditReport, width: int, *, verbose: bool = False, quiet: bool = False
) -> str | None:
    """:func:`to_table` as rich prints it without colour on a console ``width``
    characters wide, laid out without rich (:func:`kvalign.report.plain.render`);
    ``None`` when only rich can lay it out."""
    return render(table_parts(report, width, verbose=verbose, quiet=quiet), width)


def to_text(report: AuditReport, *, verbose: bool = False, quiet: bool = False) -> str:
    """The same report as :func:`to_table`, one plain line per item (no wrapping, no
    padding), for output that is no terminal."""
    bad = failing_pairs(report)
    lines = [headline(report, bad)]
    if report.findings:
        lines.append("Findings:")
        lines += [
            f"  {f.location}: {f.rule} {f.severity}: {f.message} [{', '.join(f.pools)}]; "
            f"fix: {f.remediation}"
            for f in report.findings
        ]
    lines += _unevaluated_lines(report)
    lines += _unread_lines(report)
    if quiet:
        return _plain(lines)
    pools = shown_pools(report, verbose, bad)
    if pools:
        lines.append("Pools:")
        lines += [
            f"  {c[0]}: {c[1]} {c[2]} TP {c[3]}: block size {c[4]}, kernel block {c[5]}"
            for c in map(_pool_cells, pools)
        ]
        files = None if verbose else {r.pool.location.file for r in pools}
        lines += _version_lines(report, files)
    lines += [f"assumed: {line}" for line in report.assumptions]
    pairs = _pairs(report, verbose, bad, pools)
    if pairs:
        lines.append(f"Pairs (--pair-by {report.pair_by}):")
        lines += [
            f"  {c[0]}: {c[1]} → {c[2]}: {c[3]}" for c in (_pair_cells(g, i) for g, i in pairs)
        ]
    hidden = _hidden(report, verbose, len(pools))
    if hidden:
        lines.append(hidden)
    lines += [f"note: {note}" for note in report.notes]
    lines.append(_summary(report))
    return _plain(lines)


def _plain(lines: list[str]) -> str:
    """One output line per item: controls, bidi overrides and newlines that input text
    (file names, pool names, model ids) carries are escaped (``\\x1b``, ``\\n``), so no
    input can send a terminal sequence to a CI log or forge a line of its own."""
    return "\n".join(clean(line, newlines=False) for line in lines) + "\n"
