"""``kvalign plan``: the one block size every component must share, and ready snippets."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import OUTPUT_PANEL, ModelArg, ModelSource, sizing_options, tp_option
from kvalign.cli.output import PLAN, PlanFormat
from kvalign.exitcodes import ExitCode
from kvalign.settings import Settings


class StackChoice(str, Enum):
    """``plan --stack`` values."""

    vllm = "vllm"
    llm_d = "llm-d"
    dynamo = "dynamo"
    kserve = "kserve"
    production_stack = "production-stack"


class EmitTarget(str, Enum):
    """``plan --emit`` values."""

    vllm_args = "vllm-args"
    llm_d_values = "llm-d-values"
    dynamo = "dynamo"
    kserve = "kserve"
    production_stack = "production-stack"
    compose = "compose"


@sizing_options(alignment=False)
def plan(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    prefill_tp: Annotated[int, tp_option("--prefill-tp", "Prefill TP size.")] = 1,
    decode_tp: Annotated[int, tp_option("--decode-tp", "Decode TP size.")] = 1,
    stack: Annotated[
        StackChoice | None,
        typer.Option(
            "--stack",
            help="Whose router/indexer settings to list (default: vllm, or the --emit target's).",
        ),
    ] = None,
    lmcache: Annotated[
        bool, typer.Option("--lmcache", help="List (and emit) LMCache's chunk_size.")
    ] = False,
    prefix_lengths: Annotated[
        str | None,
        typer.Option(
            "--prefix-lengths",
            metavar="FILE",
            help="Prompt lengths in tokens, one per line (default: a stated spread).",
        ),
    ] = None,
    emit: Annotated[
        EmitTarget | None,
        typer.Option("--emit", help="Print a ready snippet for this stack instead of the plan."),
    ] = None,
    output_format: Annotated[
        PlanFormat, typer.Option("--format", rich_help_panel=OUTPUT_PANEL, help="Output format.")
    ] = (PlanFormat.table),
) -> None:
    """The one block size every component must share, its cost, and every setting that
    follows it (LMCache chunk_size, router/indexer block sizes, --max-num-batched-tokens).

    Exit 0 when a common block size exists, 1 when none serves every pool on every GPU
    class (the plan then proposes the TP change or release that makes one), 2 on bad input.
    """

    def run() -> int:
        from pathlib import Path

        from kvalign.emit import STACK_OF
        from kvalign.emit import emit as emit_snippet
        from kvalign.plan import parse_prefix_lengths
        from kvalign.plan import plan as make_plan
        from kvalign.safeio import read_text

        lengths = None
        if prefix_lengths is not None:
            lengths = parse_prefix_lengths(read_text(Path(prefix_lengths)), prefix_lengths)
        chosen = stack.value if stack else (STACK_OF[emit.value] if emit else "vllm")
        result = make_plan(
            source.load(model),
            settings,
            prefill_tp,
            decode_tp,
            stack=chosen,
            lmcache=lmcache,
            prefix_lengths=lengths,
            prefix_source=prefix_lengths or "",
        )
        code = ExitCode.OK if result.found else ExitCode.FLAGGED
        if emit is not None:
            if not result.found:
                sys.stderr.write(
                    "kvalign: no block size serves every pool on every GPU class: "
                    + "; ".join([*result.no_fix, *result.proposals])
                    + "\n"
                )
                return code
            typer.echo(emit_snippet(result, emit.value), nl=False)
        else:
            PLAN.emit(result, output_format)
        return code

    raise typer.Exit(guarded(json_on_error(run, output_format)))
