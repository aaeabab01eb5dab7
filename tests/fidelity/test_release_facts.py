"""Release facts of the profiles, each with a hand-derived value.

Every boundary was read in the release's source (``docs/versions.md`` names the releases on
each side); the numbers are derived below from the bundled configs. Pages used:

* Nemotron-3-Nano-30B-A3B (bf16, 2 KV heads of 128; mamba2 I=4096 G=8 H=64 P=64 N=128 K=4,
  config ``mamba_ssm_cache_dtype: float32``, ``chunk_size: 128``):
  TP 1: a = 2·(128+128)·2 = 1,024 B; m = 36,864 + 2,097,152 = 2,134,016 B; ⌈m/a⌉ = 2,084.
  TP 4: a = 1·256·2 = 512 B; conv (6,144/4)·3·2 = 9,216 B, ssm 16·64·128·4 = 524,288 B →
  m = 533,504 B; ⌈m/a⌉ = 1,042. With one speculative token the conv state is 4 rows:
  12,288 B → m = 536,576 B, ⌈m/a⌉ = 1,048.
* Qwen3-Next-80B-A3B (bf16, 2 KV heads of 256; GDN Hk=16 Hv=32 Dk=Dv=128 K=4):
  TP 4: a = 1·512·2 = 1,024 B; conv (8,192/4)·3·2 = 12,288 B, recurrent 8·128·128·2 =
  262,144 B → m = 274,432 B, ⌈m/a⌉ = 268. TP 2: a = 1,024 B, m = 548,864 B (bf16
  recurrent) → 536; with a float32 recurrent state 24,576 + 1,048,576 = 1,073,152 B → 1,048.
* Kimi-K3 (MLA 576, bf16; KDA H=Hk=96 D=Dk=128 K=4), TP 4: a = 576·2 = 1,152 B; conv
  (36,864/4)·3·2 = 55,296 B; recurrent 24·128·128 = 393,216 elements: float32 1,572,864 B
  (m = 1,628,160 B, ⌈m/a⌉ = 1,414), bf16 786,432 B (m = 841,728 B, ⌈m/a⌉ = 731).
"""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from kvalign.alignment import RankResult
from kvalign.cli import app
from kvalign.engine import create_engine_config
from kvalign.errors import InvalidSettings, UnsupportedModel
from kvalign.pd import analyze
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import PROFILES, architecture_problem
from tests.resolve import rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
LIGHTNING = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
KIMI = "moonshotai/Kimi-K3"
runner = CliRunner()


def _rank(model: str, tp: int, **settings: object) -> RankResult:
    result = rank_of(load_model(model), Settings(**settings), tp)  # type: ignore[arg-type]
    assert result.usable, result.problem
    return result


def _blocks(model: str, tp: int, **settings: object) -> tuple[int | None, int | None]:
    r = _rank(model, tp, **settings)
    return r.block_size, r.kernel_block_size


# ---- prefix caching default for hybrids -----------------------------------------------------
@pytest.mark.parametrize(
    ("version", "default_on"),
    [("0.11.1", False), ("0.14.0", False), ("0.20.0", False), ("0.27.1", False),
     ("0.28.0", True), ("0.33.0", True)],
)  # fmt: skip
def test_hybrid_prefix_caching_default(version: str, default_on: bool) -> None:
    # 0.11.1-0.27.x: ModelConfig.is_prefix_caching_supported (and 0.27's "not is_hybrid")
    # keep hybrid prefix caching opt-in; from 0.28 it is on by default
    engine = create_engine_config(load_model(NANO), Settings(vllm_version=version))
    assert engine.prefix_caching is default_on


def test_prefix_caching_off_means_no_chunk_alignment() -> None:
    # 0.14.0 TP 4: 16 · ⌈1,042 / 16⌉ = 1,056 (not lcm(128, 16) · ⌈1,042 / 128⌉ = 1,152)
    assert _rank(NANO, 4, vllm_version="0.14.0").block_size == 1056
    assert _rank(NANO, 4, vllm_version="0.14.0", enable_prefix_caching=True).block_size == 1152


# ---- Mamba cache mode --------------------------------------------------------------------------
def test_spec_decoding_switches_to_align_only_in_0_20_and_0_21() -> None:
    spec = {"num_speculative_tokens": 1, "enable_prefix_caching": True}
    # 'align': 16 · ⌈1,048 / 16⌉ = 1,056; 'all': 128 · ⌈1,048 / 128⌉ = 1,152
    for version, block in (("0.17.0", 1152), ("0.20.0", 1056), ("0.21.0", 1056), ("0.22.0", 1152)):
        assert _rank(NANO, 4, vllm_version=version, **spec).block_size == block, version
    # no prefix-caching flag on 0.20.0 → off → 1,056 as well
    assert _rank(NANO, 4, vllm_version="0.20.0", num_speculative_tokens=1).block_size == 1056


