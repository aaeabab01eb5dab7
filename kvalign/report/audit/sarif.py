"""``kvalign audit --format sarif``: SARIF 2.1.0 (GitHub code scanning)."""

from __future__ import annotations

import json
from typing import Any

from kvalign import __version__
from kvalign.audit import AuditReport
from kvalign.rules import RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _location(file: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": file.removeprefix("./")}}
    if line:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


#: the project's home (SARIF ``informationUri``); rule pages are in its docs/rules.md.
HOME = "https://github.com/kvalign/kvalign"


def help_uri(code: str, title: str) -> str:
    """The rule's section of docs/rules.md (heading ``## CODE: TITLE``), as the anchor
    GitHub renders: lower case, punctuation other than ``-``/``_`` dropped, spaces to
    ``-``."""
    heading = f"{code}: {title}".lower()
    slug = "".join(c for c in heading if c.isalnum() or c in " -_").replace(" ", "-")
    return f"{HOME}/blob/main/docs/rules.md#{slug}"


def to_sarif(report: AuditReport) -> str:
    """One run; ``rules`` lists every rule (ids ``KVA0xx``, each with its ``helpUri``);
    results carry ``ruleIndex`` (their rule's ``helpUri``),
    ``level``, a physical location and a ``partialFingerprints`` entry."""
    index = {module.CODE: i for i, module in enumerate(RULES)}
    rules = [
        {
            "id": module.CODE,
            "name": module.__name__.rsplit(".", 1)[-1],
            "shortDescription": {"text": module.TITLE},
            "fullDescription": {"text": " ".join((module.__doc__ or module.TITLE).split())},
            "defaultConfiguration": {"level": LEVEL[module.SEVERITY]},
            "helpUri": help_uri(module.CODE, module.TITLE),
        }
        for module in RULES
    ]
    results = [
        {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": LEVEL[f.severity],
            "message": {"text": f"{f.message}. Fix: {f.remediation}"},
            "locations": [_location(f.location.file, f.location.line)],
            "partialFingerprints": {"kvalign/v1": f.fingerprint},
        }
        for f in report.findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": p.message},
            "locations": [_location(p.location.file, p.location.line)],
        }
        for p in (*report.unevaluated, *report.not_read)
    ]
    sarif = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kvalign",
                        "version": __version__,
                        "informationUri": HOME,
                        "rules": rules,
                    }
                },
                "results": results,
                "invocations": [
                    {
                        "executionSuccessful": not (report.unevaluated or report.not_read),
                        "toolExecutionNotifications": notifications,
                    }
                ],
            }
        ],
    }
    return json.dumps(sarif, indent=2)
