"""Golden tests per vLLM release profile, with hand-derived expected values.

Facts per profile come from the released source (see docs/versions.md). Pages used below:

* Nemotron-3-Nano-30B-A3B (bf16, 2 KV heads of 128, mamba2 I=4096 G=8 H=64 P=64 N=128 K=4,
  config ``mamba_ssm_cache_dtype: float32``, ``chunk_size: 128``), TP 1:
  a = 2 * (128 + 128) * 2 B = 1,024 B/token;
  conv = (4096 + 2*8*128) * 3 * 2 B = 36,864 B;
  ssm = 64*64*128 * 4 B (float32) = 2,097,152 B  → m = 2,134,016 B;
  on releases without the Nemotron-H dtype override (≤ 0.12) the ssm state is bf16:
  64*64*128 * 2 B = 1,048,576 B → m = 1,085,440 B.
* Qwen3-Next-80B-A3B (bf16, 2 KV heads of 256; GDN Hk=16 Hv=32 Dk=Dv=128 K=4), TP 2:
  a = 1 * (256 + 256) * 2 B = 1,024 B/token;
  conv = (2*16*128 + 32*128)/2 * 3 * 2 B = 24,576 B; recurrent = 16*128*128 * 2 B
  = 524,288 B → m = 548,864 B; ceil(m / a) = 536 tokens.
"""

from __future__ import annotations

import pytest

from kvalign.alignment import RankResult, derive_block, mamba_page
from kvalign.backends import BACKENDS
from kvalign.engine import create_engine_config
from kvalign.errors import UnsupportedModel
from kvalign.pd import analyze_pair
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import PROFILES, newest, profile_named, resolve
from tests.conftest import geometry_for
from tests.resolve import rank_of

NANO = "hf-configs/nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json"
QWEN3_NEXT = "hf-configs/Qwen__Qwen3-Next-80B-A3B-Instruct/config.json"


def _rank(config: str, tp: int, **settings: object) -> RankResult:
    result = rank_of(geometry_for(config), Settings(**settings), tp)  # type: ignore[arg-type]
    assert result.valid
    return result


def test_profiles_are_ordered_and_resolve_by_release() -> None:
    firsts = [p.first for p in PROFILES]
    assert firsts == sorted(firsts, key=lambda v: tuple(int(x) for x in v.split(".")))
    assert resolve("0.10.2").profile.name == "0.10"
    assert resolve("0.11.0").profile.name == "0.10"
    assert resolve("0.11.1").profile.name == "0.11.1"
    assert resolve("0.12.0").profile.name == "0.12"
    assert resolve("0.16.0").profile.name == "0.15"
    assert resolve("0.17.1").profile.name == "0.17"
    assert resolve("0.19.1").profile.name == "0.18"
    assert resolve("0.23.0").profile.name == "0.22"
    assert resolve("0.27.1").profile.name == "0.27"
    assert resolve("0.28.1").profile.name == "0.28"
    assert resolve("0.29.0").profile.name == "0.29"
    assert resolve("0.31.0").profile.name == "0.30"
    assert resolve("0.32.0").profile.name == "0.32"
    assert resolve("0.33.0").profile.name == "0.33"
    # the release asked for is kept (architecture checks use it, not the profile's first)
    assert resolve("v0.27.1").release == "0.27.1"
    assert resolve(None).release == newest().first


def test_0_10_fixed_alignment_no_dtype_override_no_kernel_split() -> None:
    # ≤ 0.11.0: no Nemotron-H override → ssm bf16, m = 1,085,440 B;
    # block = 16 * ceil(1,085,440 / (16 * 1,024)) = 16 * 67 = 1,072; kernel = logical.
    r = _rank(NANO, 1, vllm_version="0.10.2")
    assert r.mamba_state_dtypes == ("bfloat16", "bfloat16")
    assert r.mamba_page_bytes == 1_085_440
    assert r.block_size == 1072
    assert r.kernel_block_size == 1072
    # prefix caching does not enter the 0.10 hook
    assert _rank(NANO, 1, vllm_version="0.10.2", enable_prefix_caching=False).block_size == 1072


