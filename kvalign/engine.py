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

from dataclasses import dataclass

from kvalign.backends import Backend, Gpu, get_gpu, resolve_backend
from kvalign.dtypes import (
    DTYPE_BYTES,
    PACKED_KV_CACHE_DTYPES,
    kv_cache_dtype_bytes,
    mamba_dtype,
    resolve_model_dtype,
)
from kvalign.errors import InvalidSettings, NotModelled
from kvalign.families import kda
from kvalign.geometry import ModelGeometry
from kvalign.settings import Settings
from kvalign.versions import Profile, resolve

#: ``--block-size`` when none is given (vLLM ``CacheConfig.DEFAULT_BLOCK_SIZE``).
DEFAULT_BLOCK_SIZE = 16
#: Mamba chunk size when the config names none (``ModelConfig.get_mamba_chunk_size``).
DEFAULT_MAMBA_CHUNK_SIZE = 2048
#: prefill checkpoint spacing of the FlashInfer GDN prefill kernel (tokens).
FLASHINFER_GDN_CHECKPOINT = 64


@dataclass(frozen=True)
class Resolution:
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
        chunk: Mamba chunk size the block is aligned to (cache mode "all"), else ``None``.
        num_speculative_tokens: speculative tokens (conv-state length, spec-decoding floor).
        blackwell: the GPU is an SM100-family part (model-config-era FlashInfer rule).
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
    resolutions: tuple[Resolution, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def alignment(self) -> str:
        """``vllm`` (the release's per-rank rule) or ``tp-stable`` (the PR 45575 proposal)."""
        return self.settings.alignment


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


def state_dtypes(
    geometry: ModelGeometry, settings: Settings, model_dtype: str, profile: Profile
) -> tuple[str, str, str]:
    """(conv-state dtype, ssm/recurrent-state dtype, why) after vLLM's model defaults.

    ``mamba_ssm_cache_dtype=auto`` first becomes the model's own default (Nemotron-H:
    config value or the release's fallback; Qwen3.5: ``mamba_ssm_dtype``), then KDA's
    float32, then the conv dtype (``vllm/model_executor/layers/mamba/mamba_utils.py``
    ``MambaStateDtypeCalculator``; model defaults in ``vllm/model_executor/models/config.py``).

    Raises:
        InvalidSettings: an unknown dtype, or a KDA recurrent dtype vLLM rejects.
    """
    conv = mamba_dtype(settings.mamba_cache_dtype, model_dtype, field="--mamba-cache-dtype")
    flag = settings.mamba_ssm_cache_dtype
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
        elif geometry.ssm_dtype_fallback:
            default = profile.nemotron_ssm_fallback
    if flag == "auto" and default is not None:
        flag = default
        why = f"--mamba-ssm-cache-dtype auto → {default} (model default, vLLM {profile.name})"
    assert geometry.state is not None
    if geometry.state.family == "kda":
        ssm = kda.ssm_dtype(flag)
        if flag == "auto":
            why = f"--mamba-ssm-cache-dtype auto → {ssm} (KDA default)"
        return conv, ssm, why
    if flag == "auto":
        return conv, conv, "--mamba-ssm-cache-dtype auto → the conv-state dtype"
    return conv, flag, why


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


def create_engine_config(geometry: ModelGeometry, settings: Settings) -> EngineConfig:
    """Resolve ``settings`` for ``geometry`` once, as ``vllm serve`` would.

    Order (as ``EngineArgs.create_engine_config``): release profile; model dtype;
    KV-cache dtype (``auto`` → the checkpoint's ``quantization_config`` → the model
    dtype); prefix caching (flag, else the release default); GPU and attention backend;
    block size before alignment; Mamba state dtypes; prefill-checkpoint and chunk
    alignment.

    Raises:
        InvalidSettings: an unknown version, GPU, backend or dtype, a negative
            ``--block-size`` or ``--num-speculative-tokens``.
        NotModelled: a packed KV-cache dtype (given, or resolved from the checkpoint).
    """
    chosen = resolve(settings.vllm_version)
    profile = chosen.profile
    steps = [Resolution("vllm_release", profile.name, chosen.note)]
    model_dtype = resolve_model_dtype(settings.dtype, geometry.model_dtype)
    steps.append(Resolution("model_dtype", model_dtype, f"--dtype {settings.dtype} (config: "
                            f"{geometry.model_dtype})"))  # fmt: skip
    if settings.num_speculative_tokens < 0:
        raise InvalidSettings("--num-speculative-tokens must be >= 0")
    if settings.block_size is not None and settings.block_size <= 0:
        raise InvalidSettings(f"--block-size must be positive, got {settings.block_size}")
    notes: list[str] = []

    if settings.enable_prefix_caching is not None:
        prefix_caching = settings.enable_prefix_caching
        why = "--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching"
    else:
        prefix_caching = profile.prefix_caching_default(geometry.is_hybrid)
        why = f"vLLM {profile.name} default" + (" for hybrid models" if geometry.is_hybrid else "")
    steps.append(Resolution("prefix_caching", "on" if prefix_caching else "off", why))

    gpu = get_gpu(settings.gpu)
    backend: Backend | None = None
    kv_dtype: str | None = None
    kv_bytes: int | None = None
    base_block = settings.block_size if settings.block_size is not None else DEFAULT_BLOCK_SIZE
    attention = geometry.attention
    if attention is not None:
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
        steps.append(Resolution("kv_cache_dtype", f"{kv_dtype} ({kv_bytes} B)", source))
        if flag != settings.kv_cache_dtype:
            notes.append(f"KV cache in {kv_dtype}: {source.split(' (')[0]}")
        backend = resolve_backend(
            settings.attention_backend,
            use_mla=attention.use_mla,
            gqa=attention.num_attention_heads > attention.total_kv_heads,
            gpu=gpu,
        )
        where = gpu.name if gpu is not None else "an unspecified CUDA GPU"
        flag_text = f"--attention-backend {settings.attention_backend} on {where}"
        steps.append(Resolution("attention_backend", backend.name, flag_text))
        if settings.block_size is None and profile.backend_preferred_block:
            base_block = backend.preferred_block_size()  # the platform's default (16; CPU 128)
            block_why = f"--block-size unset → {backend.name}'s preferred size"
        elif settings.block_size is None:
            block_why = f"--block-size unset → {DEFAULT_BLOCK_SIZE}"
        else:
            block_why = f"--block-size {settings.block_size}"
        steps.append(Resolution("base_block_size", str(base_block), block_why))

    conv: str | None = None
    ssm: str | None = None
    if geometry.state is not None:
        conv, ssm, ssm_why = state_dtypes(geometry, settings, model_dtype, profile)
        steps.append(Resolution("mamba_cache_dtype", conv,
                                f"--mamba-cache-dtype {settings.mamba_cache_dtype}"))  # fmt: skip
        steps.append(Resolution("mamba_ssm_cache_dtype", ssm, ssm_why))
        for dtype in (conv, ssm):
            assert dtype in DTYPE_BYTES

    checkpoint, checkpoint_note = 1, "no prefill checkpoint alignment"
    if profile.gdn_checkpoint_alignment:
        checkpoint, checkpoint_note = checkpoint_alignment(geometry, settings, gpu, prefix_caching)
        if geometry.state is not None and geometry.state.family == "gdn":
            steps.append(Resolution("prefill_checkpoint", str(checkpoint), checkpoint_note))
    chunk: int | None = None
    if prefix_caching and geometry.is_hybrid and geometry.model_type in profile.chunk_aligned_types:
        chunk = geometry.mamba_chunk_size or DEFAULT_MAMBA_CHUNK_SIZE
        mode = f"prefix caching in Mamba cache mode 'all' (vLLM {profile.name})"
        steps.append(Resolution("mamba_chunk_alignment", str(chunk), mode))
    return EngineConfig(
        settings=settings,
        profile=profile,
        profile_note=chosen.note,
        gpu=gpu,
        backend=backend,
        model_dtype=model_dtype,
        kv_cache_dtype=kv_dtype,
        kv_bytes=kv_bytes,
        conv_dtype=conv,
        ssm_dtype=ssm,
        prefix_caching=prefix_caching,
        base_block=base_block,
        checkpoint=checkpoint,
        checkpoint_note=checkpoint_note,
        chunk=chunk,
        num_speculative_tokens=settings.num_speculative_tokens,
        blackwell=gpu is not None and gpu.blackwell,
        resolutions=tuple(steps),
        notes=tuple(notes),
    )
