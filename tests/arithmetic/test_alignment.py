"""Hand-derived checks of the arithmetic (spec sections 2-7). Each expected number is
derived in the comment next to it from the config fields, not copied from the code."""

from __future__ import annotations

import pytest

from kvalign.alignment import (
    aligned_block_size,
    attention_page_bytes_per_token,
    kernel_block_size,
    kv_heads_per_rank,
    mamba_page,
    padding_pct,
    tp_stable_block_size,
)
from kvalign.backends import BACKENDS, get_gpu, resolve_backend
from kvalign.engine import create_engine_config
from kvalign.errors import InvalidSettings, NotModelled
from kvalign.families import mamba2
from kvalign.geometry import AttentionGeometry, ModelGeometry, StateGeometry
from kvalign.settings import Settings
from kvalign.sources import load_model
from tests.resolve import common_block_size_of, rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


@pytest.fixture(scope="module")
def nano() -> ModelGeometry:
    return load_model(NANO)


def test_nemotron_nano_worked_check(nano: ModelGeometry) -> None:
    # vLLM's MambaStateShapeCalculator: conv (4096 + 2*8*128) = 6144 x 3 x 2 B = 36,864;
    # ssm 64x64x128x4 B = 2,097,152
    page = mamba_page(nano, create_engine_config(nano, Settings()), 1)
    assert page.shapes == ((3, 6144), (64, 64, 128))
    assert page.dtypes == ("bfloat16", "float32")  # Nemotron-H: ssm auto -> float32
    assert page.page_bytes == 36_864 + 2_097_152 == 2_134_016
    # TP 4: G = 8 divides 4, conv 1536 x 3 x 2 = 9,216; ssm 16x64x128x4 = 524,288
    assert (
        mamba_page(nano, create_engine_config(nano, Settings()), 4).page_bytes
        == 9_216 + 524_288
        == 533_504
    )


def test_mamba2_group_padding() -> None:
    # G = 1 at TP 4 -> G' = 4 (extra = TP - G); G = 8 at TP 4 -> no padding
    assert mamba2.padded_groups(1, 4) == 4
    assert mamba2.padded_groups(8, 4) == 8
    assert mamba2.padded_groups(2, 8) == 8


def test_falcon_h1_group_padding_shapes() -> None:
    geo = load_model("tiiuae/Falcon-H1-0.5B-Base")
    # I = 1536, G = 1, N = 128: TP 1 conv 1536 + 2*1*128 = 1792; TP 2 (1536 + 2*2*128)/2 = 1024
    assert mamba_page(geo, create_engine_config(geo, Settings()), 1).shapes[0] == (3, 1792)
    assert mamba_page(geo, create_engine_config(geo, Settings()), 2).shapes == (
        (3, 1024),
        (12, 64, 128),
    )


def test_kv_heads_per_rank_replicates() -> None:
    attn = AttentionGeometry(num_attention_heads=32, total_kv_heads=2, head_size=128)
    assert [kv_heads_per_rank(attn, tp) for tp in (1, 2, 4, 8)] == [2, 1, 1, 1]
    mla = AttentionGeometry(32, 1, 576, use_mla=True)
    assert kv_heads_per_rank(mla, 8) == 1
    # MLA: one 576-element latent per token, no V: 576 x 2 B = 1152
    assert attention_page_bytes_per_token(mla, 8, 2) == 1152
    # ordinary: 2 heads x (128 + 128) x 1 B (fp8) = 512
    assert attention_page_bytes_per_token(attn, 1, 1) == 512


def test_falcon_h1_seed_block() -> None:
    # a = 2 x (64+64) x 2 = 512 B; m = 403,968; 16 x ceil(403968 / 8192 = 49.3) = 800
    block = aligned_block_size(
        512, 403_968, block_size=16, backend=BACKENDS["FLASH_ATTN"], use_mla=False
    )
    assert block == 800


def test_mla_floor_128() -> None:
    # Kimi-K3: a = 1152, m = 6,512,640; align 128: 128 x ceil(6512640 / 147456 = 44.2) = 5760
    block = aligned_block_size(
        1152, 6_512_640, block_size=16, backend=BACKENDS["FLASH_ATTN_MLA"], use_mla=True
    )
    assert block == 5760


def test_user_block_size_larger_than_needed_is_kept() -> None:
    # 4096 x 512 B covers a 403,968 B page already: vLLM keeps the user's 4096
    assert (
        aligned_block_size(
            512, 403_968, block_size=4096, backend=BACKENDS["FLASH_ATTN"], use_mla=False
        )
        == 4096
    )


def test_kernel_block_selection() -> None:
    # select_common_block_size: logical 4192 on FLASHINFER {16,32,64}: 4192/64 = 65.5,
    # 4192/32 = 131 -> 32
    assert kernel_block_size(4192, BACKENDS["FLASHINFER"]) == 32
    assert kernel_block_size(2112, BACKENDS["FLASHINFER"]) == 64  # 2112 = 64 x 33
    assert kernel_block_size(4192, BACKENDS["FLASH_ATTN"]) == 4192  # any multiple of 16
    assert kernel_block_size(200, BACKENDS["CUTLASS_MLA"]) is None  # 128 does not divide 200


