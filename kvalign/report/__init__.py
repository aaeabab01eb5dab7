"""Formatters: each turns the same :class:`~kvalign.pd.CheckReport` into one output format.

Only this package and ``kvalign.cli`` use rich. The names below load on first use, so
that a JSON renderer (``kvalign.report.json_format``) never imports the rich tables.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name → the module that defines it.
_HOMES = {
    "report_to_dict": "json_format",
    "to_json": "json_format",
    "check_markdown": "markdown",
    "matrix_markdown": "markdown",
    "check_table": "table",
    "matrix_table": "table",
    "models_table": "table",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """``kvalign.report.check_table`` etc., imported from their module when first asked."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"kvalign.report.{_HOMES[name]}"), name)
