"""``kvalign audit --format table`` (default): rich tables of pools, pairs and findings.

Locations (``file:line``), pool labels, model ids and numbers are never truncated: the
free-text columns (message, fix) fold instead, and when even that does not fit the
terminal, the section is printed as one block per row (``key: value`` lines) that wraps.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool
from kvalign.report.layout import Column, section

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
#: width of a table written with ``--output`` (no terminal to fit).
FILE_WIDTH = 400
#: narrowest a folding (free-text) column may become before the vertical layout is used.
MIN_TEXT_WIDTH = 16


def _where(pool: Pool) -> str:
    return f"{pool.label} ({pool.location})"


def _section(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    width: int | None,
) -> RenderableType:
    """A table when its fixed columns fit in ``width``, else one block per row
    (:func:`kvalign.report.layout.section`, free-text columns down to 16 characters)."""
    return section(title, columns, rows, width, min_text_width=MIN_TEXT_WIDTH)


def _version_lines(report: AuditReport) -> list[Text]:
    """Which vLLM rules applied to which files (one line when all files share them)."""
    by_note: dict[str, list[str]] = {}
    for file in report.files:
        by_note.setdefault(file.version_note, []).append(file.deployment.source)
    if len(by_note) == 1:
        note = next(iter(by_note))
        return [Text(f"vLLM rules for every file: {note}")]
    return [Text(f"vLLM rules {note}: {', '.join(files)}") for note, files in by_note.items()]


def to_table(report: AuditReport, width: int | None = None) -> RenderableType:
    """Pools (with predicted block sizes), the version and platform assumptions, pairs and
    how each was grouped, findings, files not evaluated, summary line.

    ``width``: the console width (characters) the tables must fit; ``None`` = unlimited.
    """
    parts: list[RenderableType] = []
    if report.files:
        rows: list[list[str | Text]] = [
            [
                str(r.pool.location),
                r.pool.label,
                r.pool.model,
                str(r.pool.tp),
                str(r.rank.block_size or "-"),
                str(r.rank.kernel_block_size or "-"),
            ]
            for file in report.files
            for r in file.pools
        ]
        columns = [
            Column(name, True)
            for name in ("File", "Pool", "Model", "TP", "Block size", "Kernel block")
        ]
        parts.append(_section("Pools", columns, rows, width))
        parts += _version_lines(report)
        parts += [Text(f"assumed: {line}") for line in report.assumptions]
    if report.groups:
        pair_rows: list[list[str | Text]] = []
        for group in report.groups:
            for o in group.pairs:
                pair_rows.append(
                    [group.grouping.how, _where(o.prefill.pool), _where(o.decode.pool),
                     o.pair.verdict]
                )  # fmt: skip
            for r in group.unpaired:
                cells = (_where(r.pool), "-") if r.pool.role == "prefill" else ("-", _where(r.pool))
                pair_rows.append([group.grouping.how, *cells, Text("not paired", style="yellow")])
        pair_columns = [
            Column("Grouped by", False),
            Column("Prefill", True),
            Column("Decode", True),
            Column("Verdict", True),
        ]
        parts.append(
            _section(f"Pairs (--pair-by {report.pair_by})", pair_columns, pair_rows, width)
        )
    if report.findings:
        finding_rows: list[list[str | Text]] = [
            [
                f.rule,
                Text(f.severity, style=STYLE[f.severity]),
                str(f.location),
                ", ".join(f.pools),
                f.message,
                f.remediation,
            ]
            for f in report.findings
        ]
        finding_columns = [
            Column("Rule", True),
            Column("Severity", True),
            Column("Location", True),
            Column("Pools", False),
            Column("Message", False),
            Column("Fix", False),
        ]
        parts.append(_section("Findings", finding_columns, finding_rows, width))
    parts += [Text(f"note: {note}", style="dim") for note in report.notes]
    for p in report.unevaluated:
        parts.append(Text(f"not evaluated: {p.location}: {p.message}", style="bold red"))
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in STYLE}
    summary = (
        f"{len(report.files)} file(s) evaluated, {len(report.unevaluated)} not evaluated; "
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info; "
        f"{len(report.suppressed)} suppressed; {len(report.failing())} fail --fail-on "
        f"{report.fail_on}"
    )
    parts.append(Text(summary))
    return Group(*parts)
