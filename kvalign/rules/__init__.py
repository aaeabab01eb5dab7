"""Audit rules: one module per rule code (``kva001`` … ``kva012``), each with
``CODE``, ``SEVERITY`` (the usual severity), ``TITLE`` and ``find(group) -> list[Finding]``.

Pure: rules read :class:`~kvalign.rules.base.GroupResult` objects and return findings.
"""

from __future__ import annotations

from types import ModuleType

from kvalign.rules import (
    kva001,
    kva002,
    kva003,
    kva004,
    kva005,
    kva006,
    kva007,
    kva008,
    kva009,
    kva010,
    kva011,
    kva012,
)
from kvalign.rules.base import Finding, GroupResult

#: every rule, in code order.
RULES: tuple[ModuleType, ...] = (
    kva001, kva002, kva003, kva004, kva005, kva006, kva007, kva008, kva009, kva010,
    kva011, kva012,
)  # fmt: skip


def run_rules(group: GroupResult) -> list[Finding]:
    """All findings for one deployment, ordered by rule code then file position."""
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule.find(group))
    return findings
