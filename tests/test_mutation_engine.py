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
from dataclasses import replace
from pathlib import Path

import pytest

from kvalign.backends import get_gpu
from kvalign.engine import (
    EngineCache,
    checkpoint_alignment,
    create_engine_config,
    is_sm100,
    mamba_cache_mode,
)
from kvalign.errors import InvalidSettings, NotModelled
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import profile_named, resolve
from tests.conftest import CATALOG, ROOT
from tests.resolve import rank_of

QWEN = "Qwen/Qwen3.5-397B-A17B"
DATA = ROOT / "tests" / "data"
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


# ---- survivors of the mutmut run over kvalign/engine.py ---------------------------------


def test_flash_attn_kernel_blocks_on_0_11_1_for_every_model() -> None:
    # docs/versions.md (0.11.1 row; "FLASH_ATTN 16/32/64 for every model": 0.11.1
    # v1/attention/backends/flash_attn.py supported_kernel_block_sizes = [16, 32, 64]).
    # Measured (tests/golden/fidelity-0.11.1.jsonl): Nano, H100, FLASH_ATTN, prefix
    # caching, TP 1 → block 1,152; its state is bfloat16 (no float32 condition), so only
    # the every-model rule restricts the kernel: select_common_block_size takes the largest
    # of 16/32/64 dividing 1,152 = 64 (MultipleOf(16) would keep 1,152)
    settings = Settings(vllm_version="0.11.1", gpu="H100", attention_backend="FLASH_ATTN",
                        enable_prefix_caching=True)  # fmt: skip
    rank = rank_of(load_model(NANO), settings, 1)
    assert (rank.block_size, rank.kernel_block_size) == (1152, 64)


def test_kv_cache_dtype_from_the_checkpoint_names_its_source() -> None:
    # the step `kvalign explain` prints for the checkpoint's kv_cache_scheme names the vLLM
    # function that reads it (vllm/utils/torch_utils.py resolve_kv_cache_dtype_string); the
    # note shown with every result gives the resolution without the citation
    engine = create_engine_config(load_model("nvidia/Qwen3.5-397B-A17B-NVFP4"), Settings())
    step = {r.key: r for r in engine.resolutions}["kv_cache_dtype"]
    assert (step.value, step.source) == (
        "fp8 (1 B)",
        "--kv-cache-dtype auto → fp8 from the checkpoint's quantization_config "
        "(vllm/utils/torch_utils.py resolve_kv_cache_dtype_string)",
    )
    assert (
        "KV cache in fp8: --kv-cache-dtype auto → fp8 from the checkpoint's "
        "quantization_config" in engine.notes
    )


def test_checkpoint_scheme_vllm_does_not_map_falls_back_to_the_model_dtype() -> None:
    # a modelopt scheme vLLM does not map (dynamic fp8) resolves to "auto": vLLM then uses
    # the model dtype (bfloat16, 2 B); explain must not say the checkpoint chose it
    geo = replace(load_model("nvidia/Qwen3.5-397B-A17B-NVFP4"), checkpoint_kv_cache_dtype="auto")
    engine = create_engine_config(geo, Settings())
    step = {r.key: r for r in engine.resolutions}["kv_cache_dtype"]
    assert (engine.kv_cache_dtype, engine.kv_bytes) == ("bfloat16", 2)
    assert (step.value, step.source) == (
        "bfloat16 (2 B)", "--kv-cache-dtype auto → the model dtype",
    )  # fmt: skip
    assert not [n for n in engine.notes if n.startswith("KV cache in")]


def test_unspecified_gpu_checkpoint_note_in_full() -> None:
    # the note `explain` prints when no --gpu is given for a GDN model with prefix caching:
    # it names the GPUs whose GDN prefill runs on FlashInfer (SM90 H100/H200, SM100 B200)
    assert checkpoint_alignment(load_model(QWEN), Settings(), None, True) == (
        1,
        "GPU unspecified: assumed the GDN prefill is not on FlashInfer (checkpoint "
        "alignment 1); on H100/H200/B200 pass --gpu for the 64-token alignment",
    )


def test_engine_cache_keeps_each_model_alive_for_the_run() -> None:
    # the cache keys on id(model): it must hold every model it resolved, or a model freed
    # by the caller leaves its id to the next one and that one gets the freed model's
    # config. Two variants of Nano that differ only in their model dtype (float16 vs the
    # config's bfloat16), each dropped right after use: each must resolve its own dtype
    base = load_model(NANO)
    cache = EngineCache()
    for i in range(40):
        dtype = ("float16", "bfloat16")[i % 2]
        model = replace(base, model_dtype=dtype)
        assert cache.resolve(model, Settings()).model_dtype == dtype
        del model


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        # vllm/config/cache.py MambaDType (docs/versions.md): bfloat16 from 0.22 (0.20.0
        # measured: literal_error), float16 from 0.13; each error names the flag and what
        # the release accepts
        ({"vllm_version": "0.20.0", "mamba_cache_dtype": "bfloat16"},
         "vLLM 0.20 rejects --mamba-cache-dtype bfloat16 (it accepts auto, float32, float16)"),
        ({"vllm_version": "0.12.0", "mamba_ssm_cache_dtype": "float16"},
         "vLLM 0.12 rejects --mamba-ssm-cache-dtype float16 (it accepts auto, float32)"),
        # not a MambaDType at all: the flag named, the values listed
        ({"mamba_cache_dtype": "int4"},
         "--mamba-cache-dtype: unknown value 'int4' "
         "(expected one of auto, float32, float16, bfloat16)"),
        ({"mamba_ssm_cache_dtype": "fp8"},
         "--mamba-ssm-cache-dtype: unknown value 'fp8' "
         "(expected one of auto, float32, float16, bfloat16)"),
    ],
)  # fmt: skip
def test_mamba_dtype_errors_name_the_flag(settings: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidSettings) as raised:
        create_engine_config(load_model(NANO), Settings(**settings))  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_explicit_ssm_dtype_step_names_the_flag() -> None:
    # an explicit --mamba-ssm-cache-dtype overrides Nemotron-H's float32 default; explain's
    # step says so (and the release accepts float16 from 0.13)
    engine = create_engine_config(load_model(NANO), Settings(mamba_ssm_cache_dtype="float16"))
    step = {r.key: r for r in engine.resolutions}["mamba_ssm_cache_dtype"]
    assert (step.value, step.source) == ("float16", "--mamba-ssm-cache-dtype float16")


def _ssm_step(model: str, **settings: object) -> tuple[tuple[str | None, str | None], str, str]:
    engine = create_engine_config(load_model(model), Settings(**settings))  # type: ignore[arg-type]
    step = {r.key: r for r in engine.resolutions}["mamba_ssm_cache_dtype"]
    return (engine.conv_dtype, engine.ssm_dtype), step.value, step.source


