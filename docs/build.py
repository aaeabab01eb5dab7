"""Regenerate the command output embedded in docs/*.md (``make docs``).

A generated block in a page looks like::

    <!-- kvalign: survey --format markdown -->
    ...replaced on every build...
    <!-- /kvalign -->

The arguments after ``kvalign:`` are run as ``kvalign ARGS`` (in-process, from the root
given by ``--root``, so ``--plot docs/x.svg`` writes next to the page); the block becomes
the command, shown as a console line, followed by its Markdown output. Exit codes 0 and 1
(flagged pairs) are accepted; anything else stops the build. Absolute paths of the bundled
catalog are printed relative to the repository, so the page is the same on every machine.

A block opened with ``<!-- kvalign-json: ARGS -->`` instead shows the JSON ``ARGS``
prints, shortened for reading (:func:`shorten`): every key, lists cut to their first item,
long strings cut with ``…``.

Usage: ``python docs/build.py [--root DIR]`` (default: this repository).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.sources.catalog import catalog_root

REPO = Path(__file__).resolve().parent.parent
PAGES = ("docs/why.md", "docs/rules.md", "docs/json.md")
BLOCK = re.compile(r"<!-- kvalign: (?P<args>.+?) -->\n.*?<!-- /kvalign -->", re.DOTALL)
JSON_BLOCK = re.compile(r"<!-- kvalign-json: (?P<args>.+?) -->\n.*?<!-- /kvalign -->", re.DOTALL)
SCHEMA_BLOCK = re.compile(
    r"<!-- kvalign-schema: (?P<name>[a-z]+) -->\n.*?<!-- /kvalign -->", re.DOTALL
)
SCHEMAS = REPO / "kvalign" / "schemas"
#: strings longer than this are cut in JSON examples.
LONGEST = 60


def _flat(value: Any) -> bool:
    """A scalar, or a list of flat values (printed on one line)."""
    if isinstance(value, list):
        return all(_flat(item) for item in value)
    return not isinstance(value, dict)


def shorten(value: Any) -> Any:
    """``value`` (decoded JSON) with lists of objects cut to their first item and long
    strings cut; lists of plain values are kept whole."""
    if isinstance(value, dict):
        return {key: shorten(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shorten(item) for item in (value if _flat(value) else value[:1])]
    if isinstance(value, str) and len(value) > LONGEST:
        return value[: LONGEST - 1] + "…"
    return value


def dumps(value: Any, indent: str = "") -> str:
    """Indented JSON with lists of plain values on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {dumps(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value and not _flat(value):
        items = [f"{inner}{dumps(v, inner)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _type(node: dict[str, Any]) -> str:
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " / ".join(f"`{v}`" for v in node["enum"])
    kind = node.get("type", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and isinstance(node.get("items"), dict):
        inner = node["items"]
        if "$ref" in inner:
            kinds = [
                k if k != "array" else f"array of {inner['$ref'].rsplit('/', 1)[1]}" for k in kinds
            ]
        elif "type" in inner:
            kinds = [k if k != "array" else f"array of {_type(inner)}" for k in kinds]
    return " or ".join(kinds)


def schema_table(name: str) -> str:
    """The top-level keys of ``kvalign/schemas/NAME.json`` (the result document): type,
    whether required, and an object's own keys."""
    schema = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    result = schema["$defs"]["result"]
    lines = [
        f"Schema: [`kvalign/schemas/{name}.json`](../kvalign/schemas/{name}.json) "
        f"({result['description']})",
        "",
    ]
    if result.get("type") == "array":
        result = result["items"]
        lines[0] += " A list; each item:"
    required = set(result.get("required", []))
    lines += ["| key | type | required | keys inside |", "|---|---|---|---|"]
    for key, node in result.get("properties", {}).items():
        inner = node.get("properties") or node.get("items", {}).get("properties") or {}
        keys = ", ".join(f"`{k}`" for k in inner)
        lines.append(f"| `{key}` | {_type(node)} | {'yes' if key in required else 'no'} | {keys} |")
    return "\n".join(lines)


def run_kvalign(args: str, root: Path) -> str:
    """Output of ``kvalign ARGS`` run with ``root`` as the working directory."""
    previous = Path.cwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(app, shlex.split(args), env={"HF_HUB_OFFLINE": "1"})
    finally:
        os.chdir(previous)
    if result.exit_code not in (0, 1):
        raise SystemExit(
            f"docs/build.py: `kvalign {args}` exited {result.exit_code}: {result.stderr.strip()}"
        )
    repo_prefix = str(catalog_root().parent.parent) + os.sep
    return result.stdout.replace(repo_prefix, "")


def render(page: str, root: Path) -> str:
    """``page`` with every generated block refreshed."""

    def refresh(match: re.Match[str]) -> str:
        args = match.group("args").strip()
        output = run_kvalign(args, root).rstrip("\n")
        return (
            f"<!-- kvalign: {args} -->\n```console\n$ kvalign {args}\n```\n\n{output}\n"
            "<!-- /kvalign -->"
        )

    def refresh_json(match: re.Match[str]) -> str:
        args = match.group("args").strip()
        data = shorten(json.loads(run_kvalign(args, REPO)))  # reads the repo's examples
        text = dumps(data)
        return (
            f"<!-- kvalign-json: {args} -->\n```console\n$ kvalign {args}\n```\n\n"
            f"```json\n{text}\n```\n<!-- /kvalign -->"
        )

    def refresh_schema(match: re.Match[str]) -> str:
        name = match.group("name")
        return f"<!-- kvalign-schema: {name} -->\n{schema_table(name)}\n<!-- /kvalign -->"

    page = SCHEMA_BLOCK.sub(refresh_schema, page)
    return JSON_BLOCK.sub(refresh_json, BLOCK.sub(refresh, page))


def build(root: Path) -> list[Path]:
    """Rewrite every page in :data:`PAGES` under ``root``; returns the pages written."""
    written = []
    for name in PAGES:
        path = root / name
        path.write_text(render(path.read_text(encoding="utf-8"), root), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--root", type=Path, default=REPO, help="tree holding docs/ (default: repo)"
    )
    options = parser.parse_args(argv)
    for path in build(options.root.resolve()):
        sys.stderr.write(f"docs/build.py: wrote {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
