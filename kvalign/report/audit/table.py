"""``kvalign audit --format table`` (default): rich tables of pools and findings."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _where(pool: Pool) -> str:
    return f"{pool.label} ({pool.location})"


def to_table(report: AuditReport) -> RenderableType:
    """Pools (with predicted block sizes), pairs and how each was grouped, findings, files
    not evaluated, summary line."""
    parts: list[RenderableType] = []
    pools = Table(title="Pools", title_justify="left")
    for column in ("File", "Pool", "Model", "TP", "Block size", "Kernel block"):
        pools.add_column(column)
    for file in report.files:
        for r in file.pools:
            pools.add_row(
                str(r.pool.location), r.pool.label, r.pool.model, str(r.pool.tp),
                str(r.rank.block_size or "-"), str(r.rank.kernel_block_size or "-"),
            )  # fmt: skip
    if report.files:
        parts.append(pools)
        notes = sorted({f.version_note for f in report.files})
        parts += [Text(note) for note in notes]
    if report.groups:
        pairs = Table(title=f"Pairs (--pair-by {report.pair_by})", title_justify="left")
        for column in ("Grouped by", "Prefill", "Decode", "Verdict"):
            pairs.add_column(column)
        for group in report.groups:
            for o in group.pairs:
                pairs.add_row(
                    group.grouping.how, _where(o.prefill.pool), _where(o.decode.pool),
                    o.pair.verdict,
                )  # fmt: skip
            for r in group.unpaired:
                pools_cell = (
                    (_where(r.pool), "-") if r.pool.role == "prefill" else ("-", _where(r.pool))
                )
                pairs.add_row(group.grouping.how, *pools_cell, Text("not paired", style="yellow"))
        parts.append(pairs)
    if report.findings:
        table = Table(title="Findings", title_justify="left")
        for column in ("Rule", "Severity", "Location", "Pools", "Message", "Fix"):
            table.add_column(column)
        for f in report.findings:
            table.add_row(
                f.rule, Text(f.severity, style=STYLE[f.severity]), str(f.location),
                ", ".join(f.pools), f.message, f.remediation,
            )  # fmt: skip
        parts.append(table)
    for p in report.unevaluated:
        parts.append(Text(f"not evaluated: {p.location}: {p.message}", style="bold red"))
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in STYLE}
    summary = (
        f"{len(report.files)} file(s) evaluated, {len(report.unevaluated)} not evaluated; "
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info; "
        f"{len(report.suppressed)} suppressed"
    )
    parts.append(Text(summary))
    return Group(*parts)
