"""Pair verdicts: block_size_ratio, divisibility, gcd split and prefix-cache drift."""

from __future__ import annotations

import pytest

from kvalign.alignment import RankResult
from kvalign.pd import analyze, analyze_pair
from kvalign.settings import Settings
from kvalign.sources import load_model


def _rank(tp: int, block: int, kernel: int) -> RankResult:
    return RankResult(
        tp=tp, valid=True, block_size=block, kernel_block_size=kernel,
        tp_stable_block_size=block, tp_stable_kernel_block_size=kernel,
        mamba_page_bytes=1, attn_page_bytes_per_token=1,  # a hybrid rank
    )  # fmt: skip


@pytest.mark.parametrize(
    ("p", "d", "verdict", "ratio", "divisible", "drift", "unit"),
    [
        ((2096, 2096), (2096, 2096), "ok", 1, True, False, None),
        # FLASHINFER: logical 4192 vs 4176 both run 32/16-token kernels... here equal kernels
        ((4192, 32), (4160, 32), "drift", 1, True, True, None),
        ((2112, 64), (4192, 32), "split", None, False, True, 32),  # 32 | 64, decode smaller
        ((32, 32), (64, 64), "ratio", 2, True, True, None),
        # 528 vs 2096: gcd 16, 2096/16 = 131 > 128 units -> hard failure
        ((528, 528), (2096, 2096), "incompatible", None, False, True, 16),
        # 2112 vs 4192: gcd 32, 4192/32 = 131 > 128 -> failure
        ((2112, 2112), (4192, 4192), "incompatible", None, False, True, 32),
        # 800 vs 1200: gcd 400, at most 3 units -> split path
        ((800, 800), (1200, 1200), "split", None, False, True, 400),
    ],
)
def test_pair_verdicts(
    p: tuple[int, int],
    d: tuple[int, int],
    verdict: str,
    ratio: int | None,
    divisible: bool,
    drift: bool,
    unit: int | None,
) -> None:
    pair = analyze_pair(_rank(1, *p), _rank(4, *d), "vllm")
    assert pair.verdict == verdict
    assert pair.block_size_ratio == ratio
    assert pair.divisible is divisible
    assert pair.prefix_cache_drift is drift
    assert pair.split_unit == unit
    assert pair.flagged is (verdict != "ok")


def test_invalid_side() -> None:
    bad = RankResult(tp=16, valid=False, reason="heads not divisible by tensor parallel size")
    pair = analyze_pair(bad, _rank(1, 800, 800), "vllm")
    assert pair.verdict == "invalid"
    assert "prefill TP 16" in pair.reason
    assert pair.flagged and pair.level == "error"  # invalid fails the gate (KVA010)


def test_reported_nemotron_pair_is_flagged_and_fixed_by_recommendation() -> None:
    geo = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    settings = Settings(kv_cache_dtype="fp8_e4m3", block_size=32, attention_backend="FLASHINFER")
    report = analyze(geo, settings, [1], [4])
    (pair,) = report.pairs
    # TP1 4192 (kernel 32), TP4 2112 (kernel 64): ratio 64 // 32 = 2, divisible, drift
    assert (pair.prefill_block_size, pair.decode_block_size) == (4192, 2112)
    assert (pair.prefill_kernel_block_size, pair.decode_kernel_block_size) == (32, 64)
    assert (pair.verdict, pair.block_size_ratio) == ("ratio", 2)
    assert report.flagged
    assert report.recommendation.block_size == 4176
    assert any("overridden" in note for note in report.notes)
    fixed = analyze(
        geo,
        Settings(kv_cache_dtype="fp8_e4m3", block_size=4176, attention_backend="FLASHINFER"),
        [1],
        [4],
    )
    assert fixed.pairs[0].verdict == "ok" and not fixed.flagged


def test_tp_stable_alignment_agrees_across_tps() -> None:
    geo = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    vllm = analyze(geo, Settings(), [8], [1])
    stable = analyze(geo, Settings(alignment="tp-stable"), [8], [1])
    assert vllm.pairs[0].verdict == "incompatible"  # 528 vs 2096
    # the PR 45575 proposal is a what-if next to vLLM's pairs, which still gate
    assert stable.pairs[0].verdict == "incompatible" and stable.flagged
    assert stable.tp_stable_pairs is not None and vllm.tp_stable_pairs is None
    assert stable.tp_stable_pairs[0].verdict == "ok"  # 2096 on both sides
    assert stable.tp_stable_pairs[0].prefill_block_size == 2096


def test_attention_free_pairs() -> None:
    report = analyze(load_model("tiiuae/falcon-mamba-7b"), Settings(), [1, 2], [4])
    assert {p.verdict for p in report.pairs} == {"nothing-to-align"}
    assert not report.flagged
    assert report.recommendation.block_size is None


def test_costly_recommendation_says_so() -> None:
    # Nemotron-3-Nano TP 8 vs 1: --block-size 2096 pads the TP 8 page by 302.30 %
    report = analyze(load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), Settings(), [8], [1])
    assert report.recommendation.block_size == 2096
    assert "at TP 8 the padding exceeds the state itself" in report.recommendation.text


def test_recommendation_when_nothing_is_usable() -> None:
    geo = load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    report = analyze(geo, Settings(), [16], [16])
    assert report.recommendation.block_size is None
    assert report.recommendation.text.startswith("no --block-size can fix this: ")
    assert "use a valid TP (1, 2, 4, 8)" in report.recommendation.text
