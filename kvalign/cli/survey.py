"""``kvalign survey``: mismatched P/D pairs per model."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import OUTPUT_PANEL, PD_PANEL, ModelSource, parse_tp_list, sizing_options
from kvalign.cli.output import SURVEY, SurveyFormat
from kvalign.errors import InvalidSettings
from kvalign.exitcodes import ExitCode
from kvalign.settings import Settings


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
        str,
        typer.Option(
            "--tp",
            metavar="LIST",
            rich_help_panel=PD_PANEL,
            help="TP sizes for both sides, comma-separated.",
        ),
    ] = "1,2,4,8,16",
    output_format: Annotated[
        SurveyFormat, typer.Option("--format", rich_help_panel=OUTPUT_PANEL, help="Output format.")
    ] = SurveyFormat.table,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.svg",
            help="Also write the prefill × decode grids as an SVG heatmap (needs the plot extra).",
        ),
    ] = None,
) -> None:
    """Count mismatched P/D pairs per model under vLLM's and the TP-stable alignment.

    Every ordered prefill × decode pair of the valid TP sizes: how many have different
    block sizes, block_size_ratio != 1, non-dividing kernel blocks, and the Mamba padding
    each alignment pays. Exit 0 on success, 2 on bad input.
    """
    from kvalign.report.plot import survey_svg
    from kvalign.sources import catalog
    from kvalign.survey import survey as run_survey

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        if plot is not None and not plot.lower().endswith(".svg"):
            raise InvalidSettings(f"--plot {plot}: only SVG output is supported (FILE.svg)")
        names = model or [entry.model_id for entry in catalog.entries()]
        geometries = [source.load(name, quiet=index > 0) for index, name in enumerate(names)]
        result = run_survey(geometries, settings, tps)
        if plot is not None:
            from kvalign.safeio import refuse_output

            refuse_output(plot, option="--plot")  # before matplotlib renders anything
        svg = survey_svg(result) if plot is not None else None
        SURVEY.emit(result, output_format)
        if plot is not None and svg is not None:
            from kvalign.safeio import write_output

            write_output(plot, svg, option="--plot")
            sys.stderr.write(f"kvalign: wrote {plot}\n")
        return ExitCode.OK

    raise typer.Exit(guarded(json_on_error(run, output_format)))
