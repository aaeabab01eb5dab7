"""Gated delta net state layout (Qwen3-Next, Qwen3.5/3.6, OLMo-hybrid).

Per rank: conv ``(K-1+num_spec, (2*Hk*Dk + Hv*Dv)/TP)``, recurrent ``(Hv/TP, Dv, Dk)``.
Mirrors vLLM 0.33 ``MambaStateShapeCalculator.gated_delta_net_state_shape``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvalign.families.base import Shape, conv_shape, divide


def shapes(p: Mapping[str, int], tp: int, num_spec: int) -> tuple[Shape, ...]:
    """Per-rank state tensor shapes (elements). Raises ``IndivisibleTP``."""
    conv_dim = 2 * p["Hk"] * p["Dk"] + p["Hv"] * p["Dv"]
    conv = conv_shape(divide(conv_dim, tp, "conv dim 2*Hk*Dk + Hv*Dv"), p["K"] - 1 + num_spec)
    recurrent = (divide(p["Hv"], tp, "value heads Hv"), p["Dv"], p["Dk"])
    return conv, recurrent


def load_problem(p: Mapping[str, int], tp: int) -> str:
    """Why vLLM's GDN layer cannot shard its key heads at ``tp`` (``""`` when it can).

    The GDN layers (``vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py``)
    size per-rank key heads as ``num_k_heads // TP``: with ``Hk % TP != 0`` the per-rank
    q/k projections no longer match the checkpoint's head layout.
    """
    if p["Hk"] % tp:
        return (
            f"linear_num_key_heads Hk = {p['Hk']} is not divisible by tensor parallel size "
            f"{tp}: vLLM's GDN layer cannot shard the key heads"
        )
    return ""


def dtypes(conv: str, ssm: str) -> tuple[str, ...]:
    """State dtypes: conv state, then recurrent state."""
    return conv, ssm