@pytest.mark.parametrize(
    ("model", "settings", "dtypes", "source"),
    [
        # measured (tests/golden/fidelity-0.19.1*.jsonl): Nemotron-H-56B's config names no
        # mamba_ssm_cache_dtype, so the fallback applies and depends on the transformers
        # release, which the step names: float16 under 4.57.6, float32 under 5.20.2
        ("nvidia/Nemotron-H-56B-Base-8K", {"vllm_version": "0.19.1",
                                           "transformers_version": "4.57.6"},
         ("bfloat16", "float16"),
         "--mamba-ssm-cache-dtype auto → float16 (model default, vLLM 0.18) "
         "with transformers 4.57.6"),
        ("nvidia/Nemotron-H-56B-Base-8K", {"vllm_version": "0.19.1",
                                           "transformers_version": "5.20.2"},
         ("bfloat16", "float32"),
         "--mamba-ssm-cache-dtype auto → float32 (model default, vLLM 0.18) "
         "with transformers 5.20.2"),
        # Nano's config names float32 itself: no fallback, so no transformers release
        ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"vllm_version": "0.19.1",
                                                        "transformers_version": "4.57.6"},
         ("bfloat16", "float32"),
         "--mamba-ssm-cache-dtype auto → float32 (model default, vLLM 0.18)"),
        # Qwen3.5: mamba_ssm_dtype float32 (config value; vllm-0.33.0 vectors float32)
        ("Qwen/Qwen3.5-27B", {"vllm_version": "0.33.0"}, ("bfloat16", "float32"),
         "--mamba-ssm-cache-dtype auto → float32 (model default, vLLM 0.33)"),
        # KDA before 0.30 keeps its recurrent state float32 whatever the flag says
        # (docs/versions.md 0.30 row; measured: vllm-0.28.0.jsonl bfloat16 flag → float32)
        ("moonshotai/Kimi-K3", {"vllm_version": "0.28.0"}, ("bfloat16", "float32"),
         "KDA recurrent state always float32"),
        ("moonshotai/Kimi-K3", {"vllm_version": "0.28.0", "mamba_ssm_cache_dtype": "bfloat16"},
         ("bfloat16", "float32"),
         "KDA recurrent state always float32 (vLLM 0.28 ignores --mamba-ssm-cache-dtype "
         "bfloat16 for KDA)"),
        # from 0.30 the flag is honoured (vllm-0.33.0.jsonl: bfloat16 → bfloat16); auto is
        # KDA's float32 default
        ("moonshotai/Kimi-K3", {}, ("bfloat16", "float32"),
         "--mamba-ssm-cache-dtype auto → float32 (KDA default)"),
        ("moonshotai/Kimi-K3", {"mamba_ssm_cache_dtype": "bfloat16"}, ("bfloat16", "bfloat16"),
         "--mamba-ssm-cache-dtype bfloat16"),
        # gated delta nets before 0.17 give both states the conv dtype and ignore the flag
        # (measured: vllm-0.14.0.jsonl, Qwen3-Next with float32 → bfloat16, bfloat16)
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", {"vllm_version": "0.14.0"},
         ("bfloat16", "bfloat16"), "vLLM 0.14: GDN states both take --mamba-cache-dtype"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", {"vllm_version": "0.14.0",
                                              "mamba_ssm_cache_dtype": "float32"},
         ("bfloat16", "bfloat16"),
         "vLLM 0.14: GDN states both take --mamba-cache-dtype; --mamba-ssm-cache-dtype "
         "float32 is ignored"),
    ],
)  # fmt: skip
def test_ssm_dtype_step_per_model_default(
    model: str, settings: dict[str, str], dtypes: tuple[str, str], source: str
) -> None:
    assert _ssm_step(model, **settings) == (dtypes, dtypes[1], source)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mamba_cache_mode": "foo"},
         "--mamba-cache-mode: unknown value 'foo' (expected one of none, align, all)"),
        # docs/versions.md: the flag exists from 0.15; 0.32 removed 'all'
        # (MambaCacheMode = Literal["align", "none"])
        ({"vllm_version": "0.14.0", "mamba_cache_mode": "all"},
         "--mamba-cache-mode: vLLM 0.14 has no such flag (it exists from 0.15)"),
        ({"vllm_version": "0.32.0", "mamba_cache_mode": "all"},
         "--mamba-cache-mode all: vLLM 0.32 accepts only none, align"),
    ],
)  # fmt: skip
def test_mamba_cache_mode_errors(settings: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidSettings) as raised:
        create_engine_config(load_model(NANO), Settings(**settings))  # type: ignore[arg-type]
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("model", "settings", "prefix_caching", "expected"),
    [
        # prefix caching off: mode none, whatever the flag (MambaModelConfig resets it)
        (NANO, {"vllm_version": "0.31.0"}, False, ("none", "prefix caching is off")),
        (NANO, {"vllm_version": "0.31.0", "mamba_cache_mode": "align"}, False,
         ("none", "prefix caching is off: --mamba-cache-mode align is reset to none")),
        # an attention-free model has no hybrid alignment: the flag is not "reset"
        ("tiiuae/falcon-mamba-7b", {"vllm_version": "0.31.0", "mamba_cache_mode": "align"},
         True, ("none", "no hybrid alignment")),
        # before the flag (< 0.15): chunk alignment only for the models supporting Mamba
        # prefix caching (docs/versions.md 0.11.1 row: Nemotron-H yes, Qwen3-Next no)
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", {"vllm_version": "0.14.0"}, True,
         ("none", "vLLM 0.14: no chunk alignment for qwen3_next")),
        (NANO, {"vllm_version": "0.14.0"}, True,
         ("all", "vLLM 0.14: Mamba prefix caching aligns to the chunk size")),
        # an explicit "none" with prefix caching off is no reset
        (NANO, {"vllm_version": "0.31.0", "mamba_cache_mode": "none"}, False,
         ("none", "prefix caching is off")),
        # docs/versions.md 0.33 row: the flag is a deprecated no-op, the mode is align
        (NANO, {"mamba_cache_mode": "align", "vllm_version": "0.33.0"}, True,
         ("align", "vLLM 0.33: prefix caching → align (--mamba-cache-mode align is a "
                   "deprecated no-op)")),
        # docs/versions.md 0.20 row: speculative decoding switches supporting models to align
        (NANO, {"vllm_version": "0.20.0", "num_speculative_tokens": 1}, True,
         ("align", "vLLM 0.20 default with speculative decoding for nemotron_h")),
        # 0.15-0.27: 'all' only for models supporting Mamba prefix caching; LFM2 does not
        ("LiquidAI/LFM2-1.2B", {"vllm_version": "0.25.0"}, True,
         ("align", "vLLM 0.25 default for lfm2 with prefix caching")),
        ("LiquidAI/LFM2-1.2B", {"vllm_version": "0.25.0", "mamba_cache_mode": "all"}, True,
         ("align", "--mamba-cache-mode all unsupported for lfm2: align")),
    ],
)  # fmt: skip
def test_mamba_cache_mode_branches(
    model: str, settings: dict[str, str], prefix_caching: bool, expected: tuple[str, str]
) -> None:
    chosen = Settings(**settings)  # type: ignore[arg-type]
    profile = resolve(chosen.vllm_version).profile
    assert mamba_cache_mode(load_model(model), chosen, profile, prefix_caching) == expected


