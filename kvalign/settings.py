"""The deployment settings that move the block size, named after ``vllm serve`` flags."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: sanity bounds on numeric settings (far above any real deployment), shared by the
#: ``check`` family's options and every ``audit`` reader.
MAX_TP = 4096
MAX_BLOCK_SIZE = 1 << 20
MAX_SPEC_TOKENS = 1024

Alignment = Literal["vllm", "tp-stable"]
GdnPrefillBackend = Literal["auto", "triton", "flashinfer"]


@dataclass(frozen=True)
class Settings:
    """One pool's settings (the same on both sides for ``check``/``matrix``).

    Attributes:
        dtype: ``--dtype`` (``auto`` → the config's dtype).
        kv_cache_dtype: ``--kv-cache-dtype``.
        block_size: ``--block-size`` in tokens, ``None`` when not given.
        enable_prefix_caching: ``--enable-prefix-caching`` / ``--no-enable-prefix-caching``;
            ``None`` when neither is given (the release's default applies).
        mamba_cache_dtype: ``--mamba-cache-dtype`` (conv / linear-attention state).
        mamba_ssm_cache_dtype: ``--mamba-ssm-cache-dtype`` (ssm / recurrent state).
        num_speculative_tokens: speculative tokens (``--speculative-config``).
        attention_backend: ``--attention-backend`` (default FLASH_ATTN).
        gpu: GPU model (capability-dependent rules), ``None`` = unspecified CUDA GPU.
        gdn_prefill_backend: ``--gdn-prefill-backend`` (auto/triton/flashinfer).
        alignment: ``vllm`` (0.33 per-rank algorithm) or ``tp-stable`` (the proposal).
        vllm_version: ``--vllm-version`` selecting the release profile (``None`` = newest).
    """

    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    enable_prefix_caching: bool | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    num_speculative_tokens: int = 0
    attention_backend: str = "FLASH_ATTN"
    gpu: str | None = None
    gdn_prefill_backend: GdnPrefillBackend = "auto"
    alignment: Alignment = "vllm"
    vllm_version: str | None = None