def test_gdn_checkpoint_alignment_depends_on_gpu() -> None:
    geo = load_model("Qwen/Qwen3.5-27B")
    # a = 4 heads x 256 x 2 B = 4096? (head_dim 256, kv 4): 4 x (256+256) x 2 = 4096
    # m = 3,207,168; no checkpoint: 16 x ceil(3207168 / 65536 = 48.9) = 784
    assert rank_of(geo, Settings(), 1).block_size == 784
    # H100 + prefix caching: lcm(16, 64) = 64 -> 64 x ceil(3207168 / 262144 = 12.2) = 832
    assert create_engine_config(geo, Settings(gpu="H100")).checkpoint == 64
    assert rank_of(geo, Settings(gpu="H100"), 1).block_size == 832
    # prefix caching off: no checkpoint alignment even on H100
    assert rank_of(geo, Settings(gpu="H100", enable_prefix_caching=False), 1).block_size == 784
    assert create_engine_config(geo, Settings(gpu="A100")).checkpoint == 1
    assert create_engine_config(geo, Settings(gdn_prefill_backend="flashinfer")).checkpoint == 64
    assert (
        create_engine_config(geo, Settings(gpu="H100", gdn_prefill_backend="triton")).checkpoint
        == 1
    )


def test_tp_stable_not_grown_for_nano(nano: ModelGeometry) -> None:
    # TP 1 pages: a1 = 1024, m1 = 2,134,016 -> 16 x ceil(130.25) = 2096 at every TP where
    # 2096 x a_local >= m_local; at TP 8: a = 512, m = 266,752 -> 1,073,152 >= 266,752
    assert tp_stable_block_size(nano, create_engine_config(nano, Settings()), 8) == (2096, False)
    assert rank_of(nano, Settings(), 8).block_size == 528  # 16 x ceil(266752/8192=32.6)


def _synthetic(kv_heads: int = 8) -> ModelGeometry:
    # conv-heavy mamba2 layer: I=256, G=1, H=8, P=8, N=4096, K=4; attention 8 KV heads x 128
    return ModelGeometry(
        model_id="synthetic",
        model_type="nemotron_h",
        architecture="",
        config_path="-",
        source="test",
        loader="test",
        model_dtype="bfloat16",
        attention=AttentionGeometry(32, kv_heads, 128),
        state=StateGeometry("mamba2", {"I": 256, "G": 1, "H": 8, "P": 8, "N": 4096, "K": 4}),
    )


def test_tp_stable_grows_when_group_padding_outgrows_it() -> None:
    geo = _synthetic()
    # TP 1: conv (256 + 2*4096) = 8448 x 3 x 2 = 50,688; ssm 8x8x4096x2 = 524,288 -> 574,976
    # a1 = 8 x 256 x 2 = 4096 -> stable = 16 x ceil(574976/65536 = 8.77) = 144
    assert tp_stable_block_size(geo, create_engine_config(geo, Settings()), 1) == (144, False)
    # TP 8: G' = 8, conv (256 + 2*8*4096)/8 = 8224 x 6 = 49,344; ssm 1x8x4096x2 = 65,536
    # m = 114,880, a = 1 x 256 x 2 = 512; 144 x 512 = 73,728 < m -> grow to
    # 16 x ceil(114880 / 8192 = 14.02) = 240
    assert tp_stable_block_size(geo, create_engine_config(geo, Settings()), 8) == (240, True)


def test_common_block_size_for_reported_nemotron_pair(nano: ModelGeometry) -> None:
    settings = Settings(kv_cache_dtype="fp8_e4m3", block_size=32)
    found = common_block_size_of(nano, settings, [1, 4])
    assert found is not None
    block, padding = found
    # need max(ceil(2134016/512) = 4168, ceil(533504/256) = 2084) -> 16 x ceil(4168/16) = 4176
    assert block == 4176
    assert padding[1] == pytest.approx(100 * (4176 * 512 - 2_134_016) / 2_134_016)
    assert padding[4] == pytest.approx(100 * (4176 * 256 - 533_504) / 533_504)
    # and with --block-size 4176 both TPs really choose 4176
    fixed = Settings(kv_cache_dtype="fp8_e4m3", block_size=4176)
    assert rank_of(nano, fixed, 1).block_size == 4176
    assert rank_of(nano, fixed, 4).block_size == 4176


def test_padding_pct() -> None:
    # Qwen3-Next TP 2 public report: 544 x 1024 vs 548,864 -> 1.49 %
    assert padding_pct(544, 1024, 548_864) == pytest.approx(1.49, abs=0.005)