def test_public_boot_log_lightning_0_27_1_align() -> None:
    # vLLM issue 53749: --enable-prefix-caching --mamba-cache-mode align on 0.27.1, TP 1 →
    # 2,096 (16 · ⌈2,084 / 16⌉; the Lightning checkpoint has Nano's state geometry)
    args = ["explain", LIGHTNING, "--tp", "1", "--vllm-version", "0.27.1",
            "--enable-prefix-caching", "--mamba-cache-mode", "align"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "Result: block size 2,096 tokens" in result.stdout
    # default mode for Nemotron-H on 0.27 is 'all': 128 · ⌈2,084 / 128⌉ = 2,176
    assert _rank(LIGHTNING, 1, vllm_version="0.27.1", enable_prefix_caching=True).block_size == 2176


def test_mamba_block_size_replaces_the_chunk_in_mode_all() -> None:
    # lcm(256, 16) = 256 → 256 · ⌈2,084 / 256⌉ = 2,304
    r = _rank(NANO, 1, vllm_version="0.27.1", enable_prefix_caching=True, mamba_block_size=256)
    assert r.block_size == 2304
    # in 'align' it does not move the block
    r = _rank(NANO, 1, vllm_version="0.27.1", enable_prefix_caching=True,
              mamba_cache_mode="align", mamba_block_size=256)  # fmt: skip
    assert r.block_size == 2096


@pytest.mark.parametrize(
    ("version", "mode", "message"),
    [("0.14.0", "align", "no such flag"), ("0.32.0", "all", "accepts only none, align"),
     ("0.27.1", "fast", "unknown value")],
)  # fmt: skip
def test_mamba_cache_mode_refused_where_vllm_refuses(version: str, mode: str, message: str) -> None:
    with pytest.raises(InvalidSettings, match=message):
        create_engine_config(
            load_model(NANO), Settings(vllm_version=version, mamba_cache_mode=mode)
        )


def test_mamba_cache_mode_is_a_noop_in_0_33() -> None:
    engine = create_engine_config(load_model(NANO), Settings(mamba_cache_mode="none"))
    assert engine.mamba_cache_mode == "align"  # follows prefix caching (on)
    assert "deprecated no-op" in {r.key: r.source for r in engine.resolutions}["mamba_cache_mode"]


# ---- Blackwell head-size-256 rule --------------------------------------------------------------
@pytest.mark.parametrize(
    ("gpu", "backend", "version", "block"),
    [
        # 16 · ⌈268 / 16⌉ = 272; with the 32 unit: 32 · ⌈268 / 32⌉ = 288
        ("B200", "FLASHINFER", "0.12.0", 288),
        ("B300", "FLASHINFER", "0.12.0", 272),  # 0.11.1-0.12: capability == 10.0 only
        ("B300", "FLASHINFER", "0.13.0", 288),  # 0.13-0.17: the 10.x family
        ("B200", "auto", "0.14.0", 288),  # no backend named: the rule fires too
        ("B200", "FLASH_ATTN", "0.14.0", 272),
        ("B200", "FLASHINFER", "0.17.0", 288),
        ("B200", "FLASHINFER", "0.18.1", 272),  # gone from 0.18.0
    ],
)
def test_blackwell_head_256_rule(gpu: str, backend: str, version: str, block: int) -> None:
    r = _rank(QWEN3_NEXT, 4, gpu=gpu, attention_backend=backend, vllm_version=version)
    assert r.block_size == block


# ---- state dtype flags ---------------------------------------------------------------------
def test_gdn_ignores_the_ssm_dtype_flag_before_0_17() -> None:
    # 0.14: 16 · ⌈536 / 16⌉ = 544 (recurrent stays bf16); 0.17: 16 · ⌈1,048 / 16⌉ = 1,056
    old = _rank(QWEN3_NEXT, 2, mamba_ssm_cache_dtype="float32", vllm_version="0.14.0")
    assert (old.block_size, old.mamba_state_dtypes) == (544, ("bfloat16", "bfloat16"))
    new = _rank(QWEN3_NEXT, 2, mamba_ssm_cache_dtype="float32", vllm_version="0.17.0")
    assert (new.block_size, new.mamba_state_dtypes) == (1056, ("bfloat16", "float32"))


def test_kda_ignores_the_ssm_dtype_flag_before_0_30() -> None:
    # MLA floor 128: float32 → 128 · ⌈1,414 / 128⌉ = 1,536; bf16 → 128 · ⌈731 / 128⌉ = 768
    assert (
        _rank(KIMI, 4, mamba_ssm_cache_dtype="bfloat16", vllm_version="0.27.1").block_size == 1536
    )
    assert _rank(KIMI, 4, mamba_ssm_cache_dtype="bfloat16", vllm_version="0.30.0").block_size == 768
    # float16 is accepted silently before 0.30 (state stays float32), refused from 0.30
    assert _rank(KIMI, 4, mamba_ssm_cache_dtype="float16", vllm_version="0.27.1").block_size == 1536
    with pytest.raises(InvalidSettings, match="KDA recurrent state"):
        _rank(KIMI, 4, mamba_ssm_cache_dtype="float16", vllm_version="0.30.0")


# ---- kernel block sizes -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("version", "kernel"),
    # 1,056 = 32 · 33: FLASH_ATTN's 16/32/64 leave 32 (0.12-0.24, float32 ssm state);
    # MultipleOf(16) takes 1,056 itself from 0.25
    [("0.12.0", 32), ("0.14.0", 32), ("0.20.0", 32), ("0.24.0", 32), ("0.25.0", 1056)],
)
def test_flash_attn_kernel_sizes_with_a_float32_state(version: str, kernel: int) -> None:
    # (0.12-0.13 have no Nemotron-H dtype override: the float32 state is asked for explicitly)
    kwargs = {"vllm_version": version, "enable_prefix_caching": False,
              "mamba_ssm_cache_dtype": "float32"}  # fmt: skip
    assert _blocks(NANO, 4, **kwargs) == (1056, kernel)


