"""``kvalign explain``: the block-size derivation step by step."""

from __future__ import annotations

from typing import Annotated

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import OUTPUT_PANEL, PD_PANEL, ModelArg, ModelSource, sizing_options
from kvalign.cli.output import EXPLAIN, ExplainFormat
from kvalign.exitcodes import ExitCode
from kvalign.settings import Settings


@sizing_options(alignment=False)
def explain(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[
        int,
        typer.Option(
            "--tp", metavar="N", rich_help_panel=PD_PANEL, min=1, help="Tensor parallel size."
        ),
    ] = 1,
    output_format: Annotated[
        ExplainFormat, typer.Option("--format", rich_help_panel=OUTPUT_PANEL, help="Output format.")
    ] = ExplainFormat.table,
) -> None:
    """Show the block-size derivation step by step: each quantity, the config fields and
    flags it came from, the formula with numbers, and the vLLM function it mirrors.

    Exit 0, or 2 on bad input.
    """
    from kvalign.explain import explain as build_explanation

    def run() -> int:
        geometry = source.load(model)
        EXPLAIN.emit(build_explanation(geometry, settings, tp), output_format)
        return ExitCode.OK

    raise typer.Exit(guarded(json_on_error(run, output_format)))
