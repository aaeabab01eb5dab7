"""The probe's one call sequence, the same for every release (glue in ``releases``).

1. ``EngineArgs(**flags).create_engine_config(UsageContext.OPENAI_API_SERVER)`` — what
   ``vllm serve`` does with its flags (its usage context sets e.g. the default
   ``max_num_batched_tokens``, which 0.17+ checks against the block in align mode):
   kv-cache dtype resolution (e.g. from the checkpoint's ``kv_cache_scheme``),
   the prefix-caching default, the Mamba cache mode, model-specific config hooks and,
   in 0.14–0.19, the hybrid alignment itself.
2. The adapter's alignment step (from 0.20: ``Platform.update_block_size_for_backend``).
3. Page sizes priced by the release's own spec classes (``FullAttentionSpec`` /
   ``MLAAttentionSpec`` + the backend's ``customize_spec`` where it exists,
   ``MambaSpec.page_size_bytes`` over the model class's
   ``get_mamba_state_shape_from_config`` / ``get_mamba_state_dtype_from_config``), and
   the kernel block size from the release's ``select_common_block_size``.

Two inputs that vLLM reads from built layers are supplied, and said so in the notes:
the attention backend of the layers (the one named by ``--attention-backend``; for MLA
models its MLA counterpart) and nothing for Mamba prefill checkpoints (no layer is
built, so ``get_mamba_prefill_checkpoint_alignment`` sees none — the same answer as
layers whose GDN prefill runs on Triton, which is what this machine, without
FlashInfer, would use).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

from kvalign.vllm_probe.boot import (
    ASSUMABLE,
    H100,
    REGISTERED_CONFIGS,
    boot,
    import_backend_module,
)
from kvalign.vllm_probe.releases import adapter_for, range_note
from kvalign.vllm_probe.types import ProbeRequest, Resolved, Shape, VllmAnswer

#: the MLA backend serving MLA layers when a non-MLA backend is named (CUDA).
_MLA_COUNTERPART = {
    "FLASH_ATTN": "FLASH_ATTN_MLA",
    "FLASHINFER": "FLASHINFER_MLA",
    "TRITON_ATTN": "TRITON_MLA",
}


def _dtype_name(dtype: object) -> str:
    return str(dtype).removeprefix("torch.")


#: pydantic's wrapping of a validator's error: "... Value error, <message> [type=...".
_PYDANTIC = re.compile(r"(Value error|Assertion failed), ")


def _pydantic_message(text: str) -> tuple[str, str] | None:
    """(kind, message) of the first ``Value error, MESSAGE [type=`` on a line; linear."""
    for line in text.split("\n"):
        head = _PYDANTIC.search(line)
        if head is None:
            continue
        end = line.find(" [type=", head.end())
        if end != -1:
            return head.group(1), line[head.end() : end]
    return None


def _one_line(exc: BaseException) -> str:
    """``"ValueError: Total number of attention heads (32) must be divisible ..."``."""
    text = " ".join(str(exc).split())
    match = _pydantic_message(text)
    if match:
        kind = "ValueError" if match[0] == "Value error" else "AssertionError"
        return f"{kind}: {match[1]}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _build(cls: Any, **values: Any) -> Any:
    """``cls(**values)`` keeping only the dataclass fields this release's ``cls`` has."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _config(model_dir: str) -> dict[str, Any]:
    with (Path(model_dir) / "config.json").open(encoding="utf-8") as handle:
        raw: dict[str, Any] = json.load(handle)
    return raw


def _backend_class(name: str) -> Any:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    member = AttentionBackendEnum[name]
    path = member.get_path() if hasattr(member, "get_path") else member.value
    module, _, attr = str(path).rpartition(".")
    return getattr(import_backend_module(module), attr)


def _engine_kwargs(
    request: ProbeRequest, mamba_cache_mode: bool, swap_space: bool
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": request.model,
        "skip_tokenizer_init": True,
        "trust_remote_code": False,
        "dtype": request.dtype,
        "kv_cache_dtype": request.kv_cache_dtype,
        "block_size": request.block_size,
        "enable_prefix_caching": request.enable_prefix_caching,
        "mamba_cache_dtype": request.mamba_cache_dtype,
        "mamba_ssm_cache_dtype": request.mamba_ssm_cache_dtype,
        "tensor_parallel_size": request.tp,
        # what a single node with enough GPUs uses; 0.14 otherwise counts real GPUs
        "distributed_executor_backend": "mp",
        "attention_backend": request.attention_backend,
        "hf_overrides": dict(request.hf_overrides or {}),
    }
    if swap_space:
        # CPU swap for preemption, checked against this machine's RAM up to 0.1x; it
        # plays no part in KV-cache sizing
        kwargs["swap_space"] = 0
    if request.mamba_cache_mode is not None:
        if not mamba_cache_mode:
            raise ValueError("this release has no --mamba-cache-mode")
        kwargs["mamba_cache_mode"] = request.mamba_cache_mode
    if request.kv_cache_dtype_skip_layers:
        kwargs["kv_cache_dtype_skip_layers"] = list(request.kv_cache_dtype_skip_layers)
    if request.num_speculative_tokens:
        kwargs["speculative_config"] = {
            "method": "ngram",
            "num_speculative_tokens": request.num_speculative_tokens,
            "prompt_lookup_max": 4,
            "prompt_lookup_min": 2,
        }
    return kwargs


#: generation suffixes vLLM's registry swaps for one another when a class is not
#: registered under its own name (``_SUFFIX_TO_DEFAULTS`` in ``vllm/config/model.py``,
#: used by ``ModelRegistry._normalize_arch``; read in 0.17.0).
_GENERATE_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "ChatModel", "LMHeadModel")


