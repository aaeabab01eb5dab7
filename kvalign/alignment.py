"""Pure vLLM arithmetic: page sizes, the aligned (logical) block size and the kernel block.

No I/O. Functions of (:class:`ModelGeometry`, :class:`Settings`, TP) → numbers. Mirrors
vLLM 0.33:

* ``vllm/platforms/interface.py`` ``Platform.update_block_size_for_backend`` and
  ``_align_hybrid_block_size`` (the per-rank alignment);
* ``vllm/v1/kv_cache_interface.py`` ``FullAttentionSpec`` / ``MLAAttentionSpec`` /
  ``MambaSpec`` ``page_size_bytes``;
* ``vllm/model_executor/layers/mamba/mamba_utils.py`` (state shapes and dtypes);
* ``vllm/v1/worker/utils.py`` ``select_common_block_size`` (kernel block).

``tp_stable_block_size`` is the TP-stable alignment proposed in vLLM PR 45575 (spec §6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvalign.backends import Backend, get_gpu, resolve_backend
from kvalign.dtypes import DTYPE_BYTES, kv_cache_dtype_bytes, mamba_dtype, resolve_model_dtype
from kvalign.errors import InvalidSettings
from kvalign.families import IndivisibleTP, Shape, family_module, kda
from kvalign.geometry import AttentionGeometry, ModelGeometry
from kvalign.settings import Settings

#: vLLM 0.33 floor on the alignment unit for MLA hybrids (TRT-LLM/FlashInfer MLA decode).
MLA_ALIGNMENT_FLOOR = 128
#: prefill checkpoint spacing of the FlashInfer GDN prefill kernel (tokens).
FLASHINFER_GDN_CHECKPOINT = 64
#: ``--block-size`` when none is given (vLLM ``CacheConfig.DEFAULT_BLOCK_SIZE``).
DEFAULT_BLOCK_SIZE = 16


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative ``a`` by positive ``b``."""
    return -(-a // b)


def kv_heads_per_rank(attention: AttentionGeometry, tp: int) -> int:
    """KV heads on one rank: ``max(1, total // TP)``; 1 for MLA (vLLM ``get_num_kv_heads``)."""
    if attention.use_mla:
        return 1
    return max(1, attention.total_kv_heads // tp)


def attention_page_bytes_per_token(attention: AttentionGeometry, tp: int, kv_bytes: int) -> int:
    """Bytes one token occupies in one attention layer on one rank.

    ``kv_heads_per_rank * (head_size + head_size_v) * kv_bytes`` -- K and V for ordinary
    attention, one latent (``head_size_v = 0``) for MLA.
    """
    heads = kv_heads_per_rank(attention, tp)
    return heads * (attention.head_size + attention.head_size_v) * kv_bytes


@dataclass(frozen=True)
class MambaPage:
    """Per-rank recurrent state of one mamba-like layer.

    Attributes:
        shapes: state tensor shapes in elements (conv state in vLLM's default
            ``(state_len, dim)`` orientation).
        dtypes: dtype name of each tensor.
        page_bytes: ``sum(prod(shape) * bytes(dtype))``.
    """

    shapes: tuple[Shape, ...]
    dtypes: tuple[str, ...]
    page_bytes: int


def state_dtypes(geometry: ModelGeometry, settings: Settings, model_dtype: str) -> tuple[str, str]:
    """(conv-state dtype, ssm/recurrent-state dtype) after vLLM's model-specific defaults.

    ``mamba_ssm_cache_dtype=auto`` first becomes the model's own default (Nemotron-H:
    config value or float32; Qwen3.5: ``mamba_ssm_dtype``), then KDA's float32, then the
    conv dtype (``MambaStateDtypeCalculator``).

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
    if flag == "auto" and geometry.ssm_dtype_default is not None:
        flag = geometry.ssm_dtype_default
    assert geometry.state is not None
    if geometry.state.family == "kda":
        return conv, kda.ssm_dtype(flag)
    return conv, (conv if flag == "auto" else flag)


def mamba_page(geometry: ModelGeometry, settings: Settings, tp: int) -> MambaPage:
    """Per-rank state page of one mamba-like layer at tensor parallel size ``tp``.

    Raises:
        IndivisibleTP: a state dimension does not divide by ``tp``.
        InvalidSettings: bad dtype flags.
    """
    assert geometry.state is not None
    module = family_module(geometry.state.family)
    model_dtype = resolve_model_dtype(settings.dtype, geometry.model_dtype)
    conv, ssm = state_dtypes(geometry, settings, model_dtype)
    shapes: tuple[Shape, ...] = module.shapes(
        geometry.state.params, tp, settings.num_speculative_tokens
    )
    dtypes: tuple[str, ...] = module.dtypes(conv, ssm)
    page = sum(math.prod(shape) * DTYPE_BYTES[dt] for shape, dt in zip(shapes, dtypes, strict=True))
    return MambaPage(shapes, dtypes, page)


def checkpoint_alignment(geometry: ModelGeometry, settings: Settings) -> tuple[int, str]:
    """Prefill-checkpoint alignment (tokens) used with prefix caching, and why.

    Gated-delta-net models whose prefill runs on the FlashInfer GDN kernel export
    checkpoints every 64 tokens: chosen on SM90, and on SM100/SM120 when
    ``linear_key_head_dim == 128`` (CUDA ≥ 13 assumed). Elsewhere 1.
    (``vllm/model_executor/layers/mamba/abstract.py`` ``get_mamba_prefill_checkpoint_alignment``.)
    """
    state = geometry.state
    if state is None or state.family != "gdn" or not settings.enable_prefix_caching:
        return 1, "no prefill checkpoint alignment"
    if settings.gdn_prefill_backend == "triton":
        return 1, "GDN prefill on Triton: checkpoint alignment 1"
    if settings.gdn_prefill_backend == "flashinfer":
        return FLASHINFER_GDN_CHECKPOINT, "GDN prefill on FlashInfer: checkpoints every 64 tokens"
    gpu = get_gpu(settings.gpu)
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


def aligned_block_size(
    attn_page_per_token: int,
    mamba_page_bytes: int,
    *,
    block_size: int,
    backend: Backend,
    use_mla: bool,
    checkpoint: int = 1,
    prefix_caching: bool = True,
) -> int:
    """vLLM 0.33's aligned logical block size (tokens) on one rank.

    ``align = max(k_min, block_size)`` (≥ 128 for MLA; ``lcm`` with the prefill
    checkpoint alignment when prefix caching is on), then
    ``align * ceil(m / (align * a))`` rounded up to the backend lcm, and never below
    ``block_size``.

    Args:
        attn_page_per_token: ``a``, bytes per token per attention layer on this rank.
        mamba_page_bytes: ``m``, bytes of one mamba-like layer's state on this rank.
        block_size: the block size before alignment (user's ``--block-size`` or the
            backend's preferred size).
        backend: the attention backend (its smallest kernel block).
        use_mla: MLA model (128-token floor).
        checkpoint: prefill checkpoint alignment (tokens).
        prefix_caching: whether prefix caching ("align" mamba cache mode) is on.
    """
    align = max(backend.min_block, block_size)
    if use_mla:
        align = max(align, MLA_ALIGNMENT_FLOOR)
    if prefix_caching:
        align = math.lcm(align, checkpoint)
    block = align * cdiv(mamba_page_bytes, align * attn_page_per_token)
    backend_lcm = backend.min_block  # one backend: lcm of one value
    block = backend_lcm * cdiv(block, backend_lcm)
    return max(block_size, block)


def kernel_block_size(logical: int, backend: Backend) -> int | None:
    """Kernel block (tokens) for a logical block: itself if accepted, else the largest
    explicit supported size dividing it (``select_common_block_size``); ``None`` if none.
    """
    if backend.accepts(logical):
        return logical
    divisors = [s for s in backend.sizes if logical % s == 0]
    return max(divisors) if divisors else None


def padding_pct(block: int, attn_page_per_token: int, mamba_page_bytes: int) -> float:
    """Mamba page padding in percent: ``100 * (block*a - m) / m``."""
    return 100.0 * (block * attn_page_per_token - mamba_page_bytes) / mamba_page_bytes


@dataclass(frozen=True)
class RankResult:
    """Everything kvalign predicts for one model at one TP size.

    Sizes are in bytes (``*_bytes*``) or tokens (``*block_size``). For attention-free
    models only the Mamba fields are set; for an invalid TP only ``reason``.
    """

    tp: int
    valid: bool
    reason: str = ""
    attention_free: bool = False
    use_mla: bool = False
    backend: str = ""
    kv_heads_per_rank: int | None = None
    attn_page_bytes_per_token: int | None = None
    mamba_page_bytes: int | None = None
    mamba_state_shapes: tuple[Shape, ...] = ()
    mamba_state_dtypes: tuple[str, ...] = ()
    base_block_size: int | None = None
    block_size: int | None = None
    kernel_block_size: int | None = None
    mamba_page_size_padded: int | None = None
    mamba_padding_pct: float | None = None
    block_size_overridden: bool = False
    tp_stable_block_size: int | None = None
    tp_stable_kernel_block_size: int | None = None
    tp_stable_padding_pct: float | None = None
    tp_stable_grown: bool = False

    def logical(self, alignment: str) -> int | None:
        """Logical block size under ``alignment`` (``vllm`` or ``tp-stable``)."""
        return self.tp_stable_block_size if alignment == "tp-stable" else self.block_size

    def kernel(self, alignment: str) -> int | None:
        """Kernel block size under ``alignment``."""
        if alignment == "tp-stable":
            return self.tp_stable_kernel_block_size
        return self.kernel_block_size


@dataclass(frozen=True)
class _Inputs:
    backend: Backend
    base_block: int
    checkpoint: int


def _inputs(geometry: ModelGeometry, settings: Settings) -> _Inputs:
    attention = geometry.attention
    assert attention is not None
    gqa = attention.num_attention_heads > attention.total_kv_heads
    backend = resolve_backend(
        settings.attention_backend,
        use_mla=attention.use_mla,
        gqa=gqa,
        gpu=get_gpu(settings.gpu),
    )
    if settings.block_size is not None:
        if settings.block_size <= 0:
            raise InvalidSettings(f"--block-size must be positive, got {settings.block_size}")
        base = settings.block_size
    else:
        base = backend.preferred_block_size(DEFAULT_BLOCK_SIZE)
    checkpoint, _ = checkpoint_alignment(geometry, settings)
    return _Inputs(backend, base, checkpoint)


def validate_tp(geometry: ModelGeometry, tp: int) -> str:
    """Why ``tp`` is invalid for the model (``""`` when valid).

    vLLM requires ``num_attention_heads % TP == 0`` (``ModelConfig.verify_with_parallel_config``).
    """
    if tp < 1:
        return f"tensor parallel size must be >= 1, got {tp}"
    if geometry.attention is not None and geometry.attention.num_attention_heads % tp:
        return "heads not divisible by tensor parallel size"
    return ""


def _block(a: int, m: int, inputs: _Inputs, settings: Settings, use_mla: bool) -> int:
    return aligned_block_size(
        a,
        m,
        block_size=inputs.base_block,
        backend=inputs.backend,
        use_mla=use_mla,
        checkpoint=inputs.checkpoint,
        prefix_caching=settings.enable_prefix_caching,
    )


def tp_stable_block_size(geometry: ModelGeometry, settings: Settings, tp: int) -> tuple[int, bool]:
    """TP-stable aligned block (spec §6): derived from the unsharded (TP 1) pages, then
    grown to the per-rank block when the local attention page would not cover the local
    Mamba page. Returns ``(block tokens, grown?)``.

    Raises:
        IndivisibleTP, InvalidSettings, NotModelled: as :func:`analyze_rank`.
    """
    attention = geometry.attention
    assert attention is not None and geometry.state is not None
    inputs = _inputs(geometry, settings)
    model_dtype = resolve_model_dtype(settings.dtype, geometry.model_dtype)
    kv_bytes = kv_cache_dtype_bytes(settings.kv_cache_dtype, model_dtype)
    a1 = attention_page_bytes_per_token(attention, 1, kv_bytes)
    m1 = mamba_page(geometry, settings, 1).page_bytes
    stable = _block(a1, m1, inputs, settings, attention.use_mla)
    a_local = attention_page_bytes_per_token(attention, tp, kv_bytes)
    m_local = mamba_page(geometry, settings, tp).page_bytes
    if stable * a_local >= m_local:
        return stable, False
    return _block(a_local, m_local, inputs, settings, attention.use_mla), True


def analyze_rank(geometry: ModelGeometry, settings: Settings, tp: int) -> RankResult:
    """Predict vLLM's page sizes and block sizes for ``geometry`` at tensor parallel ``tp``.

    Returns:
        A :class:`RankResult`; ``valid=False`` with a reason when vLLM would reject the TP.

    Raises:
        InvalidSettings: a flag value vLLM would not accept.
        NotModelled: a packed KV-cache dtype.
    """
    reason = validate_tp(geometry, tp)
    if reason:
        return RankResult(tp=tp, valid=False, reason=reason)
    attention = geometry.attention
    model_dtype = resolve_model_dtype(settings.dtype, geometry.model_dtype)
    if settings.num_speculative_tokens < 0:
        raise InvalidSettings("--num-speculative-tokens must be >= 0")

    state_page: MambaPage | None = None
    if geometry.state is not None:
        try:
            state_page = mamba_page(geometry, settings, tp)
        except IndivisibleTP as exc:
            return RankResult(tp=tp, valid=False, reason=str(exc))

    if attention is None:
        assert state_page is not None
        return RankResult(
            tp=tp,
            valid=True,
            attention_free=True,
            mamba_page_bytes=state_page.page_bytes,
            mamba_state_shapes=state_page.shapes,
            mamba_state_dtypes=state_page.dtypes,
        )

    inputs = _inputs(geometry, settings)
    kv_bytes = kv_cache_dtype_bytes(settings.kv_cache_dtype, model_dtype)
    a = attention_page_bytes_per_token(attention, tp, kv_bytes)
    common = {
        "tp": tp,
        "valid": True,
        "use_mla": attention.use_mla,
        "backend": inputs.backend.name,
        "kv_heads_per_rank": kv_heads_per_rank(attention, tp),
        "attn_page_bytes_per_token": a,
        "base_block_size": inputs.base_block,
    }
    if state_page is None or state_page.page_bytes == 0:
        block = inputs.base_block
        kernel = kernel_block_size(block, inputs.backend)
        return RankResult(
            **common,  # type: ignore[arg-type]
            block_size=block,
            kernel_block_size=kernel,
            tp_stable_block_size=block,
            tp_stable_kernel_block_size=kernel,
        )

    m = state_page.page_bytes
    block = _block(a, m, inputs, settings, attention.use_mla)
    stable, grown = tp_stable_block_size(geometry, settings, tp)
    return RankResult(
        **common,  # type: ignore[arg-type]
        mamba_page_bytes=m,
        mamba_state_shapes=state_page.shapes,
        mamba_state_dtypes=state_page.dtypes,
        block_size=block,
        kernel_block_size=kernel_block_size(block, inputs.backend),
        mamba_page_size_padded=block * a if block * a != m else None,
        mamba_padding_pct=padding_pct(block, a, m),
        block_size_overridden=settings.block_size is not None and block > settings.block_size,
        tp_stable_block_size=stable,
        tp_stable_kernel_block_size=kernel_block_size(stable, inputs.backend),
        tp_stable_padding_pct=padding_pct(stable, a, m),
        tp_stable_grown=grown,
    )


def common_block_size(
    geometry: ModelGeometry, settings: Settings, tps: list[int]
) -> tuple[int, dict[int, float]] | None:
    """Smallest ``--block-size B`` that, set on every pool, makes each TP in ``tps`` choose
    exactly ``B`` (spec §7), with the Mamba padding % it costs per TP.

    ``B`` must cover every rank's Mamba page (``B * a_tp >= m_tp``) and be a multiple of
    the alignment unit: the backend's smallest kernel block, 128 for MLA, and the prefill
    checkpoint alignment when prefix caching is on. ``None`` for models without both
    attention and state layers, or when no TP in ``tps`` is valid.
    """
    if not geometry.is_hybrid:
        return None
    attention = geometry.attention
    assert attention is not None
    inputs = _inputs(geometry, settings)
    unit = inputs.backend.min_block
    if attention.use_mla:
        unit = math.lcm(unit, MLA_ALIGNMENT_FLOOR)
    if settings.enable_prefix_caching:
        unit = math.lcm(unit, inputs.checkpoint)
    model_dtype = resolve_model_dtype(settings.dtype, geometry.model_dtype)
    kv_bytes = kv_cache_dtype_bytes(settings.kv_cache_dtype, model_dtype)
    pages: dict[int, tuple[int, int]] = {}
    for tp in sorted(set(tps)):
        if validate_tp(geometry, tp):
            continue
        try:
            m = mamba_page(geometry, settings, tp).page_bytes
        except IndivisibleTP:
            continue
        pages[tp] = (attention_page_bytes_per_token(attention, tp, kv_bytes), m)
    if not pages:
        return None
    need = max(cdiv(m, a) for a, m in pages.values())
    block = unit * cdiv(max(need, unit), unit)
    return block, {tp: padding_pct(block, a, m) for tp, (a, m) in pages.items()}