@pytest.mark.parametrize(
    ("model", "settings", "message"),
    [
        (NANO, {"mamba_backend": "cuda"},
         "--mamba-backend: unknown value 'cuda' (expected triton or flashinfer)"),
        # vllm/config/cache.py (0.33): replayssm_buffer_len = Field(default=16, gt=0)
        (NANO, {"use_replayssm": True, "replayssm_buffer_len": 0},
         "--replayssm-buffer-len must be positive"),
        (NANO, {"use_replayssm": True, "vllm_version": "0.25.0"},
         "--use-replayssm: vLLM 0.25 has no such flag (from 0.27)"),
        # VllmConfig.validate_mamba_cached_kernel: supports_replayssm (Nemotron-H only);
        # the error names the architecture
        ("Qwen/Qwen3.5-27B", {"use_replayssm": True},
         "vLLM rejects this configuration: --use-replayssm is only supported for "
         "Nemotron-H models (got Qwen3_5ForConditionalGeneration)"),
        # docs/versions.md 0.27 row: ReplaySSM is Triton only, no speculative decoding
        (NANO, {"use_replayssm": True, "vllm_version": "0.28.0", "mamba_backend": "flashinfer"},
         "vLLM 0.28 rejects this configuration: --use-replayssm requires --mamba-backend "
         "triton"),
        (NANO, {"use_replayssm": True, "vllm_version": "0.28.0", "num_speculative_tokens": 1},
         "vLLM 0.28 rejects this configuration: --use-replayssm does not support speculative "
         "decoding"),
        (NANO, {"use_replayssm": True, "vllm_version": "0.31.0", "mamba_cache_mode": "all"},
         "vLLM rejects this configuration: --use-replayssm supports prefix caching only in "
         "align mode; pass --mamba-cache-mode align"),
        # vLLM 0.30.0 and 0.31.0 vllm/config/vllm.py validate_mamba_cached_kernel: any
        # speculative token sets use_kda_recoverssm, and RecoverSSM raises "RecoverSSM is
        # only supported for Kimi-K3 KDA" for every other architecture, before the mode is
        # read (0.32.0 appends the speculative tokens to the FlashInfer ring instead)
        (NANO, {"use_replayssm": True, "vllm_version": "0.31.0", "num_speculative_tokens": 1,
                "mamba_backend": "flashinfer", "mamba_cache_mode": "all"},
         "vLLM 0.30 rejects this configuration: --use-replayssm with speculative decoding "
         "turns on RecoverSSM, which it supports only for Kimi-K3 KDA (ValueError); "
         "speculative decoding with ReplaySSM on Nemotron-H needs vLLM 0.32.0"),
        (NANO, {"use_replayssm": True, "vllm_version": "0.30.0", "num_speculative_tokens": 2},
         "vLLM 0.30 rejects this configuration: --use-replayssm with speculative decoding "
         "turns on RecoverSSM, which it supports only for Kimi-K3 KDA (ValueError); "
         "speculative decoding with ReplaySSM on Nemotron-H needs vLLM 0.32.0"),
    ],
)  # fmt: skip
def test_replayssm_errors(model: str, settings: dict[str, object], message: str) -> None:
    chosen = Settings(enable_prefix_caching=True, **settings)  # type: ignore[arg-type]
    with pytest.raises(InvalidSettings) as raised:
        create_engine_config(load_model(model), chosen)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("settings", "ring"),
    [
        # gt=0: one token is the smallest ring (Triton: the ring is B tokens)
        ({"replayssm_buffer_len": 1}, 1),
        # docs/versions.md: FlashInfer ring B + 1 (0.30-0.31), B + 1 + speculative tokens
        # (0.32+)
        ({"vllm_version": "0.31.0", "mamba_backend": "flashinfer"}, 16 + 1),
        ({"mamba_backend": "flashinfer", "num_speculative_tokens": 2}, 16 + 1 + 2),
        (
            {"vllm_version": "0.32.0", "mamba_backend": "flashinfer", "num_speculative_tokens": 2},
            16 + 1 + 2,
        ),
    ],
)
def test_replayssm_ring_per_backend(settings: dict[str, object], ring: int) -> None:
    chosen = Settings(use_replayssm=True, enable_prefix_caching=False, **settings)  # type: ignore[arg-type]
    assert create_engine_config(load_model(NANO), chosen).replay_ring == ring


@pytest.mark.parametrize(
    ("model", "remote"),
    [
        # Ultra's config names auto_map remote code, Lightning's does not
        ("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
         "; the repository's remote code (auto_map, --trust-remote-code) could, but kvalign "
         "never runs it"),
        ("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4",
         " and it names no auto_map remote code either"),
    ],
)  # fmt: skip
def test_transformers_4_cannot_load_a_transformers_5_nemotron_config(
    model: str, remote: str
) -> None:
    # measured (tests/golden/fidelity-0.19.1-transformers-4.57.6.jsonl, Ultra): vLLM's own
    # NemotronHConfig raises "AttributeError: property 'layers_block_type' ... has no
    # setter"; the first default install with transformers 5 is 0.19.0
    settings = Settings(vllm_version="0.19.1", transformers_version="4.57.6")
    assert create_engine_config(load_model(model), settings).config_error == (
        "vLLM 0.19.1 with transformers 4.57.6 cannot load this config: it spells "
        "layers_block_type without hybrid_override_pattern (transformers 5), and vLLM's own "
        "NemotronHConfig refuses it (AttributeError: property 'layers_block_type' has no "
        f"setter){remote}; first release that can: vLLM 0.19.0 with transformers 5"
    )
    five = Settings(vllm_version="0.19.1", transformers_version="5.20.2")
    assert create_engine_config(load_model(model), five).config_error == ""


FALCON_H1 = "tiiuae/Falcon-H1-0.5B-Base"


