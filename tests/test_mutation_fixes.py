"""The proof behind every printed fix: ``prove_fix`` re-runs each pool with the
candidate ``--block-size`` on every GPU class and accepts it only when every pool keeps it.

Nemotron-3-Nano-30B-A3B, bf16, vLLM 0.33 defaults (Platform._align_hybrid_block_size):
at TP 1 a = 1,024 B/token,
m = 2,134,016 B → 16 · cdiv(2,084, 16) = 2,096 tokens; TP 8 needs fewer (528),
so 2,096 is the smallest block both TP 8 and TP 1 keep (tests/analysis/test_policy.py feeds 2,096
back to ``check`` and gets ``ok``).
"""

from __future__ import annotations

import pytest

from kvalign import fixes
from kvalign.engine import create_engine_config
from kvalign.fixes import PLATFORM_CLASSES, FixPool, prove_fix
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import DEFAULT_PROFILE
from tests.resolve import rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _pools() -> list[FixPool]:
    geometry = load_model(NANO)
    return [
        FixPool(geometry, create_engine_config(geometry, Settings()), 8, "prefill TP 8"),
        FixPool(geometry, create_engine_config(geometry, Settings()), 1, "decode TP 1"),
    ]


def test_fix_is_the_smallest_block_every_pool_keeps_on_every_class() -> None:
    fix = prove_fix(_pools(), [(0, 1)], DEFAULT_PROFILE)
    assert fix.block_size == 2096
    labels = [c.label for c in PLATFORM_CLASSES["cuda"]]
    assert list(fix.proven_on) == labels
    for cls in PLATFORM_CLASSES["cuda"]:
        for tp in (8, 1):
            rank = rank_of(load_model(NANO), Settings(block_size=2096, gpu=cls.gpu), tp)
            assert rank.block_size == 2096


@pytest.mark.parametrize("candidate", [(16, 2000), (48, 2000)])
def test_a_candidate_some_pool_does_not_keep_is_never_printed(
    monkeypatch: pytest.MonkeyPatch, candidate: tuple[int, int]
) -> None:
    # fault injection: the requirement estimate is too small (2,000 < 2,096). TP 1 then
    # raises every candidate below 2,096 to a larger block (vLLM overrides --block-size
    # when block_size < the aligned block), so the proof must reject those candidates and
    # step on until the pools keep one: 2,096 (unit 16: 2000 + 6 · 16) or, with unit 48,
    # 2,112 (48 · 44: the first multiple of 48 at or above 2,096; TP 1 keeps it because
    # 48 · cdiv(2,084, 48) = 2,112).
    monkeypatch.setattr(fixes, "block_requirement", lambda *_args, **_kw: candidate)
    fix = prove_fix(_pools(), [(0, 1)], DEFAULT_PROFILE)
    assert fix.block_size == {16: 2096, 48: 2112}[candidate[0]]


# ---- survivors of the mutmut run over kvalign/fixes.py ----------------------------------


def test_group_without_pools_gets_the_generic_advice() -> None:
    # an audit group with no pool to re-run has no proof: the finding says what to do
    # without a number (audit output, docs/policy.md)
    group = fixes.GroupFix([], [], DEFAULT_PROFILE, fixes.RunCache())
    assert group.text == "set the same --block-size on every pool"


def test_group_fix_is_proven_in_the_runs_cache() -> None:
    # a group's fix is proven once per run, in the run's cache: asking that cache for the
    # same pools and pairs afterwards returns the very Fix the group printed (a group that
    # proved in a cache of its own would prove it again: 720 times in an audit of 24 x 24
    # pools)
    cache = fixes.RunCache()
    pools = _pools()
    group = fixes.GroupFix(pools, [(0, 1)], DEFAULT_PROFILE, cache)
    assert group.text.startswith("set --block-size 2096 on every prefill and decode pool")
    first = cache._fixes[next(iter(cache._fixes))]
    assert prove_fix(pools, [(0, 1)], DEFAULT_PROFILE, cache) is first
