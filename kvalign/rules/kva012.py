"""KVA012: the hybrid KV-cache manager is off, so NIXL cannot serve the hybrid model (error).

A hybrid attention + state-space model needs vLLM's hybrid KV-cache manager (HMA): the
Mamba state lives in its own KV-cache group. In vLLM 0.18-0.21, ``--kv-transfer-config``
turns the manager off unless ``--no-disable-hybrid-kv-cache-manager`` is given
(``vllm/config/vllm.py`` ``VllmConfig``: "Turning off hybrid kv cache manager because
`--kv-transfer-config` is set"); from 0.22 it stays on for connectors that support it
(``SupportsHMA``, NIXL from 0.18). With the manager off — by that default or by an explicit
``--disable-hybrid-kv-cache-manager`` — the NIXL connector cannot serve hybrid models at
all, whatever the block sizes.
"""

from __future__ import annotations

from kvalign.rules.base import Finding, GroupResult, Severity

CODE = "KVA012"
SEVERITY: Severity = "error"
TITLE = "hybrid KV-cache manager off with --kv-transfer-config: hybrids cannot be served"
#: the vLLM source (file and function) the rule mirrors, for ``kvalign rules``.
SOURCE = (
    "vllm/config/vllm.py VllmConfig (hybrid KV-cache manager disabled for "
    "--kv-transfer-config, 0.18-0.21); kv_connector/v1/base.py SupportsHMA"
)
#: what to change, in general (each finding's remediation gives the values).
FIX = "add --no-disable-hybrid-kv-cache-manager to every vllm serve with --kv-transfer-config"


def find(group: GroupResult) -> list[Finding]:
    """One finding per hybrid pool with ``--kv-transfer-config`` whose release turns the
    hybrid KV-cache manager off (0.18-0.21 default, or an explicit
    ``--disable-hybrid-kv-cache-manager`` on any release whose NIXL serves hybrids)."""
    out: list[Finding] = []
    for result in group.pools:
        args, profile = result.pool.args, result.engine.profile
        if not (args.kv_transfer_config and result.geometry.is_hybrid and profile.nixl_hybrid):
            continue
        flag = args.disable_hybrid_kv_cache_manager
        if flag is False or (flag is None and not profile.kv_transfer_disables_hma):
            continue
        why = (
            "--disable-hybrid-kv-cache-manager is set"
            if flag
            else f"vLLM {profile.name} turns it off when --kv-transfer-config is set"
        )
        out.append(
            Finding(
                CODE, SEVERITY, (result.pool.label,), result.pool.location,
                f"{result.pool.model} is a hybrid model but the hybrid KV-cache manager is "
                f"off ({why}): the KV connector cannot serve it",
                "add --no-disable-hybrid-kv-cache-manager to the vllm serve arguments",
            )
        )  # fmt: skip
    return out