@pytest.mark.parametrize(
    ("model", "settings", "key", "value", "source"),
    [
        # docs/versions.md "CPU kernel block": CPU_ATTN kernel blocks are multiples of 16
        # in 0.21.0
        (NANO, {"gpu": "CPU", "vllm_version": "0.21.0"}, "kernel_block_sizes",
         "multiples of 16", "vLLM 0.21: CPU_ATTN get_supported_kernel_block_sizes"),
        # docs/versions.md 0.29 row: FA4's head-256 kernel on 10.x, kernel blocks [128]
        (QWEN, {"gpu": "B200", "attention_backend": "FLASH_ATTN", "vllm_version": "0.33.0"},
         "kernel_block_sizes", "128",
         "vLLM 0.33: FlashAttention 4's head-size-256 kernel on capability 10.x"),
        # docs/versions.md 0.12 row: FLASH_ATTN 16/32/64 for hybrids with a float32 state
        # (Nano's ssm state is float32 from 0.14)
        (NANO, {"gpu": "H100", "attention_backend": "FLASH_ATTN", "vllm_version": "0.14.0",
                "enable_prefix_caching": True}, "kernel_block_sizes",
         "16, 32, 64",
         "vLLM 0.14: FLASH_ATTN with a float32 Mamba state (flash-attention issue 1974)"),
        (NANO, {"gpu": "H100", "vllm_version": "0.33.0"}, "attention_backend", "FLASH_ATTN",
         "--attention-backend unset → vLLM 0.33's choice on H100"),
        (NANO, {"attention_backend": "FLASH_ATTN"}, "attention_backend", "FLASH_ATTN",
         "--attention-backend FLASH_ATTN on an unspecified CUDA GPU"),
        # docs/versions.md 0.20 row: the backend's preferred block when --block-size is
        # unset (FLASH_ATTN: 16); before, CacheConfig's default 16
        (NANO, {}, "base_block_size", "16", "--block-size unset → FLASH_ATTN's preferred size"),
        (NANO, {"vllm_version": "0.19.1"}, "base_block_size", "16", "--block-size unset → 16"),
        (NANO, {"block_size": 32}, "base_block_size", "32", "--block-size 32"),
        (QWEN, {"gpu": "H100"}, "prefill_checkpoint", "64",
         "H100: GDN prefill on FlashInfer, checkpoints every 64 tokens"),
        # Nano's config names chunk_size 128; mode 'all' on 0.25 (fidelity-0.25.0: 2,176)
        (NANO, {"vllm_version": "0.25.0", "enable_prefix_caching": True},
         "mamba_chunk_alignment", "128",
         "prefix caching in Mamba cache mode 'all' (vLLM 0.25): the model's Mamba chunk size"),
        (NANO, {"vllm_version": "0.25.0", "enable_prefix_caching": True,
                "mamba_block_size": 256}, "mamba_chunk_alignment", "256",
         "prefix caching in Mamba cache mode 'all' (vLLM 0.25): --mamba-block-size replaces "
         "the chunk size"),
        # docs/versions.md 0.32 row: Falcon-H1's conv state gets speculative rows from 0.32
        (FALCON_H1, {"vllm_version": "0.31.0", "num_speculative_tokens": 1},
         "conv_state_spec_rows", "0",
         "vLLM 0.30: falcon_h1's Mamba2 conv state has no speculative rows"),
        # docs/versions.md 0.20 row: the CPU platform does no hybrid alignment
        (NANO, {"vllm_version": "0.20.0", "gpu": "CPU"}, "hybrid_alignment", "off",
         "vLLM 0.20's CPU platform does no hybrid block alignment"),
        # docs/versions.md 0.28 row: every model defaults to align
        (NANO, {"vllm_version": "0.31.0"}, "mamba_cache_mode", "align",
         "vLLM 0.30 default for nemotron_h with prefix caching"),
        (NANO, {"pipeline_parallel_size": 2}, "pipeline_parallel_size", "2",
         "--pipeline-parallel-size 2: each stage aligns on the layers it owns "
         "(Platform.update_block_size_for_backend)"),
        (NANO, {"pipeline_parallel_size": 2, "vllm_version": "0.19.1"},
         "pipeline_parallel_size", "2",
         "--pipeline-parallel-size 2: aligned once on the model config "
         "(HybridAttentionMambaModelConfig)"),
        (NANO, {"use_replayssm": True, "mamba_backend": "flashinfer",
                "enable_prefix_caching": False}, "replayssm_ring", "17",
         "--use-replayssm --replayssm-buffer-len 16 --mamba-backend flashinfer"),
        (NANO, {"max_model_len": 4096}, "max_model_len", "4096", "--max-model-len"),
        (NANO, {"vllm_version": "0.19.1", "transformers_version": "4.57.6"}, "transformers",
         "4.57.6", "--transformers-version 4.57.6"),
        (NANO, {"enable_prefix_caching": True}, "prefix_caching", "on",
         "--enable-prefix-caching"),
        (NANO, {"enable_prefix_caching": False}, "prefix_caching", "off",
         "--no-enable-prefix-caching"),
        # docs/versions.md: hybrid prefix caching default on in 0.33, off in 0.27
        (NANO, {"vllm_version": "0.33.0"}, "prefix_caching", "on",
         "vLLM 0.33 default for hybrid models"),
        (NANO, {"vllm_version": "0.27.1"}, "prefix_caching", "off",
         "vLLM 0.27 default for hybrid models"),
    ],
)  # fmt: skip
def test_explain_step(
    model: str, settings: dict[str, object], key: str, value: str, source: str
) -> None:
    engine = create_engine_config(load_model(model), Settings(**settings))  # type: ignore[arg-type]
    assert [(r.value, r.source) for r in engine.resolutions if r.key == key] == [(value, source)]


@pytest.mark.parametrize(
    ("settings", "note"),
    [
        ({"vllm_version": "0.20.0", "gpu": "CPU"},
         "vLLM 0.20's CPU platform does no hybrid block alignment: the block stays at its "
         "base size"),
        ({"mamba_block_size": 256, "enable_prefix_caching": True},
         "--mamba-block-size 256 does not move the block size in Mamba cache mode 'align' "
         "(only 'all' aligns to it)"),
    ],
)  # fmt: skip
def test_engine_notes(settings: dict[str, object], note: str) -> None:
    engine = create_engine_config(load_model(NANO), Settings(**settings))  # type: ignore[arg-type]
    assert note in engine.notes


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"pipeline_parallel_size": 0}, "--pipeline-parallel-size must be >= 1, got 0"),
        ({"pp_layer_partition": "26,26"},
         "--pp-layer-partition needs --pipeline-parallel-size > 1"),
        ({"mamba_block_size": 0}, "--mamba-block-size must be positive, got 0"),
        ({"max_model_len": 0}, "--max-model-len must be positive, got 0"),
        ({"block_size": -16}, "--block-size must be positive, got -16"),
        ({"num_speculative_tokens": -1}, "--num-speculative-tokens must be >= 0"),
        # VllmConfig.validate_mamba_block_size (vllm/config/vllm.py 0.33)
        ({"mamba_block_size": 256, "enable_prefix_caching": False},
         "vLLM rejects this configuration: --mamba-block-size can only be set with "
         "--enable-prefix-caching"),
    ],
)  # fmt: skip
def test_engine_arg_errors(settings: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidSettings) as raised:
        create_engine_config(load_model(NANO), Settings(**settings))  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_with_block_size_rewrites_only_the_base_block_step() -> None:
    engine = create_engine_config(load_model(NANO), Settings(block_size=32))
    moved = engine.with_block_size(64)
    steps = {r.key: (r.value, r.source) for r in moved.resolutions}
    assert steps["base_block_size"] == ("64", "--block-size 64")
    assert (moved.base_block, moved.settings.block_size) == (64, 64)
    others = [r for r in moved.resolutions if r.key != "base_block_size"]
    assert others == [r for r in engine.resolutions if r.key != "base_block_size"]
    assert engine.with_block_size(32) is engine
    with pytest.raises(InvalidSettings) as raised:
        engine.with_block_size(0)
    assert str(raised.value) == "--block-size must be positive, got 0"


def test_pipeline_note_when_the_layer_pattern_is_unknown() -> None:
    # a hybrid whose config names no per-layer pattern: the stages' layers are unknown
    note = (
        "--pipeline-parallel-size 2: the config names no per-layer pattern, so the stages' "
        "layers are unknown; each stage is assumed to own an attention layer"
    )
    settings = Settings(pipeline_parallel_size=2)
    patternless = replace(load_model(NANO), layer_kinds=())
    assert create_engine_config(patternless, settings).notes == (note,)
    # Nano's config names its pattern; an attention-free model has no hybrid stages
    assert create_engine_config(load_model(NANO), settings).notes == ()
    assert create_engine_config(load_model("tiiuae/falcon-mamba-7b"), settings).notes == ()


def test_attention_free_mamba2_config_error_on_0_14() -> None:
    # measured (tests/golden/vllm-0.14.0.jsonl, Mamba-Codestral): every TP invalid,
    # "AttributeError: 'Mamba2Config' object has no attribute 'num_attention_heads'";
    # docs/versions.md 0.18 row: attention-free Mamba2 configs build again
    model = load_model("mistralai/Mamba-Codestral-7B-v0.1")
    assert create_engine_config(model, Settings(vllm_version="0.14.0")).config_error == (
        "vLLM 0.14 cannot build this model's config: its ModelArchConfigConvertor reads "
        "num_attention_heads, which the mamba2 config lacks (AttributeError; fixed in 0.18)"
    )
    assert create_engine_config(model, Settings(vllm_version="0.18.1")).config_error == ""


