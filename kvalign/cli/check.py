"""``kvalign check``: every prefill × decode TP pair of one model."""

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
from kvalign.cli.output import CHECK, OutputFormat, View
from kvalign.settings import Settings


@sizing_options()
def check(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    prefill_tp: Annotated[
        str, tp_list_option("--prefill-tp", "Prefill TP size(s), comma-separated.")
    ] = "1",
    decode_tp: Annotated[
        str, tp_list_option("--decode-tp", "Decode TP size(s), comma-separated.")
    ] = "1",
    fail_on: FailOnOpt = FailOn.error,
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """Check every prefill × decode TP pair: does it work, and the one change that fixes it.

    Exit 0 when the gate passes, 1 when a pair fails it (default: ratio, split,
    incompatible, invalid, and drift with prefix caching on; see docs/policy.md and
    --fail-on), 2 on bad input.
    """

    from kvalign.pd import analyze

    def run() -> int:
        prefill = parse_tp_list(prefill_tp, "--prefill-tp")
        decode = parse_tp_list(decode_tp, "--decode-tp")
        report = analyze(source.load(model), settings, prefill, decode)
        CHECK.emit(report, output_format, View(fail_on.value))
        return report.exit_code(fail_on.value)

    raise typer.Exit(guarded(json_on_error(run, output_format)))
