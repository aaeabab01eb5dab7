"""``kvalign verify``: kvalign against the installed vLLM's own functions."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvalign.cli.exit import EXIT_FLAGGED, EXIT_OK, _guarded
from kvalign.cli.options import ModelArg, ModelSource, parse_tp_list, sizing_options
from kvalign.cli.output import _stdout
from kvalign.settings import Settings


# ---- verify (issue 4) ---------------------------------------------------------------------
class VerifyFormat(str, Enum):
    """``verify --format`` values."""

    table = "table"
    json = "json"


@sizing_options(alignment=False, trust=False)
def verify(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[str, typer.Option("--tp", help="TP sizes, comma-separated.")] = "1",
    output_format: Annotated[
        VerifyFormat, typer.Option("--format", help="Output format.")
    ] = VerifyFormat.table,
) -> None:
    """Compare kvalign's pages and block sizes with the installed vLLM's own functions,
    run CPU-only as if on --gpu (default H100); needs vLLM importable here (pip install
    'kvalign[verify]'). No GPU, weights or model code. Tested on vLLM 0.14.0-0.33.x;
    says so plainly outside that range.

    Exit 0 when identical, 1 on any difference, 2 when vLLM is missing, raises, or on
    bad input.
    """
    from kvalign.report.verify_format import verify_json, verify_table
    from kvalign.verify import verify as run_verify

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        result = run_verify(source.load(model), settings, tps, hf_overrides=source.overrides())
        if output_format is VerifyFormat.json:
            typer.echo(verify_json(result))
        else:
            _stdout().print(verify_table(result))
        return EXIT_OK if result.identical else EXIT_FLAGGED

    raise typer.Exit(_guarded(run))
