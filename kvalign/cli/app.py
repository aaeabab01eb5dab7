"""The typer app (commands registered in help order) and the console-script ``main``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kvalign import __version__
from kvalign.cli.audit import audit
from kvalign.cli.check import check
from kvalign.cli.exit import EXIT_OK, EXIT_USAGE, _stdout_closed
from kvalign.cli.explain import explain
from kvalign.cli.matrix import matrix
from kvalign.cli.models import models
from kvalign.cli.rules import rules
from kvalign.cli.survey import survey
from kvalign.cli.verify import verify

app = typer.Typer(
    name="kvalign",
    help=(
        "Predict the KV-cache block size vLLM picks for hybrid attention + state-space "
        "models at each tensor-parallel size, and audit prefill/decode pairs "
        "(block_size_ratio, prefix-cache drift) before you deploy."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kvalign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """kvalign: hybrid KV-cache block alignment for P/D disaggregated vLLM."""
    from kvalign import safeio
    from kvalign.sanitize import guard_stderr

    safeio.forget_inputs()  # --output may not replace what this run reads
    guard_stderr()  # input strings on stderr: controls escaped, lines bounded


for _command in (check, matrix, models, rules, audit, survey, explain, verify):
    app.command()(_command)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point.

    Usage errors (unknown option, a value out of range) become one line on stderr with
    exit 2, like every other bad input; ``kvalign`` with no arguments prints the help.
    """
    try:
        code = app(args=argv, standalone_mode=False)
    except BrokenPipeError:
        try:
            _stdout_closed()
        except typer.Exit as stop:
            sys.exit(stop.exit_code)
    except Exception as exc:
        show = getattr(exc, "show", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and callable(show):
            show()
            sys.exit(EXIT_USAGE)
        message = getattr(exc, "format_message", None)
        if callable(message):  # click's UsageError / BadParameter
            command = getattr(getattr(exc, "ctx", None), "command_path", "kvalign")
            one_line = " ".join(str(message()).split())
            sys.stderr.write(f"kvalign: error: {one_line} (see `{command} --help`)\n")
            sys.exit(int(getattr(exc, "exit_code", EXIT_USAGE)))
        if type(exc).__name__ == "Abort":
            sys.stderr.write("kvalign: error: aborted\n")
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else EXIT_OK)
