"""Pure vLLM arithmetic: page sizes, the aligned (logical) block size and the kernel block.

No I/O. Functions of (:class:`ModelGeometry`, :class:`~kvalign.engine.EngineConfig`, TP) →
numbers: every flag, release rule and GPU fact arrives already resolved in the
``EngineConfig`` (:func:`kvalign.engine.create_engine_config`, resolved once). Mirrors
vLLM 0.33:

* ``vllm/platforms/interface.py`` ``Platform.update_block_size_for_backend`` and
  ``_align_hybrid_block_size`` (the per-rank alignment);
* ``vllm/v1/kv_cache_interface.py`` ``FullAttentionSpec`` / ``MLAAttentionSpec`` /
  ``MambaSpec`` ``page_size_bytes``;
* ``vllm/model_executor/layers/mamba/mamba_utils.py`` (state shapes and dtypes);
* ``vllm/v1/worker/utils.py`` ``select_common_block_size`` (kernel block);
* ``vllm/distributed/utils.py`` ``get_pp_indices`` (layers per pipeline stage).

``tp_stable_block_size`` is the TP-stable alignment proposed in vLLM PR 45575.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

from kvalign.backends import Backend
from kvalign.dtypes import DTYPE_BYTES
from kvalign.engine import EngineConfig
from kvalign.errors import InvalidSettings, UnsupportedModel
from kvalign.families import IndivisibleTP, Shape, family_module, mamba2
from kvalign.geometry import AttentionGeometry, ModelGeometry
from kvalign.startup import speculative_page_problem
from kvalign.versions import DEFAULT_PROFILE, Profile

#: vLLM 0.33 floor on the alignment unit for MLA hybrids (TRT-LLM/FlashInfer MLA decode).
MLA_ALIGNMENT_FLOOR = 128
#: block a stage keeps when ``--block-size`` is unset (``CacheConfig.DEFAULT_BLOCK_SIZE``).
DEFAULT_KEPT_BLOCK = 16


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


class MambaPage(NamedTuple):
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


def mamba_page(geometry: ModelGeometry, engine: EngineConfig, tp: int) -> MambaPage:
    """Per-rank state page of one mamba-like layer at tensor parallel size ``tp``, with the
    state dtypes and speculative tokens ``engine`` resolved.

    Raises:
        IndivisibleTP: a state dimension does not divide by ``tp``.
    """
    assert geometry.state is not None
    assert engine.conv_dtype is not None and engine.ssm_dtype is not None
    module = family_module(geometry.state.family)
    shapes: tuple[Shape, ...] = module.shapes(geometry.state.params, tp, engine.state_spec_tokens)
    dtypes: tuple[str, ...] = module.dtypes(engine.conv_dtype, engine.ssm_dtype)
    if engine.replay_ring and geometry.state.family == "mamba2":
        # ReplaySSM ring buffers: x / dt / B in (activation, float32, activation)
        ring = mamba2.replay_ring_shapes(
            geometry.state.params, tp, engine.replay_ring, padded=engine.replay_padded
        )
        shapes = (*shapes, *ring)
        dtypes = (*dtypes, engine.model_dtype, "float32", engine.model_dtype)
    page = sum(math.prod(shape) * DTYPE_BYTES[dt] for shape, dt in zip(shapes, dtypes, strict=True))
    return MambaPage(shapes, dtypes, page)


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


class BlockDerivation(NamedTuple):
    """How one rank's logical block size was derived under a release profile.

    Sizes in tokens except ``attn_page_bytes_per_token`` / ``mamba_page_bytes`` (bytes).

    Attributes:
        site: ``model-config`` (``HybridAttentionMambaModelConfig``, ≤ 0.19) or
            ``platform`` (``Platform._align_hybrid_block_size``, ≥ 0.20).
        attn_page_bytes_per_token, mamba_page_bytes: ``a`` and ``m``.
        base_block: block size before alignment (``--block-size`` or the default).
        unit_start: first alignment unit (platform: ``max(k_min, base_block)``;
            model-config: the fixed unit).
        unit_reason: where ``unit_start`` came from, in words.
        mla_floor: MLA floor applied (0 when none).
        checkpoint: prefill-checkpoint alignment folded in with ``lcm`` (1 when none).
        chunk: Mamba chunk size the block is aligned to (prefix caching in cache mode
            "all"), ``None`` when not chunk-aligned.
        unit: the final alignment step (``lcm`` of the above).
        tokens_needed: ``ceil(m / a)``: tokens whose attention page covers one state page.
        aligned: ``unit * ceil(tokens_needed / unit)``.
        backend_lcm: backend-lcm rounding unit, ``None`` when the release has none.
        rounded: ``aligned`` after the backend-lcm rounding.
        block: the logical block size: ``max(base_block, rounded)``.
    """

    site: str
    attn_page_bytes_per_token: int
    mamba_page_bytes: int
    base_block: int
    unit_start: int
    unit_reason: str
    mla_floor: int
    checkpoint: int
    chunk: int | None
    unit: int
    tokens_needed: int
    aligned: int
    backend_lcm: int | None
    rounded: int
    block: int

    @property
    def overridden(self) -> bool:
        """Alignment raised the block above ``base_block``."""
        return self.block > self.base_block


def derive_block(
    attn_page_per_token: int,
    mamba_page_bytes: int,
    *,
    base_block: int,
    backend: Backend,
    use_mla: bool,
    profile: Profile = DEFAULT_PROFILE,
    checkpoint: int = 1,
    prefix_caching: bool = True,
    chunk: int | None = None,
    head_size: int = 0,
    blackwell: bool = False,
) -> BlockDerivation:
    """The aligned logical block size (tokens) on one rank, step by step, for ``profile``.

    Platform era (vLLM ≥ 0.20, ``Platform._align_hybrid_block_size``): unit
    ``max(k_min, base_block)``, the MLA floor (≥ 0.27), ``lcm`` with the prefill
    checkpoint alignment (0.33, prefix caching on) or the Mamba chunk size (cache mode
    "all", < 0.32); block ``unit * ceil(m / (unit * a))``, rounded up to the backend lcm
    (≥ 0.32), never below ``base_block``. For the 0.33 profile this equals
    :func:`aligned_block_size`.

    Model-config era (≤ 0.19, ``HybridAttentionMambaModelConfig.verify_and_update_config``):
    a fixed unit (16; MLA 64, CUTLASS_MLA 128; 32 for FlashInfer on SM100 with head size
    256 in 0.11.1-0.17), optionally chunk-aligned, never below ``base_block``.

    Args:
        chunk: Mamba chunk size when the block is chunk-aligned, else ``None``.
        head_size, blackwell: for the model-config-era FlashInfer head-size-256 rule.

    Raises:
        UnsupportedModel: an MLA hybrid on a release without MLA hybrids (< 0.11.1).
    """
    a, m = attn_page_per_token, mamba_page_bytes
    mla_floor = 0
    if profile.alignment_site == "model-config":
        if use_mla:
            if profile.mla_alignment is None:
                raise UnsupportedModel(
                    f"MLA hybrids (Kimi-Linear) are not supported by vLLM {profile.name} "
                    "(first in 0.11.1)"
                )
            cutlass = backend.name == "CUTLASS_MLA"
            unit_start = 128 if cutlass else profile.mla_alignment
            reason = "fixed MLA alignment" + (" (CUTLASS_MLA)" if cutlass else "")
        elif (
            profile.blackwell_hd256_alignment is not None
            and blackwell
            and head_size == 256
            and backend.name == "FLASHINFER"
        ):
            unit_start = profile.blackwell_hd256_alignment
            reason = "FlashInfer on SM100 with head size 256"
        else:
            unit_start = profile.fixed_alignment
            reason = "fixed alignment"
    else:
        unit_start = max(backend.min_block, base_block)
        reason = (
            f"max(smallest {backend.name} kernel block {backend.min_block}, block {base_block})"
        )
    unit = unit_start
    if profile.alignment_site == "platform" and use_mla and profile.mla_floor:
        mla_floor = profile.mla_floor
        unit = max(unit, mla_floor)
    used_checkpoint = 1
    if prefix_caching and profile.gdn_checkpoint_alignment and chunk is None:
        used_checkpoint = checkpoint
        unit = math.lcm(unit, checkpoint)
    if chunk is not None:
        unit = math.lcm(unit, chunk)
    needed = cdiv(m, a)
    aligned = unit * cdiv(needed, unit)
    backend_lcm: int | None = None
    rounded = aligned
    if profile.alignment_site == "platform" and profile.backend_lcm_rounding:
        backend_lcm = backend.min_block  # one backend: lcm of one value
        rounded = backend_lcm * cdiv(aligned, backend_lcm)
    return BlockDerivation(
        site=profile.alignment_site,
        attn_page_bytes_per_token=a,
        mamba_page_bytes=m,
        base_block=base_block,
        unit_start=unit_start,
        unit_reason=reason,
        mla_floor=mla_floor,
        checkpoint=used_checkpoint,
        chunk=chunk,
        unit=unit,
        tokens_needed=needed,
        aligned=aligned,
        backend_lcm=backend_lcm,
        rounded=rounded,
        block=max(base_block, rounded),
    )


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


def skip_layer_block_size(
    block: int,
    attn_page_per_token: int,
    skip_page_per_token: int,
    min_kernel_block: int,
    mamba_page_padded: int | None = None,
) -> int:
    """The block (tokens) once ``--kv-cache-dtype-skip-layers`` layers share the pool.

    The skip layers keep the model dtype, so their page per token (``skip_page_per_token``)
    is larger than the quantized one (``attn_page_per_token``). vLLM raises the block to
    ``u * ceil(r / (u * a))`` with ``u = max(k, block)`` (``k`` the backend's smallest
    kernel block) and ``r = max(skip * k, padded Mamba page)``, never lowering it; equal
    pages change nothing. Mirrors ``Platform._align_heterogeneous_kv_block_size``
    (``vllm/platforms/interface.py``, read in 0.25.0 → 0.33.0). Bytes per token and per
    layer on one rank; ``mamba_page_padded`` in bytes, ``None`` when not padded.
    """
    if skip_page_per_token <= attn_page_per_token:
        return block
    unit = max(min_kernel_block, block)
    required = max(skip_page_per_token * min_kernel_block, mamba_page_padded or 0)
    return max(block, unit * cdiv(required, unit * attn_page_per_token))


def pp_partition(
    num_layers: int, pp_size: int, partition: str | None = None
) -> tuple[tuple[int, int], ...]:
    """The ``[start, end)`` decoder-layer range of each pipeline stage.

    Mirrors ``vllm/distributed/utils.py`` ``get_pp_indices`` (read in 0.33.0): with
    ``VLLM_PP_LAYER_PARTITION`` (``partition``, comma-separated counts) the stages take
    those counts; else each
    takes ``num_layers // pp_size`` and the remainder goes one layer each to the stages
    before the last, from the second-to-last backwards.

    Raises:
        InvalidSettings: ``pp_size`` < 1, or a partition that does not have ``pp_size``
            entries summing to ``num_layers`` (vLLM's ``ValueError``).
    """
    if pp_size < 1:
        raise InvalidSettings(f"--pipeline-parallel-size must be >= 1, got {pp_size}")
    if partition is not None:
        try:
            counts = [int(part) for part in partition.split(",")]
        except ValueError:
            raise InvalidSettings(
                f"VLLM_PP_LAYER_PARTITION: invalid partition string {partition!r}"
            ) from None
        if len(counts) != pp_size or any(count < 0 for count in counts):
            raise InvalidSettings(
                f"VLLM_PP_LAYER_PARTITION {partition!r}: {len(counts)} layer counts, "
                f"--pipeline-parallel-size is {pp_size}"
            )
        if sum(counts) != num_layers:
            raise InvalidSettings(
                f"VLLM_PP_LAYER_PARTITION {partition!r} sums to {sum(counts)}, the model has "
                f"{num_layers} layers"
            )
        sizes = counts
    else:
        sizes = [num_layers // pp_size] * pp_size
        for i in range(2, num_layers % pp_size + 2):
            sizes[-i] += 1
    bounds = []
    start = 0
    for size in sizes:
        bounds.append((start, start + size))
        start += size
    return tuple(bounds)


class StageResult(NamedTuple):
    """One pipeline stage of one TP size (``--pipeline-parallel-size`` > 1).

    Attributes:
        rank: the stage's pipeline rank (0 = first).
        start, end: its decoder layers, ``[start, end)`` (:func:`pp_partition`).
        attention_layers, state_layers: how many of them hold attention / recurrent state
            (a Falcon-H1 or Zamba2 hybrid layer counts for both).
        block_size: the stage's logical block size (tokens): the aligned block where the
            stage owns an attention layer, else the block it keeps.
        aligned: the stage ran the hybrid alignment.
        problem: why vLLM fails to start because of this stage (``""`` when it starts).
    """

    rank: int
    start: int
    end: int
    attention_layers: int
    state_layers: int
    block_size: int
    aligned: bool
    problem: str = ""


def pp_stages(
    geometry: ModelGeometry, engine: EngineConfig, aligned_block: int
) -> tuple[StageResult, ...]:
    """Each pipeline stage's layers and block size (``()`` without PP or a layer pattern).

    From vLLM 0.20 the hybrid alignment runs in each worker after its stage is built
    (``vllm/platforms/interface.py`` ``Platform.update_block_size_for_backend``): it looks
    for attention backends among the layers *that stage* instantiated
    (``_find_non_ssm_backends``) and returns before any alignment when it finds none. A
    stage without an attention layer therefore keeps ``--block-size`` (16 when unset)
    while the others take ``aligned_block``; the stages' Mamba groups then disagree on
    the block, and with prefix caching (or KV offloading) start-up fails (vLLM issue
    51752, e.g. ``tokens_per_block=16 not divisible by tokens_per_hash=512``; open in
    0.33). Up to 0.19 the alignment ran once on the model config
    (``HybridAttentionMambaModelConfig``): every stage gets ``aligned_block``.

    Args:
        geometry: the model (its :attr:`~kvalign.geometry.ModelGeometry.layer_kinds`).
        engine: the resolved pool (``settings.pipeline_parallel_size``,
            ``settings.pp_layer_partition``, prefix caching, release profile).
        aligned_block: the block (tokens) the alignment gives a stage with attention.

    Raises:
        InvalidSettings: a PP size or layer partition vLLM refuses (:func:`pp_partition`).
    """
    settings = engine.settings
    kinds = geometry.layer_kinds
    if settings.pipeline_parallel_size <= 1 or not kinds:
        return ()
    bounds = pp_partition(len(kinds), settings.pipeline_parallel_size,
                          settings.pp_layer_partition)  # fmt: skip
    per_stage = engine.profile.alignment_site == "platform"
    kept = settings.block_size if settings.block_size is not None else DEFAULT_KEPT_BLOCK
    out = []
    for rank, (start, end) in enumerate(bounds):
        layers = kinds[start:end]
        attention = sum(kind in ("attention", "both") for kind in layers)
        state = sum(kind in ("state", "both") for kind in layers)
        aligned = attention > 0 or not per_stage
        block = aligned_block if aligned else kept
        problem = ""
        if not aligned and block != aligned_block and engine.prefix_caching and state:
            problem = (
                f"vLLM {engine.profile.name} fails at start-up: pipeline stage {rank} "
                f"(layers {start}-{end - 1}) owns no attention layer, so it skips the hybrid "
                f"alignment and keeps block size {block} while the other stages use "
                f"{aligned_block}; with prefix caching the stages disagree (vLLM issue "
                f"51752): pass --block-size {aligned_block} or move an attention layer "
                "onto the stage (VLLM_PP_LAYER_PARTITION)"
            )
        out.append(StageResult(rank, start, end, attention, state, block, aligned, problem))
    return tuple(out)


class KvCacheGroup(NamedTuple):
    """One KV-cache group: layers of one kind sharing a block table.

    Attributes:
        kind: ``attention``, ``attention-skip`` (layers ``--kv-cache-dtype-skip-layers``
            keeps in the model dtype, with a quantized KV cache), ``mamba`` (every
            recurrent-state family) or ``hidden-state`` (the ``extract_hidden_states``
            speculative method's cache-only layer, :func:`hidden_state_group`).
        layers: the model's layers in the group (vLLM pads the group to the group size).
        block_size: the group's block (tokens): the logical block for attention and for
            Mamba in cache modes ``align`` / ``all``; for Mamba in mode ``none`` vLLM's
            ``mamba_block_size`` is ``max_model_len`` (``None`` when ``--max-model-len``
            is not given: the config's context length, which kvalign does not read).
    """

    kind: str
    layers: int
    block_size: int | None


def kv_cache_groups(
    geometry: ModelGeometry, engine: EngineConfig, block: int, mamba_block: int | None = None
) -> tuple[KvCacheGroup, ...]:
    """The KV-cache groups of a hybrid model and each group's block size.

    Mirrors ``vllm/v1/core/kv_cache_planning.py`` ``_get_kv_cache_groups_uniform_page_size``
    (read in 0.33.0; the same rule in ``kv_cache_utils.py`` of earlier releases): layers
    are bucketed by spec (attention, Mamba; in layer order of first appearance), the
    group size is the smallest bucket (the largest when it is under 1.5 × the
    smallest), and each bucket splits into ``n = ceil(len / group size)`` groups, group
    ``i`` taking the bucket's layers ``i, i + n, ...``. E.g.
    Jamba-tiny-dev (1 attention, 7 Mamba layers) has 8 groups (vLLM PR 45575). The Mamba
    groups' block is ``mamba_block_size``: the block in cache mode ``align`` (and the
    chunk-aligned block in ``all``), ``max_model_len`` in mode ``none``.

    Attention layers that ``--kv-cache-dtype-skip-layers`` keeps in the model dtype
    (with a quantized KV cache) are a bucket of their own (kind ``attention-skip``): their
    page is ``n = model dtype bytes / KV bytes`` times the others', so
    ``unify_kv_cache_spec_page_size`` gives the quantized attention groups ``n × block``
    and pads the Mamba pages, whose block stays ``mamba_block``.

    Args:
        geometry: the model (:attr:`~kvalign.geometry.ModelGeometry.layer_kinds`).
        engine: the resolved pool (Mamba cache mode, ``--max-model-len``, skip layers).
        block: the logical block size (tokens) at this TP.
        mamba_block: the block the Mamba cache mode ``align`` took before the skip
            layers' block step (:func:`skip_layer_block_size`), ``None`` = ``block``.
    """
    kinds = geometry.layer_kinds
    if not kinds or not geometry.is_hybrid:
        return ()
    buckets: dict[str, int] = {}
    split = engine.skip_kv_bytes is not None and engine.kv_bytes is not None
    skipped = set(engine.skip_layers) if split else set()
    for index, kind in enumerate(kinds):
        if kind in ("attention", "both"):
            name = "attention-skip" if index in skipped else "attention"
            buckets[name] = buckets.get(name, 0) + 1
        if kind in ("state", "both"):
            buckets["mamba"] = buckets.get("mamba", 0) + 1
    if not buckets:
        return ()
    smallest, largest = min(buckets.values()), max(buckets.values())
    size = largest if largest < smallest * 1.5 else smallest
    aligned = block if mamba_block is None else mamba_block
    blocks: dict[str, int | None] = {
        "attention": block,
        "attention-skip": block,
        "mamba": engine.max_model_len if engine.mamba_cache_mode == "none" else aligned,
    }
    if "attention-skip" in buckets:
        assert engine.skip_kv_bytes is not None and engine.kv_bytes is not None
        blocks["attention"] = block * (engine.skip_kv_bytes // engine.kv_bytes)
    groups = []
    for name, count in buckets.items():
        num_groups = cdiv(count, size)
        for index in range(num_groups):  # group i takes layers i, i + n, i + 2n, ...
            layers = len(range(index, count, num_groups))
            groups.append(KvCacheGroup(name, layers, blocks[name]))
    return tuple(groups)


def _largest_divisor_at_most(value: int, limit: int) -> int:
    return next((c for c in range(min(value, limit), 0, -1) if value % c == 0), 1)


def hidden_state_group(
    groups: tuple[KvCacheGroup, ...],
    common_page: int,
    per_token: int,
    rule: int,
    release: str,
) -> tuple[tuple[KvCacheGroup, ...], str]:
    """``groups`` with the ``extract_hidden_states`` hidden-state group appended (kind
    ``hidden-state``, one layer), and why vLLM fails at start-up (``""`` when it starts).

    The hidden-state layer (``per_token`` bytes per token) stays out of the grouping and
    joins afterwards with its page padded to the groups' ``common_page`` (bytes). Its block:
    rule 1 ``max(common // per_token, 1)``; rule 2 the largest divisor of the groups' gcd
    block not above that; rule 3 as 2, after every group's block is multiplied by
    ``ceil(per_token / common)`` when one token does not fit. Under rules 1-2 a token that
    does not fit leaves a padded page below the real one, and the spec's assertion fails.
    Mirrors ``get_kv_cache_groups`` / ``_ensure_min_page_size`` / ``_largest_divisor_at_most``
    (``vllm/v1/core/kv_cache_utils.py``; ``kv_cache_planning.py`` in 0.33;
    :data:`kvalign.versions.HIDDEN_STATE_RULES`).
    """
    problem = ""
    if per_token > common_page:
        if rule >= 3:
            scale = cdiv(per_token, common_page)
            common_page *= scale
            groups = tuple(
                g._replace(block_size=None if g.block_size is None else g.block_size * scale)
                for g in groups
            )
        else:
            problem = (
                f"vLLM {release} fails at start-up: one token of the extract_hidden_states "
                f"hidden-state layer ({per_token:,} B) does not fit the KV-cache groups' page "
                f"({common_page:,} B) it is padded to (AssertionError: page_size_padded >= "
                "page size)"
            )
    most = max(common_page // per_token, 1)
    blocks = [g.block_size for g in groups]
    if rule == 1:
        block: int | None = most
    elif None in blocks or not blocks:
        block = None  # a Mamba group of max_model_len tokens that kvalign does not know
    else:
        block = _largest_divisor_at_most(math.gcd(*(b for b in blocks if b)), most)
    return (*groups, KvCacheGroup("hidden-state", 1, block)), problem


class RankResult(NamedTuple):
    """Everything kvalign predicts for one model at one TP size.

    Sizes are in bytes (``*_bytes*``) or tokens (``*block_size``). For attention-free
    models only the Mamba fields are set; for an invalid TP only ``reason``.

    ``valid`` is vLLM's configuration-time verdict (attention heads and state dimensions
    divide by TP: what ``VllmConfig`` checks, and what the golden vectors record).
    ``state_family``: the model's state family (``mamba2``, ``gdn``, ...; ``""`` without
    state layers), for the NIXL support per family.
    ``skip_block_size``: the block after the ``--kv-cache-dtype-skip-layers`` block step
    when that step raised it (:func:`skip_layer_block_size`; ``derivation`` holds the
    hybrid alignment before it), else ``None``.
    ``kv_cache_groups``: the KV-cache groups the hybrid allocator forms
    (:func:`kv_cache_groups`), ``()`` when the layer pattern is unknown.
    ``pp_stages``: one :class:`StageResult` per pipeline stage with
    ``--pipeline-parallel-size`` > 1 (and a known layer pattern), else ``()``.
    ``load_error`` is set when the configuration passes but a layer would refuse to load
    at that TP (e.g. Mamba2 with ``n_groups`` neither 1 nor divisible by TP); the sizes
    are still computed. :attr:`usable` combines both. ``prefix_caching`` is whether prefix
    caching is on for the pool (the flag, else the release default).
    """

    tp: int
    valid: bool
    reason: str = ""
    load_error: str = ""
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
    derivation: BlockDerivation | None = None
    profile: str = ""
    prefix_caching: bool = True
    pp_stages: tuple[StageResult, ...] = ()
    kv_cache_groups: tuple[KvCacheGroup, ...] = ()
    state_family: str = ""
    skip_block_size: int | None = None

    @property
    def usable(self) -> bool:
        """Whether vLLM both accepts the configuration and loads the model at this TP."""
        return self.valid and not self.load_error

    @property
    def problem(self) -> str:
        """Why the TP is unusable (``""`` when usable)."""
        return self.reason or self.load_error

    @property
    def stage_block_problem(self) -> bool:
        """The TP is unusable only because a pipeline stage keeps its block size
        (:func:`pp_stages`): a ``--block-size`` at least the aligned block fixes it."""
        return (
            self.valid
            and bool(self.load_error)
            and any(stage.problem == self.load_error for stage in self.pp_stages)
        )

    def logical(self, alignment: str) -> int | None:
        """Logical block size under ``alignment`` (``vllm`` or ``tp-stable``)."""
        return self.tp_stable_block_size if alignment == "tp-stable" else self.block_size

    def kernel(self, alignment: str) -> int | None:
        """Kernel block size under ``alignment``."""
        if alignment == "tp-stable":
            return self.tp_stable_kernel_block_size
        return self.kernel_block_size


def kernel_for(logical: int, engine: EngineConfig) -> int | None:
    """Kernel block for ``logical`` under ``engine`` (kernel = logical on releases before
    vLLM split logical blocks into kernel blocks)."""
    assert engine.backend is not None
    if not engine.profile.kernel_block_split:
        return logical
    return kernel_block_size(logical, engine.backend)


def load_problem(geometry: ModelGeometry, tp: int) -> str:
    """Why a state layer would refuse to load at ``tp`` although the config validates.

    Attention: KV heads and TP must divide one way or the other (``QKVParallelLinear``).
    State layers: the family module's ``load_problem`` (Mamba2 group sharding, GDN key
    heads). ``""`` when the model loads.
    """
    attention = geometry.attention
    if attention is not None and not attention.use_mla:
        kv = attention.total_kv_heads
        if (tp >= kv and tp % kv) or (tp < kv and kv % tp):
            # QKVParallelLinear (vllm/model_executor/layers/linear.py) divides KV heads by
            # TP, or TP by KV heads when it replicates them
            return (
                f"num_key_value_heads = {kv} and tensor parallel size {tp} do not divide "
                "each other: vLLM's QKVParallelLinear refuses to load"
            )
    if geometry.state is None:
        return ""
    check = getattr(family_module(geometry.state.family), "load_problem", None)
    return str(check(geometry.state.params, tp)) if check is not None else ""


def validate_tp(geometry: ModelGeometry, tp: int) -> str:
    """Why ``tp`` is invalid for the model (``""`` when valid).

    vLLM requires ``num_attention_heads % TP == 0`` (``ModelConfig.verify_with_parallel_config``).
    """
    if tp < 1:
        return f"tensor parallel size must be >= 1, got {tp}"
    if geometry.attention is not None and geometry.attention.num_attention_heads % tp:
        return "heads not divisible by tensor parallel size"
    return ""


def _derive(
    a: int,
    m: int,
    engine: EngineConfig,
    attention: AttentionGeometry,
    base_block: int | None = None,
) -> BlockDerivation:
    assert engine.backend is not None
    return derive_block(
        a,
        m,
        base_block=engine.base_block if base_block is None else base_block,
        backend=engine.backend,
        use_mla=attention.use_mla,
        profile=engine.profile,
        checkpoint=engine.checkpoint,
        prefix_caching=engine.prefix_caching,
        chunk=engine.chunk,
        head_size=attention.head_size,
        blackwell=engine.blackwell,
    )


def tp_stable_block_size(
    geometry: ModelGeometry, engine: EngineConfig, tp: int
) -> tuple[int, bool]:
    """TP-stable aligned block (the vLLM PR 45575 proposal): derived from the
    unsharded (TP 1) pages, then grown to the per-rank block when the local attention page
    would not cover the local Mamba page. Returns ``(block tokens, grown?)``.

    Raises:
        IndivisibleTP: a state dimension does not divide by ``tp``.
    """
    attention = geometry.attention
    assert attention is not None and geometry.state is not None and engine.kv_bytes is not None
    a1 = attention_page_bytes_per_token(attention, 1, engine.kv_bytes)
    m1 = mamba_page(geometry, engine, 1).page_bytes
    stable = _derive(a1, m1, engine, attention).block
    a_local = attention_page_bytes_per_token(attention, tp, engine.kv_bytes)
    m_local = mamba_page(geometry, engine, tp).page_bytes
    if stable * a_local >= m_local:
        return stable, False
    return _derive(a_local, m_local, engine, attention).block, True


def analyze_rank(geometry: ModelGeometry, engine: EngineConfig, tp: int) -> RankResult:
    """Predict vLLM's page sizes and block sizes for ``geometry`` at tensor parallel ``tp``.

    ``engine`` is the pool's resolved :class:`EngineConfig`
    (:func:`kvalign.engine.create_engine_config`, resolved once for every TP).

    Returns:
        A :class:`RankResult`; ``valid=False`` with a reason when vLLM would reject the TP.

    Raises:
        InvalidSettings: a flag value vLLM would not accept.
        NotModelled: a packed KV-cache dtype.
    """
    reason = engine.config_error or validate_tp(geometry, tp)
    if reason:
        return RankResult(tp=tp, valid=False, reason=reason, profile=engine.profile.name)
    attention = geometry.attention

    state_page: MambaPage | None = None
    if geometry.state is not None:
        try:
            state_page = mamba_page(geometry, engine, tp)
        except IndivisibleTP as exc:
            return RankResult(tp=tp, valid=False, reason=str(exc), profile=engine.profile.name)
    load_error = load_problem(geometry, tp) or engine.startup_error

    if attention is None:
        assert state_page is not None
        return RankResult(
            tp=tp,
            valid=True,
            load_error=load_error,
            attention_free=True,
            mamba_page_bytes=state_page.page_bytes,
            mamba_state_shapes=state_page.shapes,
            mamba_state_dtypes=state_page.dtypes,
            profile=engine.profile.name,
            prefix_caching=engine.prefix_caching,
        )

    assert engine.backend is not None and engine.kv_bytes is not None
    a = attention_page_bytes_per_token(attention, tp, engine.kv_bytes)
    common = {
        "tp": tp,
        "valid": True,
        "load_error": load_error,
        "use_mla": attention.use_mla,
        "backend": engine.backend.name,
        "kv_heads_per_rank": kv_heads_per_rank(attention, tp),
        "attn_page_bytes_per_token": a,
        "base_block_size": engine.base_block,
        "profile": engine.profile.name,
        "prefix_caching": engine.prefix_caching,
        "state_family": geometry.state.family if geometry.state is not None else "",
    }
    if state_page is None or state_page.page_bytes == 0 or not engine.hybrid_alignment:
        # no state, or a platform that does no hybrid alignment (vLLM 0.20.0 on CPU)
        block = _skip_block(engine.base_block, a, None, engine, attention, tp)
        kernel = kernel_for(block, engine)
        state: dict[str, object] = {}
        if state_page is not None and state_page.page_bytes:
            state = {
                "mamba_page_bytes": state_page.page_bytes,
                "mamba_state_shapes": state_page.shapes,
                "mamba_state_dtypes": state_page.dtypes,
            }
        return RankResult(
            **common,  # type: ignore[arg-type]
            **state,  # type: ignore[arg-type]
            block_size=block,
            kernel_block_size=kernel,
            tp_stable_block_size=block,
            tp_stable_kernel_block_size=kernel,
        )

    m = state_page.page_bytes
    derivation = _derive(a, m, engine, attention)
    block = _skip_block(derivation.block, a, m, engine, attention, tp)
    if engine.backend.exact_only and not engine.backend.supports_block_size(block):
        # Platform._check_aligned_block_size: the backend accepts only its listed sizes
        raise InvalidSettings(
            f"vLLM rejects this configuration: aligned KV cache block size {block} is not "
            f"supported by attention backend {engine.backend.name} (only "
            f"{', '.join(map(str, engine.backend.sizes))} tokens)"
        )
    stable, grown = tp_stable_block_size(geometry, engine, tp)
    stable = _skip_block(stable, a, m, engine, attention, tp)
    user_block = engine.settings.block_size
    if not load_error:
        common["load_error"] = _speculative_rows_problem(geometry, engine, tp, block * a)
    stages = pp_stages(geometry, engine, block)
    groups = kv_cache_groups(geometry, engine, block, derivation.block)
    if groups and engine.hidden_state_bytes is not None:
        page = a
        if any(g.kind == "attention-skip" for g in groups):
            assert engine.skip_kv_bytes is not None
            page = attention_page_bytes_per_token(attention, tp, engine.skip_kv_bytes)
        groups, hidden_problem = hidden_state_group(
            groups, block * page, engine.hidden_state_bytes, engine.hidden_state_rule,
            engine.profile.name,
        )  # fmt: skip
        if not common["load_error"]:
            common["load_error"] = hidden_problem
    common["kv_cache_groups"] = groups
    if not common["load_error"]:
        common["load_error"] = next((st.problem for st in stages if st.problem), "")
    return RankResult(
        pp_stages=stages,
        **common,  # type: ignore[arg-type]
        mamba_page_bytes=m,
        mamba_state_shapes=state_page.shapes,
        mamba_state_dtypes=state_page.dtypes,
        block_size=block,
        kernel_block_size=kernel_for(block, engine),
        mamba_page_size_padded=block * a if block * a != m else None,
        mamba_padding_pct=padding_pct(block, a, m),
        block_size_overridden=user_block is not None and block > user_block,
        tp_stable_block_size=stable,
        tp_stable_kernel_block_size=kernel_for(stable, engine),
        tp_stable_padding_pct=padding_pct(stable, a, m),
        tp_stable_grown=grown,
        derivation=derivation,
        skip_block_size=block if block != derivation.block else None,
    )


def _skip_block(
    block: int,
    a: int,
    m: int | None,
    engine: EngineConfig,
    attention: AttentionGeometry,
    tp: int,
) -> int:
    """``block`` after the skip layers' block step (:func:`skip_layer_block_size`) where
    the release has it and ``--kv-cache-dtype-skip-layers`` keeps layers out of a quantized
    KV cache; ``a`` the quantized page per token, ``m`` the Mamba page (bytes)."""
    if engine.skip_kv_bytes is None or not engine.skip_aligns_block:
        return block
    assert engine.backend is not None
    skip = attention_page_bytes_per_token(attention, tp, engine.skip_kv_bytes)
    padded = block * a if m is not None and block * a != m else None
    return skip_layer_block_size(block, a, skip, engine.backend.min_block, padded)


def _speculative_rows_problem(
    geometry: ModelGeometry, engine: EngineConfig, tp: int, padded_page: int
) -> str:
    """The start-up failure of Mamba2 layers that keep speculative conv-state rows the
    model's state-shape function left out (:func:`kvalign.startup.speculative_page_problem`):
    vLLM 0.17-0.31 layers take ``num_speculative_tokens`` whatever the model says
    (``MambaMixer2.get_state_shape``), the alignment does not."""
    spec = engine.num_speculative_tokens
    state = geometry.state
    if (
        not spec
        or engine.state_spec_tokens
        or state is None
        or state.family != "mamba2"
        or not engine.profile.mamba2_spec_types
    ):
        return ""
    layer = mamba_page(geometry, dataclasses.replace(engine, state_spec_tokens=spec), tp)
    return speculative_page_problem(
        geometry.model_type, engine.profile, spec, layer.page_bytes, padded_page
    )


def _block_requirement(
    geometry: ModelGeometry, engine: EngineConfig, tps: list[int]
) -> tuple[int, int, dict[int, tuple[int, int]]] | None:
    """``(unit, need, pages)`` for one model under ``engine`` over ``tps``: the alignment
    unit a common ``--block-size`` must be a multiple of, the smallest multiple of it
    covering every usable TP's aligned block, and ``{tp: (a, m)}`` (bytes). ``None`` as
    :func:`common_block_size`."""
    if not geometry.is_hybrid:
        return None
    attention = geometry.attention
    assert attention is not None and engine.backend is not None and engine.kv_bytes is not None
    profile = engine.profile
    if profile.alignment_site == "platform":
        unit = engine.backend.min_block
        if attention.use_mla and profile.mla_floor:
            unit = math.lcm(unit, profile.mla_floor)
        if engine.prefix_caching and profile.gdn_checkpoint_alignment:
            unit = math.lcm(unit, engine.checkpoint)
        if engine.chunk is not None:
            unit = math.lcm(unit, engine.chunk)
    else:  # model-config era: the user's block is kept whenever it covers the aligned block
        unit = _derive(1, 1, engine, attention).unit_start
    pages: dict[int, tuple[int, int]] = {}
    for tp in sorted(set(tps)):
        if validate_tp(geometry, tp) or load_problem(geometry, tp):
            continue
        try:
            m = mamba_page(geometry, engine, tp).page_bytes
        except IndivisibleTP:
            continue
        pages[tp] = (attention_page_bytes_per_token(attention, tp, engine.kv_bytes), m)
    if not pages:
        return None
    need = max(_derive(a, m, engine, attention, base_block=unit).block for a, m in pages.values())
    return unit, need, pages


def common_block_size(
    geometry: ModelGeometry, engine: EngineConfig, tps: list[int]
) -> tuple[int, dict[int, float]] | None:
    """Smallest ``--block-size B`` that, set on every pool, makes each TP in ``tps`` choose
    exactly ``B`` (docs/policy.md), with the Mamba padding % it costs per TP.

    ``B`` must cover every rank's aligned block and be a multiple of the alignment unit:
    the backend's smallest kernel block, the MLA floor, the prefill checkpoint alignment
    when prefix caching is on and, on releases that chunk-align, the Mamba chunk size
    (model-config era: the fixed unit). ``None`` for models without both
    attention and state layers, or when no TP in ``tps`` is valid.
    """
    found = _block_requirement(geometry, engine, tps)
    if found is None:
        return None
    unit, need, pages = found
    block = unit * cdiv(max(need, unit), unit)
    return block, {tp: padding_pct(block, a, m) for tp, (a, m) in pages.items()}


def block_requirement(
    geometry: ModelGeometry, engine: EngineConfig, tp: int
) -> tuple[int, int] | None:
    """``(unit, need)`` in tokens for one pool: a common ``--block-size`` must be a
    multiple of ``unit`` and at least ``need`` for this pool to keep it; ``None``
    when the pool does not constrain the block size (not hybrid, or its TP is invalid)."""
    found = _block_requirement(geometry, engine, [tp])
    return None if found is None else (found[0], found[1])
