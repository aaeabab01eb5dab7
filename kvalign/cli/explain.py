"""``kvalign explain``: the block-size derivation step by step."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvalign.cli.exit import EXIT_OK, _guarded
from kvalign.cli.options import ModelArg, ModelSource, sizing_options
from kvalign.settings import Settings


# ---- explain (appended) -----------------------------------------------------------------
class ExplainFormat(str, Enum):
    """``explain --format`` values."""

    text = "text"
    json = "json"


@sizing_options(alignment=False)
def explain(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor parallel size.")] = 1,
    output_format: Annotated[
        ExplainFormat, typer.Option("--format", help="Output format.")
    ] = ExplainFormat.text,
) -> None:
    """Show the block-size derivation step by step: each quantity, the config fields and
    flags it came from, the formula with numbers, and the vLLM function it mirrors.

    Exit 0, or 2 on bad input.
    """
    from kvalign.explain import explain as build_explanation
    from kvalign.report.explain_format import explain_json, explain_text

    def run() -> int:
        geometry = source.load(model)
        ex = build_explanation(geometry, settings, tp)
        if output_format is ExplainFormat.json:
            typer.echo(explain_json(ex))
        else:
            typer.echo(explain_text(ex), nl=False)
        return EXIT_OK

    raise typer.Exit(_guarded(run))
