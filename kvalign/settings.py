"""The deployment settings that move the block size, named after ``vllm serve`` flags."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: sanity bounds on numeric settings (far above any real deployment), shared by the
#: ``check`` family's options and every ``audit`` reader.
MAX_TP = 4096
#: most TP sizes one ``--tp`` list may name (``matrix``/``survey`` work grows with its square).
MAX_TP_SIZES = 64
MAX_BLOCK_SIZE = 1 << 20
MAX_SPEC_TOKENS = 1024

Alignment = Literal["vllm", "tp-stable"]


def layer_ids(text: str | None, flag: str) -> tuple[int, ...]:
    """A comma list of layer indices (``--eagle-aux-hidden-state-layer-ids 1,20,39``).

    Raises:
        InvalidSettings: an entry that is not a non-negative integer.
    """
    from kvalign.errors import InvalidSettings
    from kvalign.numbers import is_digits, quoted

    out = []
    for part in (text or "").replace(",", " ").split():
        if not is_digits(part, 9):
            raise InvalidSettings(
                f"{flag}: {quoted(part)} is not a layer index (ASCII digits 0-9, e.g. 1,20,39)"
            )
        out.append(int(part))
    return tuple(out)


def skip_layer_entries(text: str | None) -> tuple[str, ...]:
    """``--kv-cache-dtype-skip-layers`` as kvalign's options spell it (``0,5`` or
    ``"0 5"``) → its entries, in order (``()`` for ``None`` or nothing)."""
    if not text:
        return ()
    return tuple(part for part in text.replace(",", " ").split() if part)


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
        attention_backend: ``--attention-backend``; ``auto`` (not given) → the backend
            vLLM picks for ``gpu`` and the release (e.g. FlashInfer on Blackwell).
        gpu: GPU model (capability-dependent rules), ``None`` = unspecified CUDA GPU.
        gdn_prefill_backend: ``--gdn-prefill-backend`` (auto/triton/flashinfer).
        alignment: ``vllm`` (0.33 per-rank algorithm) or ``tp-stable`` (the proposal).
        vllm_version: ``--vllm-version`` selecting the release profile (``None`` = newest).
        mamba_cache_mode: ``--mamba-cache-mode`` (``none``/``align``/``all``), ``None``
            when not given (vLLM 0.15-0.31; a deprecated no-op in 0.33).
        mamba_block_size: ``--mamba-block-size`` in tokens (replaces the Mamba chunk size
            in cache mode "all"), ``None`` when not given.
        max_model_len: ``--max-model-len`` in tokens, ``None`` when not given (prefix
            caching never hits when it is below one block).
        use_replayssm: ``--use-replayssm`` (Nemotron-H ReplaySSM ring buffers, 0.27+).
        replayssm_buffer_len: ``--replayssm-buffer-len`` (ring length, tokens; vLLM 16).
        mamba_backend: ``--mamba-backend`` (``triton``, ``flashinfer``); ``None`` = triton.
        transformers_version: ``--transformers-version``: the transformers release the
            pool runs with, inside the vLLM release's declared range; ``None`` = what
            installing that vLLM release resolves (:func:`kvalign.versions.transformers_for`).
        pipeline_parallel_size: ``--pipeline-parallel-size`` (stages; 1 = no PP).
        pp_layer_partition: vLLM's ``VLLM_PP_LAYER_PARTITION`` (layers per stage, comma
            separated, e.g. ``"24,28"``), ``None`` = vLLM's even split.
        kv_cache_dtype_skip_layers: ``--kv-cache-dtype-skip-layers``: layer indices
            (``"5"``) or attention types (``"sliding_window"``) whose attention layers keep
            the model dtype instead of ``--kv-cache-dtype`` (vLLM 0.19+), ``()`` = none.
        speculative_method: ``--speculative-config`` ``method`` (``mtp``, ``eagle3``,
            ``extract_hidden_states``, ...), ``None`` when not given.
        eagle_aux_hidden_state_layer_ids: ``--speculative-config``
            ``draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids``: the layers
            whose hidden states ``extract_hidden_states`` caches (only their count sizes
            its KV-cache group), ``()`` when not given.
    """

    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    enable_prefix_caching: bool | None = None
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    num_speculative_tokens: int = 0
    attention_backend: str = "auto"
    gpu: str | None = None
    gdn_prefill_backend: GdnPrefillBackend = "auto"
    alignment: Alignment = "vllm"
    vllm_version: str | None = None
    mamba_cache_mode: str | None = None
    mamba_block_size: int | None = None
    max_model_len: int | None = None
    use_replayssm: bool = False
    replayssm_buffer_len: int = 16
    mamba_backend: str | None = None
    transformers_version: str | None = None
    pipeline_parallel_size: int = 1
    pp_layer_partition: str | None = None
    kv_cache_dtype_skip_layers: tuple[str, ...] = ()
    speculative_method: str | None = None
    eagle_aux_hidden_state_layer_ids: tuple[int, ...] = ()
