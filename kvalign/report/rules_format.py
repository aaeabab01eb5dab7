"""Formatters for ``kvalign rules``: the rules table (rich), one rule's page (text /
Markdown), the Markdown reference page (``docs/rules.md``) and JSON.

All read :class:`~kvalign.rules.RuleDoc` objects, so the CLI and the docs page share one
source: the rule modules' attributes and docstrings.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from rich.table import Table

from kvalign import __version__
from kvalign.rules import RuleDoc

RULES_SCHEMA_VERSION = 1
#: width the rule pages are wrapped to (text and Markdown).
WRAP = 88


def rules_table(docs: tuple[RuleDoc, ...]) -> Table:
    """Rich table: code, usual severity, one-line summary (the summary folds, codes never)."""
    table = Table(title="kvalign audit rules (`kvalign rules ID` for one)", title_justify="left")
    table.add_column("Code", no_wrap=True)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Summary", overflow="fold")
    for doc in docs:
        table.add_row(doc.code, doc.severity, doc.title)
    return table


def _wrap(text: str, width: int = WRAP) -> str:
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def rule_page(doc: RuleDoc, heading: str = "#", width: int = WRAP) -> str:
    """One rule as Markdown (also the text output): title, severity, why, vLLM source, fix.

    ``heading`` is the Markdown level of the rule's title (``##`` inside ``docs/rules.md``);
    paragraphs are wrapped to ``width`` columns (the terminal's for ``kvalign rules ID``).
    """
    sub = heading + "#"

    lines = [f"{heading} {doc.code}: {doc.title}", "", f"Severity: {doc.severity}", ""]
    lines += [f"{sub} Why", ""]
    for paragraph in doc.rationale:
        lines += [_wrap(paragraph, width), ""]
    lines += [f"{sub} vLLM source", "", _wrap(doc.source, width), ""]
    lines += [f"{sub} Fix", "", _wrap(doc.fix, width)]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def anchor(doc: RuleDoc) -> str:
    """The anchor GitHub gives the rule's heading: lower case, punctuation dropped (``-`` and
    ``_`` kept), spaces to ``-``."""
    heading = f"{doc.code}: {doc.title}".lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def rules_markdown(docs: tuple[RuleDoc, ...]) -> str:
    """The reference page: a table of every rule, then each rule's page (``##`` level)."""
    lines = ["| Code | Severity | Summary |", "|---|---|---|"]
    lines += [f"| [{d.code}](#{anchor(d)}) | {d.severity} | {_cell(d.title)} |" for d in docs]
    pages = [rule_page(doc, "##").rstrip("\n") for doc in docs]
    return "\n".join(lines) + "\n\n" + "\n\n".join(pages) + "\n"


def rule_to_dict(doc: RuleDoc) -> dict[str, Any]:
    """One rule as a JSON-ready dict (keys documented in ``docs/json.md``)."""
    return {
        "code": doc.code,
        "severity": doc.severity,
        "title": doc.title,
        "rationale": list(doc.rationale),
        "source": doc.source,
        "fix": doc.fix,
    }


def rules_json(docs: tuple[RuleDoc, ...]) -> str:
    """Every rule: ``{schema_version, kvalign_version, rules: [...]}``."""
    payload = {
        "schema_version": RULES_SCHEMA_VERSION,
        "kvalign_version": __version__,
        "rules": [rule_to_dict(doc) for doc in docs],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False)


def rule_json(doc: RuleDoc) -> str:
    """One rule: the object of :func:`rule_to_dict`."""
    return json.dumps(rule_to_dict(doc), indent=2, ensure_ascii=False)