@pytest.mark.parametrize(("version", "ssm"), [("0.17.0", "bfloat16"), ("0.25.0", "float32")])
def test_text_only_qwen35_runs_as_the_multimodal_class(version: str, ssm: str) -> None:
    # tests/data/qwen3.5-27b-text (Qwen3_5ForCausalLM, first registered in 0.27.0) runs as
    # Qwen3_5ForConditionalGeneration before 0.27; measured (fidelity-0.17.0/0.25.0): the
    # model-default hook (mamba_ssm_dtype float32) applies from 0.25 only: ssm bfloat16 on
    # 0.17.0 (block 400 at TP 2), float32 on 0.25.0 (784)
    engine = create_engine_config(load_model(str(DATA / "qwen3.5-27b-text")),
                                  Settings(vllm_version=version))  # fmt: skip
    line = version.rsplit(".", 1)[0]
    problem = (
        f"vLLM {line} fails at start-up: it registers no Qwen3_5ForCausalLM (from 0.27.0) and "
        "runs the text-only checkpoint as the multimodal Qwen3_5ForConditionalGeneration, "
        "which needs a vision_config (sizes as its start-up log prints them; upgrade to vLLM "
        "0.27.0)"
    )
    steps = [(r.value, r.source) for r in engine.resolutions if r.key == "architecture"]
    assert steps == [("Qwen3_5ForConditionalGeneration", problem)]
    assert (engine.startup_error, engine.ssm_dtype) == (problem, ssm)
    assert rank_of(load_model(str(DATA / "qwen3.5-27b-text")), engine, 2).block_size == {
        "0.17.0": 400, "0.25.0": 784,
    }[version]  # fmt: skip


def test_packed_checkpoint_kv_cache_message_in_full() -> None:
    geo = replace(load_model("nvidia/Qwen3.5-397B-A17B-NVFP4"), checkpoint_kv_cache_dtype="nvfp4")
    with pytest.raises(NotModelled) as raised:
        create_engine_config(geo, Settings())
    assert str(raised.value) == (
        f"{geo.config_path}: the checkpoint's quantization_config asks for a nvfp4 KV cache "
        "(what --kv-cache-dtype auto resolves to): that packed layout is not modelled by "
        "kvalign; pass --kv-cache-dtype fp8 or bfloat16 to size another layout"
    )


def test_fa4_head_256_pages_not_with_an_fp8_kv_cache() -> None:
    # docs/versions.md 0.29 row: FA4's head-256 kernel is not used with an fp8 KV cache.
    # fp8 at TP 8: a = 1 KV head · (256 + 256) · 1 B = 512 B/token, m = 533,504 B (module
    # docstring) → 1,042 tokens; B200 (Dk 128) checkpoints every 64: 64 · cdiv(1,042, 64) =
    # 1,088, kernel MultipleOf(16) = 1,088 (FA4 pages would give 128 · 9 = 1,152, kernel 128)
    settings = Settings(gpu="B200", attention_backend="FLASH_ATTN", kv_cache_dtype="fp8")
    rank = rank_of(load_model(QWEN), settings, 8)
    assert (rank.block_size, rank.kernel_block_size) == (1088, 1088)


def test_no_prefill_checkpoint_before_0_33() -> None:
    # docs/versions.md 0.33 row: the FlashInfer GDN checkpoints enter the alignment from
    # 0.33; before, the checkpoint is 1 and the note says so
    engine = create_engine_config(load_model(QWEN), Settings(vllm_version="0.31.0", gpu="H100"))
    assert (engine.checkpoint, engine.checkpoint_note) == (1, "no prefill checkpoint alignment")


def test_mamba_block_size_not_a_chunk_multiple_fails_at_start_up() -> None:
    # vllm/model_executor/layers/mamba/mamba_mixer2.py (0.27.1 read): in mode 'all' the
    # saved states stride by mamba_block_size // chunk_size (vLLM issue 57266); Nano's
    # chunk is 128, so 200 saves them at the wrong offsets, 256 is fine
    settings = Settings(vllm_version="0.25.0", enable_prefix_caching=True, mamba_block_size=200)
    assert create_engine_config(load_model(NANO), settings).startup_error == (
        "vLLM 0.25 fails at start-up: --mamba-block-size 200 is not a multiple of the Mamba "
        "chunk size 128 in Mamba cache mode 'all' (MambaMixer2 strides the saved states by "
        "mamba_block_size // chunk_size = 1; vLLM issue 57266): use a multiple of 128"
    )
    fine = replace(settings, mamba_block_size=256)
    assert create_engine_config(load_model(NANO), fine).startup_error == ""


@pytest.mark.parametrize(("version", "kernel"), [("0.11.1", 64), ("0.12.0", 128)])
def test_flash_attn_kernel_blocks_of_an_attention_only_model(version: str, kernel: int) -> None:
    # docs/versions.md: FLASH_ATTN offers 16/32/64-token kernel blocks for every model in
    # 0.11.1 (an attention-only Llama with --block-size 128: the largest dividing is 64),
    # only for hybrids with a float32 state from 0.12 (MultipleOf(16): kernel = 128)
    model = str(DATA / "llama-pd" / "model")
    settings = Settings(vllm_version=version, attention_backend="FLASH_ATTN", block_size=128,
                        gpu="H100")  # fmt: skip
    engine = create_engine_config(load_model(model), settings)
    rank = rank_of(load_model(model), engine, 1)
    assert (rank.block_size, rank.kernel_block_size) == (128, kernel)
    assert engine.backend is not None and engine.backend.name == "FLASH_ATTN"
    assert (engine.backend.sizes == (16, 32, 64)) is (version == "0.11.1")


def test_flash_attn_restriction_is_cuda_only() -> None:
    # flash_attn.py get_supported_kernel_block_sizes: the float32 restriction is a CUDA
    # one; on XPU FLASH_ATTN keeps MultipleOf(64) (is_xpu)
    settings = Settings(vllm_version="0.14.0", attention_backend="FLASH_ATTN", gpu="Max-1550",
                        enable_prefix_caching=True)  # fmt: skip
    engine = create_engine_config(load_model(NANO), settings)
    assert engine.backend is not None and engine.backend.sizes != (16, 32, 64)
    assert engine.backend.multiple_of == 64
    steps = [(r.key, r.value) for r in engine.resolutions if r.key == "kernel_block_sizes"]
    assert steps == []


def test_mamba_dtype_steps_of_a_model_without_defaults() -> None:
    # Falcon-H1 names no ssm default: auto → the conv-state dtype (the model's bfloat16)
    engine = create_engine_config(load_model(FALCON_H1), Settings())
    steps = {r.key: (r.value, r.source) for r in engine.resolutions}
    assert steps["mamba_cache_dtype"] == ("bfloat16", "--mamba-cache-dtype auto")
    assert steps["mamba_ssm_cache_dtype"] == (
        "bfloat16", "--mamba-ssm-cache-dtype auto → the conv-state dtype",
    )  # fmt: skip


