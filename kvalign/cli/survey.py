"""``kvalign survey``: mismatched P/D pairs per model."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from kvalign.cli.exit import EXIT_OK, _guarded
from kvalign.cli.options import ModelSource, parse_tp_list, sizing_options
from kvalign.cli.output import _stdout
from kvalign.errors import InvalidSettings
from kvalign.settings import Settings


# ---- survey (issue 6) -------------------------------------------------------------------
class SurveyFormat(str, Enum):
    """``kvalign survey --format`` values."""

    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


@sizing_options(alignment=False)
def survey(
    settings: Settings,
    source: ModelSource,
    model: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[MODEL]...",
            help="Models to survey (as for `check`); default: every bundled model.",
            show_default=False,
        ),
    ] = None,
    tp: Annotated[
        str, typer.Option("--tp", help="TP sizes for both sides, comma-separated.")
    ] = "1,2,4,8,16",
    output_format: Annotated[
        SurveyFormat, typer.Option("--format", help="Output format.")
    ] = SurveyFormat.table,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.svg",
            help="Also write the prefill × decode grids as an SVG heatmap (needs kvalign[plot]).",
        ),
    ] = None,
) -> None:
    """Count mismatched P/D pairs per model under vLLM's and the TP-stable alignment.

    Every ordered prefill × decode pair of the valid TP sizes: how many have different
    block sizes, block_size_ratio != 1, non-dividing kernel blocks, and the Mamba padding
    each alignment pays. Exit 0 on success, 2 on bad input.
    """
    from kvalign.report.plot import survey_svg
    from kvalign.report.survey import survey_csv, survey_json, survey_markdown, survey_table
    from kvalign.sources import catalog
    from kvalign.survey import survey as run_survey

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        if plot is not None and not plot.lower().endswith(".svg"):
            raise InvalidSettings(f"--plot {plot}: only SVG output is supported (FILE.svg)")
        names = model or [entry.model_id for entry in catalog.entries()]
        geometries = [source.load(name, quiet=index > 0) for index, name in enumerate(names)]
        result = run_survey(geometries, settings, tps)
        svg = survey_svg(result) if plot is not None else None
        if output_format is SurveyFormat.json:
            typer.echo(survey_json(result))
        elif output_format is SurveyFormat.markdown:
            typer.echo(survey_markdown(result), nl=False)
        elif output_format is SurveyFormat.csv:
            typer.echo(survey_csv(result), nl=False)
        else:
            console = _stdout()
            console.print(survey_table(result, console.width))
        if plot is not None and svg is not None:
            from kvalign.safeio import write_output

            write_output(plot, svg, option="--plot")
            sys.stderr.write(f"kvalign: wrote {plot}\n")
        return EXIT_OK

    raise typer.Exit(_guarded(run))
