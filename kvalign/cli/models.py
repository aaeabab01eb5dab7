"""``kvalign models``: the bundled model configs."""

from __future__ import annotations

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import FormatOpt
from kvalign.cli.output import MODELS, OutputFormat
from kvalign.exitcodes import ExitCode


def models(
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """List the bundled model configs (usable offline by their hub id)."""

    def run() -> int:
        from kvalign.sources.catalog import with_model_types

        MODELS.emit(with_model_types(), output_format)
        return ExitCode.OK

    raise typer.Exit(guarded(json_on_error(run, output_format)))
