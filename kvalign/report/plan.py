"""``kvalign plan`` output: an answer-first table (80 columns) and ``--format json``."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from kvalign.plan import Candidate, Plan
from kvalign.report.cells import TP_STABLE_LABEL
from kvalign.report.layout import Column, section

#: how each candidate kind is named.
CANDIDATE_LABELS = {
    "lower-padding": "lower padding (TP change)",
    "tp-change": "TP change, no --block-size",
    "tp-stable": f"{TP_STABLE_LABEL}, in no vLLM release",
}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def answer_lines(plan: Plan) -> list[str]:
    """The first lines: the common block size and where it holds, or why none exists."""
    head = (
        f"{plan.model}: prefill TP {plan.prefill_tp}, decode TP {plan.decode_tp}, "
        f"vLLM {plan.release}"
    )
    if plan.block_size is None:
        lines = [f"NO COMMON BLOCK SIZE: {head}"]
        lines += [f"  why: {line}" for line in plan.no_fix]
        lines += [f"  would work: {line}" for line in plan.proposals]
        return lines
    where = ", ".join(plan.proven_on) if plan.proven_on else "every GPU class"
    if not plan.aligned:
        return [f"BLOCK SIZE {plan.block_size}: {head} (nothing to align)"]
    return [
        f"BLOCK SIZE {plan.block_size}: {head}",
        f"  set --block-size {plan.block_size} on every pool (holds on {where})",
    ]


def _candidate_cost(candidate: Candidate) -> str:
    return ", ".join(f"{role} {pct:.2f}%" for role, pct in candidate.padding_pct) or "-"


def plan_table(plan: Plan, width: int | None = None) -> RenderableType:
    """The answer, then the pools' cost, the candidates, the dependent settings and the
    granularity; each section stacks when it does not fit ``width``."""
    first = answer_lines(plan)
    style = "bold green" if plan.found else "bold red"
    parts: list[RenderableType] = [Text(first[0], style=style)]
    parts += [Text(line) for line in first[1:]]
    parts.append(Text(""))
    if plan.pools and plan.block_size is not None:
        rows = [
            [
                p.role,
                str(p.tp),
                f"{p.own_block_size or '-'}",
                f"{p.block_size or '-'}",
                _pct(p.padding_pct),
                f"{p.kv_tokens_lost_per_gib:,}",
            ]
            for p in plan.pools
        ]
        columns = [
            Column("Pool"),
            Column("TP", justify="right"),
            Column("Own block", justify="right"),
            Column("Block", justify="right"),
            Column("Mamba pad", justify="right"),
            Column("Tokens lost/GiB", justify="right"),
        ]
        parts.append(section("Cost per pool (per rank)", columns, rows, width))
    if plan.candidates:
        rows = [
            [
                CANDIDATE_LABELS[c.kind],
                f"{c.prefill_tp}/{c.decode_tp}",
                f"{c.block_size:,}" if c.block_size else "differ",
                _candidate_cost(c),
            ]
            for c in plan.candidates
        ]
        columns = [
            Column("Candidate", fixed=False),
            Column("TP P/D"),
            Column("Block"),
            Column("Mamba pad", fixed=False),
        ]
        parts.append(section("Other candidates", columns, rows, width))
    if plan.dependent:
        rows = [
            [s.component, s.name, s.value or "(none)", f"{s.rule}; source: {s.source}"]
            for s in plan.dependent
        ]
        columns = [
            Column("Component", fixed=False),
            Column("Setting", fixed=False),
            Column("Value"),
            Column("Rule and source", fixed=False),
        ]
        parts.append(section("Settings that follow the block size", columns, rows, width))
    g = plan.granularity
    if g is not None:
        lines = [
            "Prefix-cache granularity:",
            f"  shortest prefix that can hit: {g.hit_floor_tokens:,} tokens "
            f"({g.hit_floor_blocks} block{'s' if g.hit_floor_blocks > 1 else ''}"
            + ("; speculative tokens drop the last matched block" if g.hit_floor_blocks > 1 else "")
            + ")",
            f"  prompt lengths: {g.distribution}",
            f"  expected cached tokens per request {g.expected_cached_tokens:,.1f}, "
            f"lost at the tail {g.expected_tail_tokens:,.1f}",
            f"  {g.prefix_match_unit}",
        ]
        if not g.prefix_caching:
            lines.insert(1, "  prefix caching is off: nothing is cached")
        parts += [Text(line) for line in lines]
    parts += [Text("Note: " + note, style="dim") for note in plan.notes]
    return Group(*parts)


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    """``kvalign plan --format json`` (keys listed in docs/json.md)."""
    from kvalign import __version__
    from kvalign.report.json_format import SCHEMA_VERSION

    g = plan.granularity
    return {
        "schema_version": SCHEMA_VERSION,
        "kvalign_version": __version__,
        "model": plan.model,
        "vllm_release": plan.release,
        "prefill_tp": plan.prefill_tp,
        "decode_tp": plan.decode_tp,
        "stack": plan.stack,
        "block_size": plan.block_size,
        "proven_on": list(plan.proven_on),
        "aligned": plan.aligned,
        "pools": [
            {
                "role": p.role,
                "tp": p.tp,
                "own_block_size": p.own_block_size,
                "block_size": p.block_size,
                "kernel_block_size": p.kernel_block_size,
                "mamba_padding_pct": p.padding_pct,
                "kv_tokens_lost_per_gib": p.kv_tokens_lost_per_gib,
            }
            for p in plan.pools
        ],
        "candidates": [
            {
                "kind": c.kind,
                "label": CANDIDATE_LABELS[c.kind],
                "prefill_tp": c.prefill_tp,
                "decode_tp": c.decode_tp,
                "block_size": c.block_size,
                "change": c.change,
                "mamba_padding_pct": dict(c.padding_pct),
                "note": c.note,
            }
            for c in plan.candidates
        ],
        "settings": [
            {
                "component": s.component,
                "name": s.name,
                "value": s.value or None,
                "rule": s.rule,
                "source": s.source,
            }
            for s in plan.dependent
        ],
        "granularity": None
        if g is None
        else {
            "prefix_caching": g.prefix_caching,
            "hit_floor_blocks": g.hit_floor_blocks,
            "hit_floor_tokens": g.hit_floor_tokens,
            "distribution": g.distribution,
            "lengths": list(g.lengths),
            "expected_cached_tokens": g.expected_cached_tokens,
            "expected_tail_tokens": g.expected_tail_tokens,
            "prefix_match_unit": g.prefix_match_unit,
        },
        "no_fix": list(plan.no_fix),
        "proposals": list(plan.proposals),
        "notes": list(plan.notes),
    }


def plan_json(plan: Plan) -> str:
    """:func:`plan_to_dict` as indented JSON."""
    return json.dumps(plan_to_dict(plan), indent=2)