def test_restricted_and_fa4_backends_keep_their_name_and_preference() -> None:
    # FLASH_ATTN stays FLASH_ATTN when its kernel sizes are narrowed (0.14, float32 state)
    # and with FA4's head-256 pages (docs/versions.md 0.29 row: kernel blocks [128],
    # preferred 128, so the base block is 128 when --block-size is unset)
    narrowed = create_engine_config(load_model(NANO), Settings(
        vllm_version="0.14.0", gpu="H100", attention_backend="FLASH_ATTN",
        enable_prefix_caching=True))  # fmt: skip
    assert narrowed.backend is not None and narrowed.backend.name == "FLASH_ATTN"
    fa4 = create_engine_config(
        load_model(QWEN), Settings(gpu="B200", attention_backend="FLASH_ATTN")
    )
    assert fa4.backend is not None and fa4.backend.name == "FLASH_ATTN"
    assert fa4.base_block == 128
    # CPU_ATTN kernel blocks: multiples of 16 in 0.21.0 (docs/versions.md "CPU kernel block")
    cpu = create_engine_config(load_model(NANO), Settings(gpu="CPU", vllm_version="0.21.0"))
    assert cpu.backend is not None and cpu.backend.multiple_of == 16


def test_prefix_caching_step_of_an_attention_only_model_and_the_refusal_note() -> None:
    llama = create_engine_config(
        load_model(str(DATA / "llama-pd" / "model")), Settings(vllm_version="0.33.0")
    )
    steps = [(r.value, r.source) for r in llama.resolutions if r.key == "prefix_caching"]
    assert steps == [("on", "vLLM 0.33 default")]
    # 0.11.1 turns prefix caching off for Qwen3-Next whatever the flag: the note says why
    forced = Settings(vllm_version="0.11.1", enable_prefix_caching=True)
    qwen_next = create_engine_config(load_model("Qwen/Qwen3-Next-80B-A3B-Instruct"), forced)
    refusal = [r.source for r in qwen_next.resolutions if r.key == "prefix_caching"]
    assert not qwen_next.prefix_caching and list(qwen_next.notes) == refusal


def test_skip_layer_entries_that_name_no_attention_layer_are_shown_as_given() -> None:
    # Nemotron-3-Nano's attention layers are the '*' of its hybrid_override_pattern
    # (config.json): 5, 12, 19, 26, 33, 42. Layer 5 is matched; 3 (a Mamba layer),
    # sliding_window (vLLM's word for sliding-window layers; Nano has none) and abc match
    # nothing: indices and sliding_window are shown as written, anything else escaped
    geometry = load_model(NANO)
    settings = Settings(kv_cache_dtype="fp8",
                        kv_cache_dtype_skip_layers=("5", "3", "sliding_window", "abc"))  # fmt: skip
    engine = create_engine_config(geometry, settings)
    assert engine.skip_layers == (5,)
    assert engine.notes == (
        "--kv-cache-dtype-skip-layers: 3, sliding_window, 'abc' names no attention layer of "
        "this model (attention layers: 5, 12, 19, 26, 33, 42)",
    )


def test_skip_layer_flag_refusals_and_notes_in_full() -> None:
    # EngineArgs has no kv_cache_dtype_skip_layers before 0.19 (vllm/engine/arg_utils.py,
    # absent in 0.18.1, present in 0.19.0: docs/versions.md)
    falcon = load_model("tiiuae/Falcon-H1-0.5B-Base")
    old = Settings(vllm_version="0.18.1", kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("0",))
    with pytest.raises(InvalidSettings) as refused:
        create_engine_config(falcon, old)
    assert str(refused.value) == (
        "--kv-cache-dtype-skip-layers: vLLM 0.18 has no such flag (it exists from 0.19)"
    )
    # an attention-free model (falcon-mamba) has no layer the flag could name: a note with
    # the entries as given, joined by commas
    mamba = load_model("tiiuae/falcon-mamba-7b")
    engine = create_engine_config(
        mamba, Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("0", "1"))
    )
    assert engine.notes == ("--kv-cache-dtype-skip-layers 0,1: the model has no attention layer",)
    assert engine.skip_kv_bytes is None
    # an MLA model (Kimi-K3; attention layers 3, 7, 11, ...) with a quantized KV cache: its
    # skipped layers' page follows the MLA spec, not modelled
    kimi = load_model("moonshotai/Kimi-K3")
    with pytest.raises(NotModelled) as refused_mla:
        create_engine_config(
            kimi, Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("3",))
        )
    assert str(refused_mla.value) == (
        "--kv-cache-dtype-skip-layers with a fp8 KV cache on an MLA model: the skipped "
        "layers' MLA page is not modelled by kvalign"
    )


def test_hidden_state_layer_ids_without_extract_hidden_states_say_so() -> None:
    # only extract_hidden_states adds the hidden-state KV-cache group
    # (ExtractHiddenStatesModel, vllm/model_executor/models/extract_hidden_states.py);
    # layer ids given with another method or none size nothing: a note naming what was given
    geometry = load_model(NANO)
    tail = "vLLM adds no hidden-state KV-cache group for them"
    head = ("eagle_aux_hidden_state_layer_ids (--eagle-aux-hidden-state-layer-ids) size "
            "nothing without speculative method extract_hidden_states")  # fmt: skip
    ids = (1, 20)
    none = create_engine_config(geometry, Settings(eagle_aux_hidden_state_layer_ids=ids))
    assert none.notes == (f"{head} (no method): {tail}",)
    eagle = create_engine_config(
        geometry,
        Settings(speculative_method="eagle3", num_speculative_tokens=1,
                 eagle_aux_hidden_state_layer_ids=ids),
    )  # fmt: skip
    assert eagle.notes == (f"{head} (method 'eagle3'): {tail}",)
    assert (none.hidden_state_bytes, eagle.hidden_state_bytes) == (None, None)


def _skip_step(engine: object) -> list[tuple[str, str]]:
    return [(r.value, r.source) for r in engine.resolutions  # type: ignore[attr-defined]
            if r.key == "kv_cache_dtype_skip_layers"]  # fmt: skip


def test_skip_layers_resolution_and_notes_in_full() -> None:
    # Nemotron-3-Nano: attention layers 5, 12, 19, 26, 33, 42 (the '*' of its pattern),
    # bfloat16 (2 B) model dtype; fp8 is 1 B
    nano = load_model(NANO)
    fp8 = create_engine_config(
        nano, Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("5",))
    )
    assert (fp8.skip_layers, fp8.skip_kv_bytes, fp8.notes) == ((5,), 2, ())
    assert _skip_step(fp8) == [("layers 5 in bfloat16 (2 B)", "--kv-cache-dtype-skip-layers 5 "
                                                                "(the others fp8)")]  # fmt: skip
    # no quantized KV cache: the layers are matched, nothing changes
    auto = create_engine_config(nano, Settings(kv_cache_dtype_skip_layers=("5",)))
    assert (auto.skip_layers, auto.skip_kv_bytes) == ((5,), None)
    assert _skip_step(auto) == [
        ("5", "the KV cache is already in the model dtype (bfloat16): no effect")
    ]
    # a Mamba layer only: none matched
    none = create_engine_config(
        nano, Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("3",))
    )
    assert none.skip_layers == ()
    assert _skip_step(none) == [("layers none in bfloat16 (2 B)",
                                 "--kv-cache-dtype-skip-layers 3 (the others fp8)")]  # fmt: skip
    # a hybrid config without a layer pattern, and one whose pattern has no attention layer
    five = Settings(kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("5",))
    bare = create_engine_config(replace(nano, layer_kinds=()), five)
    assert bare.notes == (
        "--kv-cache-dtype-skip-layers 5: the config names no per-layer pattern, so which "
        "attention layers it names is unknown; taken as none",
    )
    stateful = create_engine_config(replace(nano, layer_kinds=("state",) * 52), five)
    assert stateful.notes == (
        "--kv-cache-dtype-skip-layers: 5 names no attention layer of this model (attention "
        "layers: none)",
    )


