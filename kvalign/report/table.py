"""Rich tables for humans (``--format table``, the default)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kvalign.pd import PairResult, Report
from kvalign.report.cells import (
    MATRIX_LEGEND,
    PAIR_COLUMNS,
    deployment_columns,
    deployment_rows,
    header_lines,
    matrix_cell,
    pair_cells,
    per_tp_columns,
    per_tp_rows,
)
from kvalign.sources.catalog import CatalogEntry

VERDICT_STYLES = {
    "ok": "green",
    "drift": "yellow",
    "ratio": "yellow",
    "split": "red",
    "incompatible": "bold red",
    "invalid": "magenta",
    "attention-free": "dim",
}


def _footer(report: Report) -> list[RenderableType]:
    rec = report.recommendation
    style = "bold" if rec.needed else ""
    parts: list[RenderableType] = [Text("Recommendation: " + rec.text, style=style)]
    parts += [Text("Note: " + note, style="dim") for note in report.notes]
    return parts


def check_table(report: Report) -> RenderableType:
    """Deployments table, pairs table, recommendation and notes."""
    deployments = Table(title="Deployments (per rank)", title_justify="left")
    for i, column in enumerate(deployment_columns(report.settings.alignment)):
        deployments.add_column(column, justify="left" if i == 0 else "right")
    for row in deployment_rows(report):
        deployments.add_row(*row)

    pairs = Table(
        title=f"Prefill → decode pairs ({report.settings.alignment} alignment)",
        title_justify="left",
    )
    for column in PAIR_COLUMNS:
        pairs.add_column(column, overflow="fold")
    for pair in report.pairs:
        cells = pair_cells(pair)
        pairs.add_row(*cells[:-2], Text(cells[-2], style=VERDICT_STYLES[pair.verdict]), cells[-1])

    header = [Text(line) for line in header_lines(report)]
    return Group(*header, deployments, pairs, *_footer(report))


def _styled(pair: PairResult) -> Text:
    return Text(matrix_cell(pair), style=VERDICT_STYLES[pair.verdict])


def matrix_table(report: Report) -> RenderableType:
    """Prefill (rows) × decode (columns) grid, coloured by verdict, plus per-TP blocks."""
    grid = Table(
        title=f"Prefill TP ↓ × decode TP → ({report.settings.alignment} alignment)",
        title_justify="left",
    )
    grid.add_column("P \\ D", justify="right")
    for tp in report.decode_tps:
        grid.add_column(f"TP {tp}", justify="center")
    by_key = {(p.prefill_tp, p.decode_tp): p for p in report.pairs}
    for ptp in report.prefill_tps:
        grid.add_row(f"TP {ptp}", *(_styled(by_key[(ptp, dtp)]) for dtp in report.decode_tps))

    blocks = Table(title="Per TP", title_justify="left")
    for column in per_tp_columns(report.settings.alignment):
        blocks.add_column(column, justify="right")
    for row in per_tp_rows(report):
        blocks.add_row(*row)
    legend = Text(MATRIX_LEGEND, style="dim")
    header = [Text(line) for line in header_lines(report)]
    return Group(*header, grid, blocks, legend, *_footer(report))


def models_table(entries: list[CatalogEntry], kinds: dict[str, str]) -> RenderableType:
    """The bundled catalog: hub id and model type/family."""
    table = Table(title="Bundled model configs (usable offline by hub id)", title_justify="left")
    table.add_column("Model")
    table.add_column("Type")
    for entry in entries:
        table.add_row(entry.model_id, kinds.get(entry.model_id, ""))
    return table