def test_0_10_ignores_user_block_size_as_unit_but_keeps_larger_one() -> None:
    # the fixed unit stays 16; --block-size 32 is below the aligned 1,072 → overridden
    assert _rank(NANO, 1, vllm_version="0.10.2", block_size=32).block_size == 1072
    # a user block above the aligned one is kept as is (even if not a multiple of 16)
    assert _rank(NANO, 1, vllm_version="0.10.2", block_size=1100).block_size == 1100


def test_mid_release_chunk_alignment_with_prefix_caching() -> None:
    # 0.14: Nemotron-H supports Mamba prefix caching → chunk mode:
    # ceil(2,134,016 / 1,024) = 2,084 tokens → lcm(128, 16) = 128 → 128 * 17 = 2,176.
    r = _rank(NANO, 1, vllm_version="0.14.0", enable_prefix_caching=True)
    assert r.mamba_page_bytes == 2_134_016
    assert r.block_size == 2176
    assert r.derivation is not None and r.derivation.chunk == 128
    # without prefix caching: 16 * ceil(2,084 / 16) = 16 * 131 = 2,096 (as 0.33)
    assert _rank(NANO, 1, vllm_version="0.14.0", enable_prefix_caching=False).block_size == 2096
    # platform era before 0.32 keeps chunk mode: unit lcm(max(16, 16), 128) = 128 → 2,176
    assert _rank(NANO, 1, vllm_version="0.27.0", enable_prefix_caching=True).block_size == 2176
    # 0.32 dropped cache mode "all": back to 2,096
    assert _rank(NANO, 1, vllm_version="0.32.0").block_size == 2096


def test_gdn_is_not_chunk_aligned_and_public_boot_logs_match() -> None:
    # Qwen3-Next has no Mamba prefix-caching support: 16 * ceil(536 / 16) = 544 on 0.10,
    # 0.19 and 0.33 alike (boot log on 0.10.2: 544 tokens, padding 1.49 %)
    for version in ("0.10.2", "0.19.1", "0.33.0"):
        r = _rank(QWEN3_NEXT, 2, vllm_version=version)
        assert r.block_size == 544
        assert r.mamba_padding_pct == pytest.approx(100 * (544 * 1024 - 548_864) / 548_864)


def test_gdn_checkpoint_alignment_only_on_0_33() -> None:
    # H100 → FlashInfer GDN prefill: lcm(16, 64) = 64 → 64 * ceil(536 / 64) = 576 on 0.33
    assert _rank(QWEN3_NEXT, 2, gpu="H100").block_size == 576
    # 0.32 has no checkpoint alignment: 544
    assert _rank(QWEN3_NEXT, 2, gpu="H100", vllm_version="0.32.0").block_size == 544


def test_backend_preferred_block_only_in_platform_era() -> None:
    # ROCM_AITER_UNIFIED_ATTN prefers 64: platform era unit 64 → 64 * ceil(536/64) = 576;
    # the 0.19 hook ignores the backend: 544
    assert _rank(QWEN3_NEXT, 2, attention_backend="ROCM_AITER_UNIFIED_ATTN").block_size == 576
    v19 = _rank(QWEN3_NEXT, 2, attention_backend="ROCM_AITER_UNIFIED_ATTN", vllm_version="0.19.1")
    assert v19.block_size == 544


@pytest.mark.parametrize(
    ("profile", "backend", "expected"),
    [
        # a = 1,000 B, m = 100,000 B → 100 tokens needed
        ("0.25", "FLASH_ATTN_MLA", 112),  # platform, no MLA floor: 16 * 7
        ("0.27", "FLASH_ATTN_MLA", 128),  # MLA ≥ 128 floor
        ("0.14", "FLASH_ATTN_MLA", 128),  # hook: fixed MLA unit 64 → 64 * 2
        ("0.14", "CUTLASS_MLA", 128),  # hook: CUTLASS_MLA unit 128
        ("0.14", "FLASHMLA", 128),
    ],
)
def test_mla_alignment_per_release(profile: str, backend: str, expected: int) -> None:
    d = derive_block(
        1000,
        100_000,
        base_block=16,
        backend=BACKENDS[backend],
        use_mla=True,
        profile=profile_named(profile),
    )
    assert d.block == expected