def test_kda_rejects_float16_recurrent_state() -> None:
    geo = load_model("moonshotai/Kimi-K3")
    with pytest.raises(InvalidSettings, match="KDA"):
        rank_of(geo, Settings(mamba_ssm_cache_dtype="float16"), 1)
    # bfloat16 recurrent state: 96x128x128x2 = 3,145,728 + conv 3x36864x2 = 221,184
    assert (
        mamba_page(
            geo, create_engine_config(geo, Settings(mamba_ssm_cache_dtype="bfloat16")), 1
        ).page_bytes
        == 3_366_912
    )


def test_packed_kv_dtype_is_not_modelled(nano: ModelGeometry) -> None:
    with pytest.raises(NotModelled, match="nvfp4"):
        rank_of(nano, Settings(kv_cache_dtype="nvfp4"), 1)
    with pytest.raises(InvalidSettings, match="unknown value"):
        rank_of(nano, Settings(kv_cache_dtype="fp7"), 1)


def test_indivisible_state_is_invalid_not_a_crash() -> None:
    geo = _synthetic()
    # H = 8 does not divide by 16 (heads 32 do): invalid with a reason naming H
    result = rank_of(geo, Settings(), 16)
    assert not result.valid
    assert "mamba heads H = 8" in result.reason


def test_heads_not_divisible_is_invalid() -> None:
    geo = load_model("tiiuae/Falcon-H1-0.5B-Base")  # 8 attention heads
    result = rank_of(geo, Settings(), 16)
    assert (result.valid, result.reason) == (False, "heads not divisible by tensor parallel size")


def test_backend_resolution() -> None:
    assert resolve_backend("flashinfer", use_mla=True, gqa=False, gpu=None).name == "FLASHINFER_MLA"
    b200 = resolve_backend("FLASHINFER", use_mla=False, gqa=True, gpu=get_gpu("B200"))
    assert 1024 in b200.sizes
    assert resolve_backend("FLASHINFER", use_mla=False, gqa=True, gpu=get_gpu("H100")).sizes == (
        16,
        32,
        64,
    )
    with pytest.raises(InvalidSettings, match="unknown backend"):
        resolve_backend("NOPE", use_mla=False, gqa=False, gpu=None)
    with pytest.raises(InvalidSettings, match="MLA models only"):
        resolve_backend("CUTLASS_MLA", use_mla=False, gqa=False, gpu=None)
    with pytest.raises(InvalidSettings, match="unknown GPU"):
        get_gpu("Z80")


def test_preferred_block_size_when_unset() -> None:
    # CUTLASS_MLA supports only 128: the block before alignment is 128, not 16
    assert BACKENDS["CUTLASS_MLA"].preferred_block_size() == 128
    assert BACKENDS["ROCM_AITER_UNIFIED_ATTN"].preferred_block_size() == 64
    assert BACKENDS["FLASHINFER"].preferred_block_size() == 16


def test_attention_free_has_no_block() -> None:
    geo = load_model("tiiuae/falcon-mamba-7b")
    result = rank_of(geo, Settings(), 1)
    assert result.attention_free and result.block_size is None
    # mamba1: conv (3, 8192) x 2 B = 49,152; ssm 8192 x 16 x 2 B = 262,144
    assert result.mamba_page_bytes == 49_152 + 262_144


def test_mamba2_group_rule_is_a_load_error_not_a_config_error(nano: ModelGeometry) -> None:
    # TP 16 passes vLLM's config check (oracle: valid) and sizes normally: G' = 16,
    # conv (4096 + 2*16*128)/16 = 512 x 3 x 2 = 3,072; ssm 4x64x128x4 = 131,072 -> 134,144;
    # a = 512 -> 16 x ceil(134144 / 8192 = 16.4) = 272. But n_groups = 8 is neither 1 nor
    # divisible by 16: MambaMixer2 refuses to load, so the TP is not usable.
    rank = rank_of(nano, Settings(), 16)
    assert rank.valid and rank.block_size == 272
    assert not rank.usable
    assert "n_groups G = 8" in rank.load_error and rank.problem == rank.load_error
    # G = 1 (Falcon-H1) replicates groups and loads at any TP that divides the heads
    assert rank_of(load_model("tiiuae/Falcon-H1-0.5B-Base"), Settings(), 8).usable


def test_gdn_key_heads_must_shard() -> None:
    geo = load_model("Qwen/Qwen3.5-397B-A17B")  # 32 attention heads, 16 key heads
    rank = rank_of(geo, Settings(), 32)
    assert rank.valid and not rank.usable
    assert "linear_num_key_heads Hk = 16" in rank.load_error
    assert rank_of(geo, Settings(), 16).usable


def test_kv_heads_and_tp_must_divide_one_way() -> None:
    # QKVParallelLinear: 3 KV heads at TP 2 neither split (3 % 2) nor replicate (2 % 3)
    geo = _synthetic(kv_heads=3)
    assert "num_key_value_heads = 3" in rank_of(geo, Settings(), 2).load_error
    assert rank_of(geo, Settings(), 1).usable
    # 2 KV heads at TP 8: replicated 4 times, loads
    assert rank_of(_synthetic(kv_heads=2), Settings(), 8).load_error == ""
