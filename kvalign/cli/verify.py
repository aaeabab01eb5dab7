"""``kvalign verify``: kvalign against the installed vLLM's own functions."""

from __future__ import annotations

import contextlib
import sys
from typing import Annotated

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import (
    OUTPUT_PANEL,
    PD_PANEL,
    ModelArg,
    ModelSource,
    parse_tp_list,
    sizing_options,
)
from kvalign.cli.output import VERIFY, VerifyFormat
from kvalign.exitcodes import ExitCode
from kvalign.settings import Settings


@sizing_options(alignment=False, trust=False)
def verify(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[
        str,
        typer.Option(
            "--tp", metavar="LIST", rich_help_panel=PD_PANEL, help="TP sizes, comma-separated."
        ),
    ] = "1",
    output_format: Annotated[
        VerifyFormat, typer.Option("--format", rich_help_panel=OUTPUT_PANEL, help="Output format.")
    ] = VerifyFormat.table,
) -> None:
    """Compare kvalign's pages and block sizes with the installed vLLM's own functions,
    run CPU-only as if on --gpu (default H100); needs vLLM importable here (pip install
    '.[verify]' from a checkout). No GPU, weights or model code. Tested on vLLM 0.14.0-0.33.x;
    says so plainly outside that range.

    Exit 0 when identical, 1 on any difference, 2 when vLLM is missing, raises, or on
    bad input.
    """
    from kvalign.verify import verify as run_verify

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        geometry = source.load(model)
        # vLLM logs to stdout (its handler binds at import, inside this block): stderr,
        # so that stdout holds only the result (e.g. one JSON document)
        with contextlib.redirect_stdout(sys.stderr):
            result = run_verify(geometry, settings, tps, hf_overrides=source.overrides())
        VERIFY.emit(result, output_format)
        return ExitCode.OK if result.identical else ExitCode.FLAGGED

    raise typer.Exit(guarded(json_on_error(run, output_format)))
