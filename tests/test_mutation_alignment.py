"""Rules of the block alignment pinned at the inputs where a wrong rule changes the answer
Every expected number is derived by hand below from the cited vLLM source, never read
from kvalign's output.

Nemotron-3-Nano-30B-A3B (bf16, TP 1; vLLM's MambaStateShapeCalculator): m = 2,134,016 B,
2 KV heads of head size 128, so a = 2 · (128 + 128) · 2 B = 1,024 B/token and the state needs
cdiv(2,134,016, 1,024) = 2,084 tokens. Its config names ``chunk_size: 128``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvalign.settings import Settings
from kvalign.sources import load_model
from tests.resolve import rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
#: vLLM 0.27.1: prefix caching is off by default for hybrids and, when enabled, Nemotron-H
#: (SupportsMambaPrefixCaching) runs in Mamba cache mode 'all'.
ALL_MODE = {"vllm_version": "0.27.1", "enable_prefix_caching": True}


def _block(model: str, tp: int = 1, **settings: object) -> int | None:
    return rank_of(load_model(model), Settings(**settings), tp).block_size  # type: ignore[arg-type]


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
