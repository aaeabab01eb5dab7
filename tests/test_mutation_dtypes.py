"""Dtype rules pinned at each branch, from vLLM 0.33.0 source:
``vllm/utils/torch_utils.py`` ``get_kv_cache_quant_algo_string`` (lines 443-490: modelopt
only; ``quantization`` first, then the top level; ``kv_cache_scheme`` before
``kv_cache_quant_algo``; a dict of 8-bit float with ``dynamic: False`` → fp8, 4-bit float →
nvfp4, anything else → auto; strings through ``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP`` {fp8:
fp8_e4m3, nvfp4: nvfp4}, unknown → auto), ``STR_DTYPE_TO_TORCH_DTYPE`` sizes, and
``vllm/config/model.py`` ``_resolve_auto_dtype`` ("Downcast for float32 models")."""

from __future__ import annotations

import pytest

from kvalign.dtypes import (
    checkpoint_kv_cache_dtype,
    kv_cache_dtype_bytes,
    mamba_dtype,
    normalize_model_dtype,
    resolve_model_dtype,
)
from kvalign.errors import InvalidSettings, NotModelled

FP8_STATIC = {"type": "float", "num_bits": 8, "dynamic": False}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"quant_method": "modelopt", "kv_cache_scheme": FP8_STATIC}, "fp8"),
        ({"quant_method": "modelopt_fp4", "kv_cache_scheme": FP8_STATIC}, "fp8"),
        # dynamic (or unspecified) 8-bit scheme: not recognised → auto
        ({"quant_method": "modelopt", "kv_cache_scheme": {**FP8_STATIC, "dynamic": True}}, "auto"),
        ({"quant_method": "modelopt", "kv_cache_scheme": {"type": "float", "num_bits": 8}}, "auto"),
        ({"quant_method": "modelopt", "kv_cache_scheme": {"type": "int", "num_bits": 8,
                                                          "dynamic": False}}, "auto"),
        ({"quant_method": "modelopt", "kv_cache_scheme": {"type": "float", "num_bits": 4}},
         "nvfp4"),
        ({"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"}, "fp8_e4m3"),
        ({"quant_method": "modelopt", "kv_cache_quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "modelopt", "kv_cache_quant_algo": "int8"}, "auto"),
        # the nested quantization object is read first
        ({"quant_method": "modelopt", "quantization": {"kv_cache_quant_algo": "NVFP4"},
          "kv_cache_quant_algo": "FP8"}, "nvfp4"),
        # kv_cache_scheme wins over kv_cache_quant_algo at either level
        ({"quant_method": "modelopt", "kv_cache_scheme": FP8_STATIC,
          "quantization": {"kv_cache_quant_algo": "NVFP4"}}, "fp8"),
        # an empty value falls through to the next key ("or" chain)
        ({"quant_method": "modelopt", "kv_cache_scheme": None, "kv_cache_quant_algo": "FP8"},
         "fp8_e4m3"),
        ({"quant_method": "modelopt"}, None),
        ({"quant_method": "fp8", "kv_cache_quant_algo": "FP8"}, None),  # not modelopt
        ({"kv_cache_quant_algo": "FP8"}, None),
        (None, None),
        ("modelopt", None),
    ],
)  # fmt: skip
def test_checkpoint_kv_cache_dtype(config: object, expected: str | None) -> None:
    assert checkpoint_kv_cache_dtype(config) == expected


@pytest.mark.parametrize(
    ("flag", "model", "size"),
    [
        ("auto", "bfloat16", 2), ("auto", "float32", 4), ("auto", "float16", 2),
        ("bfloat16", "float32", 2), ("float16", "float32", 2),
        ("fp8", "bfloat16", 1), ("fp8_e4m3", "bfloat16", 1), ("fp8_e5m2", "bfloat16", 1),
    ],
)  # fmt: skip
def test_kv_cache_dtype_bytes(flag: str, model: str, size: int) -> None:
    assert kv_cache_dtype_bytes(flag, model) == size


def test_packed_and_unknown_kv_cache_dtypes() -> None:
    with pytest.raises(NotModelled, match=r"^--kv-cache-dtype nvfp4: packed KV layout"):
        kv_cache_dtype_bytes("nvfp4", "bfloat16")
    with pytest.raises(InvalidSettings, match=r"unknown value 'int3' \(expected one of auto, "):
        kv_cache_dtype_bytes("int3", "bfloat16")


@pytest.mark.parametrize(
    ("flag", "config", "expected"),
    [
        ("auto", "float32", "bfloat16"),  # float32 checkpoints are downcast
        ("auto", "float16", "float16"),
        ("auto", "bfloat16", "bfloat16"),
        ("float32", "bfloat16", "float32"),  # an explicit --dtype is kept
        ("half", "bfloat16", "float16"),
        ("torch.bfloat16", "float32", "bfloat16"),
        (" BF16 ", "float32", "bfloat16"),
    ],
)
def test_model_dtype(flag: str, config: str, expected: str) -> None:
    assert resolve_model_dtype(flag, config) == expected


def test_unknown_dtype_names_the_field() -> None:
    with pytest.raises(InvalidSettings, match=r"^torch_dtype: unknown dtype 'int8' \(expected"):
        normalize_model_dtype("int8", field="torch_dtype")
    with pytest.raises(InvalidSettings, match=r"^--mamba-cache-dtype: unknown value 'fp8'"):
        mamba_dtype("fp8", "bfloat16", field="--mamba-cache-dtype")


def test_mamba_dtype_auto_is_the_model_dtype() -> None:
    assert mamba_dtype("auto", "float16", field="x") == "float16"
    assert mamba_dtype("float32", "float16", field="x") == "float32"
