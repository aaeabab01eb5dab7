"""Formatters: each turns the same :class:`~kvalign.pd.CheckReport` into one output format.

Only this package and ``kvalign.cli`` use rich.
"""

from __future__ import annotations

from kvalign.report.json_format import report_to_dict, to_json
from kvalign.report.markdown import check_markdown, matrix_markdown
from kvalign.report.table import check_table, matrix_table, models_table

__all__ = [
    "check_markdown",
    "check_table",
    "matrix_markdown",
    "matrix_table",
    "models_table",
    "report_to_dict",
    "to_json",
]
