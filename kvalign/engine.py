"""Resolve once, as ``vllm serve`` does: flags, release, GPU and model → the arithmetic's inputs.

``vllm serve`` turns its flags into one ``VllmConfig`` before anything is sized
(``vllm/engine/arg_utils.py`` ``EngineArgs.create_engine_config``): it resolves
``--kv-cache-dtype auto`` from the checkpoint, applies the release's prefix-caching default,
lets the platform pick the attention backend and its block size, and applies model-specific
state-dtype defaults. :func:`create_engine_config` is kvalign's single copy of that step. It
returns a frozen :class:`EngineConfig`; the pure arithmetic in :mod:`kvalign.alignment`
reads only that object and never consults the release profile, the GPU table or the raw
flags again. ``kvalign explain`` prints :attr:`EngineConfig.resolutions`.

No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from kvalign.backends import AUTO_BACKEND, Backend, Gpu, get_gpu, resolve_backend
from kvalign.dtypes import (
    DTYPE_BYTES,
    MAMBA_DTYPES,
    PACKED_KV_CACHE_DTYPES,
    kv_cache_dtype_bytes,
    mamba_dtype,
    resolve_model_dtype,
)
from kvalign.errors import InvalidSettings, KvalignError, NotModelled, UnsupportedModel
from kvalign.families import kda
from kvalign.geometry import AttentionGeometry, ModelGeometry
from kvalign.sanitize import bounded, clean
from kvalign.settings import Settings
from kvalign.startup import mamba_block_size_problem, skip_layers_mamba_problem, stand_in_problem
from kvalign.versions import (
    ARCHITECTURE_RELEASES,
    SKIP_LAYER_RELEASES,
    SPECULATIVE_DEFAULT_TOKENS,
    Profile,
    Resolved,
    TransformersChoice,
    architecture_problem,
    architecture_stand_in,
    hidden_state_rule,
    resolve,
    skip_layer_rules,
    speculative_methods,
    transformers_for,
)

#: ``--block-size`` when none is given (vLLM ``CacheConfig.DEFAULT_BLOCK_SIZE``).
DEFAULT_BLOCK_SIZE = 16
#: Mamba chunk size when the config names none (``ModelConfig.get_mamba_chunk_size``).
DEFAULT_MAMBA_CHUNK_SIZE = 2048
#: FlashAttention 4's page size for its head-size-256 kernel (``FA4_HD256_PAGE_SIZE``).
FA4_HD256_PAGE = 128
#: prefill checkpoint spacing of the FlashInfer GDN prefill kernel (tokens).
FLASHINFER_GDN_CHECKPOINT = 64


class Resolution(NamedTuple):
    """One resolved input, for ``explain``: what it became and why.

    Attributes:
        key: stable identifier (``vllm_release``, ``kv_cache_dtype``, ``prefix_caching``, ...).
        value: the resolved value, as text.
        source: where it came from (a flag, the checkpoint, a release default, a rule).
    """

    key: str
    value: str
    source: str


@dataclass(frozen=True)
class EngineConfig:
    """Everything the block-size arithmetic reads for one pool, resolved once.

    Sizes in tokens unless named ``*_bytes``.

    Attributes:
        settings: the flags as the user gave them (for messages only).
        profile: the release profile in force; ``profile_note`` says how it was chosen.
        gpu: the GPU (``--gpu``), ``None`` for an unspecified CUDA GPU.
        backend: the attention backend serving the attention layers (MLA counterpart and
            GPU-dependent kernel sizes applied); ``None`` for attention-free models.
        model_dtype: the dtype the model runs in.
        kv_cache_dtype: the KV-cache dtype after ``auto`` resolution (a dtype name);
            ``None`` for attention-free models.
        kv_bytes: bytes per KV-cache element (``None`` for attention-free models).
        conv_dtype, ssm_dtype: Mamba conv / ssm (recurrent) state dtypes, ``None``
            without state layers.
        prefix_caching: whether prefix caching is on (flag, else the release default).
        base_block: block size before hybrid alignment (``--block-size`` or the
            platform/backend default).
        checkpoint: prefill-checkpoint alignment (tokens) folded in with prefix caching.
        checkpoint_note: why ``checkpoint`` has its value (for GDN models).
        chunk: Mamba chunk size (or ``--mamba-block-size``) the block is aligned to (cache
            mode "all"), else ``None``.
        num_speculative_tokens: speculative tokens (conv-state length, spec-decoding floor).
        blackwell: the GPU passes the release's SM100 test of the model-config-era
            FlashInfer head-size-256 rule (10.x; 10.0 only in 0.11.1-0.12).
        mamba_cache_mode: the Mamba cache mode vLLM settles on (``none``, ``align``,
            ``all``); ``none`` without prefix caching or state layers.
        hybrid_alignment: the platform aligns hybrid block sizes at all (``False``: vLLM
            0.20.0 on CPU keeps the base block).
        max_model_len: ``--max-model-len`` (tokens), ``None`` when not given.
        replay_ring: ReplaySSM ring length (tokens) appended to each Mamba2 state
            (``--use-replayssm``), 0 without ReplaySSM; ``replay_padded``: its groups are
            shard-padded (0.33).
        config_error: why the release cannot build its model config at all (``""`` when
            it can): every TP is then invalid.
        startup_error: why vLLM fails at start-up although the configuration builds
            (:mod:`kvalign.startup`; ``""`` when it starts): the sizes are still computed,
            every TP is unusable.
        state_spec_tokens: speculative rows in the conv state (``num_speculative_tokens``,
            or 0 for Mamba2 layers before vLLM 0.17).
        skip_layers: attention layers (0-based layer indices) that
            ``--kv-cache-dtype-skip-layers`` keeps in the model dtype.
        skip_kv_bytes: bytes per KV-cache element of those layers when they differ from
            ``kv_bytes`` (a quantized KV cache), else ``None``: the skip list then moves
            nothing.
        skip_aligns_block: the release raises the block for the skip layers' page
            (:class:`kvalign.versions.SkipLayerRules` ``aligns_block``).
        hidden_state_bytes: bytes per token of the ``extract_hidden_states`` speculative
            method's hidden-state layer (its own KV-cache group), ``None`` without it;
            ``hidden_state_rule``: how the release sizes that group
            (:data:`kvalign.versions.HIDDEN_STATE_RULES`).
        resolutions: each resolved input with its source, in resolution order.
        notes: remarks to show with any result computed from this config.
    """

    settings: Settings
    profile: Profile
    profile_note: str
    gpu: Gpu | None
    backend: Backend | None
    model_dtype: str
    kv_cache_dtype: str | None
    kv_bytes: int | None
    conv_dtype: str | None
    ssm_dtype: str | None
    prefix_caching: bool
    base_block: int
    checkpoint: int
    checkpoint_note: str
    chunk: int | None
    num_speculative_tokens: int
    blackwell: bool
    mamba_cache_mode: str = "none"
    hybrid_alignment: bool = True
    max_model_len: int | None = None
    state_spec_tokens: int = 0
    replay_ring: int = 0
    replay_padded: bool = False
    config_error: str = ""
    startup_error: str = ""
    skip_layers: tuple[int, ...] = ()
    skip_kv_bytes: int | None = None
    skip_aligns_block: bool = False
    hidden_state_bytes: int | None = None
    hidden_state_rule: int = 0
    resolutions: tuple[Resolution, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def alignment(self) -> str:
        """``vllm`` (the release's per-rank rule) or ``tp-stable`` (the PR 45575 proposal)."""
        return self.settings.alignment

    def with_block_size(self, block_size: int) -> EngineConfig:
        """This config with ``--block-size block_size`` (tokens): only what the block size
        moves is re-derived (the base block and its resolution; every other step of
        :func:`create_engine_config` ignores ``--block-size``). The fix proof tries
        candidate block sizes this way instead of resolving again.

        Raises:
            InvalidSettings: ``block_size`` is not positive (as ``CacheConfig``).
        """
        if block_size <= 0:
            raise InvalidSettings(f"--block-size must be positive, got {block_size}")
        if block_size == self.settings.block_size:
            return self
        settings = replace(self.settings, block_size=block_size)
        steps = tuple(
            Resolution(r.key, str(block_size), f"--block-size {block_size}")
            if r.key == "base_block_size"
            else r
            for r in self.resolutions
        )
        return replace(self, settings=settings, base_block=block_size, resolutions=steps)


def _kv_cache_dtype(
    geometry: ModelGeometry, settings: Settings, profile: Profile
) -> tuple[str, str]:
    """(resolved KV-cache dtype flag value, where it came from)."""
    flag = settings.kv_cache_dtype
    if flag != "auto":
        return flag, f"--kv-cache-dtype {flag}"
    found = geometry.checkpoint_kv_cache_dtype
    if profile.kv_cache_dtype_from_checkpoint and found not in (None, "auto"):
        assert found is not None
        return found, (
            f"--kv-cache-dtype auto → {found} from the checkpoint's quantization_config "
            "(vllm/utils/torch_utils.py resolve_kv_cache_dtype_string)"
        )
    return "auto", "--kv-cache-dtype auto → the model dtype"


def _state_dtypes(
    geometry: ModelGeometry, settings: Settings, model_dtype: str, profile: Profile
) -> tuple[str, str, str, str]:
    """(conv-state dtype, ssm/recurrent-state dtype, why, the ``CacheConfig``
    ``mamba_ssm_cache_dtype`` value after the model's defaults: what FLASH_ATTN's
    kernel-size rule reads).

    ``mamba_ssm_cache_dtype=auto`` first becomes the model's own default (Nemotron-H:
    config value or the release's fallback; Qwen3.5: ``mamba_ssm_dtype``), then KDA's
    float32, then the conv dtype (``vllm/model_executor/layers/mamba/mamba_utils.py``
    ``MambaStateDtypeCalculator``; model defaults in ``vllm/model_executor/models/config.py``).
    Releases whose gated-delta-net layers ignore ``--mamba-ssm-cache-dtype`` (< 0.17) give
    both GDN states the conv dtype; releases whose KDA layers ignore it (< 0.30) keep the
    KDA recurrent state in float32 whatever the flag says.

    Raises:
        InvalidSettings: an unknown dtype, or a KDA recurrent dtype vLLM rejects.
    """
    conv = mamba_dtype(settings.mamba_cache_dtype, model_dtype, field="--mamba-cache-dtype")
    flag = settings.mamba_ssm_cache_dtype
    for name, value in (
        ("--mamba-cache-dtype", settings.mamba_cache_dtype),
        ("--mamba-ssm-cache-dtype", flag),
    ):
        if value in MAMBA_DTYPES and value not in profile.mamba_dtypes:
            # CacheConfig's MambaDType literal (vllm/config/cache.py)
            raise InvalidSettings(
                f"vLLM {profile.name} rejects {name} {value} (it accepts "
                f"{', '.join(profile.mamba_dtypes)})"
            )
    if flag not in ("auto", "float32", "float16", "bfloat16"):
        raise InvalidSettings(
            f"--mamba-ssm-cache-dtype: unknown value {flag!r} "
            "(expected one of auto, float32, float16, bfloat16)"
        )
    why = f"--mamba-ssm-cache-dtype {flag}"
    default = geometry.ssm_dtype_default
    if geometry.model_type == "nemotron_h" and default is not None:
        if profile.nemotron_ssm_fallback is None:
            default = None
        elif geometry.ssm_dtype_fallback and _transformers(settings).major >= 5:
            # transformers 5's NemotronHConfig declares mamba_ssm_cache_dtype = "float32",
            # which vLLM's getattr(hf_config, "mamba_ssm_cache_dtype", fallback) then reads
            default = "float32"
        elif geometry.ssm_dtype_fallback:
            default = profile.nemotron_ssm_fallback
    if flag == "auto" and default is not None:
        flag = default
        why = f"--mamba-ssm-cache-dtype auto → {default} (model default, vLLM {profile.name})"
        if geometry.model_type == "nemotron_h" and geometry.ssm_dtype_fallback:
            choice = _transformers(settings)
            why += f" with transformers {choice.version}"
    assert geometry.state is not None
    family = geometry.state.family
    if family == "kda":
        if not profile.kda_ssm_dtype_flag:
            note = (
                ""
                if flag == "auto"
                else f" (vLLM {profile.name} ignores --mamba-ssm-cache-dtype {flag} for KDA)"
            )
            return conv, "float32", "KDA recurrent state always float32" + note, flag
        ssm = kda.ssm_dtype(flag)
        if flag == "auto":
            why = f"--mamba-ssm-cache-dtype auto → {ssm} (KDA default)"
        return conv, ssm, why, flag
    if family == "gdn" and not profile.gdn_ssm_dtype_flag:
        note = "" if flag == "auto" else f"; --mamba-ssm-cache-dtype {flag} is ignored"
        return (
            conv,
            conv,
            f"vLLM {profile.name}: GDN states both take --mamba-cache-dtype{note}",
            flag,
        )
    if flag == "auto":
        return conv, conv, "--mamba-ssm-cache-dtype auto → the conv-state dtype", flag
    return conv, flag, why, flag


def _transformers(settings: Settings) -> TransformersChoice:
    """The transformers release the pool runs with (:func:`transformers_for`)."""
    return transformers_for(resolve(settings.vllm_version).release, settings.transformers_version)


def mamba_cache_mode(
    geometry: ModelGeometry, settings: Settings, profile: Profile, prefix_caching: bool
) -> tuple[str, str]:
    """(Mamba cache mode vLLM settles on, why): ``none``, ``align`` or ``all``.

    With prefix caching off the mode is ``none``. With it on: releases without the flag
    (< 0.15) behave as ``all`` for models supporting Mamba prefix caching (chunk
    alignment, from 0.11.1); 0.15-0.31 take ``--mamba-cache-mode``, defaulting to ``all``
    for supporting models and ``align`` otherwise (``all`` falls back to ``align`` when
    unsupported; 0.20-0.21 default supporting models to ``align`` with speculative
    decoding); 0.28-0.31 default every model to ``align``; 0.32 has no ``all``; 0.33
    ignores the flag (deprecated) and uses ``align``.
    (``vllm/model_executor/models/config.py`` ``MambaModelConfig.verify_and_update_config``.)

    Raises:
        InvalidSettings: an unknown mode, or one the release does not accept.
    """
    flag = settings.mamba_cache_mode
    if flag is not None:
        if flag not in ("none", "align", "all"):
            raise InvalidSettings(
                f"--mamba-cache-mode: unknown value {flag!r} (expected one of none, align, all)"
            )
        if not profile.mamba_cache_modes:
            raise InvalidSettings(
                f"--mamba-cache-mode: vLLM {profile.name} has no such flag (it exists from 0.15)"
            )
        if flag not in profile.mamba_cache_modes:
            raise InvalidSettings(
                f"--mamba-cache-mode {flag}: vLLM {profile.name} accepts only "
                f"{', '.join(profile.mamba_cache_modes)}"
            )
    if not geometry.is_hybrid or not prefix_caching:
        why = "prefix caching is off" if geometry.is_hybrid else "no hybrid alignment"
        if flag not in (None, "none") and geometry.is_hybrid:
            why += f": --mamba-cache-mode {flag} is reset to none"
        return "none", why
    supports = profile.chunk_alignment and geometry.model_type in profile.mamba_prefix_caching_types
    if not profile.mamba_cache_modes:
        if supports:
            return "all", f"vLLM {profile.name}: Mamba prefix caching aligns to the chunk size"
        return "none", f"vLLM {profile.name}: no chunk alignment for {geometry.model_type}"
    if profile.mamba_cache_mode_noop:
        why = f"vLLM {profile.name}: prefix caching → align"
        if flag is not None:
            why += f" (--mamba-cache-mode {flag} is a deprecated no-op)"
        return "align", why
    if flag in (None, "none"):
        if supports and profile.spec_decode_align and settings.num_speculative_tokens > 0:
            return "align", (
                f"vLLM {profile.name} default with speculative decoding for {geometry.model_type}"
            )
        mode = "all" if supports and profile.mamba_cache_mode_default_all else "align"
        return mode, f"vLLM {profile.name} default for {geometry.model_type} with prefix caching"
    if flag == "all" and not supports:
        return "align", f"--mamba-cache-mode all unsupported for {geometry.model_type}: align"
    return flag, f"--mamba-cache-mode {flag}"


def checkpoint_alignment(
    geometry: ModelGeometry, settings: Settings, gpu: Gpu | None, prefix_caching: bool
) -> tuple[int, str]:
    """Prefill-checkpoint alignment (tokens) used with prefix caching, and why.

    Gated-delta-net models whose prefill runs on the FlashInfer GDN kernel export
    checkpoints every 64 tokens: chosen on SM90, and on SM100/SM120 when
    ``linear_key_head_dim == 128`` (CUDA ≥ 13 assumed). Elsewhere 1.
    (``vllm/model_executor/layers/mamba/abstract.py`` ``get_mamba_prefill_checkpoint_alignment``.)
    """
    state = geometry.state
    if state is None or state.family != "gdn" or not prefix_caching:
        return 1, "no prefill checkpoint alignment"
    if settings.gdn_prefill_backend == "triton":
        return 1, "GDN prefill on Triton: checkpoint alignment 1"
    if settings.gdn_prefill_backend == "flashinfer":
        return FLASHINFER_GDN_CHECKPOINT, "GDN prefill on FlashInfer: checkpoints every 64 tokens"
    if gpu is None:
        return 1, (
            "GPU unspecified: assumed the GDN prefill is not on FlashInfer (checkpoint "
            "alignment 1); on H100/H200/B200 pass --gpu for the 64-token alignment"
        )
    cap = gpu.capability
    if cap is not None and (cap[0] == 9 or (cap[0] in (10, 12) and state.params["Dk"] == 128)):
        return FLASHINFER_GDN_CHECKPOINT, (
            f"{gpu.name}: GDN prefill on FlashInfer, checkpoints every 64 tokens"
        )
    return 1, f"{gpu.name}: GDN prefill on Triton, checkpoint alignment 1"


def replay_ring(geometry: ModelGeometry, settings: Settings, profile: Profile, mode: str) -> int:
    """ReplaySSM ring length (tokens) for ``--use-replayssm``, 0 when it is off.

    Nemotron-H only (the one ``SupportsReplaySSM`` model); ``--replayssm-buffer-len B``
    tokens, plus 1 with ``--mamba-backend flashinfer`` (0.30-0.31), plus ``1 + spec``
    (0.32+). Mirrors ``VllmConfig.validate_mamba_cached_kernel`` (``vllm/config/vllm.py``)
    and ``MambaStateShapeCalculator.append_replayssm_ring``. Speculative decoding is refused
    before 0.32: 0.27-0.29 say so; 0.30-0.31 (read) turn on RecoverSSM for any speculative
    tokens and refuse it for every architecture but Kimi's KDA.

    Raises:
        InvalidSettings: a release without the flag, another model, cache mode ``all``, a
            backend or speculative decoding the release's ReplaySSM refuses.
    """
    backend = settings.mamba_backend or "triton"
    if backend not in ("triton", "flashinfer"):
        raise InvalidSettings(
            f"--mamba-backend: unknown value {backend!r} (expected triton or flashinfer)"
        )
    if settings.replayssm_buffer_len <= 0:
        raise InvalidSettings("--replayssm-buffer-len must be positive")
    if not settings.use_replayssm:
        return 0
    if not profile.replayssm:
        raise InvalidSettings(f"--use-replayssm: vLLM {profile.name} has no such flag (from 0.27)")
    if geometry.model_type != "nemotron_h":
        raise InvalidSettings(
            f"vLLM rejects this configuration: --use-replayssm is only supported for "
            f"Nemotron-H models (got {geometry.architecture or geometry.model_type})"
        )
    spec = settings.num_speculative_tokens
    if spec and profile.replayssm == 2:
        # 0.30-0.31 validate_mamba_cached_kernel: speculative tokens switch on RecoverSSM,
        # which is refused for every architecture but Kimi's KDA, before the mode is read
        raise InvalidSettings(
            f"vLLM {profile.name} rejects this configuration: --use-replayssm with "
            "speculative decoding turns on RecoverSSM, which it supports only for Kimi-K3 "
            "KDA (ValueError); speculative decoding with ReplaySSM on Nemotron-H needs vLLM "
            "0.32.0"
        )
    if mode == "all":
        raise InvalidSettings(
            "vLLM rejects this configuration: --use-replayssm supports prefix caching only "
            "in align mode; pass --mamba-cache-mode align"
        )
    if backend == "flashinfer" and profile.replayssm < 2:
        raise InvalidSettings(
            f"vLLM {profile.name} rejects this configuration: --use-replayssm requires "
            "--mamba-backend triton"
        )
    if spec and profile.replayssm < 2:
        raise InvalidSettings(
            f"vLLM {profile.name} rejects this configuration: --use-replayssm does not "
            "support speculative decoding"
        )
    ring = settings.replayssm_buffer_len
    if backend == "flashinfer":
        ring += 1 + spec  # spec is 0 here before 0.32 (refused above)
    return ring


def _flash_attn_restricted(
    profile: Profile,
    backend: Backend,
    gpu: Gpu | None,
    hybrid: bool,
    cache_dtypes: tuple[str, ...],
) -> bool:
    """Whether FLASH_ATTN offers only 16/32/64-token kernel blocks here.

    vLLM 0.11.1: for every model (``supported_kernel_block_sizes``); 0.12-0.24: for hybrid
    models whose ``CacheConfig`` ``mamba_cache_dtype`` or ``mamba_ssm_cache_dtype`` is
    float32 (``vllm/v1/attention/backends/flash_attn.py``
    ``get_supported_kernel_block_sizes``, flash-attention issue 1974). CUDA only.
    """
    if backend.name != "FLASH_ATTN" or (gpu is not None and gpu.platform != "cuda"):
        return False
    if profile.flash_attn_kernel_sizes == "all":
        return True
    return (
        profile.flash_attn_kernel_sizes == "hybrid-float32"
        and hybrid
        and ("float32" in cache_dtypes)
    )


def _fa4_hd256(
    profile: Profile,
    backend: Backend,
    gpu: Gpu | None,
    attention: AttentionGeometry,
    kv_dtype: str | None,
) -> bool:
    """Whether FLASH_ATTN runs FlashAttention 4's head-size-256 kernel (128-token pages).

    vLLM ≥ 0.29 on capability 10.x/11.x, head size 256 for K and V, a KV cache that is not
    quantized (``vllm/v1/attention/backends/flash_attn.py`` ``_get_fa4_hd256_block_size``;
    ``fa_utils.py`` ``uses_fa4_hd256_kernel``, ``get_flash_attn_version``,
    ``_fa4_hd256_fallback_reason``). Soft-capping and sinks are not modelled (no hybrid in
    the catalog uses them).
    """
    cap = gpu.capability if gpu is not None else None
    return (
        profile.fa4_hd256_pages
        and backend.name == "FLASH_ATTN"
        and gpu is not None
        and gpu.platform == "cuda"
        and cap is not None
        and cap[0] in (10, 11)
        and not attention.use_mla
        and attention.head_size == 256
        and kv_dtype is not None
        and not kv_dtype.startswith("fp8")
    )


class _Trail:
    """What the steps of :func:`create_engine_config` resolved, in order (for ``explain``),
    and the remarks to show with any result."""

    def __init__(self) -> None:
        self.steps: list[Resolution] = []
        self.notes: list[str] = []
        self.startup_errors: list[str] = []

    def add(self, key: str, value: str, source: str) -> None:
        self.steps.append(Resolution(key, value, source))


class _Attention(NamedTuple):
    """The attention half of the cache config: KV dtype, backend and base block."""

    backend: Backend | None = None
    kv_dtype: str | None = None
    kv_bytes: int | None = None
    base_block: int = DEFAULT_BLOCK_SIZE


class _MambaAlignment(NamedTuple):
    """Mamba cache mode and the chunk the block is aligned to (``None``: not chunk-aligned)."""

    mode: str
    chunk: int | None


def check_engine_args(settings: Settings) -> None:
    """Reject sizes ``vllm serve`` refuses before it builds any config.

    Mirrors the argument checks of ``EngineArgs`` (``vllm/engine/arg_utils.py``) and the
    ``CacheConfig`` / ``SpeculativeConfig`` field validators (``vllm/config/cache.py``,
    ``vllm/config/speculative.py``): ``--num-speculative-tokens`` ≥ 0, ``--block-size``,
    ``--mamba-block-size`` and ``--max-model-len`` positive (tokens).

    Raises:
        InvalidSettings: a negative or zero size.
    """
    if settings.num_speculative_tokens < 0:
        raise InvalidSettings("--num-speculative-tokens must be >= 0")
    if settings.block_size is not None and settings.block_size <= 0:
        raise InvalidSettings(f"--block-size must be positive, got {settings.block_size}")
    for flag_name, value in (
        ("--mamba-block-size", settings.mamba_block_size),
        ("--max-model-len", settings.max_model_len),
    ):
        if value is not None and value <= 0:
            raise InvalidSettings(f"{flag_name} must be positive, got {value}")


def check_speculative_method(settings: Settings, chosen: Resolved) -> None:
    """Reject a ``--speculative-config`` ``method`` the release does not accept.

    Mirrors the ``SpeculativeMethod`` Literal of ``SpeculativeConfig.method``
    (``vllm/config/speculative.py``), which pydantic checks when
    ``EngineArgs.create_speculative_config`` builds the config, before ``__post_init__``
    renames ``*_mtp`` model types to ``mtp``
    (:func:`kvalign.versions.speculative_methods`).

    Raises:
        InvalidSettings: a method name the release's Literal does not hold.
    """
    method = settings.speculative_method
    if method is None:
        return
    accepted = speculative_methods(chosen.release)
    if method in accepted.names:
        return
    basis = "" if accepted.basis == chosen.release else f", as read in {accepted.basis}"
    mtp = sorted(name for name in accepted.names if name.endswith("_mtp"))
    others = sorted(name for name in accepted.names if not name.endswith("_mtp"))
    raise InvalidSettings(
        f"--speculative-method (--speculative-config method) {clean(bounded(repr(method), 80))}: "
        f"vLLM {chosen.profile.name} "
        f"refuses it at start-up (SpeculativeConfig.method is one of {', '.join(others)} "
        f"and {len(mtp)} *_mtp model types{basis})"
    )


def resolve_speculative_tokens(settings: Settings, chosen: Resolved, trail: _Trail) -> Settings:
    """``settings`` with the ``num_speculative_tokens`` vLLM uses for a method given
    without one (0).

    Mirrors ``SpeculativeConfig``'s ``__post_init__`` and ``_verify_args``
    (``vllm/config/speculative.py``, read in 0.11.1 → 0.33.0): ``suffix`` takes
    ``suffix_decoding_max_tree_depth`` (24 by default,
    :data:`kvalign.versions.SPECULATIVE_DEFAULT_TOKENS`); any other method fails at start-up
    ("num_speculative_tokens must be provided"): without a draft ``model`` vLLM reads no
    ``n_predict`` to take it from. Recorded as a start-up error; the sizing is still shown.
    """
    method = settings.speculative_method
    if method is None or settings.num_speculative_tokens:
        return settings
    default = SPECULATIVE_DEFAULT_TOKENS.get(method)
    if default is not None:
        trail.add("num_speculative_tokens", str(default),
                  f"--speculative-config method {method} without num_speculative_tokens: "
                  f"vLLM takes suffix_decoding_max_tree_depth ({default})")  # fmt: skip
        return replace(settings, num_speculative_tokens=default)
    trail.startup_errors.append(
        f"vLLM {chosen.profile.name} fails at start-up: --speculative-config method "
        f"{method} needs num_speculative_tokens (--num-speculative-tokens, > 0); "
        "SpeculativeConfig raises ValueError without it (only a draft model's n_predict or "
        "suffix decoding supplies a default)"
    )
    return settings


def resolve_model_config(
    geometry: ModelGeometry, settings: Settings, trail: _Trail
) -> tuple[Resolved, str]:
    """(release chosen for ``--vllm-version``, model dtype): the ``ModelConfig`` step.

    Mirrors ``EngineArgs.create_model_config`` / ``ModelConfig.__post_init__``
    (``vllm/config/model.py``: ``_get_and_verify_dtype``; the release's model registry
    refuses architectures it does not know).

    Raises:
        InvalidSettings: an unknown version or dtype, or a size vLLM refuses
            (:func:`check_engine_args`).
        UnsupportedModel: the release does not know the model's architecture.
    """
    chosen = resolve(settings.vllm_version)
    trail.add("vllm_release", chosen.profile.name, chosen.note)
    choice = _transformers(settings)  # refuses a version outside the release's range
    if settings.transformers_version is not None:
        trail.add("transformers", choice.version, choice.note)
    model_dtype = resolve_model_dtype(settings.dtype, geometry.model_dtype)
    trail.add("model_dtype", model_dtype,
              f"--dtype {settings.dtype} (config: {geometry.model_dtype})")  # fmt: skip
    check_engine_args(settings)
    check_speculative_method(settings, chosen)
    problem = architecture_problem(geometry.architecture, chosen.release)
    if problem:
        raise UnsupportedModel(f"{geometry.model_id}: {problem}")
    return chosen, model_dtype


def resolve_stand_in(geometry: ModelGeometry, chosen: Resolved, trail: _Trail) -> ModelGeometry:
    """The model as the release serves it when it registers not the checkpoint's class but a
    stand-in (:func:`kvalign.versions.architecture_stand_in`): the model-default hooks
    (``MODELS_CONFIG_MAP`` in ``vllm/model_executor/models/config.py``) key on the
    checkpoint's own name, so none applies before 0.25 (Qwen3.5's ``mamba_ssm_dtype``); the
    start-up failure is recorded (:func:`kvalign.startup.stand_in_problem`). From 0.25 the hooks
    are also looked up under the normalised name (measured: 0.17.0 400, 0.25.0 784 at TP 2
    for the text-only Qwen3.5-27B)."""
    stand_in = architecture_stand_in(geometry.architecture, chosen.release)
    if not stand_in:
        return geometry
    first = ARCHITECTURE_RELEASES[geometry.architecture][0]
    problem = stand_in_problem(geometry.architecture, stand_in, chosen.profile.name, first)
    trail.add("architecture", stand_in, problem)
    trail.startup_errors.append(problem)
    if chosen.profile.config_hooks_normalise_arch:
        return geometry
    return replace(geometry, ssm_dtype_default=None)


def resolve_prefix_caching(
    geometry: ModelGeometry, settings: Settings, profile: Profile, trail: _Trail
) -> bool:
    """Whether prefix caching is on: the flag, else the release's default (off for hybrid
    models in some releases), and off whatever the flag says where the release turns it off
    for the model (:meth:`Profile.prefix_caching_refusal`). Mirrors
    ``EngineArgs._set_default_args``, ``VllmConfig.__post_init__``'s hybrid default
    (``vllm/config/vllm.py``) and ``MambaModelConfig.verify_and_update_config``."""
    if settings.enable_prefix_caching is not None:
        prefix_caching = settings.enable_prefix_caching
        why = "--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching"
    else:
        prefix_caching = profile.prefix_caching_default(geometry.is_hybrid)
        why = f"vLLM {profile.name} default" + (" for hybrid models" if geometry.is_hybrid else "")
    refusal = profile.prefix_caching_refusal(geometry.model_type, geometry.state is not None)
    if refusal and prefix_caching:
        prefix_caching, why = False, refusal
        trail.notes.append(refusal)
    trail.add("prefix_caching", "on" if prefix_caching else "off", why)
    return prefix_caching


def resolve_attention(
    geometry: ModelGeometry,
    settings: Settings,
    profile: Profile,
    gpu: Gpu | None,
    model_dtype: str,
    trail: _Trail,
) -> _Attention:
    """KV-cache dtype, attention backend and the block size before hybrid alignment.

    Mirrors ``CacheConfig`` (``vllm/config/cache.py``: ``cache_dtype``, ``block_size``),
    ``resolve_kv_cache_dtype_string`` (``vllm/utils/torch_utils.py``), the platform's
    ``get_attn_backend_cls`` and ``Platform.check_and_update_config`` /
    ``update_block_size_for_backend`` (``vllm/platforms/*.py``: the backend's preferred
    block when ``--block-size`` is unset). Sizes in tokens.

    Raises:
        InvalidSettings: an unknown dtype or backend, or a backend the GPU cannot run.
        NotModelled: a packed KV-cache dtype resolved from the checkpoint.
    """
    attention = geometry.attention
    base_block = settings.block_size if settings.block_size is not None else DEFAULT_BLOCK_SIZE
    if attention is None:
        return _Attention(base_block=base_block)
    flag, source = _kv_cache_dtype(geometry, settings, profile)
    if flag in PACKED_KV_CACHE_DTYPES and settings.kv_cache_dtype == "auto":
        raise NotModelled(
            f"{geometry.config_path}: the checkpoint's quantization_config asks for a "
            f"{flag} KV cache (what --kv-cache-dtype auto resolves to): that packed layout "
            "is not modelled by kvalign; pass --kv-cache-dtype fp8 or bfloat16 to size "
            "another layout"
        )
    kv_bytes = kv_cache_dtype_bytes(flag, model_dtype)
    kv_dtype = model_dtype if flag == "auto" else flag
    trail.add("kv_cache_dtype", f"{kv_dtype} ({kv_bytes} B)", source)
    if flag != settings.kv_cache_dtype:
        trail.notes.append(f"KV cache in {kv_dtype}: {source.split(' (')[0]}")
    backend = resolve_backend(
        settings.attention_backend,
        use_mla=attention.use_mla,
        gqa=attention.num_attention_heads > attention.total_kv_heads,
        gpu=gpu,
        large_pages=profile.flashinfer_large_pages,
        mla_blackwell=profile.mla_blackwell_backend,
    )
    if backend.name == "CPU_ATTN" and backend.multiple_of != profile.cpu_attn_kernel_multiple:
        backend = backend._replace(multiple_of=profile.cpu_attn_kernel_multiple)
        trail.add("kernel_block_sizes", f"multiples of {profile.cpu_attn_kernel_multiple}",
                  f"vLLM {profile.name}: CPU_ATTN get_supported_kernel_block_sizes")  # fmt: skip
    if _fa4_hd256(profile, backend, gpu, attention, kv_dtype):
        backend = Backend("FLASH_ATTN", sizes=(FA4_HD256_PAGE,), preferred=FA4_HD256_PAGE)
        trail.add("kernel_block_sizes", str(FA4_HD256_PAGE),
                  f"vLLM {profile.name}: FlashAttention 4's head-size-256 kernel on "
                  "capability 10.x")  # fmt: skip
    where = gpu.name if gpu is not None else "an unspecified CUDA GPU"
    if settings.attention_backend.strip().lower() == AUTO_BACKEND:
        flag_text = f"--attention-backend unset → vLLM {profile.name}'s choice on {where}"
    else:
        flag_text = f"--attention-backend {settings.attention_backend} on {where}"
    trail.add("attention_backend", backend.name, flag_text)
    if settings.block_size is None and profile.backend_preferred_block:
        base_block = backend.preferred_block_size()  # the platform's default (16; CPU 128)
        block_why = f"--block-size unset → {backend.name}'s preferred size"
    elif settings.block_size is None:
        block_why = f"--block-size unset → {DEFAULT_BLOCK_SIZE}"
    else:
        block_why = f"--block-size {settings.block_size}"
    trail.add("base_block_size", str(base_block), block_why)
    return _Attention(backend, kv_dtype, kv_bytes, base_block)


class _SkipLayers(NamedTuple):
    """What ``--kv-cache-dtype-skip-layers`` resolved to (see :class:`EngineConfig`)."""

    layers: tuple[int, ...] = ()
    kv_bytes: int | None = None
    aligns_block: bool = False


#: the attention type ``--kv-cache-dtype-skip-layers`` may name besides layer indices.
SKIP_SLIDING_WINDOW = "sliding_window"


def _skip_entry(entry: str) -> str:
    """A ``--kv-cache-dtype-skip-layers`` entry for a message: as written when it is a
    layer index or ``sliding_window``, else escaped (``repr``)."""
    return entry if entry.isdigit() or entry == SKIP_SLIDING_WINDOW else repr(entry)


def resolve_kv_skip_layers(
    geometry: ModelGeometry,
    settings: Settings,
    chosen: Resolved,
    attention: _Attention,
    model_dtype: str,
    trail: _Trail,
) -> _SkipLayers:
    """The attention layers ``--kv-cache-dtype-skip-layers`` keeps in the model dtype.

    vLLM compares each attention layer's index (``extract_layer_index`` of its name, as
    text) and, for sliding-window layers, ``sliding_window`` with the list
    (``Attention.__init__``, ``vllm/model_executor/layers/attention/attention.py``); a
    matched layer's KV cache is ``auto`` (the model dtype). The platform's block step runs
    whenever the list is not empty (``Platform.update_block_size_for_backend``, 0.25+).
    No model kvalign sizes has sliding-window layers, so ``sliding_window`` matches none.

    Raises:
        InvalidSettings: the release has no such flag (before 0.19).
        NotModelled: an MLA model with a quantized KV cache (its skip page is priced by
            the MLA spec, which kvalign does not follow here).
    """
    entries = (e.strip() for e in settings.kv_cache_dtype_skip_layers)
    wanted = tuple(dict.fromkeys(e for e in entries if e))
    if not wanted:
        return _SkipLayers()
    rules = skip_layer_rules(chosen.release)
    if not rules.flag:
        raise InvalidSettings(
            f"--kv-cache-dtype-skip-layers: vLLM {chosen.profile.name} has no such flag "
            "(it exists from 0.19)"
        )
    shown = ",".join(_skip_entry(e) for e in wanted)
    layer_attention = geometry.attention
    if layer_attention is None or attention.kv_bytes is None:
        trail.notes.append(
            f"--kv-cache-dtype-skip-layers {shown}: the model has no attention layer"
        )
        return _SkipLayers()
    kinds = geometry.layer_kinds
    attention_layers = [i for i, kind in enumerate(kinds) if kind in ("attention", "both")]
    matched = tuple(i for i in attention_layers if str(i) in wanted)
    unmatched = [_skip_entry(e) for e in wanted if e not in map(str, attention_layers)]
    model_bytes = DTYPE_BYTES[model_dtype]
    quantized = attention.kv_bytes < model_bytes
    if quantized and layer_attention.use_mla:
        raise NotModelled(
            f"--kv-cache-dtype-skip-layers with a {attention.kv_dtype} KV cache on an MLA "
            "model: the skipped layers' MLA page is not modelled by kvalign"
        )
    if not kinds and geometry.is_hybrid:
        trail.notes.append(
            f"--kv-cache-dtype-skip-layers {shown}: the config names no per-layer pattern, "
            "so which attention layers it names is unknown; taken as none"
        )
    elif unmatched:
        trail.notes.append(
            f"--kv-cache-dtype-skip-layers: {', '.join(unmatched)} names no attention layer "
            f"of this model (attention layers: {', '.join(map(str, attention_layers)) or 'none'})"
        )
    if not quantized:
        why = f"the KV cache is already in the model dtype ({model_dtype}): no effect"
        trail.add("kv_cache_dtype_skip_layers", shown, why)
        return _SkipLayers(layers=matched)
    layers_text = ", ".join(map(str, matched)) or "none"
    value = f"layers {layers_text} in {model_dtype} ({model_bytes} B)"
    why = f"--kv-cache-dtype-skip-layers {shown} (the others {attention.kv_dtype})"
    trail.add("kv_cache_dtype_skip_layers", value, why)
    if matched and geometry.state is not None and not rules.pads_mamba:
        trail.startup_errors.append(
            skip_layers_mamba_problem(
                chosen.profile.name,
                model_bytes // attention.kv_bytes,
                SKIP_LAYER_RELEASES["pads_mamba"],
            )
        )
    return _SkipLayers(matched, model_bytes, rules.aligns_block)


#: the speculative method whose draft caches the target's hidden states in the KV cache.
EXTRACT_HIDDEN_STATES = "extract_hidden_states"


def resolve_hidden_state_cache(
    geometry: ModelGeometry, settings: Settings, chosen: Resolved, model_dtype: str, trail: _Trail
) -> tuple[int | None, int]:
    """(bytes per token of the hidden-state KV-cache layer, the release's rule) for the
    ``extract_hidden_states`` speculative method, ``(None, 0)`` without it.

    Its one cache-only layer holds ``len(eagle_aux_hidden_state_layer_ids)`` heads of
    ``hidden_size`` elements in the model dtype (a quantized ``--kv-cache-dtype`` is
    replaced by ``auto`` for it), not sharded by TP (``ExtractHiddenStatesModel`` and
    ``CacheOnlyAttentionLayer.get_kv_cache_spec``,
    ``vllm/model_executor/models/extract_hidden_states.py``, read in 0.20.0 → 0.33.0).
    Without any layer id the release fails at start-up: ``GPUModelRunner.__init__`` builds
    ``ExtractHiddenStatesProposer``, whose ``__init__`` raises ``ValueError`` for an empty or
    missing list (``vllm/v1/spec_decode/extract_hidden_states.py``, read in 0.25.0, 0.27.1,
    0.28.0, 0.33.0).

    Raises:
        NotModelled: a release before 0.22 (its grouping of that layer is not modelled),
            or a config that names no ``hidden_size``.
    """
    if settings.speculative_method != EXTRACT_HIDDEN_STATES:
        if settings.eagle_aux_hidden_state_layer_ids:
            method = settings.speculative_method
            given = "no method" if method is None else f"method {clean(bounded(repr(method), 80))}"
            trail.notes.append(
                "eagle_aux_hidden_state_layer_ids (--eagle-aux-hidden-state-layer-ids) size "
                f"nothing without speculative method {EXTRACT_HIDDEN_STATES} ({given}): vLLM "
                "adds no hidden-state KV-cache group for them"
            )
        return None, 0
    rule = hidden_state_rule(chosen.release)
    if not rule:
        raise NotModelled(
            f"speculative method {EXTRACT_HIDDEN_STATES} on vLLM {chosen.profile.name}: "
            "how that release groups the hidden-state KV-cache layer is not modelled "
            "(from 0.22)"
        )
    if geometry.hidden_size is None:
        raise NotModelled(
            f"{geometry.config_path}: speculative method {EXTRACT_HIDDEN_STATES} caches "
            "hidden states of hidden_size elements, which the config does not name"
        )
    heads = len(settings.eagle_aux_hidden_state_layer_ids)
    per_token = heads * geometry.hidden_size * DTYPE_BYTES[model_dtype]
    why = (
        f"--speculative-config method {EXTRACT_HIDDEN_STATES}: {heads} hidden states "
        f"(eagle_aux_hidden_state_layer_ids) x hidden_size {geometry.hidden_size} x "
        f"{model_dtype}"
    )
    trail.add("hidden_state_cache", f"{per_token} B per token", why)
    if not heads:
        trail.startup_errors.append(
            f"vLLM {chosen.profile.name} fails at start-up: speculative method "
            f"{EXTRACT_HIDDEN_STATES} needs draft_model_config.hf_config."
            "eagle_aux_hidden_state_layer_ids (--eagle-aux-hidden-state-layer-ids), and its "
            "proposer raises ValueError without them, before any KV cache is sized"
        )
        return None, rule
    return per_token, rule


def resolve_mamba_state(
    geometry: ModelGeometry,
    settings: Settings,
    profile: Profile,
    gpu: Gpu | None,
    model_dtype: str,
    backend: Backend | None,
    trail: _Trail,
) -> tuple[str | None, str | None, Backend | None]:
    """(conv-state dtype, ssm-state dtype, backend with FLASH_ATTN's kernel sizes applied).

    Mirrors ``MambaStateDtypeCalculator`` (``vllm/model_executor/layers/mamba/mamba_utils.py``)
    after the model defaults of ``vllm/model_executor/models/config.py``, and FLASH_ATTN's
    ``get_supported_kernel_block_sizes`` (``vllm/v1/attention/backends/flash_attn.py``).
    ``None`` dtypes without state layers.

    Raises:
        InvalidSettings: an unknown dtype, or one the release rejects.
    """
    if geometry.state is None:
        if backend is not None and _flash_attn_restricted(profile, backend, gpu, False, ()):
            backend = Backend("FLASH_ATTN", sizes=(16, 32, 64))
        return None, None, backend
    conv, ssm, ssm_why, ssm_config = _state_dtypes(geometry, settings, model_dtype, profile)
    trail.add("mamba_cache_dtype", conv, f"--mamba-cache-dtype {settings.mamba_cache_dtype}")
    trail.add("mamba_ssm_cache_dtype", ssm, ssm_why)
    for dtype in (conv, ssm):
        assert dtype in DTYPE_BYTES
    if backend is not None and _flash_attn_restricted(
        profile, backend, gpu, geometry.is_hybrid, (conv, ssm_config)
    ):
        backend = Backend("FLASH_ATTN", sizes=(16, 32, 64))
        trail.add("kernel_block_sizes", "16, 32, 64",
                  f"vLLM {profile.name}: FLASH_ATTN with a float32 Mamba state "
                  "(flash-attention issue 1974)")  # fmt: skip
    return conv, ssm, backend


def resolve_prefill_checkpoint(
    geometry: ModelGeometry,
    settings: Settings,
    profile: Profile,
    gpu: Gpu | None,
    prefix_caching: bool,
    trail: _Trail,
) -> tuple[int, str]:
    """(prefill-checkpoint alignment in tokens, why) on releases that fold it in (0.33),
    else 1: :func:`checkpoint_alignment` (``get_mamba_prefill_checkpoint_alignment``)."""
    if not profile.gdn_checkpoint_alignment:
        return 1, "no prefill checkpoint alignment"
    checkpoint, note = checkpoint_alignment(geometry, settings, gpu, prefix_caching)
    if geometry.state is not None and geometry.state.family == "gdn":
        trail.add("prefill_checkpoint", str(checkpoint), note)
    return checkpoint, note


def resolve_mamba_alignment(
    geometry: ModelGeometry,
    settings: Settings,
    profile: Profile,
    prefix_caching: bool,
    trail: _Trail,
) -> _MambaAlignment:
    """Mamba cache mode and, in mode ``all``, the chunk size (tokens) blocks align to.

    Mirrors ``VllmConfig.validate_mamba_block_size`` (``vllm/config/vllm.py``) and
    ``MambaModelConfig`` / ``HybridAttentionMambaModelConfig.verify_and_update_config``
    (``vllm/model_executor/models/config.py``; :func:`mamba_cache_mode`).

    Raises:
        InvalidSettings: ``--mamba-block-size`` without prefix caching, or a cache mode
            the release rejects.
    """
    if settings.mamba_block_size is not None and not prefix_caching:
        # VllmConfig.validate_mamba_block_size (vllm/config/vllm.py, 0.11.1-0.33 read)
        raise InvalidSettings(
            "vLLM rejects this configuration: --mamba-block-size can only be set with "
            "--enable-prefix-caching"
        )
    chunk: int | None = None
    mode, mode_why = mamba_cache_mode(geometry, settings, profile, prefix_caching)
    if geometry.is_hybrid:
        trail.add("mamba_cache_mode", mode, mode_why)
    if mode == "all":
        if settings.mamba_block_size is not None:
            chunk, chunk_why = (
                settings.mamba_block_size,
                "--mamba-block-size replaces the chunk size",
            )
        else:
            chunk = geometry.mamba_chunk_size or DEFAULT_MAMBA_CHUNK_SIZE
            chunk_why = "the model's Mamba chunk size"
        why = f"prefix caching in Mamba cache mode 'all' (vLLM {profile.name}): {chunk_why}"
        trail.add("mamba_chunk_alignment", str(chunk), why)
        problem = mamba_block_size_problem(geometry, profile, mode, settings.mamba_block_size)
        if problem:
            trail.startup_errors.append(problem)
    elif settings.mamba_block_size is not None and geometry.is_hybrid:
        trail.notes.append(
            f"--mamba-block-size {settings.mamba_block_size} does not move the block size "
            f"in Mamba cache mode '{mode}' (only 'all' aligns to it)"
        )
    return _MambaAlignment(mode, chunk)


def resolve_state_spec_rows(
    geometry: ModelGeometry, settings: Settings, profile: Profile, trail: _Trail
) -> int:
    """Speculative rows in the conv state: ``num_speculative_tokens``, or 0 for Mamba2
    models whose release's ``MambaStateShapeCalculator.mamba2_state_shape`` ignores them
    (``vllm/model_executor/layers/mamba/mamba_utils.py``)."""
    spec_rows = settings.num_speculative_tokens
    state = geometry.state
    if (
        state is not None
        and state.family == "mamba2"
        and spec_rows
        and geometry.model_type not in profile.mamba2_spec_types
    ):
        trail.add("conv_state_spec_rows", "0",
                  f"vLLM {profile.name}: {geometry.model_type}'s Mamba2 conv state has no "
                  "speculative rows")  # fmt: skip
        return 0
    return spec_rows


#: first release whose default install runs transformers 5 (its range allows 5.5.1+).
FIRST_TRANSFORMERS_5 = "0.19.0"


def transformers_config_error(
    geometry: ModelGeometry, release: str, choice: TransformersChoice
) -> str:
    """Why the release, with its transformers, cannot load the config (``""`` when it can).

    A Nemotron-H config in transformers 5's spelling (``layers_block_type``, no
    ``hybrid_override_pattern``) under transformers 4: vLLM's own ``NemotronHConfig``
    (``vllm/transformers_utils/configs/nemotron_h.py``) derives ``layers_block_type``
    from the pattern and has no setter, so reading the config raises ``AttributeError``
    (measured: the vectors of 0.14.0, 0.17.0, 0.18.1 and 0.19.1 with transformers 4.57.6
    record it for Nemotron-3-Ultra and Nemotron-3.5-Lightning).
    """
    if not geometry.transformers5_spelling or choice.major >= 5:
        return ""
    remote = (
        "; the repository's remote code (auto_map, --trust-remote-code) could, but kvalign "
        "never runs it"
        if geometry.auto_map
        else " and it names no auto_map remote code either"
    )
    return (
        f"vLLM {release} with transformers {choice.version} cannot load this config: it "
        "spells layers_block_type without hybrid_override_pattern (transformers 5), and "
        "vLLM's own NemotronHConfig refuses it (AttributeError: property 'layers_block_type' "
        f"has no setter){remote}; first release that can: vLLM {FIRST_TRANSFORMERS_5} "
        "with transformers 5"
    )


def model_config_error(geometry: ModelGeometry, profile: Profile) -> str:
    """Why the release cannot build the model's config at all (``""`` when it can): the
    ``ModelArchConfigConvertor`` of 0.14-0.17 reads ``num_attention_heads``
    (``vllm/transformers_utils/model_arch_config_convertor.py``)."""
    if (
        profile.attention_free_kv_heads_error
        and geometry.attention is None
        and geometry.model_type not in ("mamba", "falcon_mamba")
    ):
        return (
            f"vLLM {profile.name} cannot build this model's config: its "
            "ModelArchConfigConvertor reads num_attention_heads, which the "
            f"{geometry.model_type} config lacks (AttributeError; fixed in 0.18)"
        )
    return ""


def resolve_hybrid_alignment(
    geometry: ModelGeometry, profile: Profile, gpu: Gpu | None, trail: _Trail
) -> bool:
    """Whether the platform aligns hybrid block sizes at all: vLLM 0.20.0's
    ``CpuPlatform.check_and_update_config`` (``vllm/platforms/cpu.py``) skips
    ``_align_hybrid_block_size``."""
    if (
        geometry.is_hybrid
        and gpu is not None
        and gpu.platform == "cpu"
        and not (profile.cpu_hybrid_alignment)
    ):
        trail.add("hybrid_alignment", "off",
                  f"vLLM {profile.name}'s CPU platform does no hybrid block alignment")  # fmt: skip
        trail.notes.append(
            f"vLLM {profile.name}'s CPU platform does no hybrid block alignment: the block "
            "stays at its base size"
        )
        return False
    return True


def is_sm100(profile: Profile, gpu: Gpu | None) -> bool:
    """The release's SM100 test for the model-config-era FlashInfer head-size-256 rule
    (``HybridAttentionMambaModelConfig.verify_and_update_config``:
    ``current_platform.is_device_capability(100)``, 10.x family in 0.13+)."""
    if gpu is None or gpu.capability is None:
        return False
    cap = gpu.capability
    return cap == (10, 0) if profile.blackwell_hd256_exact else cap[0] == 10


def resolve_pipeline_stages(
    geometry: ModelGeometry, settings: Settings, profile: Profile, trail: _Trail
) -> None:
    """Record ``--pipeline-parallel-size`` and where the release aligns each stage.

    From vLLM 0.20 the alignment runs per stage, on the layers the stage built
    (``Platform.update_block_size_for_backend``); before, once on the model config. The
    stages themselves are :func:`kvalign.alignment.pp_stages`. A model whose config names
    no per-layer pattern cannot be split: said in the notes.

    Raises:
        InvalidSettings: a pipeline size below 1, or a layer partition without PP.
    """
    pp = settings.pipeline_parallel_size
    if pp < 1:
        raise InvalidSettings(f"--pipeline-parallel-size must be >= 1, got {pp}")
    if pp == 1:
        if settings.pp_layer_partition is not None:
            raise InvalidSettings("--pp-layer-partition needs --pipeline-parallel-size > 1")
        return
    site = (
        "each stage aligns on the layers it owns (Platform.update_block_size_for_backend)"
        if profile.alignment_site == "platform"
        else "aligned once on the model config (HybridAttentionMambaModelConfig)"
    )
    trail.add("pipeline_parallel_size", str(pp), f"--pipeline-parallel-size {pp}: {site}")
    if geometry.is_hybrid and not geometry.layer_kinds:
        trail.notes.append(
            f"--pipeline-parallel-size {pp}: the config names no per-layer pattern, so the "
            "stages' layers are unknown; each stage is assumed to own an attention layer"
        )


def create_engine_config(geometry: ModelGeometry, settings: Settings) -> EngineConfig:
    """Resolve ``settings`` for ``geometry`` once, as ``vllm serve`` would.

    Mirrors ``EngineArgs.create_engine_config`` (``vllm/engine/arg_utils.py``), in its
    order, one named step each: the model config and release
    (:func:`resolve_model_config`); prefix caching (:func:`resolve_prefix_caching`); GPU,
    KV-cache dtype, attention backend and base block (:func:`resolve_attention`); Mamba
    state dtypes (:func:`resolve_mamba_state`); prefill-checkpoint and chunk alignment
    (:func:`resolve_prefill_checkpoint`, :func:`resolve_mamba_alignment`); conv-state
    speculative rows; ReplaySSM ring (:func:`replay_ring`); the platform's hybrid
    alignment. :meth:`EngineConfig.with_block_size` re-derives only what ``--block-size``
    moves.

    Raises:
        InvalidSettings: an unknown version, GPU, backend or dtype, a negative
            ``--block-size`` or ``--num-speculative-tokens``.
        NotModelled: a packed KV-cache dtype (given, or resolved from the checkpoint).
        UnsupportedModel: the release does not know the model's architecture.
    """
    trail = _Trail()
    chosen, model_dtype = resolve_model_config(geometry, settings, trail)
    settings = resolve_speculative_tokens(settings, chosen, trail)
    profile = chosen.profile
    geometry = resolve_stand_in(geometry, chosen, trail)
    prefix_caching = resolve_prefix_caching(geometry, settings, profile, trail)
    gpu = get_gpu(settings.gpu)
    attention = resolve_attention(geometry, settings, profile, gpu, model_dtype, trail)
    skip = resolve_kv_skip_layers(geometry, settings, chosen, attention, model_dtype, trail)
    hidden, hidden_rule = resolve_hidden_state_cache(geometry, settings, chosen, model_dtype, trail)
    conv, ssm, backend = resolve_mamba_state(
        geometry, settings, profile, gpu, model_dtype, attention.backend, trail
    )
    checkpoint, checkpoint_note = resolve_prefill_checkpoint(
        geometry, settings, profile, gpu, prefix_caching, trail
    )
    mamba = resolve_mamba_alignment(geometry, settings, profile, prefix_caching, trail)
    spec_rows = resolve_state_spec_rows(geometry, settings, profile, trail)
    ring = replay_ring(geometry, settings, profile, mamba.mode)
    if ring:
        trail.add("replayssm_ring", str(ring),
                  f"--use-replayssm --replayssm-buffer-len {settings.replayssm_buffer_len} "
                  f"--mamba-backend {settings.mamba_backend or 'triton'}")  # fmt: skip
    config_error = model_config_error(geometry, profile) or transformers_config_error(
        geometry, chosen.release, _transformers(settings)
    )
    if settings.max_model_len is not None:
        trail.add("max_model_len", str(settings.max_model_len), "--max-model-len")
    hybrid_alignment = resolve_hybrid_alignment(geometry, profile, gpu, trail)
    resolve_pipeline_stages(geometry, settings, profile, trail)
    return EngineConfig(
        settings=settings,
        profile=profile,
        profile_note=chosen.note,
        gpu=gpu,
        backend=backend,
        model_dtype=model_dtype,
        kv_cache_dtype=attention.kv_dtype,
        kv_bytes=attention.kv_bytes,
        conv_dtype=conv,
        ssm_dtype=ssm,
        prefix_caching=prefix_caching,
        base_block=attention.base_block,
        checkpoint=checkpoint,
        checkpoint_note=checkpoint_note,
        chunk=mamba.chunk,
        num_speculative_tokens=settings.num_speculative_tokens,
        blackwell=is_sm100(profile, gpu),
        mamba_cache_mode=mamba.mode,
        hybrid_alignment=hybrid_alignment,
        max_model_len=settings.max_model_len,
        state_spec_tokens=spec_rows,
        replay_ring=ring,
        replay_padded=profile.replayssm >= 4,
        config_error=config_error,
        startup_error="; ".join(trail.startup_errors),
        skip_layers=skip.layers,
        skip_kv_bytes=skip.kv_bytes,
        skip_aligns_block=skip.aligns_block,
        hidden_state_bytes=hidden,
        hidden_state_rule=hidden_rule,
        resolutions=tuple(trail.steps),
        notes=tuple(trail.notes),
    )


class EngineCache:
    """Resolve each (model, settings) once for one run (a ``check``, an ``audit``).

    :meth:`resolve` calls :func:`create_engine_config` the first time it sees a model
    object with given settings and returns the same :class:`EngineConfig` (or raises the
    same error) every later time. Models are told apart by identity: a run loads each
    model once. One instance per run, never module-level: nothing outlives the run.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[int, Settings], EngineConfig | KvalignError] = {}
        self._models: dict[int, ModelGeometry] = {}  # keeps each id() valid for the run

    def keep(self, geometry: ModelGeometry) -> None:
        """Hold ``geometry`` for the run, so that its ``id()`` in a key stays its own."""
        self._models.setdefault(id(geometry), geometry)

    def resolve(self, geometry: ModelGeometry, settings: Settings) -> EngineConfig:
        """:func:`create_engine_config` for ``(geometry, settings)``, once.

        Raises:
            InvalidSettings, NotModelled, UnsupportedModel: as :func:`create_engine_config`.
        """
        key = (id(geometry), settings)
        found = self._seen.get(key)
        if found is None:
            self.keep(geometry)
            try:
                found = create_engine_config(geometry, settings)
            except KvalignError as exc:
                found = exc
            self._seen[key] = found
        if isinstance(found, KvalignError):
            raise found
        return found
