"""Survey aggregation (kvalign.survey) against counts derived by hand from vLLM's rules."""

from __future__ import annotations

import statistics

import pytest

from kvalign.errors import InvalidSettings
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.survey import ModelSurvey, survey

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN27 = "Qwen/Qwen3.5-27B"


def _pct(padded: int, page: int) -> float:
    return 100.0 * (padded - page) / page


# --- Nemotron-3-Nano-30B-A3B (bf16, defaults, FLASH_ATTN: 16-token alignment unit) -------
# Attention: 2 KV heads x (128 + 128) x 2 B -> a = 1024 B/token at TP 1; 1 head per rank
# from TP 2 on (max(1, 2 // TP)) -> a = 512 at TP 2, 4, 8.
# Mamba2 state (I = 64*64 = 4096, G = 8, N = 128, H = 64, P = 64, K = 4, SSM float32):
#   TP1 conv 6144*3*2 = 36,864 + ssm 64*64*128*4 = 2,097,152 -> m = 2,134,016
#   TP2 conv 3072*3*2 = 18,432 + ssm 32*64*128*4 = 1,048,576 -> m = 1,067,008
#   TP4 conv 1536*3*2 =  9,216 + ssm 16*64*128*4 =   524,288 -> m =   533,504
#   TP8 conv  768*3*2 =  4,608 + ssm  8*64*128*4 =   262,144 -> m =   266,752
# vLLM block = 16 * ceil(m / (16 * a)):
#   TP1 ceil(2,134,016 / 16,384) = 131 -> 2096;  TP2 ceil(1,067,008 / 8,192) = 131 -> 2096
#   TP4 ceil(533,504 / 8,192) = 66 -> 1056;      TP8 ceil(266,752 / 8,192) = 33 -> 528
# FLASH_ATTN takes any multiple of 16, so kernel block = logical block.
# 16 ordered pairs; equal blocks: {1,2}x{1,2} (4) + (4,4) + (8,8) -> 6, so 10 differ, and all
# 10 have different kernel blocks (ratio != 1). Decode % prefill == 0 only for (P8, D4):
# 1056 = 2 x 528 -> 9 not divisible. Verdicts: gcd(2096 = 16*131, 1056 = 16*66) = 16 and
# gcd(2096, 528 = 16*33) = 16 need 131 > 128 units -> 8 incompatible (P1/P2 vs D4/D8 and
# back); (P4, D8): gcd(1056, 528) = 528, 2 units -> split; (P8, D4) -> ratio 2.
# TP-stable: the TP-1 block 2096 everywhere (2096 * 512 covers every local page: no growth)
# -> 0 / 0 / 0, at padding 100 * (2096 * a - m) / m.
NANO_M = {1: 2_134_016, 2: 1_067_008, 4: 533_504, 8: 266_752}
NANO_A = {1: 1024, 2: 512, 4: 512, 8: 512}
NANO_VLLM = {1: 2096, 2: 2096, 4: 1056, 8: 528}
NANO_STABLE_PAD = {tp: _pct(2096 * NANO_A[tp], NANO_M[tp]) for tp in NANO_M}
NANO_VLLM_PAD = {tp: _pct(NANO_VLLM[tp] * NANO_A[tp], NANO_M[tp]) for tp in NANO_M}

# --- Qwen3.5-27B (bf16, GDN, defaults; GPU unspecified -> checkpoint alignment 1) ----------
# Attention: 4 KV heads x (256 + 256) x 2 B -> a = 4096 (TP1), 2048 (TP2), 1024 (TP4, TP8).
# 24 attention heads: TP 16 is invalid (24 % 16 != 0) and is left out of the pairs.
# GDN state (Hk 16, Dk 128, Hv 48, Dv 128, K 4; conv bf16, recurrent float32 from
# text_config.mamba_ssm_dtype): conv dim 2*16*128 + 48*128 = 10,240.
#   TP1 10240*3*2 = 61,440 + 48*128*128*4 = 3,145,728 -> m = 3,207,168
#   TP2 30,720 + 1,572,864 -> 1,603,584;  TP4 15,360 + 786,432 -> 801,792
#   TP8  7,680 +   393,216 ->   400,896
# vLLM block: TP1 ceil(3,207,168 / 65,536) = 49 -> 784; TP2 ceil(1,603,584 / 32,768) = 49
# -> 784; TP4 ceil(801,792 / 16,384) = 49 -> 784; TP8 ceil(400,896 / 16,384) = 25 -> 400.
# 16 pairs; 6 involve TP 8 on exactly one side -> 6 differ, 6 ratio != 1, and none divides
# (784 % 400 = 384, 400 % 784 = 400): gcd(784 = 16*49, 400 = 16*25) = 16, 49 units <= 128
# -> 6 split. TP-stable: 784 everywhere (784 * 1024 = 802,816 >= 400,896: no growth).
QWEN_M = {1: 3_207_168, 2: 1_603_584, 4: 801_792, 8: 400_896}
QWEN_A = {1: 4096, 2: 2048, 4: 1024, 8: 1024}
QWEN_STABLE_PAD = {tp: _pct(784 * QWEN_A[tp], QWEN_M[tp]) for tp in QWEN_M}