def _servable(architecture: str, supported: set[str]) -> bool:
    """Whether the registry can resolve ``architecture``: registered, or normalised to a
    registered class by swapping its generation suffix (a text-only ``…ForCausalLM``
    served by the multimodal ``…ForConditionalGeneration``). vLLM itself then decides."""
    if architecture in supported:
        return True
    for suffix in _GENERATE_SUFFIXES:
        if architecture.endswith(suffix):
            stem = architecture.removesuffix(suffix)
            return any(stem + other in supported for other in _GENERATE_SUFFIXES)
    return False


def vllm_answer(request: ProbeRequest) -> VllmAnswer:
    """vLLM's own resolution, page sizes and block sizes for ``request``.

    Boots the probe (see :mod:`kvalign.vllm_probe.boot`) on first use, with the
    capability of ``request.gpu`` (default H100, SM 9.0). A configuration vLLM refuses
    (``ValueError``/``AssertionError`` etc. while building its configs, e.g. heads not
    divisible by TP) gives ``valid=False`` with the error; an architecture the release
    does not know gives ``unknown_architecture=True``.

    Raises:
        KeyError: ``request.gpu`` is not a GPU the probe can assume.
        RuntimeError: the probe was booted with another GPU in this process.
    """
    gpu = ASSUMABLE[request.gpu.upper()] if request.gpu else H100
    platform = boot(gpu)
    import vllm

    version = str(vllm.__version__)
    adapter = adapter_for(version)
    notes = [range_note(version), f"adapter {adapter.name}; platform assumed {gpu.label}"]
    base = VllmAnswer(vllm_version=version, platform=gpu.label, tp=request.tp, backend="")

    from vllm.model_executor.models import ModelRegistry

    supported = set(ModelRegistry.get_supported_archs())
    raw = _config(request.model)
    if not any(_servable(str(arch), supported) for arch in raw.get("architectures") or []):
        return dataclasses.replace(
            base, valid=False, unknown_architecture=True, error="unknown architecture"
        )
    if raw.get("model_type") in REGISTERED_CONFIGS:
        from transformers import AutoConfig

        try:
            AutoConfig.from_pretrained(request.model, trust_remote_code=False)
        except Exception as exc:
            return dataclasses.replace(
                base,
                valid=False,
                not_measured=(
                    f"needs the repository's remote code: vLLM {version}'s own "
                    f"{raw['model_type']} config class cannot read this config.json "
                    f"({_one_line(exc)})"
                ),
            )
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    try:
        names = {f.name for f in dataclasses.fields(EngineArgs)}
        kwargs = _engine_kwargs(request, adapter.mamba_cache_mode, "swap_space" in names)
        if "attention_backend" not in names:
            # 0.10-0.11: the backend is chosen by the VLLM_ATTENTION_BACKEND variable
            os.environ["VLLM_ATTENTION_BACKEND"] = str(kwargs.pop("attention_backend"))
        engine_args = EngineArgs(**kwargs)
        # as `vllm serve` does (its defaults, e.g. max_num_batched_tokens, follow it)
        vllm_config = engine_args.create_engine_config(UsageContext.OPENAI_API_SERVER)
    except Exception as exc:  # vLLM's verdict on the configuration
        return dataclasses.replace(base, valid=False, error=_one_line(exc))
    return _sizes(vllm_config, platform, adapter, request, base, notes)


