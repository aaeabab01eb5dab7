"""Kimi delta attention state layout (Kimi-Linear, Kimi-K3, Bailing v3, AliceAI).

Per rank: conv ``(K-1+num_spec, (H*D + 2*Hk*Dk)/TP)``, recurrent ``(H/TP, D, D)``.
The recurrent state defaults to float32 (``auto``) and accepts only float32/bfloat16.
Mirrors vLLM 0.33 ``MambaStateShapeCalculator.kda_state_shape`` and
``MambaStateDtypeCalculator.kda_state_dtype``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvalign.errors import InvalidSettings
from kvalign.families.base import Shape, conv_shape, divide


def shapes(p: Mapping[str, int], tp: int, num_spec: int) -> tuple[Shape, ...]:
    """Per-rank state tensor shapes (elements). Raises ``IndivisibleTP``."""
    conv_dim = p["H"] * p["D"] + 2 * p["Hk"] * p["Dk"]
    conv = conv_shape(divide(conv_dim, tp, "conv dim H*D + 2*Hk*Dk"), p["K"] - 1 + num_spec)
    recurrent = (divide(p["H"], tp, "KDA heads H"), p["D"], p["D"])
    return conv, recurrent


def ssm_dtype(flag: str) -> str:
    """Recurrent-state dtype for ``--mamba-ssm-cache-dtype`` (``auto`` → float32).

    Raises:
        InvalidSettings: anything but auto, float32 or bfloat16 (vLLM raises too).
    """
    if flag == "auto":
        return "float32"
    if flag in ("float32", "bfloat16"):
        return flag
    raise InvalidSettings(
        f"--mamba-ssm-cache-dtype {flag}: KDA recurrent state accepts only auto, float32 "
        "or bfloat16 (vLLM rejects this configuration)"
    )


def dtypes(conv: str, ssm: str) -> tuple[str, ...]:
    """State dtypes: conv state, then recurrent state."""
    return conv, ssm
