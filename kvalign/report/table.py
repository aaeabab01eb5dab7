"""Rich tables for humans (``--format table``, the default)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kvalign.pd import CheckReport, PairResult
from kvalign.report.cells import (
    MATRIX_LEGEND,
    PAIR_COLUMNS,
    TP_STABLE_LABEL,
    answer_lines,
    deployment_columns,
    deployment_rows,
    header_lines,
    matrix_cell,
    pair_cells,
    per_tp_columns,
    per_tp_rows,
)
from kvalign.report.layout import Column, needed_width, section
from kvalign.sources.catalog import CatalogEntry

VERDICT_STYLES = {
    "ok": "green",
    "drift": "yellow",
    "ratio": "yellow",
    "split": "red",
    "incompatible": "bold red",
    "invalid": "magenta",
    "nothing-to-align": "dim",
}


def _footer(report: CheckReport) -> list[RenderableType]:
    rec = report.recommendation
    style = "bold" if rec.needed else ""
    parts: list[RenderableType] = [Text("Recommendation: " + rec.text, style=style)]
    parts += [Text("Note: " + note, style="dim") for note in report.notes]
    return parts


def _answer(report: CheckReport, fail_on: str, grid: bool = False) -> list[RenderableType]:
    lines = answer_lines(report, fail_on, grid)
    style = "bold red" if report.exit_code(fail_on) else "bold green"
    return [Text(lines[0], style=style), *(Text(line) for line in lines[1:]), Text("")]


def _pair_rows(pairs: tuple[PairResult, ...]) -> list[list[str | Text]]:
    rows: list[list[str | Text]] = []
    for pair in pairs:
        cells = pair_cells(pair)
        verdict = Text(cells[-2], style=VERDICT_STYLES[pair.verdict])
        rows.append([*cells[:-2], verdict, cells[-1]])
    return rows


def check_table(
    report: CheckReport, width: int | None = None, fail_on: str = "error"
) -> RenderableType:
    """The answer first (does each pair work, the one change that fixes it), then the
    deployments and pairs (stacked when they do not fit ``width``), recommendation, notes."""
    align = report.settings.alignment
    columns = [
        Column(c, justify="left" if i == 0 else "right")
        for i, c in enumerate(deployment_columns(align))
    ]
    rows = deployment_rows(report)
    if width is not None and needed_width(columns, rows) > width:
        # one column per pool, one row per quantity: fits 80 columns for a pair
        heads = [Column("")] + [Column(f"{r[0]} TP {r[1]}", justify="right") for r in rows]
        flipped = [[c.header, *(r[i] for r in rows)] for i, c in enumerate(columns) if i > 1]
        deployments = section("Deployments (per rank)", heads, flipped, width)
    else:
        deployments = section("Deployments (per rank)", columns, rows, width)
    pair_columns = [Column(c, fixed=c != "Why") for c in PAIR_COLUMNS]
    title = f"Prefill → decode pairs (vLLM {report.engine.profile.name} rules: the verdict)"
    parts: list[RenderableType] = [*_answer(report, fail_on)]
    parts += [Text(line) for line in header_lines(report)]
    parts += [deployments, section(title, pair_columns, _pair_rows(report.pairs), width)]
    if report.tp_stable_pairs is not None:
        what_if = f"What-if: {TP_STABLE_LABEL}, in no vLLM release (not gated)"
        parts.append(section(what_if, pair_columns, _pair_rows(report.tp_stable_pairs), width))
    return Group(*parts, *_footer(report))


def _styled(pair: PairResult) -> Text:
    return Text(matrix_cell(pair), style=VERDICT_STYLES[pair.verdict])


def matrix_table(
    report: CheckReport, width: int | None = None, fail_on: str = "error"
) -> RenderableType:
    """The answer, then the prefill (rows) × decode (columns) grid under vLLM's rules,
    coloured by verdict, plus per-TP blocks. ``width`` is accepted for symmetry with
    :func:`check_table` (the grid's cells are short)."""
    grids = [_grid(report, report.pairs, f"vLLM {report.engine.profile.name} rules")]
    if report.tp_stable_pairs is not None:
        what_if = f"what-if: {TP_STABLE_LABEL}, in no vLLM release, not gated"
        grids.append(_grid(report, report.tp_stable_pairs, what_if))

    blocks = Table(title="Per TP", title_justify="left")
    for column in per_tp_columns(report.settings.alignment):
        blocks.add_column(column, justify="right")
    for row in per_tp_rows(report):
        blocks.add_row(*row)
    legend = Text(MATRIX_LEGEND, style="dim")
    header = [Text(line) for line in header_lines(report)]
    return Group(
        *_answer(report, fail_on, grid=True), *grids, *header, blocks, legend, *_footer(report)
    )


def _grid(report: CheckReport, pairs: tuple[PairResult, ...], rules: str) -> Table:
    grid = Table(title=f"Prefill TP ↓ × decode TP → ({rules})", title_justify="left")
    grid.add_column("P \\ D", justify="right")
    for tp in report.decode_tps:
        grid.add_column(f"TP {tp}", justify="center")
    by_key = {(p.prefill_tp, p.decode_tp): p for p in pairs}
    for ptp in report.prefill_tps:
        grid.add_row(f"TP {ptp}", *(_styled(by_key[(ptp, dtp)]) for dtp in report.decode_tps))
    return grid


def models_table(entries: list[CatalogEntry], kinds: dict[str, str]) -> RenderableType:
    """The bundled catalog: hub id and model type/family."""
    table = Table(title="Bundled model configs (usable offline by hub id)", title_justify="left")
    table.add_column("Model")
    table.add_column("Type")
    for entry in entries:
        table.add_row(entry.model_id, kinds.get(entry.model_id, ""))
    return table