def test_flash_attn_kernel_sizes_in_0_11_1_for_every_model() -> None:
    # Qwen3-Next TP 4 keeps a bf16 state: 272 = 16 · 17 → 16 on 0.11.1 (16/32/64 for all),
    # 272 itself on 0.12 (MultipleOf(16): the restriction needs a float32 state)
    assert _blocks(QWEN3_NEXT, 4, vllm_version="0.11.1") == (272, 16)
    assert _blocks(QWEN3_NEXT, 4, vllm_version="0.12.0") == (272, 272)


def test_nixl_compares_kernel_blocks_p2_d8_on_0_20() -> None:
    # TP 2: a = 512 B, m = 1,067,008 B → 16 · ⌈2,084 / 16⌉ = 2,096 = 16 · 131;
    # TP 8: 528 = 16 · 33; both kernels 16 → ratio 1 (prefix drift only), not a failure
    report = analyze(load_model(NANO), Settings(vllm_version="0.20.0"), [2], [8])
    (pair,) = report.pairs
    assert (pair.prefill_block_size, pair.decode_block_size) == (2096, 528)
    assert (pair.prefill_kernel_block_size, pair.decode_kernel_block_size) == (16, 16)
    assert pair.verdict == "drift"


def test_flashinfer_large_pages_from_0_24() -> None:
    # B200, prefix caching on, mode 'all': 1,152 = 128 · 9 → 64 with 16/32/64, 128 with
    # the large pages (GQA: 32 query heads over 2 KV heads; TRT-LLM cubins assumed present,
    # as vLLM 0.25 installs flashinfer-cubin — see docs/versions.md)
    kwargs = {"gpu": "B200", "attention_backend": "FLASHINFER", "enable_prefix_caching": True}
    assert _blocks(NANO, 4, vllm_version="0.20.0", **kwargs) == (1152, 64)
    assert _blocks(NANO, 4, vllm_version="0.24.0", **kwargs) == (1152, 128)


def test_cpu_platform_does_no_hybrid_alignment_in_0_20_0() -> None:
    kwargs = {"gpu": "CPU", "attention_backend": "CPU_ATTN", "enable_prefix_caching": False}
    # 0.20.0: the CPU block stays at CPU_ATTN's 128; 0.21.0: 128 · ⌈2,084 / 128⌉ = 2,176
    assert _blocks(NANO, 1, vllm_version="0.20.0", **kwargs) == (128, 128)
    assert _blocks(NANO, 1, vllm_version="0.21.0", **kwargs) == (2176, 2176)