@pytest.mark.parametrize(
    ("release", "skip", "error"),
    [
        # unify_kv_cache_spec_page_size cannot pad a Mamba page before 0.26.0
        # (vllm/v1/core/kv_cache_utils.py, docs/versions.md; skip-layers-0.25.0.jsonl:
        # AssertionError): LFM2-1.2B, layer 2 is attention, bf16 / fp8 = 2x the page
        ("0.25.0", "2",
         "vLLM 0.25 fails at start-up: the --kv-cache-dtype-skip-layers layers keep the model "
         "dtype, a page 2x the quantized attention page the Mamba page was padded to, and its "
         "unify_kv_cache_spec_page_size cannot pad a Mamba page (AssertionError): drop the "
         "flag or upgrade to vLLM 0.26.0"),
        ("0.25.0", "1", ""),  # layer 1 is a conv layer: nothing kept, nothing fails
        ("0.26.0", "2", ""),  # 0.26 pads the Mamba page
    ],
)  # fmt: skip
def test_skip_layers_before_the_mamba_padding_fail_at_start_up(
    release: str, skip: str, error: str
) -> None:
    lfm2 = load_model("LiquidAI/LFM2-1.2B")
    settings = Settings(vllm_version=release, kv_cache_dtype="fp8",
                        kv_cache_dtype_skip_layers=(skip,))  # fmt: skip
    assert create_engine_config(lfm2, settings).startup_error == error


def test_speculative_method_without_a_token_count() -> None:
    # SpeculativeConfig (vllm/config/speculative.py, read 0.11.1 → 0.33.0): suffix takes
    # suffix_decoding_max_tree_depth (default 24) when num_speculative_tokens is not given;
    # every other method without a draft model raises "num_speculative_tokens must be
    # provided" (_verify_args)
    geometry = load_model(NANO)
    suffix = create_engine_config(geometry, Settings(speculative_method="suffix"))
    assert (suffix.num_speculative_tokens, suffix.startup_error) == (24, "")
    steps = [(r.value, r.source) for r in suffix.resolutions if r.key == "num_speculative_tokens"]
    assert steps == [
        ("24", "--speculative-config method suffix without num_speculative_tokens: vLLM takes "
               "suffix_decoding_max_tree_depth (24)")
    ]  # fmt: skip
    eagle = create_engine_config(
        geometry, Settings(speculative_method="eagle3", vllm_version="0.33.0")
    )
    assert eagle.num_speculative_tokens == 0
    assert eagle.startup_error == (
        "vLLM 0.33 fails at start-up: --speculative-config method eagle3 needs "
        "num_speculative_tokens (--num-speculative-tokens, > 0); SpeculativeConfig raises "
        "ValueError without it (only a draft model's n_predict or suffix decoding supplies a "
        "default)"
    )
    # a count given: taken as it is, no error
    given = create_engine_config(geometry, Settings(speculative_method="suffix",
                                                    num_speculative_tokens=3))  # fmt: skip
    assert (given.num_speculative_tokens, given.startup_error) == (3, "")


# ---- survivors of the issue 19 re-run (1427/1503) ----------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        # vllm/config/cache.py (0.33.0): block_size = Field(gt=0) and
        # mamba_block_size = Field(gt=0); vllm/config/model.py max_model_len = Field(ge=-1):
        # one token is a valid size for each (the smallest check_engine_args accepts)
        {"block_size": 1},
        {"max_model_len": 1},
        {"mamba_block_size": 1, "enable_prefix_caching": True},
    ],
)
def test_one_token_sizes_are_accepted(settings: dict[str, object]) -> None:
    engine = create_engine_config(load_model(NANO), Settings(**settings))  # type: ignore[arg-type]
    assert engine.settings == Settings(**settings)  # type: ignore[arg-type]
    if "block_size" in settings:
        assert engine.base_block == 1
    if "max_model_len" in settings:
        assert engine.max_model_len == 1


# vLLM 0.33.0 vllm/config/speculative.py: SpeculativeMethod = "ngram", "draft_model",
# "suffix", "custom_class", EagleModelTypes ("eagle", "eagle3", "extract_hidden_states",
# MTPModelTypes, "dflash"), "ngram_gpu", "dspark"; MTPModelTypes holds 28 names, "mtp" and
# 27 ending in "_mtp". The 11 names not ending in "_mtp", sorted:
OTHERS_0_33 = ("custom_class, dflash, draft_model, dspark, eagle, eagle3, extract_hidden_states, "
               "mtp, ngram, ngram_gpu, suffix")  # fmt: skip


def test_an_unknown_speculative_method_is_refused_with_the_release_list() -> None:
    with pytest.raises(InvalidSettings) as raised:
        create_engine_config(load_model(NANO), Settings(speculative_method="bogus",
                                                        num_speculative_tokens=1,
                                                        vllm_version="0.33.0"))  # fmt: skip
    assert str(raised.value) == (
        "--speculative-method (--speculative-config method) 'bogus': vLLM 0.33 refuses it at "
        f"start-up (SpeculativeConfig.method is one of {OTHERS_0_33} and 27 *_mtp model types)"
    )


def test_a_method_refused_by_a_release_not_read_names_the_read_one() -> None:
    # 0.21 was not read (versions.SPECULATIVE_METHODS_READ: 0.20.0, then 0.22.0): its list
    # is 0.20.0's, and the message says so; 0.33.0 was read, so its message does not
    settings = Settings(vllm_version="0.21.0", speculative_method="bogus",
                        num_speculative_tokens=1)  # fmt: skip
    with pytest.raises(InvalidSettings) as raised:
        create_engine_config(load_model(NANO), settings)
    message = str(raised.value)
    assert message.startswith(
        "--speculative-method (--speculative-config method) 'bogus': vLLM 0.21 refuses it"
    )
    assert message.endswith(" *_mtp model types, as read in 0.20.0)")


def test_a_long_speculative_method_is_cut_at_80_characters() -> None:
    # repr of 79 x's is 81 characters (two quotes): one over the limit of 80, so
    # sanitize.bounded keeps the first 80 - 40 = 40 (the quote and 39 x's) and counts the
    # 81 - 80 + 40 = 41 left out; at 80 characters (78 x's) it is kept whole
    for width, shown in ((79, "'" + "x" * 39 + "… (41 more characters)"), (78, repr("x" * 78))):
        settings = Settings(
            speculative_method="x" * width, num_speculative_tokens=1, vllm_version="0.33.0"
        )
        with pytest.raises(InvalidSettings) as raised:
            create_engine_config(load_model(NANO), settings)
        assert str(raised.value).startswith(
            f"--speculative-method (--speculative-config method) {shown}: vLLM 0.33 refuses"
        )


def test_release_and_model_dtype_steps() -> None:
    # the first two steps explain prints: the release chosen for --vllm-version, and the
    # model dtype (--dtype auto: Nano's config.json torch_dtype bfloat16)
    engine = create_engine_config(load_model(NANO), Settings(vllm_version="0.25.0"))
    assert list(engine.resolutions[:2]) == [
        ("vllm_release", "0.25", "vLLM 0.25 rules (for --vllm-version 0.25.0)"),
        ("model_dtype", "bfloat16", "--dtype auto (config: bfloat16)"),
    ]


