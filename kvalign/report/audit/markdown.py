"""``kvalign audit --format markdown``: a findings table for PR comments and runbooks."""

from __future__ import annotations

from kvalign.audit import AuditReport
from kvalign.deploy.model import Pool
from kvalign.sanitize import markdown_cell, markdown_code


def _cell(text: str) -> str:
    return markdown_cell(text)


def _where(pool: Pool) -> str:
    return f"{pool.label} ({pool.location})"


def to_markdown(report: AuditReport) -> str:
    """Pools per file, the pairs and how they were grouped, findings, files not evaluated."""
    lines = ["## kvalign audit", ""]
    for file in report.files:
        source, kind = markdown_code(file.deployment.source), _cell(file.deployment.kind)
        lines += [f"### `{source}` ({kind})", ""]
        lines += ["| Pool | Model | TP | Block size | Kernel block |", "|---|---|---|---|---|"]
        for r in file.pools:
            lines.append(
                f"| {_cell(r.pool.label)} | {_cell(r.pool.model)} | {r.pool.tp} | "
                f"{r.rank.block_size or '-'} | {r.rank.kernel_block_size or '-'} |"
            )
        lines += ["", f"_{_cell(file.version_note)}_", ""]
    if report.groups:
        lines += [
            f"### Pairs (`--pair-by {report.pair_by}`)",
            "",
            "| Grouped by | Prefill | Decode | Verdict |",
            "|---|---|---|---|",
        ]
        for group in report.groups:
            for o in group.pairs:
                lines.append(
                    f"| {_cell(group.grouping.how)} | {_cell(_where(o.prefill.pool))} | "
                    f"{_cell(_where(o.decode.pool))} | {o.pair.verdict} |"
                )
            for r in group.unpaired:
                lines.append(
                    f"| {_cell(group.grouping.how)} | "
                    + (
                        f"{_cell(_where(r.pool))} | (none) | not paired |"
                        if r.pool.role == "prefill"
                        else f"(none) | {_cell(_where(r.pool))} | not paired |"
                    )
                )
        lines.append("")
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
    for note in report.notes:
        lines.append(f"\n_Note:_ {_cell(note)}")
    for p in report.unevaluated:
        lines.append(f"\n**Not evaluated** `{markdown_code(p.location)}`: {_cell(p.message)}")
    for p in report.unread:
        lines.append(f"\n**Not read** `{markdown_code(p.location)}`: {_cell(p.message)}")
    return "\n".join(lines) + "\n"