# ---- attention backend left unset ---------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "gpu", "version", "backend"),
    [
        (QWEN3_NEXT, None, "0.33.0", "FLASH_ATTN"),
        (QWEN3_NEXT, "H100", "0.33.0", "FLASH_ATTN"),
        (QWEN3_NEXT, "B200", "0.33.0", "FLASHINFER"),  # cuda.py: SM100 lists FlashInfer first
        (QWEN3_NEXT, "CPU", "0.33.0", "CPU_ATTN"),
        (QWEN3_NEXT, "MI300X", "0.33.0", "TRITON_ATTN"),
        (KIMI, "B200", "0.14.0", "CUTLASS_MLA"),  # MLA on SM100: CUTLASS first until 0.14
        (KIMI, "B200", "0.33.0", "FLASHINFER_MLA"),
        (KIMI, "H100", "0.33.0", "FLASH_ATTN_MLA"),
        (KIMI, "A100", "0.33.0", "TRITON_MLA"),  # FlashAttention-MLA/FlashMLA need SM90+
    ],
)
def test_backend_vllm_would_choose(model: str, gpu: str | None, version: str, backend: str) -> None:
    if model == KIMI and version == "0.14.0":
        # Kimi-K3 is unknown to 0.14: check the choice on its geometry renamed to Kimi-Linear
        geometry = dataclasses.replace(load_model(model), architecture="KimiLinearForCausalLM")
    else:
        geometry = load_model(model)
    engine = create_engine_config(geometry, Settings(gpu=gpu, vllm_version=version))
    assert engine.backend is not None and engine.backend.name == backend


# ---- architectures -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "unknown", "known"),
    [("Qwen/Qwen3.5-27B", "0.14.0", "0.17.0"), (KIMI, "0.26.0", "0.27.0"),
     ("Qwen/Qwen3.8-2.4T-A95B", "0.14.0", "0.27.0")],
)  # fmt: skip
def test_architecture_unknown_to_a_release(model: str, unknown: str, known: str) -> None:
    geometry = load_model(model)
    with pytest.raises(UnsupportedModel, match=f"vLLM {unknown} does not know this architecture"):
        create_engine_config(geometry, Settings(vllm_version=unknown))
    create_engine_config(geometry, Settings(vllm_version=known))


def test_bamba_removed_in_0_24() -> None:
    assert architecture_problem("BambaForCausalLM", "0.23.0") == ""
    assert "removed in vLLM 0.24.0" in architecture_problem("BambaForCausalLM", "0.24.0")
    assert architecture_problem("NemotronHForCausalLM", "0.10.0") == ""


