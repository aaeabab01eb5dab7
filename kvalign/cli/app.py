"""The typer app (commands registered in help order) and the console-script ``main``."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from kvalign import __version__
from kvalign.cli.audit import audit
from kvalign.cli.check import check
from kvalign.cli.exit import is_write_failure, stdout_closed, stdout_failed
from kvalign.cli.explain import explain
from kvalign.cli.fast import start_run
from kvalign.cli.matrix import matrix
from kvalign.cli.models import models
from kvalign.cli.plan import plan
from kvalign.cli.rules import rules
from kvalign.cli.survey import survey
from kvalign.cli.verify import verify
from kvalign.exitcodes import ExitCode

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
    start_run()  # forget earlier inputs (--output never replaces one), guard stderr


class PanelCommand(TyperCommand):
    """A command whose plain ``--help`` lists its options under their help panels
    (``rich_help_panel``: P/D, vLLM flags, model loading, output), as typer's rich help
    would, without loading rich for ``--help``."""

    def format_options(self, ctx: Any, formatter: Any) -> None:  # typer's vendored click
        """Arguments, then one section per panel in first-use order (``Options`` for
        options in no panel, e.g. ``--help``)."""
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                name = "Arguments"
            else:
                name = getattr(param, "rich_help_panel", None) or "Options"
            sections.setdefault(name, []).append(record)
        for name, records in sections.items():
            with formatter.section(name):
                formatter.write_dl(records)


#: each command's line in ``kvalign --help``: short enough for 80 columns (no ``...``).
SUMMARIES = {
    "check": "Does each prefill × decode TP pair work? And the one fix.",
    "matrix": "Full prefill × decode grid for a runbook.",
    "plan": "The one block size every component must share, and what follows.",
    "models": "List the bundled model configs (usable offline by hub id).",
    "rules": "List the audit rules, or explain one.",
    "audit": "Audit P/D deployment files before they ship.",
    "survey": "Count mismatched P/D pairs per model (vLLM and TP-stable).",
    "explain": "Show the block-size derivation step by step.",
    "verify": "Compare kvalign with the installed vLLM's own functions.",
}

for _command in (check, matrix, plan, models, rules, audit, survey, explain, verify):
    app.command(cls=PanelCommand, short_help=SUMMARIES[_command.__name__])(_command)


def main(argv: list[str] | None = None) -> None:
    """typer's entry point (:func:`kvalign.cli.fast.main` runs plain check/matrix lines
    itself and hands every other command line to this).

    Usage errors (unknown option, a value out of range) become one line on stderr with
    exit 2, like every other bad input; ``kvalign`` with no arguments prints the help.
    """
    from typer._click.exceptions import NoArgsIsHelpError  # typer vendors click

    args = sys.argv[1:] if argv is None else list(argv)
    try:
        code = app(args=args, standalone_mode=False)
    except BrokenPipeError:
        try:
            stdout_closed()
        except typer.Exit as stop:
            sys.exit(stop.exit_code)
    except OSError as exc:  # --help on a full device, outside any command's guard
        if not is_write_failure(exc):
            raise
        try:
            stdout_failed(exc)
        except typer.Exit as stop:
            sys.exit(stop.exit_code)
    except NoArgsIsHelpError as exc:
        exc.show()
        sys.exit(ExitCode.USAGE)
    except typer.Abort:
        sys.stderr.write("kvalign: error: aborted\n")
        sys.exit(ExitCode.INTERRUPTED)
    except typer.TyperException as exc:  # click's UsageError / BadParameter
        command = getattr(getattr(exc, "ctx", None), "command_path", "kvalign")
        one_line = _no_such_option(exc, command) or " ".join(str(exc.format_message()).split())
        sys.stderr.write(f"kvalign: error: {one_line} (see `{command} --help`)\n")
        sys.exit(int(getattr(exc, "exit_code", ExitCode.USAGE)))
    sys.exit(code if isinstance(code, int) else ExitCode.OK)


def _no_such_option(exc: Exception, command: str) -> str | None:
    """click's "No such option" with suggestions that fit: options of the command whose
    name (without the dashes) is close to the one typed, and the other commands that do
    have it (``check --output``: an option of ``kvalign audit``); ``None`` for any other
    error. click compares with the dashes, so ``--output`` came out as ``--gpu``."""
    from difflib import get_close_matches

    from typer._click.exceptions import NoSuchOption

    if not isinstance(exc, NoSuchOption) or exc.ctx is None:
        return None
    typed = exc.option_name
    mine = [o for p in exc.ctx.command.params for o in p.opts if o.startswith("--")]
    bare = {o.lstrip("-"): o for o in mine}
    close = [bare[b] for b in get_close_matches(typed.lstrip("-"), list(bare), n=3, cutoff=0.7)]
    group = typer.main.get_command(app)
    others = [
        f"kvalign {name}"
        for name, cmd in getattr(group, "commands", {}).items()
        if name != exc.ctx.command.name and any(typed in p.opts for p in cmd.params)
    ]
    hints = [f"did you mean {' or '.join(close)}?"] if close else []
    if others:
        hints.append(f"{typed} is an option of {', '.join(others)}")
    if typed == "--output" and not close:
        hints.append("this command writes to stdout: redirect it (> FILE)")
    return f"No such option: {typed}" + (f" ({'; '.join(hints)})" if hints else "")