def test_skip_layers_step_lists_every_matched_layer() -> None:
    # Nano's attention layers 5, 12, 19, 26, 33, 42 (the '*' of hybrid_override_pattern):
    # two of them skipped, both listed
    engine = create_engine_config(load_model(NANO), Settings(
        kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("5", "12")))  # fmt: skip
    assert engine.skip_layers == (5, 12)
    assert _skip_step(engine) == [
        ("layers 5, 12 in bfloat16 (2 B)", "--kv-cache-dtype-skip-layers 5,12 (the others fp8)")
    ]


HIDDEN = "extract_hidden_states"


def test_hidden_state_cache_step() -> None:
    # HiddenStateCacheSpec is an MLAAttentionSpec (vllm/v1/kv_cache_interface.py, 0.33.0:
    # head_size_v = 0, no separate V) of len(eagle_aux_hidden_state_layer_ids) heads of
    # hidden_size in the model dtype (models/extract_hidden_states.py): Nano, hidden_size
    # 2,688 (config.json), bfloat16, 3 ids: 3 · 2,688 · 2 B = 16,128 B per token
    settings = Settings(speculative_method=HIDDEN, num_speculative_tokens=1,
                        eagle_aux_hidden_state_layer_ids=(1, 20, 39))  # fmt: skip
    engine = create_engine_config(load_model(NANO), settings)
    assert (engine.hidden_state_bytes, engine.hidden_state_rule) == (16_128, 3)
    steps = [(r.value, r.source) for r in engine.resolutions if r.key == "hidden_state_cache"]
    assert steps == [(
        "16128 B per token",
        f"--speculative-config method {HIDDEN}: 3 hidden states "
        "(eagle_aux_hidden_state_layer_ids) x hidden_size 2688 x bfloat16",
    )]  # fmt: skip
    assert engine.startup_error == ""


def test_hidden_state_cache_without_the_method_has_no_rule() -> None:
    # without extract_hidden_states there is no hidden-state group: no bytes, rule 0
    # (versions.HIDDEN_STATE_RULES numbers the rules from 1)
    engine = create_engine_config(load_model(NANO), Settings())
    assert (engine.hidden_state_bytes, engine.hidden_state_rule) == (None, 0)


def test_hidden_state_cache_refusals_in_full() -> None:
    nano = load_model(NANO)
    # 0.20.0 has the method but no HiddenStateCacheSpec grouping (kv_cache_utils.py):
    # not modelled before 0.22
    old = Settings(vllm_version="0.20.0", speculative_method=HIDDEN, num_speculative_tokens=1,
                   eagle_aux_hidden_state_layer_ids=(1,))  # fmt: skip
    with pytest.raises(NotModelled) as raised:
        create_engine_config(nano, old)
    assert str(raised.value) == (
        f"speculative method {HIDDEN} on vLLM 0.20: how that release groups the hidden-state "
        "KV-cache layer is not modelled (from 0.22)"
    )
    # a config without hidden_size: the layer's head size is unknown
    bare = replace(nano, hidden_size=None)
    new = Settings(speculative_method=HIDDEN, num_speculative_tokens=1,
                   eagle_aux_hidden_state_layer_ids=(1,))  # fmt: skip
    with pytest.raises(NotModelled) as raised:
        create_engine_config(bare, new)
    assert str(raised.value) == (
        f"{bare.config_path}: speculative method {HIDDEN} caches hidden states of "
        "hidden_size elements, which the config does not name"
    )


def test_hidden_state_cache_without_layer_ids_fails_at_start_up() -> None:
    # vllm/v1/spec_decode/extract_hidden_states.py (0.33.0): ExtractHiddenStatesProposer
    # raises ValueError for an empty eagle_aux_hidden_state_layer_ids
    settings = Settings(speculative_method=HIDDEN, num_speculative_tokens=1, vllm_version="0.33.0")
    engine = create_engine_config(load_model(NANO), settings)
    assert engine.hidden_state_bytes is None
    assert engine.startup_error == (
        f"vLLM 0.33 fails at start-up: speculative method {HIDDEN} needs "
        "draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids "
        "(--eagle-aux-hidden-state-layer-ids), and its proposer raises ValueError without "
        "them, before any KV cache is sized"
    )


def test_replayssm_ring_step_names_the_default_triton_backend() -> None:
    # --mamba-backend unset is triton (vllm/engine/arg_utils.py 0.33.0: EngineArgs.mamba_backend
    # = MambaBackendEnum.TRITON): the ring is B = 16 tokens (replayssm_buffer_len default 16)
    settings = Settings(use_replayssm=True, enable_prefix_caching=False)
    engine = create_engine_config(load_model(NANO), settings)
    steps = [(r.value, r.source) for r in engine.resolutions if r.key == "replayssm_ring"]
    assert steps == [("16", "--use-replayssm --replayssm-buffer-len 16 --mamba-backend triton")]


def test_engine_config_holds_the_gpu() -> None:
    assert create_engine_config(load_model(NANO), Settings(gpu="H100")).gpu == get_gpu("H100")
    assert create_engine_config(load_model(NANO), Settings()).gpu is None


def test_two_start_up_errors_are_joined_with_a_semicolon() -> None:
    # the text-only Qwen3.5-27B on 0.25 runs as the multimodal class (a start-up failure,
    # test_text_only_qwen35_runs_as_the_multimodal_class), and eagle3 without a count fails
    # too (test_speculative_method_without_a_token_count): the count is resolved first
    settings = Settings(vllm_version="0.25.0", speculative_method="eagle3")
    engine = create_engine_config(load_model(str(DATA / "qwen3.5-27b-text")), settings)
    assert engine.startup_error == (
        "vLLM 0.25 fails at start-up: --speculative-config method eagle3 needs "
        "num_speculative_tokens (--num-speculative-tokens, > 0); SpeculativeConfig raises "
        "ValueError without it (only a draft model's n_predict or suffix decoding supplies a "
        "default); "
        "vLLM 0.25 fails at start-up: it registers no Qwen3_5ForCausalLM (from 0.27.0) and "
        "runs the text-only checkpoint as the multimodal Qwen3_5ForConditionalGeneration, "
        "which needs a vision_config (sizes as its start-up log prints them; upgrade to vLLM "
        "0.27.0)"
    )


def test_flashinfer_large_pages_need_more_query_than_kv_heads(tmp_path: Path) -> None:
    # vLLM 0.33.0 flashinfer.py FlashInferBackend.get_supported_kernel_block_sizes: pages of
    # 128..1024 tokens only when num_qo_heads // num_kv_heads > 1 on the SM100 family; else
    # [16, 32, 64]. Nano has 32 query and 2 KV heads (GQA, 16 > 1); the same config with
    # 32 KV heads is MHA (32 // 32 = 1 > 1 is false)
    settings = Settings(gpu="B200", attention_backend="FLASHINFER")
    gqa = create_engine_config(load_model(NANO), settings)
    assert gqa.backend is not None and 1024 in gqa.backend.sizes
    config = json.loads((CATALOG / NANO / "config.json").read_text())
    config["num_key_value_heads"] = 32
    (tmp_path / "config.json").write_text(json.dumps(config))
    mha = create_engine_config(load_model(str(tmp_path / "config.json")), settings)
    assert mha.backend is not None and mha.backend.sizes == (16, 32, 64)
