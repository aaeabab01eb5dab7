"""``kvalign audit --format markdown``: a findings table for PR comments and runbooks."""

from __future__ import annotations

from kvalign.audit import AuditReport


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: AuditReport) -> str:
    """Pools per file, then findings, then files not evaluated."""
    lines = ["## kvalign audit", ""]
    for group in report.groups:
        lines += [f"### `{group.deployment.source}` ({group.deployment.kind})", ""]
        lines += ["| Pool | Model | TP | Block size | Kernel block |", "|---|---|---|---|---|"]
        for r in group.pools:
            lines.append(
                f"| {r.pool.label} | {r.pool.model} | {r.pool.tp} | "
                f"{r.rank.block_size or '-'} | {r.rank.kernel_block_size or '-'} |"
            )
        lines += ["", f"_{group.version_note}_", ""]
    if report.findings:
        lines += [
            "| Rule | Severity | Location | Pools | Message | Fix |",
            "|---|---|---|---|---|---|",
        ]
        for f in report.findings:
            lines.append(
                f"| {f.rule} | {f.severity} | {_cell(str(f.location))} | "
                f"{_cell(', '.join(f.pools))} | {_cell(f.message)} | {_cell(f.remediation)} |"
            )
    else:
        lines.append("No findings.")
    for p in report.unevaluated:
        lines.append(f"\n**Not evaluated** `{p.location}`: {_cell(p.message)}")
    return "\n".join(lines) + "\n"
