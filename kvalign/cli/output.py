"""Where command results go: the stdout console and the check/matrix renderer."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from kvalign.cli.exit import _stdout_closed
from kvalign.cli.options import FailOn, OutputFormat

if TYPE_CHECKING:
    from rich.console import Console

    from kvalign.pd import Report


def _stdout() -> Console:
    """The console for data on stdout (width from the terminal, else ``COLUMNS`` or 200)."""
    from kvalign.report.layout import SafeConsole

    class _Stdout(SafeConsole):
        def on_broken_pipe(self) -> None:  # rich's default exits 1, which means "flagged"
            self.quiet = True
            _stdout_closed()

    from kvalign.numbers import columns

    width = None if sys.stdout.isatty() else columns(os.environ.get("COLUMNS"))
    return _Stdout(width=width, soft_wrap=False, highlight=False)


def _emit(
    report: Report,
    output_format: OutputFormat,
    table: Callable[[Report, int | None, str], Any],
    markdown: Callable[[Report, str], str],
    fail_on: FailOn,
) -> int:
    """Print ``report`` in ``output_format``; the exit code is the gate
    (:func:`kvalign.policy.exit_code` at ``--fail-on``)."""
    from kvalign.report import to_json

    if output_format is OutputFormat.json:
        typer.echo(to_json(report, fail_on.value))
    elif output_format is OutputFormat.markdown:
        typer.echo(markdown(report, fail_on.value), nl=False)
    else:
        console = _stdout()
        console.print(table(report, console.width, fail_on.value))
    return report.exit_code(fail_on.value)
