"""``kvalign models``: the bundled model configs."""

from __future__ import annotations

import typer

from kvalign.cli.exit import EXIT_OK, _guarded
from kvalign.cli.options import FormatOpt, OutputFormat
from kvalign.cli.output import _stdout
from kvalign.errors import KvalignError


def models(
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """List the bundled model configs (usable offline by their hub id)."""

    def run() -> int:
        import json

        from kvalign.report import models_table
        from kvalign.sources import catalog
        from kvalign.sources.config_file import read_config_json

        entries = catalog.entries()
        kinds: dict[str, str] = {}
        for entry in entries:
            model_type = ""
            try:
                model_type = str(read_config_json(entry.config_path).get("model_type", ""))
            except KvalignError:
                model_type = "(unreadable)"
            kinds[entry.model_id] = model_type
        if output_format is OutputFormat.json:
            payload = [
                {
                    "id": e.model_id,
                    "model_type": kinds[e.model_id],
                    "config_path": str(e.config_path),
                }
                for e in entries
            ]
            typer.echo(json.dumps(payload, indent=2))
        elif output_format is OutputFormat.markdown:
            lines = ["| Model | Type |", "|---|---|"]
            lines += [f"| {e.model_id} | {kinds[e.model_id]} |" for e in entries]
            typer.echo("\n".join(lines))
        else:
            _stdout().print(models_table(entries, kinds))
        return EXIT_OK

    raise typer.Exit(_guarded(run))
