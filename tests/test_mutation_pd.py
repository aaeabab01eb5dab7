"""The P/D report's notes and fix text pinned at their boundaries, with numbers
derived by hand from vLLM's MambaStateShapeCalculator and
Platform._align_hybrid_block_size for Nemotron-3-Nano-30B-A3B (bf16, vLLM 0.33 defaults,
prefix caching on):

- TP 1: a = 1,024 B/token, m = 6,144 · 3 · 2 + 64 · 64 · 128 · 4 = 36,864 + 2,097,152 =
  2,134,016 B → block 16 · cdiv(2,084, 16) = 2,096; padding 2,096 · 1,024 − m = 12,288 B.
- TP 8 (one replicated KV head): a = 512, m = 768 · 3 · 2 + 8 · 64 · 128 · 4 = 4,608 +
  262,144 = 266,752 B → 16 · cdiv(521, 16) = 528; padding 528 · 512 − m = 3,584 B.
- at the common --block-size 2,096: TP 1 pads 12,288 / 2,134,016 = 0.58 %, TP 8 pads
  (2,096 · 512 − 266,752) / 266,752 = 806,400 / 266,752 = 302.30 % (more than the state).
"""

from __future__ import annotations

from kvalign.pd import analyze
from kvalign.settings import Settings
from kvalign.sources import load_model

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _report(**settings: object):  # type: ignore[no-untyped-def]
    return analyze(load_model(NANO), Settings(**settings), [8], [1])  # type: ignore[arg-type]


def test_prefix_cache_economics_per_tp() -> None:
    notes = _report().notes
    assert (
        "prefix caching at TP 1: smallest prefix that gives a hit 2,096 tokens, worst-case "
        "recompute per turn up to 4,192 tokens, Mamba padding 12,288 bytes per layer per block"
    ) in notes
    assert (
        "prefix caching at TP 8: smallest prefix that gives a hit 528 tokens, worst-case "
        "recompute per turn up to 1,056 tokens, Mamba padding 3,584 bytes per layer per block"
    ) in notes


def test_speculative_tokens_need_two_blocks_for_a_hit() -> None:
    # one speculative token: conv rows K − 1 + 1 = 4 → m(TP 1) = 6,144 · 4 · 2 + 2,097,152
    # = 2,146,304 = 2,096 · 1,024 exactly: block 2,096, no padding; the smallest prefix that
    # hits is two blocks (vLLM drops the last matched block with speculative decoding)
    notes = _report(num_speculative_tokens=1).notes
    assert (
        "prefix caching at TP 1: smallest prefix that gives a hit 4,192 tokens (2 blocks: "
        "with speculative tokens vLLM drops the last matched block), worst-case recompute "
        "per turn up to 4,192 tokens, Mamba padding 0 bytes per layer per block"
    ) in notes


def test_no_economics_without_prefix_caching() -> None:
    notes = _report(enable_prefix_caching=False).notes
    assert not [n for n in notes if n.startswith("prefix caching at TP")]


def test_max_model_len_below_one_block() -> None:
    # vLLM caches whole blocks only: a 2,096-token block fits --max-model-len 2,096
    assert not [n for n in _report(max_model_len=2096).notes if "--max-model-len" in n]
    assert (
        "--max-model-len 2,095 is below one block at TP 1 (2,096-token blocks): prefix "
        "caching can never hit there (only whole blocks are cached)"
    ) in _report(max_model_len=2095).notes
    # prefix caching off: nothing to say
    off = _report(max_model_len=100, enable_prefix_caching=False).notes
    assert not [n for n in off if "--max-model-len" in n]


def test_fix_text_names_the_padding_and_when_it_exceeds_the_state() -> None:
    rec = _report().recommendation
    assert rec.block_size == 2096 and rec.needed
    assert rec.padding_pct.keys() == {1, 8}
    assert round(rec.padding_pct[1], 2) == 0.58 and round(rec.padding_pct[8], 2) == 302.30
    assert rec.text.endswith(
        "Mamba page padding: TP 1 0.58%, TP 8 302.30%; at TP 8 the padding exceeds the state "
        "itself: closer prefill/decode TP sizes cost less)"
    )


def test_same_tp_needs_no_change() -> None:
    report = analyze(load_model(NANO), Settings(), [8], [8])
    assert report.recommendation.text == "no change needed"
    assert report.recommendation.block_size is None and report.exit_code() == 0