def test_mla_hybrid_refused_before_0_11_1() -> None:
    with pytest.raises(UnsupportedModel, match=r"0\.11\.1"):
        derive_block(
            1000,
            100_000,
            base_block=16,
            backend=BACKENDS["FLASH_ATTN_MLA"],
            use_mla=True,
            profile=profile_named("0.10"),
        )


def test_backend_lcm_rounding_from_0_32() -> None:
    # --block-size 24 on FLASH_ATTN: unit max(16, 24) = 24, 100 tokens → 24 * 5 = 120;
    # 0.32+ rounds up to a multiple of 16 → 128
    kwargs = {"base_block": 24, "backend": BACKENDS["FLASH_ATTN"], "use_mla": False}
    assert derive_block(1000, 100_000, profile=profile_named("0.27"), **kwargs).block == 120  # type: ignore[arg-type]
    assert derive_block(1000, 100_000, profile=profile_named("0.32"), **kwargs).block == 128  # type: ignore[arg-type]


def test_blackwell_head_256_flashinfer_unit_in_hook_era() -> None:
    # 0.11.1-0.17 on SM100 with FlashInfer and head size 256: unit 32. 520 tokens needed:
    # 32 * ceil(520 / 32) = 544, where the fixed 16 unit would give 16 * 33 = 528.
    d = derive_block(
        1000,
        520_000,
        base_block=16,
        backend=BACKENDS["FLASHINFER"],
        use_mla=False,
        profile=profile_named("0.14"),
        head_size=256,
        blackwell=True,
    )
    assert d.unit == 32 and d.block == 544  # 32 * ceil(520 / 32) = 32 * 17
    assert d.block != 16 * -(-520 // 16)  # the 16-unit answer would be 528


def _side(tp: int, block: int) -> RankResult:
    return RankResult(tp=tp, valid=True, block_size=block, kernel_block_size=block,
                      mamba_page_bytes=1)  # fmt: skip


@pytest.mark.parametrize(
    ("version", "p", "d", "verdict"),
    [
        ("0.17.0", (1, 544), (1, 544), "incompatible"),  # NIXL lacks SupportsHMA
        ("0.19.1", (1, 544), (2, 544), "incompatible"),  # Mamba needs equal TP
        ("0.19.1", (1, 544), (1, 544), "ok"),
        ("0.25.0", (2, 544), (1, 1088), "incompatible"),  # hybrid: equal blocks required
        ("0.27.0", (2, 544), (1, 1088), "ratio"),  # hetero blocks tolerated
        ("0.32.0", (2, 800), (1, 1200), "incompatible"),  # no gcd split yet
        ("0.33.0", (2, 800), (1, 1200), "split"),  # gcd 400, 3 units ≤ 128
    ],
)
def test_nixl_capabilities_per_release(
    version: str, p: tuple[int, int], d: tuple[int, int], verdict: str
) -> None:
    pair = analyze_pair(_side(*p), _side(*d), "vllm", resolve(version).profile)
    assert pair.verdict == verdict, pair.reason


def test_tp_stable_alignment_available_on_every_profile() -> None:
    for profile in PROFILES:
        r = _rank(QWEN3_NEXT, 2, vllm_version=profile.first, alignment="tp-stable")
        assert r.tp_stable_block_size is not None


def test_nemotron_ssm_fallback_follows_the_release_when_config_names_none() -> None:
    # Nemotron-H-56B's config.json has no mamba_ssm_cache_dtype (transformers' class
    # default float32 must not hide vLLM's fallback): float16 on 0.14-0.19, float32 from
    # 0.20. ssm state 256 heads x 64 x 256 = 4,194,304 elements -> 8 MiB vs 16 MiB.
    geo = load_model("nvidia/Nemotron-H-56B-Base-8K")
    assert geo.ssm_dtype_fallback
    old = mamba_page(geo, create_engine_config(geo, Settings(vllm_version="0.16.0")), 1)
    new = mamba_page(geo, create_engine_config(geo, Settings()), 1)
    assert old.dtypes == ("bfloat16", "float16") and new.dtypes == ("bfloat16", "float32")
    assert new.page_bytes - old.page_bytes == 4_194_304 * 2
    # Nemotron-3-Nano names float32 in its config: no fallback on any release
    assert not load_model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").ssm_dtype_fallback