def test_unknown_architecture_cli_is_one_line_exit_2() -> None:
    result = runner.invoke(app, ["check", "Qwen/Qwen3.5-27B", "--vllm-version", "0.14.0"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "vLLM 0.14.0 does not know this architecture" in result.stderr


# ---- kv-cache dtype from the checkpoint ------------------------------------------------------
def test_kv_cache_dtype_from_checkpoint_from_0_14() -> None:
    # resolve_kv_cache_dtype_string is called by create_engine_config from 0.14.0 (absent in
    # 0.11.1-0.13.0). An fp8 KV cache halves a: TP 4 a = 256 B → 16 · ⌈2,084 / 16⌉ = 2,096
    geometry = dataclasses.replace(load_model(NANO), checkpoint_kv_cache_dtype="fp8")
    kwargs = {"enable_prefix_caching": False, "mamba_ssm_cache_dtype": "float32"}
    old = rank_of(geometry, Settings(vllm_version="0.13.0", **kwargs), 4)  # type: ignore[arg-type]
    new = rank_of(geometry, Settings(vllm_version="0.14.0", **kwargs), 4)  # type: ignore[arg-type]
    assert (old.attn_page_bytes_per_token, old.block_size) == (512, 1056)
    assert (new.attn_page_bytes_per_token, new.block_size) == (256, 2096)
    first = next(p for p in PROFILES if p.kv_cache_dtype_from_checkpoint)
    assert first.first == "0.14.0"


# ---- NIXL per release ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("version", "p", "d", "verdict"),
    [("0.17.0", 4, 4, "incompatible"), ("0.18.1", 4, 4, "ok"), ("0.18.1", 2, 4, "incompatible"),
     ("0.20.0", 4, 4, "ok")],
)  # fmt: skip
def test_nixl_serves_hybrids_from_0_18(version: str, p: int, d: int, verdict: str) -> None:
    report = analyze(load_model(NANO), Settings(vllm_version=version), [p], [d])
    assert report.pairs[0].verdict == verdict, report.pairs[0].reason


# ---- --max-model-len -----------------------------------------------------------------------
def test_max_model_len_below_one_block_is_noted() -> None:
    report = analyze(load_model(NANO), Settings(max_model_len=2000), [1], [4])
    # TP 1 block 2,096 > 2,000; TP 4 block 1,056 fits
    (note,) = [n for n in report.notes if "--max-model-len" in n]
    assert "TP 1 (2,096-token blocks)" in note and "TP 4" not in note


def test_mamba2_conv_state_speculative_rows_from_0_17() -> None:
    # 0.14-0.16: mamba2_state_shape has no num_spec → conv 3 rows, m = 533,504 B;
    # 0.17: 4 rows → 12,288 + 524,288 = 536,576 B
    old = _rank(NANO, 4, vllm_version="0.16.0", num_speculative_tokens=1)
    new = _rank(NANO, 4, vllm_version="0.17.0", num_speculative_tokens=1)
    assert (old.mamba_page_bytes, old.mamba_state_shapes[0][0]) == (533_504, 3)
    assert (new.mamba_page_bytes, new.mamba_state_shapes[0][0]) == (536_576, 4)


@pytest.mark.parametrize(
    ("version", "gpu", "kv", "blocks"),
    [
        # FA4 head-256 kernel (0.29+, SM10x): kernel [128], preferred 128 → unit 128:
        # TP 1 needs 536 tokens → 128 · 5 = 640, kernel 128
        ("0.29.0", "B200", "auto", (640, 128)),
        ("0.33.0", "B300", "auto", (640, 128)),
        ("0.28.0", "B200", "auto", (544, 544)),  # before 0.29: 16 · ⌈536 / 16⌉
        ("0.33.0", "H100", "auto", (544, 544)),  # SM90: FA3, no 128-token pages
        # fp8 KV: FA4's head-256 kernel falls back to FA2; a = 512 B → 16 · ⌈1,072 / 16⌉
        ("0.33.0", "B200", "fp8", (1072, 1072)),
    ],
)
def test_fa4_head_256_pages(version: str, gpu: str, kv: str, blocks: tuple[int, int]) -> None:
    kwargs = {"attention_backend": "FLASH_ATTN", "gdn_prefill_backend": "triton"}
    assert (
        _blocks(QWEN3_NEXT, 1, vllm_version=version, gpu=gpu, kv_cache_dtype=kv, **kwargs) == blocks
    )


def test_mamba_block_size_needs_prefix_caching() -> None:
    # VllmConfig.validate_mamba_block_size: "--mamba-block-size can only be set with
    # --enable-prefix-caching" (0.14 default: prefix caching off for hybrids)
    with pytest.raises(InvalidSettings, match="can only be set with --enable-prefix-caching"):
        create_engine_config(
            load_model(NANO), Settings(vllm_version="0.14.0", mamba_block_size=256)
        )


@pytest.mark.parametrize(
    ("version", "value", "accepted"),
    # CacheConfig's MambaDType: auto/float32 (0.11.1-0.12), + float16 (0.13), + bfloat16 (0.22)
    [("0.12.0", "float16", False), ("0.13.0", "float16", True), ("0.21.0", "bfloat16", False),
     ("0.22.0", "bfloat16", True)],
)  # fmt: skip
def test_mamba_dtype_values_per_release(version: str, value: str, accepted: bool) -> None:
    settings = Settings(vllm_version=version, mamba_ssm_cache_dtype=value)
    if accepted:
        create_engine_config(load_model(NANO), settings)
    else:
        with pytest.raises(InvalidSettings, match=f"rejects --mamba-ssm-cache-dtype {value}"):
            create_engine_config(load_model(NANO), settings)


def test_falcon_h1_conv_state_speculative_rows_from_0_32() -> None:
    # Falcon-H1-0.5B TP 1: conv (K-1+spec) × 1,792 (measured in the 0.20.0 and 0.33.0
    # vectors): 3 rows up to 0.31 (the model passes no num_spec), 4 from 0.32
    falcon = "tiiuae/Falcon-H1-0.5B-Base"
    old = _rank(falcon, 1, vllm_version="0.31.0", num_speculative_tokens=1)
    new = _rank(falcon, 1, vllm_version="0.32.0", num_speculative_tokens=1)
    assert old.mamba_state_shapes[0] == (3, 1792) and new.mamba_state_shapes[0] == (4, 1792)
    # bytes: 1,792 × 2 B = 3,584 B more per extra row
    assert new.mamba_page_bytes is not None and old.mamba_page_bytes is not None
    assert new.mamba_page_bytes - old.mamba_page_bytes == 3584


@pytest.mark.parametrize(("version", "valid"), [("0.13.0", True), ("0.14.0", False),
                                                ("0.17.0", False), ("0.18.0", True)])  # fmt: skip
def test_attention_free_mamba2_config_fails_in_0_14_to_0_17(version: str, valid: bool) -> None:
    # measured on 0.14.0: "AttributeError: 'Mamba2Config' object has no attribute
    # 'num_attention_heads'" (get_total_num_kv_heads' fallback) at every TP
    r = rank_of(load_model("mistralai/Mamba-Codestral-7B-v0.1"), Settings(vllm_version=version), 1)
    assert r.valid is valid
    if not valid:
        assert "num_attention_heads" in r.reason


def test_replayssm_ring_enlarges_the_state_page() -> None:
    # Nemotron-3-Nano TP 1, --replayssm-buffer-len 16 (Triton): x (64, 16, 64) bf16 =
    # 131,072 B, dt (64, 16) fp32 = 4,096 B, B (8, 16, 128) bf16 = 32,768 B → m = 2,134,016
    # + 167,936 = 2,301,952 B; a = 1,024 B → 2,248 tokens → 16 · ⌈2,248 / 16⌉ = 2,256
    r = _rank(NANO, 1, vllm_version="0.27.1", use_replayssm=True)
    assert r.mamba_page_bytes == 2_301_952
    assert r.mamba_state_shapes[2:] == ((64, 16, 64), (64, 16), (8, 16, 128))
    assert r.mamba_state_dtypes[2:] == ("bfloat16", "float32", "bfloat16")
    assert r.block_size == 2256
    # 0.33 FlashInfer with one speculative token: ring 16 + 1 + 1 = 18 tokens
    r = _rank(NANO, 1, use_replayssm=True, mamba_backend="flashinfer", num_speculative_tokens=1)
    assert r.mamba_state_shapes[2:] == ((64, 18, 64), (64, 18), (8, 18, 128))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"vllm_version": "0.26.0"}, "no such flag"),
        ({"vllm_version": "0.27.1", "enable_prefix_caching": True}, "only in align mode"),
        ({"vllm_version": "0.27.1", "num_speculative_tokens": 1}, "speculative decoding"),
        (
            {
                "vllm_version": "0.29.0",
                "mamba_backend": "flashinfer",
                "enable_prefix_caching": False,
            },
            "requires --mamba-backend",
        ),
    ],
)
def test_replayssm_refused_where_vllm_refuses(settings: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSettings, match=message):
        create_engine_config(load_model(NANO), Settings(use_replayssm=True, **settings))  # type: ignore[arg-type]
    with pytest.raises(InvalidSettings, match="only supported for Nemotron-H"):
        create_engine_config(load_model(QWEN3_NEXT), Settings(use_replayssm=True))


