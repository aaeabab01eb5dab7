"""Rich tables for humans (``--format table``, the default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from kvalign.report.plain import (
    Cell,
    Column,
    Grid,
    Line,
    Part,
    Section,
    Styled,
    needed_width,
    render,
)

if TYPE_CHECKING:
    from rich.console import RenderableType

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


def _footer(report: CheckReport) -> list[Part]:
    rec = report.recommendation
    parts: list[Part] = [Line("Recommendation: " + rec.text, "bold" if rec.needed else "")]
    parts += [Line("Note: " + note, "dim") for note in report.notes]
    return parts


def _answer(report: CheckReport, fail_on: str, grid: bool = False) -> list[Part]:
    lines = answer_lines(report, fail_on, grid)
    style = "bold red" if report.exit_code(fail_on) else "bold green"
    return [Line(lines[0], style), *(Line(line) for line in lines[1:]), Line("")]


def _pair_rows(pairs: tuple[PairResult, ...]) -> tuple[tuple[Cell, ...], ...]:
    rows: list[tuple[Cell, ...]] = []
    for pair in pairs:
        cells = pair_cells(pair)
        verdict = Styled(cells[-2], VERDICT_STYLES[pair.verdict])
        rows.append((*cells[:-2], verdict, cells[-1]))
    return tuple(rows)


def check_parts(
    report: CheckReport, width: int | None = None, fail_on: str = "error"
) -> list[Part]:
    """What :func:`check_table` prints, as lines and sections (:mod:`kvalign.report.plain`):
    the answer first (does each pair work, the one change that fixes it), then the
    deployments and pairs (stacked when they do not fit ``width``), recommendation, notes."""
    align = report.settings.alignment
    columns = tuple(
        Column(c, justify="left" if i == 0 else "right")
        for i, c in enumerate(deployment_columns(align))
    )
    rows = deployment_rows(report)
    title = "Deployments (per rank)"
    if width is not None and needed_width(columns, rows) > width:
        # one column per pool, one row per quantity: fits 80 columns for a pair
        heads = (Column(""), *(Column(f"{r[0]} TP {r[1]}", justify="right") for r in rows))
        flipped = tuple((c.header, *(r[i] for r in rows)) for i, c in enumerate(columns) if i > 1)
        deployments = Section(title, heads, flipped, width)
    else:
        deployments = Section(title, columns, tuple(tuple(r) for r in rows), width)
    pair_columns = tuple(Column(c, fixed=c != "Why") for c in PAIR_COLUMNS)
    pairs_title = f"Prefill → decode pairs (vLLM {report.engine.profile.name} rules: the verdict)"
    parts: list[Part] = [*_answer(report, fail_on)]
    parts += [Line(line) for line in header_lines(report)]
    parts += [deployments, Section(pairs_title, pair_columns, _pair_rows(report.pairs), width)]
    if report.tp_stable_pairs is not None:
        what_if = f"What-if: {TP_STABLE_LABEL}, in no vLLM release (not gated)"
        parts.append(Section(what_if, pair_columns, _pair_rows(report.tp_stable_pairs), width))
    return parts + _footer(report)


def check_table(
    report: CheckReport, width: int | None = None, fail_on: str = "error"
) -> RenderableType:
    """:func:`check_parts` as one rich renderable (a terminal: with colour)."""
    from kvalign.report.layout import to_rich

    return to_rich(check_parts(report, width, fail_on))


def check_text(report: CheckReport, width: int, fail_on: str = "error") -> str | None:
    """:func:`check_table` as rich prints it without colour at ``width`` columns, laid
    out without rich (:func:`kvalign.report.plain.render`; ``None``: print it with rich)."""
    return render(check_parts(report, width, fail_on), width)


def _styled(pair: PairResult) -> Styled:
    return Styled(matrix_cell(pair), VERDICT_STYLES[pair.verdict])


def matrix_parts(report: CheckReport, fail_on: str = "error") -> list[Part]:
    """What :func:`matrix_table` prints, as lines and grids (:mod:`kvalign.report.plain`)."""
    grids = [_grid(report, report.pairs, f"vLLM {report.engine.profile.name} rules")]
    if report.tp_stable_pairs is not None:
        what_if = f"what-if: {TP_STABLE_LABEL}, in no vLLM release, not gated"
        grids.append(_grid(report, report.tp_stable_pairs, what_if))
    blocks = Grid(
        "Per TP",
        tuple(Column(c, justify="right") for c in per_tp_columns(report.settings.alignment)),
        tuple(tuple(row) for row in per_tp_rows(report)),
    )
    header = [Line(line) for line in header_lines(report)]
    return [
        *_answer(report, fail_on, grid=True), *grids, *header, blocks,
        Line(MATRIX_LEGEND, "dim"), *_footer(report),
    ]  # fmt: skip


def matrix_table(
    report: CheckReport, width: int | None = None, fail_on: str = "error"
) -> RenderableType:
    """The answer, then the prefill (rows) × decode (columns) grid under vLLM's rules,
    coloured by verdict, plus per-TP blocks. ``width`` is accepted for symmetry with
    :func:`check_table` (the grid's cells are short)."""
    from kvalign.report.layout import to_rich

    return to_rich(matrix_parts(report, fail_on))


def matrix_text(report: CheckReport, width: int, fail_on: str = "error") -> str | None:
    """:func:`matrix_table` as rich prints it without colour at ``width`` columns, laid
    out without rich (``None``: print it with rich)."""
    return render(matrix_parts(report, fail_on), width)


def _grid(report: CheckReport, pairs: tuple[PairResult, ...], rules: str) -> Grid:
    by_key = {(p.prefill_tp, p.decode_tp): p for p in pairs}
    columns = (Column("P \\ D", justify="right"),
               *(Column(f"TP {tp}", justify="center") for tp in report.decode_tps))  # fmt: skip
    rows: tuple[tuple[Cell, ...], ...] = tuple(
        (f"TP {ptp}", *(_styled(by_key[(ptp, dtp)]) for dtp in report.decode_tps))
        for ptp in report.prefill_tps
    )
    return Grid(f"Prefill TP ↓ × decode TP → ({rules})", columns, rows)


def models_table(entries: list[CatalogEntry], kinds: dict[str, str]) -> RenderableType:
    """The bundled catalog: hub id and model type/family."""
    from rich.table import Table

    table = Table(title="Bundled model configs (usable offline by hub id)", title_justify="left")
    table.add_column("Model")
    table.add_column("Type")
    for entry in entries:
        table.add_row(entry.model_id, kinds.get(entry.model_id, ""))
    return table
