"""NIXL pairing rules pinned at their boundaries (issue 19), with the limits read from vLLM
0.33.0 ``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``:
``_split_remote_blocks`` returns early when the local (decode) block is a multiple of the
remote (prefill) one; otherwise ``unit = gcd``, and it refuses to pair only when
``max(remote // unit, local // unit) > _MAX_HYBRID_BLOCK_SPLIT`` (128): 128 units still pair.

The pools are Nemotron-3-Nano at TP 8 (bf16: one replicated KV head, a = 512 B/token, the
state needs 528 tokens, spec §4) with a user ``--block-size`` above that, so on FLASH_ATTN
(any multiple of 16) both the logical and the kernel block equal the ``--block-size``.
"""

from __future__ import annotations

import pytest

from kvalign.alignment import analyze_rank
from kvalign.policy import analyze_pair
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import resolve

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _pair(prefill_block: int, decode_block: int, version: str | None = None):  # type: ignore[no-untyped-def]
    geometry = load_model(NANO)
    ranks = [
        analyze_rank(geometry, Settings(block_size=b, attention_backend="FLASH_ATTN",
                                        vllm_version=version), 8)
        for b in (prefill_block, decode_block)
    ]  # fmt: skip
    assert [r.kernel_block_size for r in ranks] == [prefill_block, decode_block]
    return analyze_pair(ranks[0], ranks[1], profile=resolve(version).profile)


@pytest.mark.parametrize(
    ("prefill", "decode", "verdict", "unit"),
    [
        # gcd(2048, 2032) = 16: 128 and 127 units → at the limit, pairs (split)
        (2048, 2032, "split", 16),
        (2032, 2048, "split", 16),
        # gcd(2064, 2048) = 16: 129 units → refused
        (2064, 2048, "incompatible", 16),
        (2048, 2064, "incompatible", 16),
        # gcd(2048, 1040) = 16: 128 and 65 units → pairs
        (1040, 2048, "split", 16),
    ],
)
def test_split_limit_boundary(prefill: int, decode: int, verdict: str, unit: int) -> None:
    pair = _pair(prefill, decode)
    assert (pair.verdict, pair.split_unit) == (verdict, unit)
    assert pair.divisible is False and pair.block_size_ratio is None


def test_decode_multiple_of_prefill_is_a_ratio_not_the_other_way() -> None:
    # utils.py block_size_ratio = decode // prefill, asserting decode % prefill == 0
    ratio = _pair(1024, 2048)
    assert (ratio.verdict, ratio.block_size_ratio, ratio.divisible) == ("ratio", 2, True)
    # prefill 2048, decode 1024: 1024 % 2048 != 0 → the split path (gcd 1024, 2 units)
    reverse = _pair(2048, 1024)
    assert (reverse.verdict, reverse.split_unit, reverse.block_size_ratio) == ("split", 1024, None)


def test_releases_before_the_split_path_refuse_non_multiples() -> None:
    # 0.31: no _split_remote_blocks, so 128 units do not pair either
    pair = _pair(2048, 2032, version="0.31.0")
    assert pair.verdict == "incompatible"
    assert "no gcd split path" in pair.reason
