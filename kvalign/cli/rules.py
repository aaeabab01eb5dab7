"""``kvalign rules``: the audit rules, or one rule's page."""

from __future__ import annotations

from typing import Annotated

import typer

from kvalign.cli.exit import EXIT_OK, _guarded
from kvalign.cli.options import FormatOpt, OutputFormat
from kvalign.cli.output import _stdout


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
    from kvalign.report import rules_format
    from kvalign.rules import find_rule, rule_docs

    def run() -> int:
        if rule_id is not None:
            doc = find_rule(rule_id)
            if output_format is OutputFormat.json:
                typer.echo(rules_format.rule_json(doc))
            else:
                typer.echo(rules_format.rule_page(doc), nl=False)
            return EXIT_OK
        docs = rule_docs()
        if output_format is OutputFormat.json:
            typer.echo(rules_format.rules_json(docs))
        elif output_format is OutputFormat.markdown:
            typer.echo(rules_format.rules_markdown(docs), nl=False)
        else:
            _stdout().print(rules_format.rules_table(docs))
        return EXIT_OK

    raise typer.Exit(_guarded(run))
