"""Mamba2 state layout (Nemotron-H, Falcon-H1, Granite-4.0-H, Bamba, Zamba2, Mamba2).

Per rank: conv ``(K-1+num_spec, (I + 2*G'*N)/TP)``, ssm ``(H/TP, P, N)``, where the group
count is padded for head shards: ``G' = G`` if ``G % TP == 0`` else ``TP`` (``G + TP - G``).
Mirrors vLLM 0.33 ``MambaStateShapeCalculator.mamba2_state_shape`` and
``extra_groups_for_head_shards``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvalign.families.base import Shape, conv_shape, divide


def padded_groups(groups: int, tp: int) -> int:
    """Group count after shard padding: ``G`` when ``G % TP == 0``, else ``TP``."""
    return groups if groups % tp == 0 else groups + (tp - groups)


def shapes(p: Mapping[str, int], tp: int, num_spec: int) -> tuple[Shape, ...]:
    """Per-rank state tensor shapes (elements). Raises ``IndivisibleTP``."""
    groups = padded_groups(p["G"], tp)
    conv_dim = p["I"] + 2 * groups * p["N"]
    conv = conv_shape(divide(conv_dim, tp, "conv dim I + 2*G'*N"), p["K"] - 1 + num_spec)
    ssm = (divide(p["H"], tp, "mamba heads H"), p["P"], p["N"])
    return conv, ssm


def replay_ring_shapes(
    p: Mapping[str, int], tp: int, ring: int, *, padded: bool
) -> tuple[Shape, ...]:
    """ReplaySSM ring-buffer shapes appended to the state (``--use-replayssm``): x
    ``(H/TP, ring, P)``, dt ``(H/TP, ring)``, B ``(G/TP, ring, N)`` with ``G`` shard-padded
    when ``padded`` (vLLM ≥ 0.33). ``ring`` is the history length in tokens. Mirrors
    ``MambaStateShapeCalculator.append_replayssm_ring``. Raises ``IndivisibleTP``."""
    heads = divide(p["H"], tp, "mamba heads H")
    groups = padded_groups(p["G"], tp) if padded else p["G"]
    return (
        (heads, ring, p["P"]),
        (heads, ring),
        (divide(groups, tp, "n_groups G"), ring, p["N"]),
    )


def load_problem(p: Mapping[str, int], tp: int) -> str:
    """Why vLLM's Mamba2 layer refuses to load at ``tp`` (``""`` when it loads).

    ``MambaMixer2.__init__`` (``vllm/model_executor/layers/mamba/mamba_mixer2.py``)
    asserts ``n_groups % TP == 0 or n_groups == 1``: group replication is only
    implemented for a single group.
    """
    if p["G"] % tp and p["G"] != 1:
        return (
            f"n_groups G = {p['G']} is neither divisible by tensor parallel size {tp} nor 1: "
            "vLLM's MambaMixer2 refuses to load"
        )
    return ""


def dtypes(conv: str, ssm: str) -> tuple[str, ...]:
    """State dtypes: conv state, then ssm state."""
    return conv, ssm
