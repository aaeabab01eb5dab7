"""``kvalign rules``: the audit rules, or one rule's page."""

from __future__ import annotations

from typing import Annotated

import typer

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.options import FormatOpt
from kvalign.cli.output import RULE, RULES, OutputFormat
from kvalign.exitcodes import ExitCode


def rules(
    rule_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="A rule code (e.g. KVA003): print its rationale, vLLM source and fix.",
            show_default=False,
        ),
    ] = None,
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """List the audit rules (code, severity, summary), or explain one rule.

    Exit 0, or 2 for an unknown rule code.
    """
    from kvalign.rules import find_rule, rule_docs

    def run() -> int:
        if rule_id is not None:
            RULE.emit(find_rule(rule_id), output_format)
        else:
            RULES.emit(rule_docs(), output_format)
        return ExitCode.OK

    raise typer.Exit(guarded(json_on_error(run, output_format)))
