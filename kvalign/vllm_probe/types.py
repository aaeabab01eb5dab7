"""The probe's input and output: plain values, no vLLM or kvalign types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

Shape = tuple[int, ...]


@dataclass(frozen=True)
class ProbeRequest:
    """One ``vllm serve`` configuration at one TP (vLLM's flag names and values).

    Attributes:
        model: directory holding the model's ``config.json`` (``--model``).
        tp: ``--tensor-parallel-size``.
        attention_backend: ``--attention-backend`` (an ``AttentionBackendEnum`` name).
        dtype: ``--dtype``.
        kv_cache_dtype: ``--kv-cache-dtype`` (``auto`` is resolved by vLLM, e.g. from
            the checkpoint's ``kv_cache_scheme`` where the release does that).
        block_size: ``--block-size`` tokens, ``None`` when not given.
        enable_prefix_caching: ``--enable-prefix-caching`` / ``--no-enable-prefix-caching``;
            ``None`` when neither is given (the release's default applies).
        mamba_cache_mode: ``--mamba-cache-mode``, ``None`` when not given (releases
            without the flag reject a value).
        mamba_cache_dtype, mamba_ssm_cache_dtype: the Mamba state dtype flags.
        num_speculative_tokens: speculative tokens (``--speculative-config`` with the
            ``ngram`` method, which needs no draft model); 0 = no speculative decoding.
        hf_overrides: ``--hf-overrides``, ``None`` when not given.
        kv_cache_dtype_skip_layers: ``--kv-cache-dtype-skip-layers`` entries (releases
            without the flag refuse a value), ``()`` when not given.
        gpu: kvalign GPU name whose capability the probe platform reports (``None``:
            the probe's default, H100).
    """

    model: str
    tp: int
    attention_backend: str = "FLASH_ATTN"
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    enable_prefix_caching: bool | None = None
    mamba_cache_mode: str | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    num_speculative_tokens: int = 0
    hf_overrides: Mapping[str, object] | None = None
    gpu: str | None = None
    kv_cache_dtype_skip_layers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Resolved:
    """What vLLM resolved before sizing (values of its ``CacheConfig`` after
    ``EngineArgs.create_engine_config``), ``None`` where the release has no such field."""

    kv_cache_dtype: str
    enable_prefix_caching: bool
    mamba_cache_mode: str | None
    mamba_block_size: int | None


@dataclass(frozen=True)
class VllmAnswer:
    """vLLM's numbers for one TP. Bytes (``*_bytes*``) and tokens (``*block_size``).

    ``valid`` is False when vLLM refused the configuration (``error`` says why);
    ``unknown_architecture`` when the release's model registry has none of the config's
    architectures; ``not_measured`` (a reason) when the probe cannot reproduce what
    ``vllm serve`` would do (the config needs the repository's remote code, which the
    probe never runs). ``None`` sizes mean vLLM computes no such quantity (no attention
    layers: no attention page and no alignment; no state layers: no Mamba page).
    """

    vllm_version: str
    platform: str
    tp: int
    backend: str
    valid: bool = True
    error: str = ""
    unknown_architecture: bool = False
    not_measured: str = ""
    attention_free: bool = False
    use_mla: bool = False
    kv_heads_per_rank: int | None = None
    attn_page_bytes_per_token: int | None = None
    mamba_page_bytes: int | None = None
    mamba_state_shapes: tuple[Shape, ...] = ()
    mamba_state_dtypes: tuple[str, ...] = ()
    block_size: int | None = None
    kernel_block_size: int | None = None
    mamba_page_size_padded: int | None = None
    resolved: Resolved | None = None
    notes: tuple[str, ...] = field(default=())
