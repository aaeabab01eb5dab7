"""The one place that decides dtype names and their sizes in bytes.

Mirrors vLLM 0.33 ``vllm/config/cache.py`` (``CacheDType``, ``MambaDType``) and
``vllm/utils/torch_utils.py`` (``STR_DTYPE_TO_TORCH_DTYPE``), and the model-dtype
resolution in ``vllm/config/model.py`` ``_resolve_auto_dtype``.
"""

from __future__ import annotations

from kvalign.errors import InvalidSettings, NotModelled

#: bytes per element of every dtype kvalign can size.
DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "bfloat16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}

#: accepted spellings of model dtypes (``--dtype`` and the config's ``torch_dtype``).
MODEL_DTYPE_ALIASES: dict[str, str] = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}

#: ``--kv-cache-dtype`` values whose page size follows the plain formula.
KV_CACHE_DTYPES: tuple[str, ...] = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")

#: ``--kv-cache-dtype`` values vLLM 0.33 accepts whose packed layout kvalign does not model.
PACKED_KV_CACHE_DTYPES: tuple[str, ...] = (
    "fp8_inc",
    "fp8_ds_mla",
    "nvfp4",
    "nvfp4_4over6",
    "nvfp4_ds_mla",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "octave_k3v4",
    "octave_k3v3",
    "octave_k3v3_compact",
    "ultraquant_4bit",
    "int4_per_token_head",
    "int8_per_token_head",
    "fp8_per_token_head",
)

#: ``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` values (vLLM ``MambaDType``).
MAMBA_DTYPES: tuple[str, ...] = ("auto", "float32", "float16", "bfloat16")


def case_hint(value: str, choices: tuple[str, ...]) -> str:
    """``"; vLLM's choices are case-sensitive: pass fp8"`` when ``value`` differs from one
    of ``choices`` only in case (``""`` otherwise). ``vllm serve`` gives these flags
    argparse ``choices`` from their ``Literal`` types, so ``--kv-cache-dtype FP8`` stops
    it (``vllm/engine/arg_utils.py`` ``literal_to_kwargs``; ``CacheDType``, ``MambaDType``
    in ``vllm/config/cache.py``; read in 0.27.1)."""
    lowered = value.strip().lower()
    if lowered != value and lowered in choices:
        return f"; vLLM's choices are case-sensitive: pass {lowered}"
    return ""


def normalize_model_dtype(name: str, *, field: str) -> str:
    """Canonical model dtype name for ``name`` (e.g. ``torch.bfloat16`` → ``bfloat16``).

    Raises:
        InvalidSettings: unknown dtype spelling; the message names ``field``.
    """
    key = name.strip().lower().removeprefix("torch.")
    if key not in MODEL_DTYPE_ALIASES:
        raise InvalidSettings(
            f"{field}: unknown dtype {name!r} (expected one of bfloat16, float16, float32)"
        )
    return MODEL_DTYPE_ALIASES[key]


def resolve_model_dtype(flag: str, config_dtype: str) -> str:
    """The dtype vLLM runs the model in, for ``--dtype flag`` and the config's dtype.

    ``auto`` takes the config dtype, except that float32 checkpoints are downcast to
    bfloat16 (vLLM 0.33 ``vllm/config/model.py`` ``_resolve_auto_dtype`` on CUDA).

    Raises:
        InvalidSettings: ``flag`` is not a known dtype.
    """
    if flag == "auto":
        return "bfloat16" if config_dtype == "float32" else config_dtype
    return normalize_model_dtype(flag, field="--dtype")


def kv_cache_dtype_bytes(kv_cache_dtype: str, model_dtype: str) -> int:
    """Bytes per KV-cache element for ``--kv-cache-dtype`` (``auto`` → the model dtype).

    Raises:
        NotModelled: a packed/quantized layout (nvfp4, turboquant_*, ...).
        InvalidSettings: a value vLLM does not accept.
    """
    if kv_cache_dtype in PACKED_KV_CACHE_DTYPES:
        raise NotModelled(
            f"--kv-cache-dtype {kv_cache_dtype}: packed KV layout is not modelled by kvalign "
            "(its page size depends on the backend's packing); use auto, bfloat16, float16 "
            "or fp8 to predict the block size"
        )
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise InvalidSettings(
            f"--kv-cache-dtype: unknown value {kv_cache_dtype!r} "
            f"(expected one of {', '.join(KV_CACHE_DTYPES)})"
            + case_hint(kv_cache_dtype, KV_CACHE_DTYPES + PACKED_KV_CACHE_DTYPES)
        )
    return DTYPE_BYTES[model_dtype if kv_cache_dtype == "auto" else kv_cache_dtype]


def mamba_dtype(flag: str, model_dtype: str, *, field: str) -> str:
    """Resolve a Mamba state dtype flag: ``auto`` → ``model_dtype``.

    Raises:
        InvalidSettings: not a vLLM ``MambaDType``.
    """
    if flag not in MAMBA_DTYPES:
        raise InvalidSettings(
            f"{field}: unknown value {flag!r} (expected one of {', '.join(MAMBA_DTYPES)})"
            + case_hint(flag, MAMBA_DTYPES)
        )
    return model_dtype if flag == "auto" else flag


#: ``kv_cache_quant_algo`` strings of modelopt checkpoints → ``--kv-cache-dtype`` values
#: (vLLM 0.33 ``vllm/utils/torch_utils.py`` ``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP``).
_MODELOPT_KV_ALGOS: dict[str, str] = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}


def checkpoint_kv_cache_dtype(quantization_config: object) -> str | None:
    """The KV-cache dtype a checkpoint's ``quantization_config`` asks for, or ``None``.

    Only modelopt checkpoints (``quant_method`` starting with ``modelopt``) name one:
    ``kv_cache_scheme`` (a dict: static 8-bit float → ``fp8``, 4-bit float → ``nvfp4``) or
    ``kv_cache_quant_algo`` (a string: ``FP8`` → ``fp8_e4m3``, ``NVFP4`` → ``nvfp4``), read
    from the nested ``quantization`` object first. A scheme vLLM does not recognise gives
    ``auto`` (vLLM then falls back to the model dtype). Anything that is not such a
    config gives ``None``. Pure data inspection; never raises.

    Mirrors ``vllm/utils/torch_utils.py`` ``get_kv_cache_quant_algo_string`` (0.33), used
    by ``resolve_kv_cache_dtype_string`` from ``EngineArgs.create_engine_config``.
    """
    if not isinstance(quantization_config, dict):
        return None
    method = quantization_config.get("quant_method", "")
    if not isinstance(method, str) or not method.startswith("modelopt"):
        return None
    inner = quantization_config.get("quantization", quantization_config)
    if not isinstance(inner, dict):
        inner = quantization_config
    algo: object = None
    for source, key in (
        (inner, "kv_cache_scheme"),
        (quantization_config, "kv_cache_scheme"),
        (inner, "kv_cache_quant_algo"),
        (quantization_config, "kv_cache_quant_algo"),
    ):
        algo = source.get(key)
        if algo:
            break
    if isinstance(algo, dict):
        if algo.get("type") == "float" and algo.get("num_bits") == 8:
            return "fp8" if algo.get("dynamic") is False else "auto"
        if algo.get("type") == "float" and algo.get("num_bits") == 4:
            return "nvfp4"
        return "auto"
    if isinstance(algo, str):
        return _MODELOPT_KV_ALGOS.get(algo.lower(), "auto")
    return None
