"""Formatters for ``kvalign explain``: plain text for runbooks and a JSON document."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from kvalign import __version__
from kvalign.explain import Explanation
from kvalign.report.cells import config_origin
from kvalign.sanitize import clean, markdown_code

EXPLAIN_SCHEMA_VERSION = 1


def _value(value: int | str, unit: str) -> str:
    text = f"{value:,}" if isinstance(value, int) else value
    return f"{text} {unit}".rstrip()


def explain_text(ex: Explanation) -> str:
    """Numbered steps, then the result and the prefix-cache economics."""
    geo, s, rank = ex.geometry, ex.settings, ex.rank
    lines = [
        f"Model: {geo.model_id} ({geo.model_type}, {config_origin(geo)})",
        f"Profile: {ex.engine.profile_note}",
        f"TP {ex.tp}, attention backend {rank.backend or s.attention_backend}"
        + ("" if s.attention_backend not in ("FLASH_ATTN", "auto") or s.gpu else
           " (default: FLASH_ATTN on an unspecified CUDA GPU)"),
        "",
        "Resolved settings (as vllm serve resolves its flags before sizing):",
    ]  # fmt: skip
    for item in ex.engine.resolutions:
        lines.append(f"  {item.key} = {item.value}  ({item.source})")
    lines.append("")
    for i, step in enumerate(ex.steps, 1):
        lines.append(f"{i:2}. {step.title}: {_value(step.value, step.unit)}")
        lines.append(f"      = {step.formula}")
        for source in step.inputs:
            lines.append(f"      from {source}")
        if step.mirrors:
            lines.append(f"      vLLM: {step.mirrors}")
    lines.append("")
    kernel = rank.kernel_block_size
    lines.append(
        f"Result: block size {rank.block_size:,} tokens, kernel block size "
        + (f"{kernel:,}" if kernel is not None else "none")
        + " tokens"
    )
    eco = ex.economics
    if eco is None and not ex.engine.prefix_caching:
        lines.append("Prefix caching: off (no prefix-cache economics)")
    if eco is not None:
        blocks = (
            "one block"
            if eco.hit_floor_blocks == 1
            else f"{eco.hit_floor_blocks} blocks: with speculative tokens vLLM drops the "
            "last matched block of a hit"
        )
        lines.append(
            f"Prefix caching: smallest prefix that gives a hit {eco.smallest_cacheable_prefix:,} "
            f"tokens ({blocks}); worst-case recompute per turn up to "
            f"{eco.worst_case_recompute:,} tokens (two blocks)"
            + (
                f"; Mamba padding {eco.mamba_padding_bytes:,} bytes per layer per block"
                if eco.mamba_padding_bytes is not None
                else ""
            )
        )
    for note in geo.notes:
        lines.append(f"Note: {note}")
    # one line per item: controls in input text (a model path, model_type) are escaped
    return "\n".join(clean(line, newlines=False) for line in lines) + "\n"


def explain_dict(ex: Explanation) -> dict[str, Any]:
    """The JSON-ready document of ``kvalign explain --format json``."""
    rank = ex.rank
    return {
        "schema_version": EXPLAIN_SCHEMA_VERSION,
        "kvalign_version": __version__,
        "model": {"id": ex.geometry.model_id, "model_type": ex.geometry.model_type,
                  "config_path": ex.geometry.config_path},
        "profile": {"name": ex.engine.profile.name, "note": ex.engine.profile_note},
        "settings": asdict(ex.settings),
        "resolved": [item._asdict() for item in ex.engine.resolutions],
        "tp": ex.tp,
        "attention_backend": rank.backend or None,
        "steps": [{**asdict(step), "inputs": list(step.inputs)} for step in ex.steps],
        "block_size": rank.block_size,
        "kernel_block_size": rank.kernel_block_size,
        "economics": asdict(ex.economics) if ex.economics is not None else None,
    }  # fmt: skip


def explain_table(ex: Explanation) -> str:
    """``--format table`` (the default, as in every command): :func:`explain_text`."""
    return explain_text(ex)


def explain_markdown(ex: Explanation) -> str:
    """:func:`explain_text` under a heading, in a fenced block (the steps are aligned)."""
    head = f"### kvalign explain {markdown_code(ex.geometry.model_id)} --tp {ex.tp}"
    return f"{head}\n\n```text\n{explain_text(ex)}```\n"


def explain_json(ex: Explanation) -> str:
    """``explain_dict`` as indented JSON text."""
    return json.dumps(explain_dict(ex), indent=2)
