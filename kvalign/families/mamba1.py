"""Mamba1 state layout (Jamba, Mamba, FalconMamba).

Per rank: conv ``(K-1, I/TP)``, ssm ``(I/TP, N)``. Speculative tokens do not lengthen the
conv state for Mamba1. Mirrors vLLM 0.33 ``MambaStateShapeCalculator.mamba1_state_shape``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvalign.families.base import Shape, conv_shape, divide


def shapes(p: Mapping[str, int], tp: int, num_spec: int) -> tuple[Shape, ...]:
    """Per-rank state tensor shapes (elements). Raises ``IndivisibleTP``."""
    del num_spec  # vLLM's mamba1 conv state has no speculative slots
    local = divide(p["I"], tp, "intermediate size I")
    return conv_shape(local, p["K"] - 1), (local, p["N"])


def dtypes(conv: str, ssm: str) -> tuple[str, ...]:
    """State dtypes: conv state, then ssm state."""
    return conv, ssm
