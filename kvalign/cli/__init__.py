"""The ``kvalign`` command line: parse options → Settings → analyse → render → exit code.

No arithmetic here. Exit codes: 0 the gate passes, 1 it fails (:mod:`kvalign.policy`,
``--fail-on``), 2 bad input or usage, 3 (audit) a file could not be evaluated, 70
internal error (a bug: please report it).

``main`` is :func:`kvalign.cli.fast.main` (typer is imported only when a command line
needs it); ``app`` (the typer app) and the other names load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from kvalign.cli.fast import main

#: public name → the module that defines it (imported when first asked).
_HOMES = {
    "app": "kvalign.cli.app",
    "parse_tp_list": "kvalign.cli.sizing",
    "MAX_BLOCK_SIZE": "kvalign.settings",
    "MAX_SPEC_TOKENS": "kvalign.settings",
    "MAX_TP": "kvalign.settings",
}

__all__ = ["MAX_BLOCK_SIZE", "MAX_SPEC_TOKENS", "MAX_TP", "app", "main", "parse_tp_list"]


def __getattr__(name: str) -> Any:
    """``kvalign.cli.app`` (the typer app) etc., imported from their module when first
    asked."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    # importing the submodule kvalign.cli.app binds ``app`` here to the module: rebind
    # it to the typer app, as ``from kvalign.cli import app`` has always given
    globals()[name] = value
    return value
