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


# ---- survivors of the mutmut run (second pass) ----


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # the scheme only inside the nested quantization object (read first)
        ({"quant_method": "modelopt", "quantization": {"kv_cache_scheme": FP8_STATIC}}, "fp8"),
        # the algo string only at the top level, the nested object naming other fields
        ({"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"},
          "kv_cache_quant_algo": "FP8"}, "fp8_e4m3"),
        # a nested "quantization" that is not an object: the top level is read instead
        # (pure data inspection, never raises)
        ({"quant_method": "modelopt", "quantization": "fp8", "kv_cache_quant_algo": "NVFP4"},
         "nvfp4"),
        ({"quant_method": "modelopt", "quantization": ["x"],
          "kv_cache_scheme": {"type": "float", "num_bits": 4}}, "nvfp4"),
        # 4 bits but not a float (int4): not nvfp4, vLLM does not recognise it → auto
        ({"quant_method": "modelopt", "kv_cache_scheme": {"type": "int", "num_bits": 4}},
         "auto"),
        # a float of another width (16 bits): neither fp8 nor nvfp4 → auto
        ({"quant_method": "modelopt", "kv_cache_scheme": {"type": "float", "num_bits": 16}},
         "auto"),
    ],
)  # fmt: skip
def test_checkpoint_kv_cache_dtype_levels_and_schemes(config: object, expected: str) -> None:
    assert checkpoint_kv_cache_dtype(config) == expected


def test_packed_kv_cache_dtype_message() -> None:
    # printed as the one-line error of check / audit's not-evaluated reason
    with pytest.raises(NotModelled) as info:
        kv_cache_dtype_bytes("turboquant_k8v4", "bfloat16")
    assert str(info.value) == (
        "--kv-cache-dtype turboquant_k8v4: packed KV layout is not modelled by kvalign (its "
        "page size depends on the backend's packing); use auto, bfloat16, float16 or fp8 to "
        "predict the block size"
    )


def test_unknown_values_list_every_choice() -> None:
    # CacheDType / MambaDType in vllm/config/cache.py: the accepted values, in order
    with pytest.raises(InvalidSettings) as info:
        kv_cache_dtype_bytes("int3", "bfloat16")
    assert str(info.value) == (
        "--kv-cache-dtype: unknown value 'int3' (expected one of auto, float16, bfloat16, "
        "fp8, fp8_e4m3, fp8_e5m2)"
    )
    with pytest.raises(InvalidSettings) as info:
        mamba_dtype("fp8", "bfloat16", field="--mamba-ssm-cache-dtype")
    assert str(info.value) == (
        "--mamba-ssm-cache-dtype: unknown value 'fp8' (expected one of auto, float32, "
        "float16, bfloat16)"
    )


def test_unknown_dtype_flag_names_dtype() -> None:
    with pytest.raises(InvalidSettings) as info:
        resolve_model_dtype("int8", "bfloat16")
    assert str(info.value) == (
        "--dtype: unknown dtype 'int8' (expected one of bfloat16, float16, float32)"
    )


@pytest.mark.parametrize(
    ("flag", "hint"),
    [
        # vllm serve's argparse choices are case-sensitive (literal_to_kwargs): FP8 stops it
        ("FP8", "; vLLM's choices are case-sensitive: pass fp8"),
        ("NVFP4", "; vLLM's choices are case-sensitive: pass nvfp4"),  # a packed choice
        ("int3", ""),  # no choice in any case
    ],
)
def test_kv_cache_dtype_case_hint(flag: str, hint: str) -> None:
    with pytest.raises(InvalidSettings) as info:
        kv_cache_dtype_bytes(flag, "bfloat16")
    message = str(info.value)
    assert message.endswith(f"fp8_e5m2){hint}")


def test_mamba_dtype_case_hint() -> None:
    with pytest.raises(InvalidSettings) as info:
        mamba_dtype("Float32", "bfloat16", field="--mamba-cache-dtype")
    assert str(info.value).endswith("bfloat16); vLLM's choices are case-sensitive: pass float32")
    from kvalign.dtypes import MAMBA_DTYPES, case_hint

    assert case_hint("float32", MAMBA_DTYPES) == ""  # already the right case
    assert case_hint(" float32 ", MAMBA_DTYPES) == (
        "; vLLM's choices are case-sensitive: pass float32"
    )
