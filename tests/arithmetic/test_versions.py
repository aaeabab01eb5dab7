"""Release profiles: default, future versions, and refusal of unknown/old ones."""

from __future__ import annotations

import dataclasses

import pytest

from kvalign.alignment import RankResult
from kvalign.errors import InvalidSettings
from kvalign.pd import analyze_pair
from kvalign.versions import DEFAULT_PROFILE, resolve


def test_default_is_newest_profile() -> None:
    resolved = resolve(None)
    assert resolved.profile is DEFAULT_PROFILE
    assert resolved.profile.nixl_split_limit == 128  # vLLM 0.33 _MAX_HYBRID_BLOCK_SPLIT


def test_future_version_uses_newest_with_warning() -> None:
    # the warning is the CLI's stderr line (Resolved.warning), no longer a
    # "warning:" note among stdout's notes
    resolved = resolve("9.1.0")
    assert resolved.profile is DEFAULT_PROFILE
    assert resolved.beyond_newest and "newer than every profile" in resolved.warning
    assert not resolved.note.startswith("warning:")


def test_patch_release_of_newest_is_not_a_warning() -> None:
    newest = resolve(DEFAULT_PROFILE.first)
    assert not newest.beyond_newest and not newest.warning


@pytest.mark.parametrize("bad", ["banana", "0.0.1"])
def test_bad_versions(bad: str) -> None:
    with pytest.raises(InvalidSettings, match="--vllm-version"):
        resolve(bad)


def test_profile_without_split_path_fails_non_divisible_pairs() -> None:
    def rank(tp: int, block: int) -> RankResult:
        return RankResult(tp=tp, valid=True, block_size=block, kernel_block_size=block)

    no_split = dataclasses.replace(DEFAULT_PROFILE, nixl_gcd_split=False)
    # 800 vs 1200: gcd 400, 3 units: split on 0.33, hard failure without the split path
    assert analyze_pair(rank(1, 800), rank(2, 1200), "vllm").verdict == "split"
    pair = analyze_pair(rank(1, 800), rank(2, 1200), "vllm", no_split)
    assert pair.verdict == "incompatible"
    assert "no gcd split path" in pair.reason
