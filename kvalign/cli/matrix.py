"""``kvalign matrix``: the full prefill × decode grid."""

from __future__ import annotations

from typing import Annotated

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import (
    FailOn,
    FailOnOpt,
    FormatOpt,
    ModelArg,
    ModelSource,
    parse_tp_list,
    sizing_options,
    tp_list_option,
)
from kvalign.cli.output import MATRIX, OutputFormat, View
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

    from kvalign.pd import analyze

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        report = analyze(source.load(model), settings, tps, tps)
        MATRIX.emit(report, output_format, View(fail_on.value))
        return report.exit_code(fail_on.value)

    raise typer.Exit(guarded(json_on_error(run, output_format)))