def test_default_mamba_cache_mode_align_from_0_28() -> None:
    # measured on 0.28.0: prefix caching on by default, mode 'align' → 16 · ⌈2,084 / 16⌉ =
    # 2,096; 'all' still chunk-aligns when asked for: 128 · ⌈2,084 / 128⌉ = 2,176
    assert _rank(NANO, 1, vllm_version="0.28.0").block_size == 2096
    assert _rank(NANO, 1, vllm_version="0.28.0", mamba_cache_mode="all").block_size == 2176
    assert _rank(NANO, 1, vllm_version="0.27.1", enable_prefix_caching=True).block_size == 2176


def test_survey_skips_architectures_the_release_does_not_know() -> None:
    result = runner.invoke(app, ["survey", "--vllm-version", "0.14.0", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert "vLLM 0.14.0 does not know this architecture" in result.stdout


def test_check_says_how_to_keep_the_hybrid_kv_cache_manager_on_0_18_to_0_21() -> None:
    # P TP4 / D TP4 pairs on 0.18.1 once --no-disable-hybrid-kv-cache-manager is
    # given; check says so (audit enforces it as KVA012); 0.22 no longer needs the flag
    from typer.testing import CliRunner

    from kvalign.cli import app

    nano = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
    runner = CliRunner()
    for version, expected in (("0.18.1", True), ("0.21.0", True), ("0.22.0", False)):
        argv = ["check", nano, "--prefill-tp", "4", "--decode-tp", "4", "--vllm-version", version]
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
        assert ("--no-disable-hybrid-kv-cache-manager" in result.output) is expected, version
