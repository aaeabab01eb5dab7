"""Run a CLI entry point (typer's ``main`` or the fast path's) in-process and capture what
it printed and how it ended: one helper for the tests that compare the two or check an
error's one line and exit code."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def outcome(
    entry: Callable[[list[str]], None], args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[str, str, object]:
    """``(stdout, stderr, exit code)`` of ``entry(args)``; the code is ``"returned"`` when
    the entry point returned instead of exiting."""
    capsys.readouterr()
    try:
        entry(list(args))
        code: object = "returned"
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return out, err, code
