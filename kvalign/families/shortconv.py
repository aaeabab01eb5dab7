"""Short-convolution state layout (LFM2, LFM2-MoE, LFM2-VL).

Per rank: conv ``(L-1, C/TP)`` (vLLM 0.33 passes no speculative slots for LFM2). Mirrors vLLM 0.33
``MambaStateShapeCalculator.short_conv_state_shape``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvalign.families.base import Shape, conv_shape, divide


def shapes(p: Mapping[str, int], tp: int, num_spec: int) -> tuple[Shape, ...]:
    """Per-rank state tensor shapes (elements). Raises ``IndivisibleTP``."""
    del num_spec  # vLLM 0.33 LFM2 does not pass speculative tokens here
    return (conv_shape(divide(p["C"], tp, "conv dim C"), p["L"] - 1),)


def dtypes(conv: str, ssm: str) -> tuple[str, ...]:
    """State dtypes: the conv state only."""
    del ssm
    return (conv,)
