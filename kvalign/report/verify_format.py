"""Formatters for ``kvalign verify``: a side-by-side rich table and a JSON document."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kvalign import __version__
from kvalign.report.cells import config_origin
from kvalign.verify import FieldCheck, Verification

VERIFY_SCHEMA_VERSION = 2


def _show(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) for v in value):
            return " ".join("[" + ", ".join(map(str, v)) + "]" for v in value)
        return ", ".join(map(str, value))
    return str(value)


def _header(result: Verification) -> list[str]:
    geo = result.geometry
    return [
        f"Model: {geo.model_id} ({geo.model_type}, {config_origin(geo)})",
        f"kvalign: {result.profile_note}; vLLM {result.vllm_version} on "
        f"{result.platform or 'this machine'}",
        f"Attention backend {result.settings.attention_backend}",
        ("" if result.tested else "WARNING: ") + result.range_note,
    ]


def verify_table(result: Verification) -> RenderableType:
    """One row per (TP, quantity): kvalign, vLLM and whether they match."""
    table = Table(title="kvalign vs vLLM", title_justify="left")
    for column in ("TP", "quantity", "kvalign", "vLLM", ""):
        table.add_column(column, justify="right" if column in ("TP", "kvalign", "vLLM") else "left")
    for rank in result.ranks:
        if rank.rejected or rank.vllm_error:
            both = rank.identical
            table.add_row(
                str(rank.tp),
                "configuration",
                f"invalid: {rank.rejected}" if rank.rejected else "accepted",
                f"refused: {rank.vllm_error}" if rank.vllm_error else "accepted",
                Text("same" if both else "DIFFERENT", style="green" if both else "bold red"),
            )
            continue
        for check in rank.fields:
            table.add_row(
                str(rank.tp),
                check.label,
                _show(check.kvalign),
                _show(check.vllm),
                Text("same", style="green") if check.same else Text("DIFFERENT", style="bold red"),
            )
    verdict = (
        Text("identical: kvalign matches vLLM on every quantity", style="bold green")
        if result.identical
        else Text(
            f"{_differences(result)} difference(s) between kvalign and vLLM", style="bold red"
        )
    )
    parts: list[RenderableType] = [
        Text(line, style="" if result.tested or line != result.range_note else "bold yellow")
        for line in _header(result)
        if line
    ]
    parts += [table, verdict]
    parts += [
        Text("Note: " + note, style="dim") for note in result.notes if note != result.range_note
    ]
    return Group(*parts)


def _differences(result: Verification) -> int:
    count = 0
    for rank in result.ranks:
        if rank.rejected or rank.vllm_error:
            count += 0 if rank.identical else 1
        else:
            count += sum(1 for check in rank.fields if not check.same)
    return count


def _jsonable(value: object) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def _field(check: FieldCheck) -> dict[str, Any]:
    return {
        "name": check.name,
        "unit": check.unit,
        "kvalign": _jsonable(check.kvalign),
        "vllm": _jsonable(check.vllm),
        "same": check.same,
    }


def verify_json(result: Verification) -> str:
    """``{schema_version, model, settings, vllm, identical, differences, tps, notes}``.

    ``vllm`` is ``{version, platform, tested_release_range, range_note}``: whether the
    installed release lies in the range verify was tested on, and that in words.
    """
    s = result.settings
    payload = {
        "schema_version": VERIFY_SCHEMA_VERSION,
        "kvalign_version": __version__,
        "model": {
            "id": result.geometry.model_id,
            "model_type": result.geometry.model_type,
            "config_path": result.geometry.config_path,
        },
        "settings": {
            "dtype": s.dtype,
            "kv_cache_dtype": s.kv_cache_dtype,
            "block_size": s.block_size,
            "enable_prefix_caching": s.enable_prefix_caching,
            "mamba_cache_dtype": s.mamba_cache_dtype,
            "mamba_ssm_cache_dtype": s.mamba_ssm_cache_dtype,
            "attention_backend": s.attention_backend,
            "gpu": s.gpu,
            "num_speculative_tokens": s.num_speculative_tokens,
            "gdn_prefill_backend": s.gdn_prefill_backend,
            "vllm_version": s.vllm_version,
        },
        "kvalign_rules": result.profile_note,
        "vllm": {
            "version": result.vllm_version,
            "platform": result.platform,
            "tested_release_range": result.tested,
            "range_note": result.range_note,
        },
        "identical": result.identical,
        "differences": _differences(result),
        "tps": [
            {
                "tp": rank.tp,
                "identical": rank.identical,
                "rejected": rank.rejected or None,
                "vllm_error": rank.vllm_error or None,
                "fields": [_field(check) for check in rank.fields],
            }
            for rank in result.ranks
        ],
        "notes": list(result.notes),
    }
    return json.dumps(payload, indent=2)
