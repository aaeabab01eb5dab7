"""``kvalign audit --format junit``: JUnit XML, one test case per finding or clean file."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kvalign.audit import AuditReport
from kvalign.sanitize import clean
from kvalign.sanitize import xml_text as _x


def _where(location: object) -> str:
    """A file:line for a text body: a line break in the file name escaped (``\\n``),
    so the body's lines are the report's own."""
    return clean(location, newlines=False)


def to_junit(report: AuditReport) -> str:
    """A ``<testsuites>`` document: findings that fail the gate (``--fail-on``,
    :mod:`kvalign.policy`) are ``<failure>`` (type = rule id), findings below it pass with
    their text in ``<system-out>``, files that could not be evaluated are ``<error>``,
    files without findings pass. So ``failures`` is non-zero exactly when audit exits 1."""
    suite = ET.Element("testsuite", name="kvalign audit")
    failed_files = set()
    failing = {id(f) for f in report.failing()}
    for finding in report.findings:
        failed_files.add(finding.location.file)
        case = ET.SubElement(
            suite,
            "testcase",
            classname=_x(finding.location.file),
            name=_x(f"{finding.rule} {' '.join(finding.pools)}"),
        )
        text = f"{_where(finding.location)}: {finding.message}\nFix: {finding.remediation}"
        if id(finding) not in failing:
            out = ET.SubElement(case, "system-out")
            out.text = _x(f"{finding.severity} (below --fail-on {report.fail_on}): {text}")
            continue
        failure = ET.SubElement(
            case, "failure", message=_x(finding.message), type=f"{finding.rule}:{finding.severity}"
        )
        failure.text = _x(text)
    for file in report.files:
        if file.deployment.source not in failed_files:
            ET.SubElement(suite, "testcase", classname=_x(file.deployment.source), name="audit")
    for problem in report.unevaluated:
        case = ET.SubElement(
            suite, "testcase", classname=_x(problem.location.file), name="evaluate"
        )
        error = ET.SubElement(case, "error", message=_x(problem.message), type="unevaluated")
        error.text = _x(f"{_where(problem.location)}: {problem.message}")
    for problem in report.not_read:
        case = ET.SubElement(suite, "testcase", classname=_x(problem.location.file), name="read")
        error = ET.SubElement(case, "error", message=_x(problem.message), type="not-read")
        error.text = _x(f"{_where(problem.location)}: {problem.message}")
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(len(failing)))
    suite.set("errors", str(len(report.unevaluated) + len(report.not_read)))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
