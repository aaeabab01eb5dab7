"""``kvalign audit --format table`` (default): rich tables of pools, pairs and findings.

Locations (``file:line``), pool labels, model ids and numbers are never truncated: the
free-text columns (message, fix) fold instead, and when even that does not fit the
terminal, the section is printed as one block per row (``key: value`` lines) that wraps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
#: width of a table written with ``--output`` (no terminal to fit).
FILE_WIDTH = 400
#: narrowest a folding (free-text) column may become before the vertical layout is used.
MIN_TEXT_WIDTH = 16


@dataclass(frozen=True)
class _Column:
    header: str
    fixed: bool  # never truncated (locations, labels, numbers); else folds


def _where(pool: Pool) -> str:
    return f"{pool.label} ({pool.location})"


def _cell_text(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _needed(columns: Sequence[_Column], rows: Sequence[Sequence[str | Text]]) -> int:
    """Narrowest table width that shows every fixed column whole (rich's heavy-head box:
    one border per column plus one, one space of padding each side)."""
    total = 1
    for index, column in enumerate(columns):
        if column.fixed:
            longest = max([len(column.header)] + [len(_cell_text(r[index])) for r in rows])
        else:
            longest = MIN_TEXT_WIDTH
        total += longest + 3
    return total


def _section(
    title: str,
    columns: Sequence[_Column],
    rows: Sequence[Sequence[str | Text]],
    width: int | None,
) -> RenderableType:
    """A table when its fixed columns fit in ``width``, else one block per row."""
    if width is None or _needed(columns, rows) <= width:
        table = Table(title=title, title_justify="left")
        for column in columns:
            if column.fixed:
                table.add_column(column.header, no_wrap=True, overflow="ignore")
            else:
                table.add_column(column.header, overflow="fold", min_width=MIN_TEXT_WIDTH)
        for row in rows:
            table.add_row(*row)
        return table
    blocks: list[RenderableType] = [Text(title, style="italic")]
    for row in rows:
        lines = Text()
        for index, (column, cell) in enumerate(zip(columns, row, strict=True)):
            prefix = "" if index == 0 else "\n  "
            lines.append(f"{prefix}{column.header}: ")
            lines.append(cell if isinstance(cell, Text) else Text(cell))
        blocks.append(lines)
    return Group(*blocks)


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
            _Column(name, True)
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
            _Column("Grouped by", False),
            _Column("Prefill", True),
            _Column("Decode", True),
            _Column("Verdict", True),
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
            _Column("Rule", True),
            _Column("Severity", True),
            _Column("Location", True),
            _Column("Pools", False),
            _Column("Message", False),
            _Column("Fix", False),
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
