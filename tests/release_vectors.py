"""kvalign's prediction for a per-release golden vector, field by field (no vLLM needed).

Shared by tests/fidelity/test_release_vectors.py and tests/golden/release_disagreements.py.

A vector (one line of tests/golden/vllm-X.Y.Z.jsonl) names vLLM flags; kvalign is run
with the same flags, ``--vllm-version X.Y.Z``, ``--gpu`` as assumed by the probe and
``--gdn-prefill-backend triton`` (the probe machine has no FlashInfer, so vLLM's GDN
layers export no prefill checkpoints). A flag left unset in the vector
(``enable_prefix_caching: null``) is left unset for kvalign too (its own default).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from kvalign.errors import KvalignError
from kvalign.settings import Settings
from tests.conftest import GOLDEN, geometry_for
from tests.resolve import rank_of

#: every compared field, in report order. ``settings`` is a pseudo-field: a flag of the
#: vector that kvalign cannot express (its value names the flag).
FIELDS: tuple[str, ...] = (
    "settings",
    "unknown_architecture",
    "valid",
    "attention_free",
    "use_mla",
    "kv_heads_per_rank",
    "attn_page_bytes_per_token",
    "mamba_state_shapes",
    "mamba_state_dtypes",
    "mamba_page_bytes",
    "block_size",
    "kernel_block_size",
    "mamba_page_size_padded",
    "enable_prefix_caching",
)

#: kvalign's message for an architecture the chosen release does not know.
UNKNOWN_ARCHITECTURE = re.compile(r"does not know (this|the) architecture", re.IGNORECASE)

_SETTINGS_FIELDS = {f.name for f in dataclasses.fields(Settings)}


def release_files() -> dict[str, Path]:
    """``{"0.20.0": tests/golden/vllm-0.20.0.jsonl, ...}`` (the oracle file excluded)."""
    found = {}
    for path in sorted(GOLDEN.glob("vllm-*.jsonl")):
        match = re.fullmatch(r"vllm-(\d+\.\d+\.\d+)\.jsonl", path.name)
        if match:
            found[match.group(1)] = path
    return found


@cache
def rows(release: str) -> tuple[dict[str, Any], ...]:
    """Every vector of ``release``."""
    with release_files()[release].open(encoding="utf-8") as handle:
        return tuple(json.loads(line) for line in handle if line.strip())


def kvalign_settings(row: dict[str, Any], release: str) -> tuple[Settings | None, list[str]]:
    """kvalign's settings for ``row`` and the vector flags kvalign cannot express."""
    raw = row["settings"]
    values: dict[str, Any] = {
        "dtype": raw["dtype"],
        "kv_cache_dtype": raw["kv_cache_dtype"],
        "block_size": raw["block_size"],
        "attention_backend": raw["attention_backend"],
        "num_speculative_tokens": raw["num_speculative_tokens"],
        "mamba_cache_dtype": raw["mamba_cache_dtype"],
        "mamba_ssm_cache_dtype": raw["mamba_ssm_cache_dtype"],
        "gpu": raw.get("gpu"),
        "gdn_prefill_backend": "triton",
        "vllm_version": release,
        # what the vector ran with (fidelity vectors record it; the grid's do not)
        "transformers_version": (row.get("vllm") or {}).get("transformers"),
    }
    unsupported: list[str] = []
    if raw["enable_prefix_caching"] is not None:
        values["enable_prefix_caching"] = raw["enable_prefix_caching"]
    if raw.get("mamba_cache_mode") is not None:
        if "mamba_cache_mode" in _SETTINGS_FIELDS:
            values["mamba_cache_mode"] = raw["mamba_cache_mode"]
        else:
            unsupported.append(f"--mamba-cache-mode {raw['mamba_cache_mode']}")
    if unsupported:
        return None, unsupported
    return Settings(**values), []