@pytest.fixture(scope="module")
def nano_and_qwen() -> list[ModelSurvey]:
    result = survey([load_model(NANO), load_model(QWEN27)], Settings(), [1, 2, 4, 8, 16])
    return list(result.models)


def test_nano_counts_tp_1_2_4_8() -> None:
    row = survey([load_model(NANO)], Settings(), [1, 2, 4, 8]).models[0]
    vllm, stable = row.by_alignment("vllm"), row.by_alignment("tp-stable")
    assert vllm is not None and stable is not None
    assert row.valid_tps == (1, 2, 4, 8) and row.invalid_tps == ()
    assert (vllm.pairs, vllm.block_size_differs, vllm.ratio_not_one, vllm.not_divisible) == (
        16, 10, 10, 9,
    )  # fmt: skip
    assert dict(vllm.verdicts) == {"ok": 6, "drift": 0, "ratio": 1, "split": 1, "incompatible": 8}
    assert (stable.pairs, stable.block_size_differs, stable.ratio_not_one) == (16, 0, 0)
    assert stable.not_divisible == 0
    assert {(p.prefill_tp, p.prefill_block_size) for p in vllm.grid} == set(NANO_VLLM.items())
    # TP-stable padding: 0.58 %, 0.58 %, 101.15 %, 302.30 %
    assert dict(stable.padding_pct) == pytest.approx(NANO_STABLE_PAD)
    assert stable.padding_max_pct == pytest.approx(NANO_STABLE_PAD[8])  # 302.30 %
    assert stable.padding_median_pct == pytest.approx((NANO_STABLE_PAD[2] + NANO_STABLE_PAD[4]) / 2)
    assert vllm.padding_max_pct == pytest.approx(NANO_VLLM_PAD[4])  # 1.34 %
    # the common --block-size fix is the TP-1 block, padded like TP-stable
    assert row.fix_block_size == 2096
    assert row.fix_padding_max_pct == pytest.approx(NANO_STABLE_PAD[8])


def test_qwen35_27b_counts_with_invalid_tp16(nano_and_qwen: list[ModelSurvey]) -> None:
    row = nano_and_qwen[1]
    assert row.model_id == QWEN27
    assert row.valid_tps == (1, 2, 4, 8)
    assert row.invalid_tps == ((16, "heads not divisible by tensor parallel size"),)
    vllm, stable = row.by_alignment("vllm"), row.by_alignment("tp-stable")
    assert vllm is not None and stable is not None
    assert (vllm.pairs, vllm.block_size_differs, vllm.ratio_not_one, vllm.not_divisible) == (
        16, 6, 6, 6,
    )  # fmt: skip
    assert dict(vllm.verdicts)["split"] == 6
    assert (stable.block_size_differs, stable.ratio_not_one, stable.not_divisible) == (0, 0, 0)
    assert dict(stable.padding_pct) == pytest.approx(QWEN_STABLE_PAD)
    assert stable.padding_max_pct == pytest.approx(QWEN_STABLE_PAD[8])  # 100.26 %
    # sorted: 0.128, 0.128, 0.128, 100.26 -> the middle two are both 0.128 %
    assert stable.padding_median_pct == pytest.approx(QWEN_STABLE_PAD[1])


def test_summary_sums_models() -> None:
    # Both models over TP 1, 2, 4, 8: Nano 16 / 10 / 10 / 9 plus Qwen 16 / 6 / 6 / 6.
    result = survey([load_model(NANO), load_model(QWEN27)], Settings(), [1, 2, 4, 8])
    vllm, stable = result.summary_for("vllm"), result.summary_for("tp-stable")
    assert (vllm.pairs, vllm.block_size_differs, vllm.ratio_not_one, vllm.not_divisible) == (
        32, 16, 16, 15,
    )  # fmt: skip
    assert (stable.pairs, stable.block_size_differs, stable.not_divisible) == (32, 0, 0)
    pooled = list(NANO_STABLE_PAD.values()) + list(QWEN_STABLE_PAD.values())
    assert stable.padding_max_pct == pytest.approx(max(pooled))
    # 8 pooled values: median = mean of the 4th and 5th = Nano's TP-1/TP-2 padding (0.58 %)
    assert stable.padding_median_pct == pytest.approx(statistics.median(pooled))
    assert stable.padding_median_pct == pytest.approx(NANO_STABLE_PAD[1])
    assert result.models_with_pairs == 2


