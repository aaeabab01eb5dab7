"""Rules of the block alignment pinned at the inputs where a wrong rule changes the answer
Every expected number is derived by hand below from the cited vLLM source, never read
from kvalign's output.

Nemotron-3-Nano-30B-A3B (bf16, TP 1; vLLM's MambaStateShapeCalculator): m = 2,134,016 B,
2 KV heads of head size 128, so a = 2 · (128 + 128) · 2 B = 1,024 B/token and the state needs
cdiv(2,134,016, 1,024) = 2,084 tokens. Its config names ``chunk_size: 128``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kvalign.alignment import (
    BlockDerivation,
    KvCacheGroup,
    RankResult,
    _largest_divisor_at_most,
    aligned_block_size,
    analyze_rank,
    block_requirement,
    common_block_size,
    derive_block,
    hidden_state_group,
    kv_cache_groups,
    load_problem,
    pp_partition,
    skip_layer_block_size,
)
from kvalign.backends import BACKENDS
from kvalign.errors import InvalidSettings, UnsupportedModel
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import profile_named
from tests.conftest import CATALOG
from tests.fidelity.test_release_vectors import KNOWN_DISAGREEMENTS
from tests.release_vectors import compare, release_files, rows
from tests.resolve import engine_of, rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
FALCON = "tiiuae/Falcon-H1-0.5B-Base"
#: vLLM 0.27.1: prefix caching is off by default for hybrids and, when enabled, Nemotron-H
#: (SupportsMambaPrefixCaching) runs in Mamba cache mode 'all'.
ALL_MODE = {"vllm_version": "0.27.1", "enable_prefix_caching": True}


def _block(model: str, tp: int = 1, **settings: object) -> int | None:
    return rank_of(load_model(model), Settings(**settings), tp).block_size  # type: ignore[arg-type]


def _block_rank(model: str, tp: int = 1, **settings: object) -> RankResult:
    return rank_of(load_model(model), Settings(**settings), tp)  # type: ignore[arg-type]


def test_cache_mode_all_aligns_to_the_lcm_of_chunk_and_block_not_the_max() -> None:
    # vLLM 0.27.1 vllm/platforms/interface.py _align_hybrid_block_size, mode 'all':
    # chunk_size = lcm(base_chunk_size, kernel_block_alignment_size) with the alignment
    # max(16, --block-size 96) = 96 and base chunk 128: lcm(128, 96) = 384, block
    # 384 · cdiv(2,084, 384) = 384 · 6 = 2,304. (max(128, 96) = 128 would give 128 · 17 = 2,176.)
    assert _block(NANO, block_size=96, **ALL_MODE) == 2304


def test_cache_mode_all_with_a_chunk_multiple_of_the_block() -> None:
    # defaults: alignment 16, lcm(128, 16) = 128 → 128 · cdiv(2,084, 128) = 128 · 17 = 2,176
    assert _block(NANO, **ALL_MODE) == 2176


def test_without_prefix_caching_the_chunk_is_ignored() -> None:
    # mode 'none' (prefix caching off): 96 · cdiv(2,084, 96) = 96 · 22 = 2,112
    assert _block(NANO, block_size=96, vllm_version="0.27.1", enable_prefix_caching=False) == 2112


def test_mamba_block_size_replaces_the_chunk_size() -> None:
    # base_chunk_size = --mamba-block-size 96 (0.27.1 interface.py: mamba_block_size or the
    # model's chunk size): lcm(96, 16) = 96 → 96 · 22 = 2,112 (the chunk 128 would give 2,176)
    assert _block(NANO, mamba_block_size=96, **ALL_MODE) == 2112


def test_default_mamba_chunk_size_is_2048_when_the_config_names_none(tmp_path: Path) -> None:
    # vLLM 0.27.1 vllm/config/model.py ModelConfig.get_mamba_chunk_size: mamba_chunk_size,
    # else chunk_size, else 2048 ("Mamba1 does not have a chunk notion"). Jamba's config
    # (transformers JambaConfig defaults: hidden 4096, mamba_expand 2 → I = 8192,
    # mamba_d_state 16, mamba_d_conv 4, 8 KV heads of 4096 / 32 = 128) names none.
    # m = 8192 · 3 · 2 B + 8192 · 16 · 2 B = 49,152 + 262,144 = 311,296 B; a = 8 · 256 · 2 =
    # 4,096 B/token; cdiv(311,296, 4,096) = 76 tokens. Mode 'all': lcm(2048, 16) = 2048 →
    # 2048 · cdiv(76, 2048) = 2,048 (a default of 256 would give 256). Without prefix
    # caching: 16 · cdiv(76, 16) = 80.
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "jamba", "architectures": ["JambaForCausalLM"],
                    "torch_dtype": "bfloat16"})
    )  # fmt: skip
    model = str(tmp_path / "config.json")
    rank = rank_of(load_model(model), Settings(**ALL_MODE), 1)  # type: ignore[arg-type]
    assert (rank.attn_page_bytes_per_token, rank.mamba_page_bytes) == (4096, 311_296)
    assert rank.block_size == 2048
    assert _block(model, vllm_version="0.27.1", enable_prefix_caching=False) == 80


@pytest.mark.parametrize(("tp", "heads"), [(1, 2), (2, 1), (4, 1), (8, 1)])
def test_kv_heads_are_replicated_when_tp_exceeds_them(tp: int, heads: int) -> None:
    # vLLM: kv_heads_per_rank = max(1, 2 // TP): TP 4 and 8 keep one replicated head
    rank = rank_of(load_model(NANO), Settings(), tp)
    assert rank.kv_heads_per_rank == heads
    assert rank.attn_page_bytes_per_token == heads * 256 * 2


def test_mla_floor_raises_the_unit_but_never_lowers_it() -> None:
    # Kimi-K3 (MLA + KDA) at TP 1: a = 1,152 B/token, m = 6,512,640 B
    # (tests/arithmetic/test_platforms.py)
    # → cdiv(6,512,640, 1,152) = 5,654 tokens. vLLM 0.33 platforms/interface.py: the unit is
    # max(smallest kernel block, --block-size), then max(unit, 128) for MLA.
    # --block-size 256: unit 256 → 256 · cdiv(5,654, 256) = 256 · 23 = 5,888
    # (the floor alone, 128, would give 128 · 45 = 5,760); default: 128 · 45 = 5,760.
    assert _block("moonshotai/Kimi-K3", block_size=256) == 5888
    assert _block("moonshotai/Kimi-K3") == 5760


# ---- derive_block step by step (every field of the derivation pinned) --------
# Nano's pages at TP 1 (module docstring): a = 1,024 B/token, m = 2,134,016 B, so
# tokens_needed = cdiv(2,134,016, 1,024) = 2,084. Measured: tests/golden/vllm-0.14.0.jsonl
# has block 2,096 for Nano TP 1 on H100 without prefix caching (16 · cdiv(2,084, 16) = 16 · 131).
A, M, NEEDED = 1024, 2_134_016, 2084


def _derivation(profile: str, backend: str, **kwargs: object) -> BlockDerivation:
    args: dict[str, object] = {"base_block": 16, "use_mla": False, **kwargs}
    return derive_block(A, M, backend=BACKENDS[backend], profile=profile_named(profile), **args)  # type: ignore[arg-type]


def test_model_config_era_derivation_in_full() -> None:
    # vLLM 0.14.0 vllm/model_executor/models/config.py
    # HybridAttentionMambaModelConfig.verify_and_update_config, no prefix caching:
    # kernel_block_alignment_size 16, block = 16 · cdiv(m, 16 · a) = 2,096; no backend lcm
    got = _derivation("0.14", "FLASH_ATTN", prefix_caching=False)
    assert got == BlockDerivation(
        site="model-config", attn_page_bytes_per_token=A, mamba_page_bytes=M, base_block=16,
        unit_start=16, unit_reason="fixed alignment", mla_floor=0, checkpoint=1, chunk=None,
        unit=16, tokens_needed=NEEDED, aligned=2096, backend_lcm=None, rounded=2096, block=2096,
    )  # fmt: skip
    assert got.overridden  # 2,096 > 16
    # the user's block is kept when it covers the aligned one ("block_size < attn_block_size")
    kept = _derivation("0.14", "FLASH_ATTN", prefix_caching=False, base_block=4096)
    assert (kept.block, kept.overridden) == (4096, False)


def test_model_config_era_flashinfer_head_size_256_on_sm100() -> None:
    # 0.14.0 config.py: kernel_block_alignment_size = 32 when is_device_capability_family(100)
    # and head size 256 and the backend is FLASHINFER (or unset): 32 · cdiv(2,084, 32) = 2,112
    sm100 = _derivation("0.14", "FLASHINFER", prefix_caching=False, head_size=256, blackwell=True)
    assert (sm100.unit_start, sm100.block) == (32, 2112)
    assert sm100.unit_reason == "FlashInfer on SM100 with head size 256"
    # every condition is needed: another GPU, head size, backend, or a release without the
    # rule (0.18 dropped it) keeps the fixed 16 → 2,096
    for kwargs in (
        {"head_size": 256},  # blackwell defaults to False
        {"head_size": 128, "blackwell": True},
        {"blackwell": True},  # head size defaults to 0
    ):
        assert _derivation("0.14", "FLASHINFER", prefix_caching=False, **kwargs).block == 2096
    flash = _derivation("0.14", "FLASH_ATTN", prefix_caching=False, head_size=256, blackwell=True)
    assert flash.block == 2096
    later = _derivation("0.18", "FLASHINFER", prefix_caching=False, head_size=256, blackwell=True)
    assert later.block == 2096


def test_model_config_era_mla_units() -> None:
    # 0.14.0 config.py: MLA kernel_block_alignment_size = 128 with CUTLASS_MLA, else 64
    cutlass = _derivation("0.14", "CUTLASS_MLA", use_mla=True, prefix_caching=False)
    assert (cutlass.unit_start, cutlass.unit_reason) == (128, "fixed MLA alignment (CUTLASS_MLA)")
    assert cutlass.block == 128 * 17  # cdiv(2,084, 128) = 17
    other = _derivation("0.14", "FLASHMLA", use_mla=True, prefix_caching=False)
    assert (other.unit_start, other.unit_reason, other.block) == (64, "fixed MLA alignment", 2112)
    # vLLM 0.10.2 has no MLA hybrids (Kimi-Linear arrives in 0.11.1)
    with pytest.raises(
        UnsupportedModel, match=r"not supported by vLLM 0\.10 \(first in 0\.11\.1\)"
    ):
        _derivation("0.10", "FLASHMLA", use_mla=True, prefix_caching=False)


def test_platform_era_derivation_in_full() -> None:
    # vLLM 0.33 vllm/platforms/interface.py _align_hybrid_block_size: unit max(16, 16),
    # lcm with the FlashInfer GDN prefill checkpoint 64 when prefix caching is on:
    # 64 · cdiv(2,084, 64) = 64 · 33 = 2,112, rounded to the backend lcm 16: 2,112
    got = _derivation("0.33", "FLASH_ATTN", checkpoint=64)  # prefix caching defaults to on
    assert got == BlockDerivation(
        site="platform", attn_page_bytes_per_token=A, mamba_page_bytes=M, base_block=16,
        unit_start=16, unit_reason="max(smallest FLASH_ATTN kernel block 16, block 16)",
        mla_floor=0, checkpoint=64, chunk=None, unit=64, tokens_needed=NEEDED, aligned=2112,
        backend_lcm=16, rounded=2112, block=2112,
    )  # fmt: skip
    # the checkpoint defaults to 1 (no checkpoint alignment): 16 · 131 = 2,096
    plain = _derivation("0.33", "FLASH_ATTN")
    assert (plain.checkpoint, plain.unit, plain.block) == (1, 16, 2096)
    # prefix caching off: the checkpoint is not folded in
    off = _derivation("0.33", "FLASH_ATTN", checkpoint=64, prefix_caching=False)
    assert (off.checkpoint, off.block) == (1, 2096)
    # before 0.33 there is no checkpoint alignment, and no backend-lcm rounding before 0.32
    old = _derivation("0.27", "FLASH_ATTN", checkpoint=64)
    assert (old.checkpoint, old.block, old.backend_lcm) == (1, 2096, None)
    # a chunk-aligned block (cache mode 'all') takes the chunk, not the checkpoint
    chunked = _derivation("0.33", "FLASH_ATTN", checkpoint=64, chunk=128)
    assert (chunked.checkpoint, chunked.unit, chunked.block) == (1, 128, 2176)
    assert chunked.chunk == 128


def test_platform_era_mla_floor_in_the_derivation() -> None:
    # 0.27+: the MLA unit is max(unit, 128); FLASHMLA's kernel block 64 → 128 · 17 = 2,176
    got = _derivation("0.27", "FLASHMLA", use_mla=True)
    assert (got.unit_start, got.mla_floor, got.unit, got.block) == (64, 128, 128, 2176)
    # 0.25 has no floor: 64 · cdiv(2,084, 64) = 2,112
    early = _derivation("0.25", "FLASHMLA", use_mla=True)
    assert (early.mla_floor, early.unit, early.block) == (0, 64, 2112)


def test_aligned_block_size_folds_the_checkpoint_in_when_prefix_caching() -> None:
    # aligned_block_size is 0.33's rule: prefix caching defaults to on, so the checkpoint
    # 64 makes the unit lcm(16, 64) = 64 → 2,112; without the checkpoint 2,096
    fa = BACKENDS["FLASH_ATTN"]
    kwargs = {"block_size": 16, "backend": fa, "use_mla": False}
    assert aligned_block_size(A, M, checkpoint=64, **kwargs) == 2112  # type: ignore[arg-type]
    assert aligned_block_size(A, M, **kwargs) == 2096  # type: ignore[arg-type]
    assert aligned_block_size(A, M, checkpoint=64, prefix_caching=False, **kwargs) == 2096  # type: ignore[arg-type]


# ---- measured vectors, sampled (every release's code, tests/golden/vllm-X.Y.Z.jsonl) -----
@pytest.mark.parametrize("release", sorted(release_files()))
def test_sampled_release_vectors(release: str) -> None:
    # every 13th vector of each release (13 is prime to the grid's 5 TPs and its settings,
    # so the sample walks through models, TPs, GPUs, backends and cache modes): kvalign
    # must reproduce each field vLLM measured, except the fields listed (and explained)
    # in tests/fidelity/test_release_vectors.py KNOWN_DISAGREEMENTS
    known = KNOWN_DISAGREEMENTS.get(release, frozenset())
    for row in rows(release)[::13]:
        wrong = {f: v for f, v in compare(row, release).items() if f not in known}
        assert not wrong, (row["model"], row["tp"], row["settings"], wrong)


# ---- speculative conv-state rows (Falcon-H1, vLLM 0.17-0.31) -----------------------------
def test_speculative_rows_problem_names_both_pages() -> None:
    # tests/fidelity/test_fidelity.py derives Falcon-H1-0.5B TP 1 on 0.27.1: block 800 · 512 B =
    # 409,600 B padded, and with 2 speculative tokens the layer keeps 403,968 + 2 · 3,584 =
    # 411,136 B (MambaMixer2.get_state_shape; kv_cache_interface.py page_size_padded check)
    rank = _block_rank(FALCON, vllm_version="0.27.1", num_speculative_tokens=2)
    assert rank.valid and rank.block_size == 800
    assert "411,136 B per page" in rank.load_error and "409,600 B padded" in rank.load_error
    assert rank.load_error.startswith("vLLM 0.27 fails at start-up with 2 speculative tokens")
    # Nemotron-H's own state-shape function takes the rows: no problem
    assert _block_rank(NANO, vllm_version="0.27.1", num_speculative_tokens=2).load_error == ""
    # without speculative tokens nothing to check
    assert _block_rank(FALCON, vllm_version="0.27.1").load_error == ""
    # the message names the model type whose state-shape function leaves the rows out
    assert "falcon_h1's Mamba layers keep 2 more conv-state rows" in rank.load_error
    # 0.14's Mamba2 layers take no speculative rows (tests/fidelity/test_fidelity.py): no problem
    assert _block_rank(FALCON, vllm_version="0.14.0", num_speculative_tokens=2).load_error == ""


# ---- analyze_rank: every field of the result at inputs where a wrong one shows ----------
def test_user_block_raised_by_the_alignment_and_its_padding() -> None:
    # 0.33, prefix caching off, --block-size 96: unit max(16, 96) = 96 → 96 · cdiv(2,084, 96)
    # = 96 · 22 = 2,112 (backend lcm 16 keeps it). Padded page 2,112 · 1,024 = 2,162,688 B,
    # padding 100 · (2,162,688 − 2,134,016) / 2,134,016 = 1.3435... %. At TP 1 the TP-stable
    # block is derived from the same pages, so it is the same and not grown.
    rank = _block_rank(NANO, block_size=96, enable_prefix_caching=False, vllm_version="0.33.0")
    assert (rank.tp, rank.valid, rank.load_error, rank.profile) == (1, True, "", "0.33")
    assert (rank.block_size, rank.kernel_block_size, rank.base_block_size) == (2112, 2112, 96)
    assert rank.block_size_overridden and rank.prefix_caching is False
    assert rank.mamba_page_size_padded == 2_162_688
    assert rank.mamba_padding_pct == pytest.approx(100 * 28_672 / 2_134_016)
    assert (rank.tp_stable_block_size, rank.tp_stable_kernel_block_size) == (2112, 2112)
    assert rank.tp_stable_padding_pct == pytest.approx(100 * 28_672 / 2_134_016)
    assert rank.tp_stable_grown is False
    assert rank.derivation is not None and rank.derivation.block == 2112
    # --block-size 4096 covers the state: kept, not overridden, padded page 4,096 · 1,024
    big = _block_rank(NANO, block_size=4096, enable_prefix_caching=False)
    assert (big.block_size, big.block_size_overridden) == (4096, False)
    assert big.mamba_page_size_padded == 4_194_304


def test_invalid_tp_keeps_the_tp_and_the_profile() -> None:
    # measured (tests/golden/vllm-0.33.0-oracle.jsonl): Qwen3.5-27B at TP 16 is refused,
    # "heads not divisible by tensor parallel size" (24 heads)
    rank = _block_rank("Qwen/Qwen3.5-27B", 16, vllm_version="0.33.0")
    assert (rank.tp, rank.valid, rank.profile) == (16, False, "0.33")
    assert rank.reason == "heads not divisible by tensor parallel size"
    assert rank.block_size is None


def test_attention_free_rank_in_full() -> None:
    # measured (oracle): Mamba-Codestral-7B TP 2, bf16: conv (3, 5,120) + ssm (64, 64, 128),
    # 1,079,296 B; attention-free, so no block size
    rank = _block_rank(
        "mistralai/Mamba-Codestral-7B-v0.1", 2, enable_prefix_caching=False, vllm_version="0.33.0"
    )
    assert (rank.tp, rank.valid, rank.load_error, rank.profile) == (2, True, "", "0.33")
    assert rank.attention_free and rank.prefix_caching is False
    assert rank.mamba_page_bytes == 1_079_296
    assert rank.mamba_state_shapes == ((3, 5120), (64, 64, 128))
    assert rank.mamba_state_dtypes == ("bfloat16", "bfloat16")
    assert rank.block_size is None


def test_platform_without_hybrid_alignment_keeps_the_state_page() -> None:
    # vLLM 0.20.0 on CPU does no hybrid alignment (tests/fidelity/test_release_facts.py): the block
    # stays CPU_ATTN's 128, and the result still carries Nano's 2,134,016 B state page
    rank = _block_rank(
        NANO, vllm_version="0.20.0", gpu="CPU", attention_backend="CPU_ATTN",
        enable_prefix_caching=False,
    )  # fmt: skip
    assert (rank.block_size, rank.kernel_block_size) == (128, 128)
    assert (rank.tp_stable_block_size, rank.tp_stable_kernel_block_size) == (128, 128)
    assert rank.mamba_page_bytes == 2_134_016
    assert rank.mamba_state_dtypes and rank.mamba_state_shapes
    assert rank.derivation is None


# ---- the common --block-size and each pool's requirement ----------------------------------
# Measured (tests/golden/vllm-0.33.0-oracle.jsonl, FLASH_ATTN, prefix caching off):
# Nano TP 1 a = 1,024, m = 2,134,016 → 2,096; TP 4 a = 512, m = 533,504 → 1,056.
def _requirement(model: str, tp: int, **settings: object) -> tuple[int, int] | None:
    geometry = load_model(model)
    return block_requirement(geometry, engine_of(geometry, Settings(**settings)), tp)  # type: ignore[arg-type]


def test_common_block_size_covers_every_tp_in_steps_of_the_unit() -> None:
    geometry = load_model(NANO)
    engine = engine_of(geometry, Settings(enable_prefix_caching=False))
    # unit 16 (FLASH_ATTN's kernel block), need max(2,096, 1,056) = 2,096; padding at TP 1
    # 100 · (2,096 · 1,024 − 2,134,016) / 2,134,016 and at TP 4 100 · (2,096 · 512 − 533,504)
    # / 533,504. TP 3 is invalid (32 heads) and is left out; the valid TP 4 after it stays.
    found = common_block_size(geometry, engine, [4, 3, 1])
    assert found is not None
    block, padding = found
    assert block == 2096 and sorted(padding) == [1, 4]
    assert padding[1] == pytest.approx(100 * (2096 * 1024 - 2_134_016) / 2_134_016)
    assert padding[4] == pytest.approx(100 * (2096 * 512 - 533_504) / 533_504)
    assert common_block_size(geometry, engine, [3]) is None  # no valid TP
    assert block_requirement(geometry, engine, 4) == (16, 1056)
    assert block_requirement(geometry, engine, 3) is None


def test_block_requirement_units_per_rule() -> None:
    # MLA (Kimi-K3, 0.33, floor 128): unit lcm(16, 128) = 128; TP 1 needs 5,760 (oracle)
    assert _requirement("moonshotai/Kimi-K3", 1, enable_prefix_caching=False) == (128, 5760)
    # GDN prefill checkpoint 64 on H100 with prefix caching (tests/test_mutation_engine.py:
    # Qwen3.5-397B TP 8 → 576): unit lcm(16, 64) = 64; prefix caching off: 16 and 528
    assert _requirement("Qwen/Qwen3.5-397B-A17B", 8, gpu="H100") == (64, 576)
    off = _requirement("Qwen/Qwen3.5-397B-A17B", 8, gpu="H100", enable_prefix_caching=False)
    assert off == (16, 528)
    # cache mode 'all' (0.27.1 with prefix caching): unit lcm(16, chunk 128) = 128, need 2,176
    assert _requirement(NANO, 1, **ALL_MODE) == (128, 2176)
    # a hybrid without GDN layers has no prefill checkpoint (1): with prefix caching on
    # 0.33 the unit stays 16 and Nano TP 1 needs 2,096 (oracle, prefix caching on)
    assert _requirement(NANO, 1, enable_prefix_caching=True) == (16, 2096)
    # model-config era (0.14): the fixed unit 16, need 2,096 (tests/golden/vllm-0.14.0.jsonl)
    assert _requirement(NANO, 1, vllm_version="0.14.0", enable_prefix_caching=False) == (16, 2096)


def test_rank_result_reads_the_alignment_asked_for() -> None:
    rank = RankResult(
        tp=1, valid=True, block_size=2096, kernel_block_size=16,
        tp_stable_block_size=2112, tp_stable_kernel_block_size=64,
    )  # fmt: skip
    assert (rank.logical("vllm"), rank.logical("tp-stable")) == (2096, 2112)
    assert (rank.kernel("vllm"), rank.kernel("tp-stable")) == (16, 64)


def test_load_problem_cases() -> None:
    nano = load_model(NANO)  # 2 KV heads
    # vllm/model_executor/layers/linear.py QKVParallelLinear: TP 3 neither divides nor is
    # divided by 2 KV heads; TP 1, 2, 4 load
    assert load_problem(nano, 3) == (
        "num_key_value_heads = 2 and tensor parallel size 3 do not divide each other: "
        "vLLM's QKVParallelLinear refuses to load"
    )
    assert [load_problem(nano, tp) for tp in (1, 2, 4)] == ["", "", ""]
    # no state layers: nothing more to check
    assert load_problem(dataclasses.replace(nano, state=None), 2) == ""
    # short conv (LFM2) has no load rule of its own
    assert load_problem(load_model("LiquidAI/LFM2-1.2B"), 2) == ""


def test_pure_attention_geometry_keeps_the_base_block() -> None:
    # no state layers: no hybrid alignment (vLLM aligns only hybrids), the block stays 16
    nano = load_model(NANO)
    geometry = dataclasses.replace(nano, state=None)
    rank = analyze_rank(geometry, engine_of(nano, Settings(enable_prefix_caching=False)), 1)
    assert (rank.block_size, rank.kernel_block_size, rank.tp_stable_block_size) == (16, 16, 16)
    assert rank.mamba_page_bytes is None and rank.derivation is None


def test_replayssm_ring_buffers_enter_the_mamba_page() -> None:
    # vLLM 0.33 MambaStateShapeCalculator.append_replayssm_ring (--use-replayssm, Nemotron-H,
    # Triton backend: ring = --replayssm-buffer-len 16): x (H/TP, 16, P), dt (H/TP, 16),
    # B (G'/TP, 16, N) in (activation, float32, activation). Nano (H 64, P 64, G 8, N 128)
    # at TP 4: (16, 16, 64) · 2 B + (16, 16) · 4 B + (2, 16, 128) · 2 B = 32,768 + 1,024 +
    # 8,192 = 41,984 B on top of the measured 533,504 B (oracle, TP 4)
    rank = _block_rank(
        NANO, 4, use_replayssm=True, replayssm_buffer_len=16, enable_prefix_caching=False
    )
    assert rank.mamba_state_shapes[-3:] == ((16, 16, 64), (16, 16), (2, 16, 128))
    assert rank.mamba_state_dtypes[-3:] == ("bfloat16", "float32", "bfloat16")
    assert rank.mamba_page_bytes == 533_504 + 41_984
    # 0.33 shard-pads the groups in B (G' = 8 + (16 − 8) = 16, mamba_utils.py
    # extra_groups_for_head_shards): one group per rank at TP 16, where 8 would not divide
    wide = _block_rank(
        NANO, 16, use_replayssm=True, replayssm_buffer_len=16, enable_prefix_caching=False
    )
    assert wide.mamba_state_shapes[-1] == (1, 16, 128)
    plain = _block_rank(NANO, 4, enable_prefix_caching=False)
    assert plain.mamba_page_bytes == 533_504 and len(plain.mamba_state_shapes) == 2


# Qwen3.5-27B (Hk 16, Dk 128, Hv 48, Dv 128; 24 heads, 4 KV heads): the GDN conv dim
# 2 · 16 · 128 + 48 · 128 = 10,240 does not divide by 3 although the 24 heads do (vLLM's
# divide() is exact, the TP is invalid); at TP 16 the heads do not divide (oracle:
# "heads not divisible by tensor parallel size") although the state would.
QWEN27 = "Qwen/Qwen3.5-27B"


def test_state_that_does_not_divide_makes_the_tp_invalid() -> None:
    rank = _block_rank(QWEN27, 3, enable_prefix_caching=False, vllm_version="0.33.0")
    assert (rank.tp, rank.valid, rank.profile) == (3, False, "0.33")
    assert rank.reason.startswith("conv dim 2*Hk*Dk + Hv*Dv = 10240 is not divisible")


def test_common_block_size_skips_each_invalid_tp_and_goes_on() -> None:
    geometry = load_model(QWEN27)
    engine = engine_of(geometry, Settings(enable_prefix_caching=False))
    for tps in ([3, 4], [16, 4], [3, 16, 4]):
        found = common_block_size(geometry, engine, tps)
        assert found is not None and sorted(found[1]) == [4], tps


def test_attention_free_rank_keeps_its_load_error() -> None:
    # Mamba-Codestral (n_groups 8) at TP 16: vllm/model_executor/layers/mamba/mamba_mixer2.py
    # MambaMixer2.__init__ asserts n_groups % TP == 0 or n_groups == 1
    rank = _block_rank("mistralai/Mamba-Codestral-7B-v0.1", 16, enable_prefix_caching=False)
    assert rank.valid and rank.attention_free
    assert rank.load_error.startswith(
        "n_groups G = 8 is neither divisible by tensor parallel size 16 nor 1"
    )


def test_mamba_block_size_not_a_multiple_of_the_kernel_block() -> None:
    # 0.27.1 interface.py, cache mode 'all': chunk = lcm(--mamba-block-size 200, 16) = 400,
    # so a common --block-size must be a multiple of 400 and at least
    # 400 · cdiv(2,084, 400) = 2,400 (the chunk alone, 200, would give 200 · 11 = 2,200)
    assert _requirement(NANO, 1, mamba_block_size=200, **ALL_MODE) == (400, 2400)
    assert _block(NANO, mamba_block_size=200, **ALL_MODE) == 2400


def test_state_page_of_zero_bytes_is_not_aligned(tmp_path: Path) -> None:
    # vLLM 0.14.0 config.py verify_and_update_config: "if mamba_page_size == 0: return"
    # (hybrid by name, no state). LFM2 with conv_L_cache 1 keeps (C/TP) x 0 = 0 bytes of
    # conv state (ShortConv state shape in mamba_utils.py), so the block stays the default 16.
    config = json.loads((CATALOG / "LiquidAI/LFM2-1.2B" / "config.json").read_text())
    config["conv_L_cache"] = 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    rank = _block_rank(str(tmp_path / "config.json"), enable_prefix_caching=False)
    assert (rank.block_size, rank.kernel_block_size) == (16, 16)
    assert rank.mamba_page_bytes is None and rank.derivation is None


# ---- the TP-stable block (vLLM PR 45575): grown when the local page falls short --------
def test_tp_stable_block_at_exact_cover_is_not_grown() -> None:
    # Falcon-H1-0.5B, fp8 KV (1 B), prefix caching off, 0.33. TP 1: a = 2 · (64 + 64) · 1 =
    # 256 B, m = 403,968 B (tests/fidelity/test_fidelity.py) → cdiv = 1,578 → 16 · 99 = 1,584.
    # TP 2: one KV head, a = 128 B; n_groups 1 is shard-padded to G' = 2
    # (extra_groups_for_head_shards), conv
    # (1,536 + 2 · 2 · 128) / 2 = 1,024 · 3 · 2 B = 6,144 B, ssm 12 · 64 · 128 · 2 B =
    # 196,608 B → m = 202,752 B = 1,584 · 128 exactly: the stable block covers, not grown.
    rank = _block_rank(FALCON, 2, kv_cache_dtype="fp8", enable_prefix_caching=False)
    assert (rank.mamba_page_bytes, rank.attn_page_bytes_per_token) == (202_752, 128)
    assert (rank.tp_stable_block_size, rank.tp_stable_grown) == (1584, False)


def test_tp_stable_block_grows_when_the_local_page_falls_short(tmp_path: Path) -> None:
    # Falcon-H1-0.5B with 8 KV heads (one per attention head), fp8. TP 1: a = 8 · 128 · 1 =
    # 1,024 B, m = 403,968 B → cdiv = 395 → stable 16 · 25 = 400. TP 8: a = 128 B; G' = 1 + 7
    # = 8, conv (1,536 + 2 · 8 · 128) / 8 = 448 · 3 · 2 B = 2,688 B, ssm 3 · 64 · 128 · 2 B =
    # 49,152 B → m = 51,840 B > 400 · 128 = 51,200 B: grown to 16 · cdiv(405, 16) = 416.
    config = json.loads((CATALOG / FALCON / "config.json").read_text())
    config["num_key_value_heads"] = 8
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = str(tmp_path / "config.json")
    settings = {"kv_cache_dtype": "fp8", "enable_prefix_caching": False}
    wide = _block_rank(model, 8, **settings)
    assert wide.mamba_page_bytes == 51_840
    assert (wide.tp_stable_block_size, wide.tp_stable_grown) == (416, True)
    narrow = _block_rank(model, 4, **settings)
    assert (narrow.tp_stable_block_size, narrow.tp_stable_grown) == (400, False)


# ---- pipeline stages, skip layers and the hidden-state group (issue 19) ----------------
# The module's own test files reached none of pp_partition, skip_layer_block_size,
# hidden_state_group and _largest_divisor_at_most (mutmut: "no tests"). Below, the measured
# vectors (tests/golden/pp-*, skip-layers-*, hidden-state-*.jsonl) through analyze_rank,
# and each function at hand-derived inputs where a wrong operator changes the answer.
GOLDEN = Path(__file__).resolve().parent / "golden"


def _golden(prefix: str, release: str) -> list[dict[str, object]]:
    text = (GOLDEN / f"{prefix}-{release}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize("release", ["0.19.1", "0.33.0"])
def test_pp_stage_layers_and_blocks_match_the_measured_vectors(release: str) -> None:
    # each stage's [start, end) from the release's get_pp_indices, whether it owns an
    # attention layer, and its block (the Mamba group's block with prefix caching; up to
    # 0.19 the alignment ran once on the model config, so every stage is aligned)
    for vector in _golden("pp", release):
        settings = Settings(vllm_version=release, pipeline_parallel_size=vector["pp"],
                            enable_prefix_caching=vector["enable_prefix_caching"],
                            attention_backend="FLASH_ATTN")  # fmt: skip
        rank = rank_of(load_model(str(vector["model"])), settings, int(vector["tp"]))
        measured: list[dict] = vector["stages"]  # type: ignore[assignment]
        assert [[s.rank, s.start, s.end] for s in rank.pp_stages] == [
            [m["rank"], *m["layers"]] for m in measured
        ], vector
        assert [s.attention_layers > 0 for s in rank.pp_stages] == [
            m["attention"] for m in measured
        ], vector
        if vector["resolved_prefix_caching"]:
            assert [s.block_size for s in rank.pp_stages] == [
                m["mamba_block_size"] for m in measured
            ], vector


@pytest.mark.parametrize(
    ("layers", "pp", "partition", "bounds"),
    [
        # get_pp_indices (vllm/distributed/utils.py, 0.33.0): layers // pp each, the
        # remainder one layer each to the stages before the last, second-to-last first
        (52, 2, None, ((0, 26), (26, 52))),  # pp-0.33.0.jsonl
        # 52 = 6 · 8 + 4: stages 1-4 take 9 → 8, 9, 9, 9, 9, 8 (pp-0.33.0.jsonl: 44-52 last)
        (52, 6, None, ((0, 8), (8, 17), (17, 26), (26, 35), (35, 44), (44, 52))),
        # 10 = 4 · 2 + 2: stages 2 and 1 take 3 → 2, 3, 3, 2
        (10, 4, None, ((0, 2), (2, 5), (5, 8), (8, 10))),
        (7, 1, None, ((0, 7),)),
        # 3 = 4 · 0 + 3: stages 2, 1, 0 take one each, the last none
        (3, 4, None, ((0, 1), (1, 2), (2, 3), (3, 3))),
        # VLLM_PP_LAYER_PARTITION: the counts as given, a zero count included
        (52, 6, "8,8,8,8,8,12", ((0, 8), (8, 16), (16, 24), (24, 32), (32, 40), (40, 52))),
        (52, 2, "0,52", ((0, 0), (0, 52))),
    ],
)  # fmt: skip
def test_pp_partition_bounds(
    layers: int, pp: int, partition: str | None, bounds: tuple[tuple[int, int], ...]
) -> None:
    assert pp_partition(layers, pp, partition) == bounds


@pytest.mark.parametrize(
    ("layers", "pp", "partition", "message"),
    [
        (52, 0, None, "--pipeline-parallel-size must be >= 1, got 0"),
        (52, 2, "26,x", "VLLM_PP_LAYER_PARTITION: invalid partition string '26,x'"),
        (52, 3, "26,26", "VLLM_PP_LAYER_PARTITION '26,26': 2 layer counts, "
                         "--pipeline-parallel-size is 3"),
        (52, 2, "-1,53", "VLLM_PP_LAYER_PARTITION '-1,53': 2 layer counts, "
                         "--pipeline-parallel-size is 2"),
        (52, 2, "26,25", "VLLM_PP_LAYER_PARTITION '26,25' sums to 51, the model has 52 layers"),
    ],
)  # fmt: skip
def test_pp_partition_refusals(layers: int, pp: int, partition: str | None, message: str) -> None:
    # vLLM raises ValueError for each (get_pp_indices); kvalign's words, pinned whole
    with pytest.raises(InvalidSettings) as raised:
        pp_partition(layers, pp, partition)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("args", "block"),
    [
        # Platform._align_heterogeneous_kv_block_size (vllm/platforms/interface.py, 0.25.0
        # → 0.33.0): u = max(k, block), r = max(skip · k, padded Mamba page),
        # block' = max(block, u · cdiv(r, u · a)).
        # equal or smaller skip pages change nothing
        ((16, 512, 512, 16, None), 16),
        ((8, 512, 512, 16, None), 8),
        ((16, 512, 256, 16, None), 16),
        # fp8 a = 512 B, bf16 skip = 1,024 B, k = 16: r = 16,384, cdiv(16,384, 8,192) = 2
        # → 32 (skip-layers-0.33.0.jsonl: LFM2-1.2B, layer 2 kept in bf16, block 32)
        ((16, 512, 1024, 16, None), 32),
        # a padded Mamba page of 20,000 B rules: cdiv(20,000, 8,192) = 3 → 48
        ((16, 512, 1024, 16, 20_000), 48),
        # block 8 below k: u = 16 (not 8: 8 · cdiv(20,000, 4,096) = 40) → 16 · 3 = 48
        ((8, 512, 1024, 16, 20_000), 48),
        # a large block is never lowered: u = 64, cdiv(16,384, 32,768) = 1 → 64
        ((64, 512, 1024, 16, None), 64),
        # the padded page below skip · k: r = 16,384 (not 10,000) → 32
        ((16, 512, 1024, 16, 10_000), 32),
    ],
)  # fmt: skip
def test_skip_layer_block_size_by_hand(
    args: tuple[int, int, int, int, int | None], block: int
) -> None:
    assert skip_layer_block_size(*args) == block


@pytest.mark.parametrize("release", ["0.25.0", "0.33.0"])
def test_skip_layer_vectors_through_analyze_rank(release: str) -> None:
    # measured: tests/golden/build_skip_layer_vectors.py (block, kernel block, padded Mamba
    # page and groups per vector; "error": the release's start-up failure)
    for vector in _golden("skip-layers", release):
        none = vector["mamba_cache_mode"] == "none"
        settings = Settings(
            vllm_version=release, attention_backend="FLASH_ATTN",
            kv_cache_dtype=str(vector["kv_cache_dtype"]),
            kv_cache_dtype_skip_layers=tuple(vector["kv_cache_dtype_skip_layers"]),  # type: ignore[arg-type]
            max_model_len=vector["mamba_block_size"] if none else None,  # type: ignore[arg-type]
        )  # fmt: skip
        rank = rank_of(load_model(str(vector["model"])), settings, int(vector["tp"]))
        assert (rank.block_size, rank.kernel_block_size, rank.mamba_page_size_padded) == (
            vector["block_size"], vector["kernel_block_size"], vector["mamba_page_size_padded"]
        ), vector  # fmt: skip
        if "error" in vector:
            assert not rank.usable and "AssertionError" in rank.problem
            continue
        assert rank.usable, (vector, rank.problem)
        got = [(g.kind, g.layers, g.block_size) for g in rank.kv_cache_groups]
        assert got == [(g["kind"], g["layers"], g["block_size"]) for g in vector["groups"]]


@pytest.mark.parametrize("release", ["0.25.0", "0.28.0", "0.33.0"])
def test_hidden_state_vectors_through_analyze_rank(release: str) -> None:
    # measured: build_skip_layer_vectors.py --hidden-states (the release's
    # HiddenStateCacheSpec and get_kv_cache_groups); the rules of HIDDEN_STATE_RULES:
    # 0.25 rule 1, 0.28 rule 2, 0.33 rule 3
    for vector in _golden("hidden-state", release):
        none = vector["mamba_cache_mode"] == "none"
        settings = Settings(
            vllm_version=release, attention_backend="FLASH_ATTN",
            speculative_method=str(vector["speculative_method"]),
            eagle_aux_hidden_state_layer_ids=tuple(vector["eagle_aux_hidden_state_layer_ids"]),  # type: ignore[arg-type]
            max_model_len=vector["mamba_block_size"] if none else None,  # type: ignore[arg-type]
        )  # fmt: skip
        rank = rank_of(load_model(str(vector["model"])), settings, int(vector["tp"]))
        assert rank.block_size == vector["block_size"], vector
        if "error" in vector:
            assert "AssertionError" in vector["error"]
            continue
        got = [(g.kind, g.layers, g.block_size) for g in rank.kv_cache_groups]
        assert got == [(g["kind"], g["layers"], g["block_size"]) for g in vector["groups"]]


def test_largest_divisor_at_most() -> None:
    # _largest_divisor_at_most (kv_cache_utils.py): the largest divisor of value <= limit
    assert _largest_divisor_at_most(2096, 133) == 131  # 2096 = 16 · 131, 131 prime
    assert _largest_divisor_at_most(528, 16) == 16  # 528 = 16 · 33
    assert _largest_divisor_at_most(12, 5) == 4
    assert _largest_divisor_at_most(12, 12) == 12
    assert _largest_divisor_at_most(12, 100) == 12
    assert _largest_divisor_at_most(7, 6) == 1


def _groups(*blocks: int | None) -> tuple[KvCacheGroup, ...]:
    return tuple(KvCacheGroup("mamba" if i else "attention", 6, b) for i, b in enumerate(blocks))


def test_hidden_state_group_rules_by_hand() -> None:
    # Nemotron-3-Nano TP 1 (hidden-state-0.33.0.jsonl): block 2096, a = 1,024 B → common
    # page 2,146,304 B; 3 hidden states of hidden size 2,688 in bf16: 3 · 2,688 · 2 =
    # 16,128 B/token → most = 2,146,304 // 16,128 = 133 (16,128 · 133 = 2,145,024)
    nano = _groups(2096, 2096)
    assert hidden_state_group(nano, 2_146_304, 16_128, 1, "0.25.0") == (
        (*nano, KvCacheGroup("hidden-state", 1, 133)), ""
    )  # fmt: skip
    # rules 2 and 3: the largest divisor of the gcd block 2096 not above 133: 131 (measured)
    for rule in (2, 3):
        assert hidden_state_group(nano, 2_146_304, 16_128, rule, "0.33.0") == (
            (*nano, KvCacheGroup("hidden-state", 1, 131)), ""
        )  # fmt: skip
    # the gcd of the groups' blocks: gcd(96, 64) = 32, most = 32,768 // 512 = 64 → 32
    assert hidden_state_group(_groups(96, 64), 32_768, 512, 2, "0.33.0")[0][-1].block_size == 32
    # a block kvalign does not know (Mamba mode none, no --max-model-len): None
    assert hidden_state_group(_groups(64, None), 32_768, 512, 2, "0.33.0")[0][-1] == (
        KvCacheGroup("hidden-state", 1, None)
    )
    assert hidden_state_group((), 32_768, 512, 2, "0.33.0") == (
        (KvCacheGroup("hidden-state", 1, None),),
        "",
    )
    # under rule 1 an unknown block does not matter: most = 64
    assert hidden_state_group(_groups(64, None), 32_768, 512, 1, "0.25.0")[0][-1].block_size == 64


def test_hidden_state_group_when_one_token_does_not_fit() -> None:
    # a 1,500 B token, a 1,000 B page: rules 1-2 leave the padded page below the real one
    # (the spec's assertion fails at start-up); most = max(1,000 // 1,500, 1) = 1
    groups = _groups(16, 16)
    for rule, release in ((1, "0.25.0"), (2, "0.28.0")):
        assert hidden_state_group(groups, 1000, 1500, rule, release) == (
            (*groups, KvCacheGroup("hidden-state", 1, 1)),
            f"vLLM {release} fails at start-up: one token of the extract_hidden_states "
            "hidden-state layer (1,500 B) does not fit the KV-cache groups' page (1,000 B) "
            "it is padded to (AssertionError: page_size_padded >= page size)",
        )  # fmt: skip
    # rule 3 (_ensure_min_page_size): every block times cdiv(1,500, 1,000) = 2 → 32, the
    # page 2,000 B; most = 2,000 // 1,500 = 1 → block 1; no failure
    assert hidden_state_group(groups, 1000, 1500, 3, "0.33.0") == (
        (*_groups(32, 32), KvCacheGroup("hidden-state", 1, 1)), ""
    )  # fmt: skip
    # 2,500 B: scale cdiv(2,500, 1,000) = 3 (not 2) → 48; a None block stays None
    scaled, problem = hidden_state_group(_groups(16, None), 1000, 2500, 3, "0.33.0")
    assert scaled == (*_groups(48, None), KvCacheGroup("hidden-state", 1, None))
    assert problem == ""
    # a token exactly the page size fits: no scaling, no failure, block 1
    assert hidden_state_group(groups, 1000, 1000, 2, "0.28.0") == (
        (*groups, KvCacheGroup("hidden-state", 1, 1)), ""
    )  # fmt: skip


def test_aligned_block_size_default_checkpoint_changes_nothing() -> None:
    # no checkpoint given: alignment 1 (lcm(align, 1) = align). An odd unit shows it: block
    # 17 on FLASH_ATTN (smallest kernel block 16): align = 17, a = 1 B, m = 40 B →
    # 17 · cdiv(40, 17) = 51, rounded to the backend's 16: 64 (a checkpoint of 2 would give
    # lcm(17, 2) = 34 · cdiv(40, 34) = 68 → 80)
    fa = BACKENDS["FLASH_ATTN"]
    assert aligned_block_size(1, 40, block_size=17, backend=fa, use_mla=False) == 64


# Nemotron-3-Nano's hybrid_override_pattern (its config.json): M = Mamba2 (state),
# * = attention, E = MoE (neither); pp_stages counts each stage's layers from it
NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"


def _stage_problem(stage: int, first: int, last: int, kept: int, aligned: int) -> str:
    return (
        f"vLLM 0.33 fails at start-up: pipeline stage {stage} (layers {first}-{last}) owns no "
        f"attention layer, so it skips the hybrid alignment and keeps block size {kept} while "
        f"the other stages use {aligned}; with prefix caching the stages disagree (vLLM issue "
        f"51752): pass --block-size {aligned} or move an attention layer onto the stage "
        "(VLLM_PP_LAYER_PARTITION)"
    )


def _stages(**settings: object) -> list[tuple[object, ...]]:
    # the stage facts and the message are 0.33's (pp-0.33.0.jsonl)
    rank = _block_rank(NANO, 1, **{"vllm_version": "0.33.0", **settings})
    return [
        (s.rank, s.start, s.end, s.attention_layers, s.state_layers, s.block_size, s.aligned,
         s.problem)
        for s in rank.pp_stages
    ]  # fmt: skip


def _expected(
    bounds: list[tuple[int, int]], aligned: int, kept: int, prefix_caching: bool
) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for rank, (start, end) in enumerate(bounds):
        layers = NANO_PATTERN[start:end]
        attention, state = layers.count("*"), layers.count("M")
        block = aligned if attention else kept
        problem = ""
        if not attention and block != aligned and prefix_caching and state:
            problem = _stage_problem(rank, start, end - 1, kept, aligned)
        out.append((rank, start, end, attention, state, block, attention > 0, problem))
    return out


PP6 = [(0, 8), (8, 17), (17, 26), (26, 35), (35, 44), (44, 52)]  # pp-0.33.0.jsonl


def test_pp_stages_in_full_on_0_33() -> None:
    # pp-0.33.0.jsonl, PP 6: stage 5 (layers 44-51: MEMEMEME) owns no attention layer and
    # keeps 16 while the others align to 2096; with prefix caching start-up fails
    on = _stages(pipeline_parallel_size=6, enable_prefix_caching=True)
    assert on == _expected(PP6, 2096, 16, True)
    assert on[-1][-1] == _stage_problem(5, 44, 51, 16, 2096)
    # prefix caching off: the same blocks, no failure
    assert _stages(pipeline_parallel_size=6, enable_prefix_caching=False) == _expected(
        PP6, 2096, 16, False
    )
    # --block-size 32: the aligned block is 32 · cdiv(2,084, 32) = 2,112, stage 5 keeps 32
    small = _stages(pipeline_parallel_size=6, enable_prefix_caching=True, block_size=32)
    assert small == _expected(PP6, 2112, 32, True)
    assert small[-1][-1] == _stage_problem(5, 44, 51, 32, 2112)
    # --block-size 2096: stage 5 keeps what the others align to, nothing disagrees
    fixed = _stages(pipeline_parallel_size=6, enable_prefix_caching=True, block_size=2096)
    assert fixed == _expected(PP6, 2096, 2096, True)
    assert all(stage[-1] == "" for stage in fixed)


def test_pp_stages_with_a_layer_partition_and_a_stage_without_state() -> None:
    # VLLM_PP_LAYER_PARTITION 1,1,50: stage 0 is layer 0 (M: state, no attention), stage 1
    # layer 1 (E: neither), stage 2 the rest. With prefix caching stage 0 fails (its Mamba
    # group keeps 16), stage 1 keeps 16 too but has no state to disagree on
    settings = {"pipeline_parallel_size": 3, "pp_layer_partition": "1,1,50",
                "enable_prefix_caching": True, "vllm_version": "0.33.0"}  # fmt: skip
    got = _stages(**settings)
    assert got == _expected([(0, 1), (1, 2), (2, 52)], 2096, 16, True)
    assert [stage[-1] != "" for stage in got] == [True, False, False]
    rank = _block_rank(NANO, 1, **settings)
    assert rank.problem == _stage_problem(0, 0, 0, 16, 2096)


def test_pp_stages_before_0_20_align_every_stage() -> None:
    # pp-0.19.1.jsonl: up to 0.19 the alignment ran once on the model config, so stage 5
    # takes the aligned block although it owns no attention layer, and nothing fails (with
    # prefix caching the block is chunk-aligned there: 2176 = 17 · 128, measured)
    got = _stages(pipeline_parallel_size=6, enable_prefix_caching=True, vllm_version="0.19.1")
    assert [(s[1], s[2], s[5], s[6], s[7]) for s in got] == [
        (start, end, 2176, True, "") for start, end in PP6
    ]
    # PP 1: no stages at all
    assert _stages(pipeline_parallel_size=1) == []


@pytest.mark.parametrize("release", ["0.20.0", "0.27.1", "0.33.0"])
def test_kv_cache_group_vectors_through_analyze_rank(release: str) -> None:
    # measured: the release's _get_kv_cache_groups_uniform_page_size over one spec per layer
    # (tests/golden/build_group_vectors.py), default flags, FLASH_ATTN, TP 1; mode none:
    # the Mamba groups' block is max_model_len, passed as the flag (kvalign does not read
    # the config's context length)
    for vector in _golden("groups", release):
        mamba = {g["block_size"] for g in vector["groups"] if g["kind"] == "mamba"}  # type: ignore[attr-defined]
        none = vector["mamba_cache_mode"] == "none"
        settings = Settings(vllm_version=release, attention_backend="FLASH_ATTN",
                            max_model_len=mamba.pop() if none else None)  # fmt: skip
        rank = rank_of(load_model(str(vector["model"])), settings, 1)
        assert rank.block_size == vector["block_size"], vector
        got = [(g.kind, g.layers, g.block_size) for g in rank.kv_cache_groups]
        assert got == [(g["kind"], g["layers"], g["block_size"]) for g in vector["groups"]]  # type: ignore[attr-defined]


def _kinds(*runs: tuple[str, int]) -> tuple[str, ...]:
    return tuple(kind for kind, count in runs for _ in range(count))


@pytest.mark.parametrize(
    ("kinds", "groups"),
    [
        # _get_kv_cache_groups_uniform_page_size (kv_cache_planning.py, 0.33.0): buckets in
        # order of first appearance; group size the smallest bucket, or the largest when it
        # is under 1.5 x the smallest; each bucket splits into cdiv(len, size) groups, group
        # i taking layers i, i + n, ...
        # 4 attention, 5 state: 5 < 6 → size 5: one group each
        (_kinds(("attention", 4), ("state", 5)), [("attention", 4), ("mamba", 5)]),
        # 4 and 6: 6 is not under 6 → size 4: state in cdiv(6, 4) = 2 groups of 3
        (_kinds(("state", 6), ("attention", 4)), [("mamba", 3), ("mamba", 3), ("attention", 4)]),
        # Nemotron-3-Nano's pattern: 23 Mamba, 6 attention → size 6, cdiv(23, 6) = 4 groups:
        # len(range(i, 23, 4)) = 6, 6, 6, 5 (hidden-state-0.33.0.jsonl: the same groups)
        (tuple("state" if c == "M" else "attention" if c == "*" else "mlp"
               for c in "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"),
         [("mamba", 6), ("mamba", 6), ("mamba", 6), ("mamba", 5), ("attention", 6)]),
        # a layer with both (Falcon-H1): counted in both buckets, attention first
        (_kinds(("both", 3)), [("attention", 3), ("mamba", 3)]),
        # 1 attention, 7 state (Jamba-tiny-dev, vLLM PR 45575): 8 groups of one
        (_kinds(("state", 4), ("attention", 1), ("state", 3)),
         [("mamba", 1)] * 7 + [("attention", 1)]),
    ],
)  # fmt: skip
def test_kv_cache_groups_by_hand(kinds: tuple[str, ...], groups: list[tuple[str, int]]) -> None:
    geometry = load_model(NANO)
    engine = engine_of(geometry, Settings())
    shaped = dataclasses.replace(geometry, layer_kinds=kinds)
    got = kv_cache_groups(shaped, engine, 144)
    assert [(g.kind, g.layers, g.block_size) for g in got] == [(k, n, 144) for k, n in groups]


def test_kv_cache_groups_block_per_kind() -> None:
    geometry = load_model(NANO)
    # mode none: the Mamba groups take max_model_len, attention the block
    off = engine_of(geometry, Settings(enable_prefix_caching=False, max_model_len=8192))
    got = kv_cache_groups(geometry, off, 144)
    assert [(g.kind, g.block_size) for g in got] == [("mamba", 8192)] * 4 + [("attention", 144)]
    # mode align with a Mamba block from before the skip-layer step: the Mamba groups take it
    align = engine_of(geometry, Settings(enable_prefix_caching=True))
    got = kv_cache_groups(geometry, align, 144, 128)
    assert [(g.kind, g.block_size) for g in got] == [("mamba", 128)] * 4 + [("attention", 144)]
    # fp8 with layer 5 (the first attention layer) kept in bf16: its own bucket (first seen
    # at index 5, before the next attention layer at 12); the quantized groups take
    # block x (2 B // 1 B) = 2 x block, the skip layer the block, the Mamba groups the block
    # before the skip step. Buckets 23 / 1 / 5: size 1, every layer its own group
    skip = engine_of(geometry, Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("5",)))
    got = kv_cache_groups(geometry, skip, 100, 80)
    assert [(g.kind, g.layers, g.block_size) for g in got] == (
        [("mamba", 1, 80)] * 23 + [("attention-skip", 1, 100)] + [("attention", 1, 200)] * 5
    )
    # an attention-free model, or no layer pattern: no groups
    mamba = load_model("tiiuae/falcon-mamba-7b")
    assert kv_cache_groups(mamba, engine_of(mamba, Settings()), 144) == ()
    assert kv_cache_groups(dataclasses.replace(geometry, layer_kinds=()), align, 144) == ()


def test_skip_layers_raise_the_block_without_a_state_and_the_tp_stable_block() -> None:
    # an attention-only Llama (tests/data/llama-pd: 8 KV heads of 128), fp8 with layer 0 kept
    # in bf16, 0.33 FLASH_ATTN: a = 2 · 8 · 128 · 1 B = 2,048 B, skip = 4,096 B, k = 16;
    # Platform._align_heterogeneous_kv_block_size: r = 4,096 · 16 = 65,536,
    # 16 · cdiv(65,536, 16 · 2,048) = 32 (no Mamba page to pad)
    llama = load_model(str(Path(__file__).resolve().parent / "data" / "llama-pd" / "model"))
    settings = Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("0",),
                        attention_backend="FLASH_ATTN")  # fmt: skip
    rank = rank_of(llama, settings, 1)
    assert (rank.block_size, rank.tp_stable_block_size, rank.state_family) == (32, 32, "")
    # the TP-stable block is derived from the TP 1 pages, so at TP 1 it is the block,
    # after the same skip-layer step (skip-layers-0.33.0.jsonl: LFM2-1.2B fp8, layer 2
    # kept: 32; Nemotron-3-Nano fp8, layer 5 kept: 4176)
    for vector in _golden("skip-layers", "0.33.0"):
        if vector["tp"] != 1 or vector["kv_cache_dtype"] != "fp8":
            continue
        settings = Settings(
            kv_cache_dtype="fp8", attention_backend="FLASH_ATTN",
            kv_cache_dtype_skip_layers=tuple(vector["kv_cache_dtype_skip_layers"]),  # type: ignore[arg-type]
            max_model_len=vector["mamba_block_size"]  # type: ignore[arg-type]
            if vector["mamba_cache_mode"] == "none" else None,
        )  # fmt: skip
        rank = rank_of(load_model(str(vector["model"])), settings, 1)
        assert rank.tp_stable_block_size == vector["block_size"], vector
    # the state family is the model's (Nemotron-H: MambaMixer2 layers)
    assert _block_rank(NANO, 1).state_family == "mamba2"


def test_hidden_state_failure_and_skip_layer_page_through_analyze_rank() -> None:
    # hidden-state-0.25.0.jsonl: LFM2-1.2B with 12 hidden states fails at start-up
    # (AssertionError). By hand: one token is 12 · 2,048 (hidden size) · 2 B = 49,152 B, the
    # groups' page 16 · 2,048 B = 32,768 B (the vector's padded page). With
    # num_speculative_tokens given, nothing else fails first: the problem is that one
    twelve = {"speculative_method": "extract_hidden_states", "num_speculative_tokens": 1,
              "eagle_aux_hidden_state_layer_ids": tuple(range(12)),
              "attention_backend": "FLASH_ATTN"}  # fmt: skip
    lfm2 = load_model("LiquidAI/LFM2-1.2B")
    old = rank_of(lfm2, Settings(vllm_version="0.25.0", **twelve), 1)  # type: ignore[arg-type]
    assert old.problem == (
        "vLLM 0.25 fails at start-up: one token of the extract_hidden_states hidden-state "
        "layer (49,152 B) does not fit the KV-cache groups' page (32,768 B) it is padded to "
        "(AssertionError: page_size_padded >= page size)"
    )
    # 0.33 (rule 3): the blocks double to 32 (hidden-state-0.33.0.jsonl), the layer fits
    new = rank_of(lfm2, Settings(vllm_version="0.33.0", **twelve), 1)  # type: ignore[arg-type]
    assert new.problem == ""
    assert [(g.kind, g.block_size) for g in new.kv_cache_groups][-2:] == [
        ("attention", 32), ("hidden-state", 1)
    ]  # fmt: skip
    # with skip layers the common page is the model-dtype one: Nemotron-3-Nano fp8, layer 5
    # kept (skip-layers-0.33.0.jsonl: block 4176, groups 4176 / 8352) and 3 hidden states
    # of 2,688 · 2 B = 16,128 B/token: page 4,176 · 1,024 B (bf16) = 4,276,224 B, most =
    # 4,276,224 // 16,128 = 265, the largest divisor of gcd(4176, 8352) = 4176 = 2^4 · 3^2
    # · 29 not above 265: 261 (with the fp8 page, 4,176 · 512 B, it would be 116)
    nano = load_model(NANO)
    both = Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("5",),
                    attention_backend="FLASH_ATTN", speculative_method="extract_hidden_states",
                    eagle_aux_hidden_state_layer_ids=(1, 20, 39))  # fmt: skip
    rank = rank_of(nano, both, 1)
    assert rank.block_size == 4176
    assert rank.kv_cache_groups[-1] == KvCacheGroup("hidden-state", 1, 261)


def test_skip_block_size_is_set_only_when_the_skip_step_raised_the_block() -> None:
    # LFM2-1.2B fp8: 16 without skip layers (vllm-0.33.0.jsonl), 32 with layer 2 kept
    # (skip-layers-0.33.0.jsonl): the step raised it. Nemotron-3-Nano fp8: 4176 either way
    # (a = 512 B, cdiv(2,134,016, 512) = 4,168 → 16 · 261 = 4,176; skip-layers vector 4176)
    raised = rank_of(load_model("LiquidAI/LFM2-1.2B"),
                     Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("2",),
                              attention_backend="FLASH_ATTN"), 1)  # fmt: skip
    assert (raised.block_size, raised.skip_block_size) == (32, 32)
    kept = rank_of(load_model(NANO),
                   Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("5",),
                            attention_backend="FLASH_ATTN"), 1)  # fmt: skip
    assert (kept.block_size, kept.skip_block_size) == (4176, None)


def test_no_skip_layer_block_step_before_0_25() -> None:
    # docs/versions.md (KV-cache dtype skip layers): Platform._align_heterogeneous_kv_block_size
    # is absent from 0.24.0 and present from 0.25.0: LFM2-1.2B fp8 with layer 2 kept stays
    # at 16 on 0.24.0 (vllm-0.33.0.jsonl's 16 without the flag: the same pages) and is
    # raised to 32 from 0.25.0 (skip-layers-0.25.0.jsonl)
    lfm2 = load_model("LiquidAI/LFM2-1.2B")
    flags = {"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": ("2",),
             "attention_backend": "FLASH_ATTN"}  # fmt: skip
    assert rank_of(lfm2, Settings(vllm_version="0.24.0", **flags), 1).block_size == 16  # type: ignore[arg-type]
    assert rank_of(lfm2, Settings(vllm_version="0.25.0", **flags), 1).block_size == 32  # type: ignore[arg-type]


def test_pp_stages_count_a_layer_with_both_mixers_twice() -> None:
    # Falcon-H1-0.5B: each of its 36 decoder layers runs attention and a Mamba2 mixer side
    # by side (hidden-state-0.33.0.jsonl: one attention and one Mamba group of 36 layers);
    # PP 2 splits them 18 / 18 (get_pp_indices) and each stage counts 18 of each, aligned
    # to Falcon's TP 1 block 800 (tests/rules/harness.py)
    rank = _block_rank(FALCON, 1, pipeline_parallel_size=2)
    got = [(s.start, s.end, s.attention_layers, s.state_layers, s.block_size, s.aligned)
           for s in rank.pp_stages]  # fmt: skip
    assert got == [(0, 18, 18, 18, 800, True), (18, 36, 18, 18, 800, True)]