def compare(row: dict[str, Any], release: str) -> dict[str, tuple[Any, Any]]:
    """``{field: (kvalign, vllm)}`` for every field where the two differ.

    A vector the probe could not measure (``expected: {"not_measured": reason}``) has no
    vLLM value; it compares nothing (tests/fidelity/test_release_vectors.py counts them).
    """
    expected = row["expected"]
    if "not_measured" in expected:
        return {}
    settings, unsupported = kvalign_settings(row, release)
    if settings is None:
        return {"settings": ("cannot express " + ", ".join(unsupported), ", ".join(unsupported))}
    geometry = geometry_for(row["config"])
    try:
        result = rank_of(geometry, settings, row["tp"])
    except KvalignError as exc:
        unknown = bool(UNKNOWN_ARCHITECTURE.search(str(exc)))
        if expected.get("unknown_architecture"):
            return {} if unknown else {"unknown_architecture": (str(exc), True)}
        if expected.get("valid") is False:
            return {}  # both refuse the configuration (e.g. a Mamba dtype the release lacks)
        return {"valid": (f"error: {exc}", expected.get("valid"))}
    if expected.get("unknown_architecture"):
        return {"unknown_architecture": (False, True)}
    got: dict[str, Any] = {
        "valid": result.valid,
        "attention_free": result.attention_free,
        "use_mla": result.use_mla,
        "kv_heads_per_rank": result.kv_heads_per_rank,
        "attn_page_bytes_per_token": result.attn_page_bytes_per_token,
        "mamba_state_shapes": [list(s) for s in result.mamba_state_shapes],
        "mamba_state_dtypes": list(result.mamba_state_dtypes),
        "mamba_page_bytes": result.mamba_page_bytes,
        "block_size": result.block_size,
        "kernel_block_size": result.kernel_block_size,
        "mamba_page_size_padded": result.mamba_page_size_padded,
    }
    if not expected["valid"]:
        return {} if not result.valid else {"valid": (True, False)}
    if not result.valid:
        return {"valid": (False, True)}
    diff = {
        name: (got[name], value)
        for name, value in expected.items()
        if name in got and got[name] != value
    }
    # what vLLM's CacheConfig ended with (prefix caching forced off on some releases);
    # only hybrids: vLLM does no block alignment for the others, so kvalign does not track it
    resolved = (row.get("resolved") or {}).get("enable_prefix_caching")
    if geometry.is_hybrid and resolved is not None and result.prefix_caching != resolved:
        diff["enable_prefix_caching"] = (result.prefix_caching, resolved)
    return diff


def command(row: dict[str, Any], release: str) -> str:
    """The ``kvalign explain`` command reproducing ``row`` (flags as in the vector)."""
    s = row["settings"]
    parts = [f"kvalign explain {row['model']} --tp {row['tp']}"]
    if s["attention_backend"] != "FLASH_ATTN":
        parts.append(f"--attention-backend {s['attention_backend']}")
    if s["kv_cache_dtype"] != "auto":
        parts.append(f"--kv-cache-dtype {s['kv_cache_dtype']}")
    if s["block_size"] is not None:
        parts.append(f"--block-size {s['block_size']}")
    if s["enable_prefix_caching"] is True:
        parts.append("--enable-prefix-caching")
    elif s["enable_prefix_caching"] is False:
        parts.append("--no-enable-prefix-caching")
    if s.get("mamba_cache_mode"):
        parts.append(f"--mamba-cache-mode {s['mamba_cache_mode']}")
    if s["mamba_ssm_cache_dtype"] != "auto":
        parts.append(f"--mamba-ssm-cache-dtype {s['mamba_ssm_cache_dtype']}")
    if s["num_speculative_tokens"]:
        parts.append(f"--num-speculative-tokens {s['num_speculative_tokens']}")
    if s.get("gpu"):
        parts.append(f"--gpu {s['gpu']}")
    parts.append("--gdn-prefill-backend triton")
    parts.append(f"--vllm-version {release}")
    return " ".join(parts)


def disagreements(release: str) -> Iterator[tuple[dict[str, Any], dict[str, tuple[Any, Any]]]]:
    """(row, differing fields) for every vector of ``release`` kvalign disagrees with."""
    for row in rows(release):
        diff = compare(row, release)
        if diff:
            yield row, diff
