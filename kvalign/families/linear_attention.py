"""Lightning/linear-attention state layout (Bailing linear, MiniMax-style).

Per rank: state ``(heads // TP, d, d)`` -- floor division, no divisibility check.
Dtype: ``mamba_cache_dtype``. Mirrors vLLM 0.33
``MambaStateShapeCalculator.linear_attention_state_shape``.
"""

from __future__ import annotations

from collections.abc import Mapping

from kvalign.families.base import Shape


def shapes(p: Mapping[str, int], tp: int, num_spec: int) -> tuple[Shape, ...]:
    """Per-rank state tensor shape (elements)."""
    del num_spec
    return ((p["heads"] // tp, p["d"], p["d"]),)


def dtypes(conv: str, ssm: str) -> tuple[str, ...]:
    """State dtype: the (conv) ``mamba_cache_dtype``."""
    del ssm
    return (conv,)
