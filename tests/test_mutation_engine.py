"""Engine rules that depend on the GPU class, pinned at every class.

FlashInfer GDN prefill checkpoints (vLLM 0.33.0
``vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py``: FlashInfer on CUDA when
``is_device_capability(90)``, or capability family 100 / 120 with ``head_k_dim == 128``
(CUDA runtime ≥ 13 assumed); otherwise, and off CUDA, Triton) export a checkpoint every 64
tokens, which enters the alignment with prefix caching (Platform._align_hybrid_block_size).

Qwen3.5-397B-A17B at TP 8 (Hk 16, Hv 64, Dk = Dv = 128, K 4; float32 recurrent state via
``mamba_ssm_dtype``; a = 1,024 B/token): m = (2·16·128 + 64·128)/8 · 3 · 2 B +
(64/8) · 128 · 128 · 4 B = 9,216 + 524,288 = 533,504 B → 521 tokens: 16 · cdiv(521, 16) =
528 without the checkpoint, 64 · cdiv(521, 64) = 576 with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvalign.backends import get_gpu
from kvalign.engine import EngineCache, checkpoint_alignment, create_engine_config, is_sm100
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import profile_named
from tests.conftest import CATALOG
from tests.resolve import rank_of

QWEN = "Qwen/Qwen3.5-397B-A17B"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _block(model: str, **settings: object) -> int | None:
    return rank_of(load_model(model), Settings(**settings), 8).block_size  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("gpu", "block"),
    [
        ("A100", 528),  # SM80: Triton
        ("H100", 576),  # SM90: FlashInfer
        ("B200", 576),  # SM100, head_k_dim 128
        ("B300", 576),  # SM103: capability family 100
        ("RTX-PRO-6000", 576),  # SM120, head_k_dim 128
        ("MI300X", 528),  # not CUDA: Triton
    ],
)
def test_gdn_checkpoint_alignment_per_gpu_class(gpu: str, block: int) -> None:
    assert _block(QWEN, gpu=gpu) == block


def test_xpu_takes_triton_gdn_prefill() -> None:
    # not CUDA: Triton GDN prefill, no checkpoint. On TRITON_ATTN (MultipleOf(16)) → 528;
    # XPU's default FLASH_ATTN is MultipleOf(64) (flash_attn.py is_xpu) → 64 · 9 = 576
    assert _block(QWEN, gpu="Max-1550", attention_backend="TRITON_ATTN") == 528
    assert _block(QWEN, gpu="Max-1550") == 576


def test_gdn_prefill_backend_flag_and_prefix_caching() -> None:
    assert _block(QWEN, gpu="H100", gdn_prefill_backend="triton") == 528
    assert _block(QWEN, gdn_prefill_backend="flashinfer") == 576
    # the checkpoint only matters with prefix caching
    assert _block(QWEN, gpu="H100", enable_prefix_caching=False) == 528
    # before 0.33 no release folds it in
    assert _block(QWEN, gpu="H100", vllm_version="0.31.0") == 528


def test_gdn_checkpoint_needs_head_k_dim_128_on_blackwell(tmp_path: Path) -> None:
    # linear_key_head_dim 256: conv (2·16·256 + 64·128)/8 = 2,048 · 3 · 2 B = 12,288 B;
    # recurrent 8 · 128 · 256 · 4 B = 1,048,576 B; m = 1,060,864 B → 1,036 tokens:
    # 16 · cdiv(1,036, 16) = 1,040 (Triton), 64 · cdiv(1,036, 64) = 1,088 (FlashInfer)
    config = json.loads((CATALOG / QWEN / "config.json").read_text())
    config["text_config"]["linear_key_head_dim"] = 256
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = str(tmp_path / "config.json")
    assert _block(model, gpu="B200") == 1040
    assert _block(model, gpu="RTX-PRO-6000") == 1040
    assert _block(model, gpu="H100") == 1088  # SM90 does not look at head_k_dim


@pytest.mark.parametrize(
    ("gpu", "version", "block", "kernel"),
    [
        # FLASH_ATTN with head size 256 on capability 10.x/11.x runs FlashAttention 4's
        # head-256 kernel from 0.29 (flash_attn.py _get_fa4_hd256_block_size): only
        # 128-token kernel blocks → unit max(128, 16) = 128, lcm(128, 64) = 128 →
        # 128 · cdiv(521, 128) = 640, kernel 128
        ("B200", None, 640, 128),
        ("B300", None, 640, 128),
        # SM90 and SM120: MultipleOf(16), checkpoint 64 → 576, kernel = logical
        ("H100", None, 576, 576),
        ("RTX-PRO-6000", None, 576, 576),
        # 0.28: no FA4 pages, no checkpoint alignment → 528
        ("B200", "0.28.0", 528, 528),
    ],
)
def test_fa4_head_256_pages_per_gpu_class(
    gpu: str, version: str | None, block: int, kernel: int
) -> None:
    settings = Settings(gpu=gpu, attention_backend="FLASH_ATTN", vllm_version=version)
    rank = rank_of(load_model(QWEN), settings, 8)
    assert (rank.block_size, rank.kernel_block_size) == (block, kernel)


def test_checkpoint_alignment_per_branch() -> None:
    # vllm/model_executor/layers/mamba/abstract.py get_mamba_prefill_checkpoint_alignment and
    # qwen_gdn_linear_attn.py (module docstring): 64 only for GDN layers whose prefill runs
    # on FlashInfer, and only with prefix caching; else 1. Each branch's note is what
    # `kvalign explain` prints for the step.
    qwen, nano = load_model(QWEN), load_model(NANO)
    h100, a100 = get_gpu("H100"), get_gpu("A100")
    none = (1, "no prefill checkpoint alignment")
    # a Mamba2 model never has one, whatever the GPU
    assert checkpoint_alignment(nano, Settings(), h100, True) == none
    assert checkpoint_alignment(qwen, Settings(), h100, False) == none  # prefix caching off
    assert checkpoint_alignment(qwen, Settings(gdn_prefill_backend="triton"), h100, True) == (
        1, "GDN prefill on Triton: checkpoint alignment 1",
    )  # fmt: skip
    assert checkpoint_alignment(qwen, Settings(gdn_prefill_backend="flashinfer"), a100, True) == (
        64, "GDN prefill on FlashInfer: checkpoints every 64 tokens",
    )  # fmt: skip
    unknown = checkpoint_alignment(qwen, Settings(), None, True)
    assert unknown[0] == 1 and unknown[1].startswith("GPU unspecified: assumed the GDN prefill")
    assert "pass --gpu for the 64-token alignment" in unknown[1]
    assert checkpoint_alignment(qwen, Settings(), h100, True) == (
        64, "H100: GDN prefill on FlashInfer, checkpoints every 64 tokens",
    )  # fmt: skip
    assert checkpoint_alignment(qwen, Settings(), a100, True) == (
        1, "A100: GDN prefill on Triton, checkpoint alignment 1",
    )  # fmt: skip


def test_engine_cache_tells_models_apart_and_resolves_each_once() -> None:
    # EngineCache.resolve is create_engine_config, once per (model object, settings): two
    # models with the same settings each get their own config (a cache keyed on the
    # settings alone would hand Qwen Nano's), and a second call returns the first result
    nano, qwen = load_model(NANO), load_model(QWEN)
    cache = EngineCache()
    first = cache.resolve(nano, Settings())
    other = cache.resolve(qwen, Settings())
    assert first == create_engine_config(nano, Settings())
    assert other == create_engine_config(qwen, Settings())
    assert first != other
    assert cache.resolve(nano, Settings()) is first


def test_with_block_size_accepts_one_token() -> None:
    # vLLM's CacheConfig takes any positive block size; 0 is refused (test_resolve_once)
    engine = create_engine_config(load_model(NANO), Settings())
    one = engine.with_block_size(1)
    assert (one.base_block, one.settings.block_size) == (1, 1)


@pytest.mark.parametrize(
    ("transformers", "dtypes", "page", "block"),
    [
        # measured: tests/golden/fidelity-0.19.1.jsonl (transformers 5.20.2: NemotronHConfig
        # declares mamba_ssm_cache_dtype = "float32", which vLLM's getattr then reads) and
        # fidelity-0.19.1-transformers-4.57.6.jsonl (no such attribute: 0.19's float16
        # fallback). 5.20.2 has major 5, the boundary itself (vLLM 0.19.1 refuses 5.0-5.5.0)
        ("5.20.2", ("bfloat16", "float32"), 16_900_096, 4224),
        ("4.57.6", ("bfloat16", "float16"), 8_511_488, 2176),
    ],
)
def test_nemotron_h_ssm_fallback_follows_the_transformers_major(
    transformers: str, dtypes: tuple[str, str], page: int, block: int
) -> None:
    settings = Settings(vllm_version="0.19.1", transformers_version=transformers, gpu="H100",
                        attention_backend="FLASH_ATTN", enable_prefix_caching=True)  # fmt: skip
    rank = rank_of(load_model("nvidia/Nemotron-H-56B-Base-8K"), settings, 1)
    assert (rank.mamba_state_dtypes, rank.mamba_page_bytes, rank.block_size) == (
        dtypes, page, block,
    )  # fmt: skip


def test_release_without_a_nemotron_default_takes_the_conv_dtype() -> None:
    # measured (tests/golden/fidelity-0.11.1.jsonl): Nano on 0.11.1, H100, FLASH_ATTN,
    # prefix caching: block 1,152; that release has no Nemotron-H ssm default, so the
    # ssm state takes the conv dtype
    settings = Settings(vllm_version="0.11.1", gpu="H100", attention_backend="FLASH_ATTN",
                        enable_prefix_caching=True)  # fmt: skip
    rank = rank_of(load_model(NANO), settings, 1)
    assert rank.block_size == 1152
    assert rank.mamba_state_dtypes == ("bfloat16", "bfloat16")


def test_float16_ssm_state_is_accepted() -> None:
    # vllm/config/cache.py MambaDType (0.33): auto, float32, float16, bfloat16
    rank = rank_of(load_model(NANO), Settings(mamba_ssm_cache_dtype="float16"), 1)
    assert rank.mamba_state_dtypes == ("bfloat16", "float16")


def test_sm100_test_per_release() -> None:
    # vLLM 0.11.1 models/config.py: current_platform.is_device_capability(100) (exactly
    # 10.0); 0.14.0: is_device_capability_family(100) (any 10.x). B300 is SM103.
    b200, b300, h100 = get_gpu("B200"), get_gpu("B300"), get_gpu("H100")
    early, later = profile_named("0.12"), profile_named("0.13")
    assert [is_sm100(early, g) for g in (b200, b300, h100, None)] == [True, False, False, False]
    assert [is_sm100(later, g) for g in (b200, b300, h100, None)] == [True, True, False, False]
