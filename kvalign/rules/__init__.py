"""Audit rules: one module per rule code (``kva001`` … ``kva013``), each with
``CODE``, ``SEVERITY`` (the usual severity), ``TITLE`` (one-line summary), ``SOURCE`` (the
vLLM file and function it mirrors), ``FIX`` (what to change) and
``find(group) -> list[Finding]``; the module docstring is the rule's rationale.

Those attributes are the one source of the rule text: ``kvalign rules`` and the generated
``docs/rules.md`` read them through :func:`rule_docs`.

Pure: rules read :class:`~kvalign.rules.base.GroupResult` objects and return findings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import ModuleType

from kvalign.errors import InvalidSettings
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
    kva013,
)
from kvalign.rules.base import Finding, GroupResult, Severity

#: every rule, in code order.
RULES: tuple[ModuleType, ...] = (
    kva001, kva002, kva003, kva004, kva005, kva006, kva007, kva008, kva009, kva010,
    kva011, kva012, kva013,
)  # fmt: skip


def run_rules(group: GroupResult) -> list[Finding]:
    """All findings for one deployment, ordered by rule code then file position."""
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule.find(group))
    return findings


@dataclass(frozen=True)
class RuleDoc:
    """One rule's documentation, read from its module (:func:`rule_doc`).

    Attributes:
        code: rule id (``KVA001`` …).
        severity: the usual severity (some rules raise or lower it per finding; the
            rationale says when).
        title: one-line summary.
        rationale: why it matters, as paragraphs (the module docstring after its first
            line, Sphinx roles reduced to backticks).
        source: the vLLM file and function the rule mirrors.
        fix: what to change, in general (each finding's remediation gives the values).
    """

    code: str
    severity: Severity
    title: str
    rationale: tuple[str, ...]
    source: str
    fix: str


_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data):`~?([^`]+)`")


def _paragraphs(text: str) -> tuple[str, ...]:
    """Docstring text → paragraphs, each on one line, ````x```` and ``:role:`x``` → ```x```."""
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text).replace("``", "`")
    blocks = re.split(r"\n\s*\n", text.strip())
    return tuple(" ".join(line.strip() for line in b.splitlines()) for b in blocks if b.strip())


def rule_doc(module: ModuleType) -> RuleDoc:
    """The documentation of one rule module (see the module docstring for its attributes)."""
    doc = module.__doc__ or ""
    body = doc.split("\n", 1)[1] if "\n" in doc else ""
    return RuleDoc(
        code=str(module.CODE),
        severity=module.SEVERITY,
        title=str(module.TITLE),
        rationale=_paragraphs(body),
        # a rule without them still lists (tests/rules/test_rules_cli.py requires both)
        source=str(getattr(module, "SOURCE", "")),
        fix=str(getattr(module, "FIX", "")),
    )


def rule_docs() -> tuple[RuleDoc, ...]:
    """Every rule's documentation, in code order."""
    return tuple(rule_doc(rule) for rule in RULES)


def _known() -> str:
    return f"known: {RULES[0].CODE} … {RULES[-1].CODE}; see `kvalign rules`"


def find_rule(code: str) -> RuleDoc:
    """The documentation of rule ``code`` (case-insensitive, e.g. ``kva003``).

    Raises:
        InvalidSettings: no rule has that code.
    """
    wanted = code.strip().upper()
    for rule in RULES:
        if wanted == rule.CODE:
            return rule_doc(rule)
    raise InvalidSettings(f"unknown rule {code!r} ({_known()})")


def parse_rule_codes(values: list[str] | None, option: str) -> frozenset[str] | None:
    """``--select`` / ``--ignore`` values (each ``KVA001,KVA003``, repeatable) → rule codes.

    ``None`` (the option not given) stays ``None``; codes are case-insensitive.

    Raises:
        InvalidSettings: an entry that is no rule code, or an empty list.
    """
    if values is None:
        return None
    known = {rule.CODE for rule in RULES}
    codes: set[str] = set()
    for value in values:
        for part in value.split(","):
            code = part.strip().upper()
            if code not in known:
                raise InvalidSettings(f"{option}: unknown rule {part.strip()!r} ({_known()})")
            codes.add(code)
    return frozenset(codes)
