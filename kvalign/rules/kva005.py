"""KVA005: KV-cache settings differ between prefill and decode where they must match.

NIXL copies pages byte for byte: the KV-cache dtype, the Mamba conv / SSM state dtypes
(``--mamba-cache-dtype``, ``--mamba-ssm-cache-dtype``) and the model and revision must be
the same on both sides (``nixl/base_worker.py`` compares the handshake metadata).
Dtypes are compared after vLLM resolves ``auto`` (:mod:`kvalign.dtypes`).
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity, kv_cache_facts, pair_labels

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


def find(group: GroupResult) -> list[Finding]:
    """One finding per pair and differing setting."""
    out: list[Finding] = []
    for outcome in group.pairs:
        prefill, decode = kv_cache_facts(outcome.prefill), kv_cache_facts(outcome.decode)
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