def test_nano_tp16_is_left_out_because_mamba2_cannot_load() -> None:
    # TP 16 passes vLLM's config check (32 heads, 64 Mamba heads divide), but n_groups = 8
    # is neither 1 nor divisible by 16, so MambaMixer2 refuses to load: TP 16 is not
    # counted and the grid is the TP 1,2,4,8 one (16 pairs, 10 differ, 9 not divisible).
    row = survey([load_model(NANO)], Settings(), [1, 2, 4, 8, 16]).models[0]
    vllm = row.by_alignment("vllm")
    assert vllm is not None
    assert (vllm.pairs, vllm.block_size_differs, vllm.not_divisible) == (16, 10, 9)
    assert [tp for tp, _ in row.invalid_tps] == [16]
    assert "MambaMixer2" in dict(row.invalid_tps)[16]


def test_attention_free_model_has_no_pairs() -> None:
    result = survey([load_model("tiiuae/falcon-mamba-7b")] * 2, Settings(), [1, 2])
    row = result.models[0]
    assert row.kind == "attention-free"
    assert row.stats == () and row.fix_block_size is None
    assert "no pairs to count" in row.note
    assert result.summary_for("vllm").pairs == 0
    assert result.models_with_pairs == 0


def test_model_that_rejects_settings_is_kept_with_reason() -> None:
    # KDA accepts only auto/float32/bfloat16 recurrent state: float16 is rejected for
    # Kimi-K3 but fine for Nemotron-3-Nano, whose row is still counted.
    settings = Settings(mamba_ssm_cache_dtype="float16")
    result = survey([load_model("moonshotai/Kimi-K3"), load_model(NANO)], settings, [1, 2])
    kimi, nano = result.models
    assert kimi.stats == () and kimi.note.startswith("skipped:")
    assert nano.stats and nano.stats[0].pairs == 4


def test_every_model_failing_raises() -> None:
    with pytest.raises(InvalidSettings):
        survey([load_model(NANO)], Settings(kv_cache_dtype="int3"), [1])


def test_empty_inputs_are_refused() -> None:
    with pytest.raises(InvalidSettings):
        survey([], Settings(), [1])
    with pytest.raises(InvalidSettings):
        survey([load_model(NANO)], Settings(), [])


# --- the fix column says "none" when no pair needs one (as check's "Fix: none needed") ----
# LFM2-1.2B (short conv only, no alignment growth): conv (C/TP) x (L-1) = (2048/TP) x 2 x 2 B
# is 8,192 B at TP 1, always below one 16-token attention page (8 KV heads x 128 x 2 B x 16
# = 32,768 B at TP 1), so vLLM keeps the 16-token block at every TP: 0 of 9 pairs differ and
# check prints "Fix: none needed". The common block size is still 16 (JSON keeps it), but
# the table, CSV and markdown must not print it as a fix (it used to show "16, 700 %").
# Nemotron-3-Nano over TP 1,2,4 needs one: TP 4 is 1056 vs 2096 (comment above) -> 2096.
def test_survey_fix_not_needed_when_every_pair_works() -> None:
    from kvalign.report.survey import model_cells, survey_csv, survey_to_dict

    lfm = load_model("LiquidAI/LFM2-1.2B")
    nano = load_model(NANO)
    result = survey([lfm, nano], Settings(), [1, 2, 4])
    lfm_row, nano_row = result.models
    vllm = lfm_row.by_alignment("vllm")
    assert vllm is not None and vllm.pairs == 9 and vllm.block_size_differs == 0
    assert lfm_row.fix_block_size == 16 and lfm_row.fix_needed is False
    assert nano_row.fix_block_size == 2096 and nano_row.fix_needed is True
    assert model_cells(lfm_row)[-3:-1] == ["none", "–"]
    assert model_cells(nano_row)[-3] == "2096"
    rows = survey_csv(result).splitlines()
    lfm_csv = next(r for r in rows if r.startswith("LiquidAI/LFM2-1.2B,"))
    assert lfm_csv.split(",")[-3:-1] == ["", ""]
    doc = survey_to_dict(result)["models"]
    assert doc[0]["fix"]["block_size"] == 16 and doc[0]["fix"]["needed"] is False
    assert doc[1]["fix"]["block_size"] == 2096 and doc[1]["fix"]["needed"] is True
