"""``kvalign audit --format github``: GitHub Actions workflow annotation lines."""

from __future__ import annotations

from kvalign.audit import AuditReport
from kvalign.sanitize import clean

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    text = clean(text)  # input-derived text: no raw escape sequence reaches the log
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _line(level: str, file: str, line: int | None, title: str, message: str) -> str:
    props = f"file={_prop(file)}"
    if line:
        props += f",line={line}"
    props += f",title={_prop(title)}"
    return f"::{level} {props}::{_data(message)}"


def to_github(report: AuditReport) -> str:
    """One ``::error``/``::warning``/``::notice`` line per finding and unevaluated file."""
    lines = [
        _line(
            LEVEL[f.severity],
            f.location.file,
            f.location.line,
            f"{f.rule} {' '.join(f.pools)}",
            f"{f.message}. Fix: {f.remediation}",
        )
        for f in report.findings
    ]
    lines += [
        _line("error", p.location.file, p.location.line, "kvalign: not evaluated", p.message)
        for p in report.unevaluated
    ]
    lines += [
        _line("error", p.location.file, p.location.line, "kvalign: not read", p.message)
        for p in report.not_read
    ]
    return "".join(line + "\n" for line in lines)
