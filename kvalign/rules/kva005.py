"""KVA005: KV-cache settings differ between prefill and decode where they must match.

NIXL copies pages byte for byte: the KV-cache dtype, the Mamba conv / SSM state dtypes
(``--mamba-cache-dtype``, ``--mamba-ssm-cache-dtype``) and the model and revision must be
the same on both sides (``nixl/base_worker.py`` compares the handshake metadata).
Dtypes are compared after vLLM resolves ``auto`` (:mod:`kvalign.dtypes`).
"""

from __future__ import annotations

from kvalign.dtypes import resolve_model_dtype
from kvalign.rules.base import (
    Finding,
    GroupResult,
    PairOutcome,
    PoolResult,
    Severity,
    pair_labels,
)

CODE = "KVA005"
SEVERITY: Severity = "error"
TITLE = "KV-cache settings differ between prefill and decode"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
    "compute_nixl_compatibility_hash, checked in the NIXL handshake (nixl/base_worker.py)"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = (
    "use the same KV-cache dtype, --mamba-cache-dtype, --mamba-ssm-cache-dtype, model and"
    " revision on both pools"
)


def _kv_dtype(result: PoolResult) -> str:
    flag = result.pool.settings.kv_cache_dtype
    if flag == "auto":
        return resolve_model_dtype(result.pool.settings.dtype, result.geometry.model_dtype)
    return "fp8_e4m3" if flag == "fp8" else flag


def _facts(result: PoolResult) -> dict[str, str]:
    facts = {
        "model": result.pool.model,
        "revision": result.pool.args.revision or "(default)",
        "kv-cache-dtype": _kv_dtype(result),
    }
    dtypes = result.rank.mamba_state_dtypes
    if len(dtypes) >= 2:
        facts["mamba-cache-dtype"] = dtypes[0]
        facts["mamba-ssm-cache-dtype"] = dtypes[-1]
    return facts


def settings_differ(outcome: PairOutcome) -> bool:
    """Whether the pair's KV-cache settings (dtypes, model, revision) differ."""
    prefill, decode = _facts(outcome.prefill), _facts(outcome.decode)
    return any(key in decode and decode[key] != value for key, value in prefill.items())


def find(group: GroupResult) -> list[Finding]:
    """One finding per pair and differing setting."""
    out: list[Finding] = []
    for outcome in group.pairs:
        prefill, decode = _facts(outcome.prefill), _facts(outcome.decode)
        for key, value in prefill.items():
            other = decode.get(key)
            if other is None or other == value:
                continue
            out.append(
                Finding(
                    CODE, SEVERITY, pair_labels(outcome), outcome.decode.pool.location,
                    f"{key} differs: prefill {value}, decode {other} (KV pages are copied "
                    "byte for byte)",
                    f"use the same {key} on both pools",
                )
            )  # fmt: skip
    return out
