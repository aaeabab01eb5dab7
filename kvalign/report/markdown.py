"""GitHub-flavoured Markdown (``--format markdown``) for runbooks and PR comments."""

from __future__ import annotations

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
from kvalign.sanitize import markdown_cell


def _escape(cell: str) -> str:
    return markdown_cell(cell)


def _table(columns: tuple[str, ...] | list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in rows]
    return lines


def _footer(report: CheckReport) -> list[str]:
    lines = ["", f"**Recommendation:** {report.recommendation.text}"]
    lines += [f"- {note}" for note in report.notes]
    return lines


def _answer(report: CheckReport, fail_on: str, grid: bool = False) -> list[str]:
    first, *rest = answer_lines(report, fail_on, grid)
    return [f"**{first}**  ", *(f"{line}  " for line in rest), ""]


def check_markdown(report: CheckReport, fail_on: str = "error") -> str:
    """The answer first, then the deployments and pairs tables in Markdown."""
    lines = _answer(report, fail_on)
    lines += [f"{markdown_cell(line)}  " for line in header_lines(report)]
    lines += ["", "### Deployments (per rank)", ""]
    lines += _table(deployment_columns(report.settings.alignment), deployment_rows(report))
    rules = f"vLLM {report.engine.profile.name} rules: the verdict"
    lines += ["", f"### Prefill → decode pairs ({rules})", ""]
    lines += _table(PAIR_COLUMNS, [pair_cells(pair) for pair in report.pairs])
    if report.tp_stable_pairs is not None:
        lines += ["", f"### What-if: {TP_STABLE_LABEL}, in no vLLM release (not gated)", ""]
        lines += _table(PAIR_COLUMNS, [pair_cells(pair) for pair in report.tp_stable_pairs])
    return "\n".join(lines + _footer(report)) + "\n"


def _grid_rows(report: CheckReport, pairs: tuple[PairResult, ...]) -> list[list[str]]:
    by_key = {(p.prefill_tp, p.decode_tp): p for p in pairs}
    return [
        [f"TP {ptp}"] + [matrix_cell(by_key[(ptp, dtp)]) for dtp in report.decode_tps]
        for ptp in report.prefill_tps
    ]


def matrix_markdown(report: CheckReport, fail_on: str = "error") -> str:
    """The answer, then the prefill × decode grid (and the TP-stable what-if) in Markdown."""
    columns = ["P \\ D"] + [f"TP {tp}" for tp in report.decode_tps]
    lines = _answer(report, fail_on, grid=True)
    lines += [f"{markdown_cell(line)}  " for line in header_lines(report)]
    lines += ["", f"### Prefill TP × decode TP (vLLM {report.engine.profile.name} rules)", ""]
    lines += _table(columns, _grid_rows(report, report.pairs))
    if report.tp_stable_pairs is not None:
        title = f"What-if: {TP_STABLE_LABEL}, in no vLLM release (not gated)"
        lines += ["", f"### {title}", ""]
        lines += _table(columns, _grid_rows(report, report.tp_stable_pairs))
    lines += ["", "### Per TP", ""]
    lines += _table(per_tp_columns(report.settings.alignment), per_tp_rows(report))
    lines += ["", MATRIX_LEGEND]
    return "\n".join(lines + _footer(report)) + "\n"
