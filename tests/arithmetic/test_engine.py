"""The resolve-once step (kvalign.engine): what `vllm serve` resolves before sizing.

Expected values come from vLLM's rules (the kv-cache dtype read from the checkpoint), the golden
vectors (nvidia/Qwen3.5-397B-A17B-NVFP4 at TP 4 → 2096), or are hand-derived in comments.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.dtypes import checkpoint_kv_cache_dtype
from kvalign.engine import create_engine_config
from kvalign.errors import InvalidSettings, NotModelled
from kvalign.settings import Settings
from kvalign.sources import load_model
from tests.resolve import rank_of

NVFP4_QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # static 8-bit float scheme → fp8 (both NVFP4 catalog checkpoints)
        ({"quant_method": "modelopt", "kv_cache_scheme": {"dynamic": False, "num_bits": 8,
                                                          "type": "float"}}, "fp8"),
        # dynamic 8-bit: not a scheme vLLM maps → auto
        ({"quant_method": "modelopt", "kv_cache_scheme": {"dynamic": True, "num_bits": 8,
                                                          "type": "float"}}, "auto"),
        # 4-bit float → nvfp4 (a packed layout)
        ({"quant_method": "modelopt_fp4", "kv_cache_scheme": {"num_bits": 4, "type": "float"}},
         "nvfp4"),
        # the string spelling, nested under "quantization" (hf_quant_config style)
        ({"quant_method": "modelopt", "quantization": {"kv_cache_quant_algo": "FP8"}},
         "fp8_e4m3"),
        ({"quant_method": "modelopt", "kv_cache_quant_algo": "INT8"}, "auto"),
        # modelopt without a KV scheme, and other quantizers: nothing named
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, None),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, None),
        (None, None),
        ("not a dict", None),
    ],
)  # fmt: skip
def test_checkpoint_kv_cache_dtype(config: object, expected: str | None) -> None:
    assert checkpoint_kv_cache_dtype(config) == expected


def test_bundled_modelopt_checkpoint_resolves_fp8() -> None:
    geo = load_model(NVFP4_QWEN)
    assert geo.checkpoint_kv_cache_dtype == "fp8"
    engine = create_engine_config(geo, Settings())
    assert engine.kv_cache_dtype == "fp8" and engine.kv_bytes == 1
    # golden vector: 1 KV head x (256 + 256) x 1 B = 512 B/token at TP 4; block 2096
    rank = rank_of(geo, engine, 4)
    assert rank.attn_page_bytes_per_token == 512 and rank.block_size == 2096
    # an explicit flag wins over the checkpoint: bfloat16 doubles a → 1056
    bf16 = rank_of(geo, Settings(kv_cache_dtype="bfloat16"), 4)
    assert bf16.attn_page_bytes_per_token == 1024 and bf16.block_size == 1056
    sources = {r.key: r.source for r in engine.resolutions}
    assert "quantization_config" in sources["kv_cache_dtype"]


def test_packed_checkpoint_scheme_is_not_modelled() -> None:
    geo = replace(load_model(NVFP4_QWEN), checkpoint_kv_cache_dtype="nvfp4")
    with pytest.raises(NotModelled, match="checkpoint's quantization_config asks for a nvfp4"):
        create_engine_config(geo, Settings())
    # with an explicit dtype the checkpoint's scheme is not used
    assert create_engine_config(geo, Settings(kv_cache_dtype="fp8")).kv_bytes == 1


def test_prefix_caching_default_and_flags() -> None:
    geo = load_model(NANO)
    assert create_engine_config(geo, Settings()).prefix_caching is True  # 0.33 default
    off = create_engine_config(geo, Settings(enable_prefix_caching=False))
    assert off.prefix_caching is False
    assert rank_of(geo, off, 1).prefix_caching is False


def test_resolution_order_and_sources() -> None:
    geo = load_model(NANO)
    engine = create_engine_config(geo, Settings(block_size=32, gpu="H100"))
    keys = [r.key for r in engine.resolutions]
    assert keys == [
        "vllm_release", "model_dtype", "prefix_caching", "kv_cache_dtype",
        "attention_backend", "base_block_size", "mamba_cache_dtype", "mamba_ssm_cache_dtype",
        "mamba_cache_mode",
    ]  # fmt: skip
    by_key = {r.key: r for r in engine.resolutions}
    assert by_key["base_block_size"].value == "32"
    # Nemotron-H: ssm auto → float32 (vLLM 0.33's fallback)
    assert by_key["mamba_ssm_cache_dtype"].value == "float32"


def test_bad_values_raise_once_resolved() -> None:
    geo = load_model(NANO)
    with pytest.raises(InvalidSettings, match="--block-size must be positive"):
        create_engine_config(geo, Settings(block_size=0))
    with pytest.raises(InvalidSettings, match="--num-speculative-tokens"):
        create_engine_config(geo, Settings(num_speculative_tokens=-1))


def test_explain_prints_the_resolution_step() -> None:
    result = CliRunner().invoke(app, ["explain", NVFP4_QWEN, "--tp", "4"])
    assert result.exit_code == 0, result.output
    assert "Resolved settings" in result.output
    assert "kv_cache_dtype = fp8 (1 B)" in result.output
    assert "Result: block size 2,096 tokens" in result.output
