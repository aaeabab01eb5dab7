"""Test shorthand: resolve a pool's ``Settings`` (``create_engine_config``) and predict a rank.

The library's arithmetic takes only a resolved ``EngineConfig``; most tests state a pool as
``Settings`` and one TP, so this resolves them first (an ``EngineConfig`` passes through).
"""

from __future__ import annotations

from kvalign.alignment import RankResult, analyze_rank, common_block_size
from kvalign.engine import EngineConfig, create_engine_config
from kvalign.geometry import ModelGeometry
from kvalign.settings import Settings


def engine_of(geometry: ModelGeometry, config: EngineConfig | Settings) -> EngineConfig:
    """``config`` itself, or the ``EngineConfig`` resolved from ``Settings``."""
    if isinstance(config, EngineConfig):
        return config
    return create_engine_config(geometry, config)


def rank_of(geometry: ModelGeometry, config: EngineConfig | Settings, tp: int) -> RankResult:
    """:func:`kvalign.alignment.analyze_rank` after resolving ``config``."""
    return analyze_rank(geometry, engine_of(geometry, config), tp)


def common_block_size_of(
    geometry: ModelGeometry, config: EngineConfig | Settings, tps: list[int]
) -> tuple[int, dict[int, float]] | None:
    """:func:`kvalign.alignment.common_block_size` after resolving ``config``."""
    return common_block_size(geometry, engine_of(geometry, config), tps)
