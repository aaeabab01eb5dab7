"""``kvalign matrix``: the full prefill × decode grid."""

from __future__ import annotations

from typing import Annotated

import typer

from kvalign.cli.options import (
    FailOn,
    FailOnOpt,
    FormatOpt,
    ModelArg,
    ModelSource,
    sizing_options,
    tp_list_option,
)
from kvalign.cli.output import OutputFormat
from kvalign.cli.sizing import run_pairs
from kvalign.settings import Settings


@sizing_options()
def matrix(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[
        str, tp_list_option("--tp", "TP sizes for both axes, comma-separated.")
    ] = "1,2,4,8",
    fail_on: FailOnOpt = FailOn.error,
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """Full prefill × decode grid for a runbook. TP sizes the model rejects show as invalid.

    Exit 0 when the gate passes, 1 when a cell fails it (the same policy as check and
    audit: docs/policy.md, --fail-on; a TP the model rejects is an ``invalid`` cell, as
    in check), 2 on bad input.
    """

    code = run_pairs(
        "matrix", model, settings, source, ((tp, "--tp"), (tp, "--tp")), fail_on, output_format
    )
    raise typer.Exit(code)