def _sizes(
    vllm_config: Any,
    platform: Any,
    adapter: Any,
    request: ProbeRequest,
    base: VllmAnswer,
    notes: list[str],
) -> VllmAnswer:
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.models import ModelRegistry
    from vllm.v1 import kv_cache_interface as kvi

    try:
        from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE
    except ImportError:  # older trees
        from vllm.utils import STR_DTYPE_TO_TORCH_DTYPE

    model_config = vllm_config.model_config
    cache_config = vllm_config.cache_config
    parallel_config = vllm_config.parallel_config
    model_type = getattr(model_config.hf_config, "model_type", "")
    if model_type in REGISTERED_CONFIGS:
        notes.append(
            f"config class for {model_type}: vLLM's own copy (the repository's remote code "
            "is not executed)"
        )
    attention = not model_config.is_attention_free
    use_mla = bool(model_config.use_mla)
    name = request.attention_backend.strip().upper()
    if use_mla:
        name = _MLA_COUNTERPART.get(name, name)
        notes.append(f"MLA layers run on {name} (counterpart of --attention-backend)")

    def resolved() -> Resolved:
        return Resolved(
            kv_cache_dtype=str(cache_config.cache_dtype),
            enable_prefix_caching=bool(cache_config.enable_prefix_caching),
            mamba_cache_mode=getattr(cache_config, "mamba_cache_mode", None),
            mamba_block_size=getattr(cache_config, "mamba_block_size", None),
        )

    with set_current_vllm_config(vllm_config):
        try:
            backend_cls = _backend_class(name) if attention else None
        except ImportError:  # 0.10-0.11: no backend registry; the hook's block, cache config
            notes.append("release older than the probe's adapters: block size, cache config")
            return dataclasses.replace(
                base,
                backend=name,
                block_size=int(cache_config.block_size),
                resolved=resolved(),
                notes=tuple(notes),
            )
        shapes: tuple[Shape, ...] = ()
        dtypes: tuple[str, ...] = ()
        m: int | None = None
        if model_config.is_hybrid or model_config.is_attention_free:
            model_cls, _ = ModelRegistry.resolve_model_cls(
                model_config.architecture, model_config=model_config
            )
            if hasattr(model_cls, "get_mamba_specs_from_config"):
                largest = max(
                    model_cls.get_mamba_specs_from_config(vllm_config),
                    key=lambda spec: spec.page_size_bytes,
                )
                raw_shapes, raw_dtypes = largest.shapes, largest.dtypes
            else:
                raw_shapes = model_cls.get_mamba_state_shape_from_config(vllm_config)
                raw_dtypes = model_cls.get_mamba_state_dtype_from_config(vllm_config)
            m = int(
                _build(
                    kvi.MambaSpec, shapes=raw_shapes, dtypes=raw_dtypes, block_size=1
                ).page_size_bytes
            )
            shapes = tuple(tuple(int(d) for d in shape) for shape in raw_shapes)
            dtypes = tuple(_dtype_name(dt) for dt in raw_dtypes)
        if not attention:
            return dataclasses.replace(
                base,
                attention_free=True,
                mamba_page_bytes=m,
                mamba_state_shapes=shapes,
                mamba_state_dtypes=dtypes,
                resolved=resolved(),
                notes=tuple(notes),
            )
        assert backend_cls is not None  # attention layers exist past this point
        try:
            notes.extend(adapter.align(platform, vllm_config, backend_cls))
        except Exception as exc:  # vLLM would stop at startup with this
            return dataclasses.replace(base, valid=False, error="at startup: " + _one_line(exc))
        block = int(cache_config.block_size)
        kv_heads = int(model_config.get_num_kv_heads(parallel_config))
        cache_dtype = str(cache_config.cache_dtype)
        torch_dtype = (
            model_config.dtype if cache_dtype == "auto" else STR_DTYPE_TO_TORCH_DTYPE[cache_dtype]
        )
        quant: dict[str, Any] = {}
        if hasattr(kvi, "get_kv_quant_mode"):
            quant["kv_quant_mode"] = kvi.get_kv_quant_mode(cache_dtype)
        spec_cls = kvi.MLAAttentionSpec if use_mla else kvi.FullAttentionSpec

        def spec(block_size: int) -> Any:
            made = _build(
                spec_cls,
                block_size=block_size,
                num_kv_heads=kv_heads,
                head_size=model_config.get_head_size(),
                dtype=torch_dtype,
                cache_dtype_str=cache_dtype,
                **quant,
            )
            if not use_mla and hasattr(backend_cls, "customize_spec"):
                made = backend_cls.customize_spec(made)
            return made

        a = int(spec(1).page_size_bytes)
        try:
            kernel = adapter.kernel_block_size(None, block, backend_cls, spec(block))
        except ValueError as exc:  # the worker stops at startup with this
            return dataclasses.replace(base, valid=False, error="at startup: " + _one_line(exc))
    padded = cache_config.mamba_page_size_padded
    return dataclasses.replace(
        base,
        backend=str(backend_cls.get_name()),
        use_mla=use_mla,
        kv_heads_per_rank=kv_heads,
        attn_page_bytes_per_token=a,
        mamba_page_bytes=m,
        mamba_state_shapes=shapes,
        mamba_state_dtypes=dtypes,
        block_size=block,
        kernel_block_size=kernel,
        mamba_page_size_padded=int(padded) if padded is not None else None,
        resolved=resolved(),
        notes=tuple(notes),
    )
