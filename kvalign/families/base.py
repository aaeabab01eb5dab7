"""Shared pieces of the state-layout families: TP division and the field-reader protocol.

Mirrors vLLM 0.33 ``vllm/distributed/utils.py`` ``divide`` (exact division or error) and
``vllm/model_executor/layers/mamba/mamba_utils.py`` ``MambaStateShapeCalculator``.
"""

from __future__ import annotations

from typing import Protocol

Shape = tuple[int, ...]


class IndivisibleTP(ValueError):
    """A state dimension does not divide by the tensor-parallel size: that TP is invalid."""


def divide(value: int, tp: int, what: str) -> int:
    """``value / tp`` when exact, as vLLM's ``divide`` requires.

    Raises:
        IndivisibleTP: ``value % tp != 0``; the message names ``what``.
    """
    if value % tp:
        raise IndivisibleTP(f"{what} = {value} is not divisible by tensor parallel size {tp}")
    return value // tp


def conv_shape(dim: int, state_len: int) -> Shape:
    """Conv-state shape in vLLM's default ("SD") orientation: ``(state_len, dim)``."""
    return (state_len, dim)


class FieldReader(Protocol):
    """Reads integer/float/str fields from a (text) config and records where they came from."""

    def int(self, symbol: str, *keys: str, default: int | None = None) -> int:
        """First present key among ``keys`` as a positive int, remembered under ``symbol``."""
        ...

    def number(self, symbol: str, *keys: str, default: float | None = None) -> float:
        """First present key among ``keys`` as a finite number."""
        ...

    def has(self, key: str) -> bool:
        """Whether ``key`` is present and not null."""
        ...

    def raw(self, key: str) -> object:
        """The raw value of ``key`` (``None`` when absent)."""
        ...
