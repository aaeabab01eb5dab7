"""Formatters for ``kvalign audit``: each reads the same :class:`~kvalign.audit.AuditReport`.

``table`` returns a rich renderable (``to_plain_table``: the same as text, when it can be
laid out without rich); every other format returns text.
"""

from __future__ import annotations

from kvalign.report.audit.answer import headline
from kvalign.report.audit.github import to_github
from kvalign.report.audit.json_format import audit_to_dict, error_to_json, to_json
from kvalign.report.audit.junit import to_junit
from kvalign.report.audit.markdown import to_markdown
from kvalign.report.audit.sarif import to_sarif
from kvalign.report.audit.table import FILE_WIDTH, to_plain_table, to_table, to_text

__all__ = [
    "FILE_WIDTH",
    "audit_to_dict",
    "error_to_json",
    "headline",
    "to_github",
    "to_json",
    "to_junit",
    "to_markdown",
    "to_plain_table",
    "to_sarif",
    "to_table",
    "to_text",
]
