"""The block-size derivation for one model at one TP, as ordered steps (``kvalign explain``).

Pure: builds frozen :class:`Step` objects from a :class:`ModelGeometry`, the
:class:`Settings` and the :class:`RankResult` that :func:`kvalign.alignment.analyze_rank`
computed, so the explanation and the prediction cannot disagree. Also the prefix-cache
economics of a block size (:func:`economics`). No I/O; formatters live in
``kvalign.report.explain_format``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvalign.alignment import RankResult, analyze_rank
from kvalign.dtypes import DTYPE_BYTES
from kvalign.engine import EngineConfig, create_engine_config
from kvalign.errors import InvalidSettings
from kvalign.geometry import ModelGeometry
from kvalign.pd import hit_floor_blocks
from kvalign.settings import Settings


@dataclass(frozen=True)
class Step:
    """One quantity of the derivation.

    Attributes:
        key: stable identifier (``kv_heads_per_rank``, ``attn_page_bytes_per_token``, ...).
        title: human name.
        value: the value (int tokens/bytes/heads, or a short string).
        unit: ``tokens``, ``bytes``, ``heads``, ``elements`` or ``""``.
        formula: the formula with numbers filled in.
        inputs: where each input came from (config keys, flags), as ``name = source``.
        mirrors: the vLLM file and function the step mirrors (release of the profile).
    """

    key: str
    title: str
    value: int | str
    unit: str
    formula: str
    inputs: tuple[str, ...] = ()
    mirrors: str = ""


@dataclass(frozen=True)
class Economics:
    """Prefix-cache economics of a logical block size (one rank).

    Attributes:
        block_size: logical block (tokens) = prefix-cache hashing granularity.
        smallest_cacheable_prefix: tokens of the smallest prefix that gives a hit: one
            block, two with speculative tokens (MTP/EAGLE drop the last matched block).
        hit_floor_blocks: that floor in blocks (1 or 2).
        worst_case_recompute: tokens that may be recomputed per turn (up to two blocks:
            the uncached partial tail block plus the block the Mamba state resumes from).
        mamba_padding_bytes: bytes of padding per Mamba layer per block
            (``block * a - m``), ``None`` without a Mamba state.
    """

    block_size: int
    smallest_cacheable_prefix: int
    worst_case_recompute: int
    mamba_padding_bytes: int | None
    hit_floor_blocks: int = 1


def economics(rank: RankResult, engine: EngineConfig | None = None) -> Economics | None:
    """Prefix-cache economics for a valid, non-attention-free rank with prefix caching
    on, else ``None``; with speculative tokens in ``engine`` the smallest prefix that
    gives a hit is two blocks (:func:`kvalign.pd.hit_floor_blocks`)."""
    if not rank.usable or rank.block_size is None or not rank.prefix_caching:
        return None
    floor = 1 if engine is None else hit_floor_blocks(engine)
    padding: int | None = None
    if rank.mamba_page_bytes is not None and rank.attn_page_bytes_per_token is not None:
        padding = rank.block_size * rank.attn_page_bytes_per_token - rank.mamba_page_bytes
    return Economics(
        block_size=rank.block_size,
        smallest_cacheable_prefix=floor * rank.block_size,
        worst_case_recompute=2 * rank.block_size,
        mamba_padding_bytes=padding,
        hit_floor_blocks=floor,
    )


@dataclass(frozen=True)
class Explanation:
    """Everything ``kvalign explain`` shows for one model at one TP (``engine``: the
    settings resolved once, printed as the first section)."""

    geometry: ModelGeometry
    settings: Settings
    tp: int
    engine: EngineConfig
    rank: RankResult
    steps: tuple[Step, ...]
    economics: Economics | None


def _src(geometry: ModelGeometry, symbol: str) -> str:
    return geometry.provenance.get(symbol, "derived from the fields above")


_SHAPES = "vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator"
_SPEC = "vllm/v1/kv_cache_interface.py"


def _attention_steps(geometry: ModelGeometry, engine: EngineConfig, rank: RankResult) -> list[Step]:
    att = geometry.attention
    assert att is not None and engine.kv_bytes is not None
    settings = engine.settings
    model_dtype, kv_bytes = engine.model_dtype, engine.kv_bytes
    heads = rank.kv_heads_per_rank
    steps = [
        Step(
            "kv_heads_per_rank",
            "KV heads per rank",
            heads if heads is not None else 0,
            "heads",
            "1 (MLA: one latent per token)"
            if att.use_mla
            else f"max(1, {att.total_kv_heads} // TP {rank.tp}) = {heads}",
            ("total_kv_heads = " + _src(geometry, "total_kv_heads"), f"TP = {rank.tp}"),
            "vllm/config/model.py ModelConfig.get_num_kv_heads",
        ),
        Step(
            "head_size",
            "head size",
            att.head_size,
            "elements",
            f"{att.head_size}" + (" (kv_lora_rank + qk_rope_head_dim)" if att.use_mla else ""),
            ("head_size = " + _src(geometry, "head_size"),),
            "vllm/config/model.py ModelConfig.get_head_size",
        ),
        Step(
            "kv_cache_dtype_bytes",
            "KV-cache bytes per element",
            kv_bytes,
            "bytes",
            f"--kv-cache-dtype {settings.kv_cache_dtype} → {engine.kv_cache_dtype} "
            f"(model dtype {model_dtype}) → {kv_bytes}",
            (f"--kv-cache-dtype = {settings.kv_cache_dtype}", f"--dtype = {settings.dtype}"),
            "vllm/utils/torch_utils.py STR_DTYPE_TO_TORCH_DTYPE",
        ),
    ]
    v = att.head_size_v
    a = rank.attn_page_bytes_per_token
    steps.append(
        Step(
            "attn_page_bytes_per_token",
            "attention page per token (a)",
            a if a is not None else 0,
            "bytes",
            f"{heads} {'head' if heads == 1 else 'heads'} × ({att.head_size} + {v}) × "
            f"{kv_bytes} B = {a}",
            (),
            f"{_SPEC} {'MLAAttentionSpec' if att.use_mla else 'FullAttentionSpec'}.page_size_bytes",
        )
    )
    return steps


def _state_steps(geometry: ModelGeometry, rank: RankResult) -> list[Step]:
    state = geometry.state
    assert state is not None
    params = ", ".join(f"{k}={v}" for k, v in state.params.items())
    sources = tuple(f"{k} = {_src(geometry, k)}" for k in state.params)
    parts = [
        f"{'×'.join(map(str, shape))} × {DTYPE_BYTES[dt]} B ({dt})"
        for shape, dt in zip(rank.mamba_state_shapes, rank.mamba_state_dtypes, strict=True)
    ]
    return [
        Step(
            "mamba_state_shapes",
            f"{state.family} state tensors per rank",
            "; ".join(
                f"{list(s)} {d}"
                for s, d in zip(rank.mamba_state_shapes, rank.mamba_state_dtypes, strict=True)
            ),
            "",
            f"family {state.family} with {params} at TP {rank.tp}",
            sources,
            _SHAPES,
        ),
        Step(
            "mamba_page_bytes",
            "Mamba page (m)",
            rank.mamba_page_bytes or 0,
            "bytes",
            " + ".join(parts) + f" = {rank.mamba_page_bytes}",
            (),
            f"{_SPEC} MambaSpec.page_size_bytes",
        ),
    ]


def _alignment_steps(geometry: ModelGeometry, engine: EngineConfig, rank: RankResult) -> list[Step]:
    settings = engine.settings
    d = rank.derivation
    assert d is not None
    where = (
        "vllm/model_executor/models/config.py HybridAttentionMambaModelConfig"
        ".verify_and_update_config"
        if d.site == "model-config"
        else "vllm/platforms/interface.py Platform._align_hybrid_block_size"
    )
    block_flag = (
        f"--block-size = {settings.block_size}"
        if settings.block_size is not None
        else "--block-size unset"
    )
    steps = [
        Step(
            "base_block_size",
            "block size before alignment",
            d.base_block,
            "tokens",
            f"{d.base_block}",
            (block_flag, f"attention backend = {rank.backend}"),
            "vllm/platforms/interface.py Platform.update_block_size_for_backend"
            if d.site == "platform"
            else "vllm/config/cache.py CacheConfig.block_size",
        ),
        Step(
            "alignment_unit_start",
            "alignment unit",
            d.unit_start,
            "tokens",
            f"{d.unit_reason} = {d.unit_start}",
            (f"attention backend = {rank.backend}",),
            where,
        ),
    ]
    unit_parts = [str(d.unit_start)]
    if d.mla_floor:
        unit_parts = [f"max({d.unit_start}, MLA floor {d.mla_floor})"]
    if d.checkpoint > 1:
        unit_parts.append(f"prefill checkpoint {d.checkpoint} ({engine.checkpoint_note})")
    if d.chunk is not None:
        unit_parts.append(f"Mamba chunk size {d.chunk} (prefix caching, cache mode 'all')")
    if len(unit_parts) == 1:
        formula = f"{unit_parts[0]} (no MLA floor, checkpoint or chunk alignment)"
    else:
        formula = "lcm(" + ", ".join(unit_parts) + ")"
    inputs = [f"prefix caching = {'on' if engine.prefix_caching else 'off'}"]
    if d.chunk is not None:
        inputs.append("chunk size = " + _src(geometry, "chunk_size"))
    steps.append(
        Step("alignment_unit", "final alignment unit", d.unit, "tokens",
             f"{formula} = {d.unit}", tuple(inputs), where)
    )  # fmt: skip
    steps.append(
        Step(
            "tokens_needed",
            "tokens per Mamba page",
            d.tokens_needed,
            "tokens",
            f"ceil(m {d.mamba_page_bytes} / a {d.attn_page_bytes_per_token}) = {d.tokens_needed}",
            (),
            where,
        )
    )
    steps.append(
        Step(
            "aligned_block",
            "aligned block",
            d.aligned,
            "tokens",
            f"{d.unit} × ceil({d.tokens_needed} / {d.unit}) = {d.aligned}",
            (),
            where,
        )
    )
    if d.backend_lcm is not None:
        steps.append(
            Step(
                "backend_lcm_rounding",
                "rounded to the backends' kernel-block lcm",
                d.rounded,
                "tokens",
                f"{d.backend_lcm} × ceil({d.aligned} / {d.backend_lcm}) = {d.rounded}",
                (f"attention backend = {rank.backend}",),
                where,
            )
        )
    verdict = "raised by hybrid alignment" if d.overridden else "kept"
    steps.append(
        Step(
            "block_size",
            "logical block size",
            d.block,
            "tokens",
            f"max(block {d.base_block}, {d.rounded}) = {d.block} ({verdict})",
            (),
            where,
        )
    )
    return steps


def _skip_block_steps(rank: RankResult) -> list[Step]:
    """The ``--kv-cache-dtype-skip-layers`` block step when it raised the block
    (:func:`kvalign.alignment.skip_layer_block_size`)."""
    if rank.skip_block_size is None or rank.derivation is None:
        return []
    before = rank.derivation.block
    return [
        Step(
            "skip_layer_block_size",
            "block raised for the skip layers' page",
            rank.skip_block_size,
            "tokens",
            f"{before} → {rank.skip_block_size}: the quantized page covers the skipped "
            "layers' model-dtype page at the smallest kernel block",
            ("--kv-cache-dtype-skip-layers",),
            "vllm/platforms/interface.py Platform._align_heterogeneous_kv_block_size",
        )
    ]


def _kernel_step(rank: RankResult, split: bool) -> Step:
    block, kernel = rank.block_size, rank.kernel_block_size
    if not split:
        formula = f"{kernel} (this release does not split logical blocks into kernel blocks)"
    elif kernel == block:
        formula = f"{rank.backend} accepts {block} = {kernel}"
    elif kernel is None:
        formula = f"no {rank.backend} kernel block size divides {block}"
    else:
        formula = f"{rank.backend} rejects {block}: largest supported divisor = {kernel}"
    return Step(
        "kernel_block_size",
        "kernel block size",
        kernel if kernel is not None else "none",
        "tokens",
        formula,
        (f"attention backend = {rank.backend}",),
        "vllm/v1/worker/utils.py select_common_block_size",
    )


def _group_steps(rank: RankResult) -> list[Step]:
    """The KV-cache groups (:func:`kvalign.alignment.kv_cache_groups`) as one step."""
    groups = rank.kv_cache_groups
    if not groups:
        return []
    parts = [
        f"{g.kind} {g.layers} layers, block "
        + (str(g.block_size) if g.block_size is not None else "max_model_len")
        for g in groups
    ]
    return [
        Step(
            "kv_cache_groups",
            "KV-cache groups",
            len(groups),
            "",
            "; ".join(parts),
            ("layers = the config's per-layer pattern",),
            "vllm/v1/core/kv_cache_planning.py _get_kv_cache_groups_uniform_page_size",
        )
    ]


def _stage_steps(rank: RankResult) -> list[Step]:
    """One step per pipeline stage (``--pipeline-parallel-size`` > 1): its layers and the
    block it ends with (:func:`kvalign.alignment.pp_stages`)."""
    steps = []
    for stage in rank.pp_stages:
        how = (
            "aligned (owns an attention layer)"
            if stage.aligned
            else "keeps its block: no attention layer, no hybrid alignment"
        )
        formula = (
            f"layers {stage.start}-{stage.end - 1}: {stage.attention_layers} attention, "
            f"{stage.state_layers} state; {how}"
        )
        if stage.problem:
            formula += f"; {stage.problem}"
        steps.append(
            Step(
                f"pp_stage_{stage.rank}_block_size",
                f"pipeline stage {stage.rank} block size",
                stage.block_size,
                "tokens",
                formula,
                ("layers = vllm/distributed/utils.py get_pp_indices",),
                "vllm/platforms/interface.py Platform.update_block_size_for_backend",
            )
        )
    return steps


def explain(geometry: ModelGeometry, settings: Settings, tp: int) -> Explanation:
    """Step-by-step derivation of the block size of ``geometry`` at TP ``tp``.

    Raises:
        InvalidSettings: invalid TP for this model, or bad flag values.
        NotModelled, UnsupportedModel: as :func:`kvalign.alignment.analyze_rank`.
    """
    engine = create_engine_config(geometry, settings)
    rank = analyze_rank(geometry, engine, tp)
    if not rank.usable and not rank.stage_block_problem:
        raise InvalidSettings(f"{geometry.model_id}: invalid tensor parallel size {tp}: "
                              f"{rank.problem}")  # fmt: skip
    steps: list[Step] = []
    if geometry.attention is not None:
        steps += _attention_steps(geometry, engine, rank)
    if geometry.state is not None:
        steps += _state_steps(geometry, rank)
    if rank.derivation is not None:
        steps += _alignment_steps(geometry, engine, rank)
        steps += _skip_block_steps(rank)
        steps += _group_steps(rank) + _stage_steps(rank)
        steps.append(_kernel_step(rank, engine.profile.kernel_block_split))
        pad = rank.mamba_page_size_padded
        if pad is not None and rank.mamba_page_bytes:
            pct = 100 * (pad - rank.mamba_page_bytes) / rank.mamba_page_bytes
            steps.append(
                Step(
                    "mamba_page_size_padded",
                    "Mamba page padded to the attention page",
                    pad,
                    "bytes",
                    f"{rank.block_size} × {rank.attn_page_bytes_per_token} = {pad} (+{pct:.2f}%)",
                    (),
                    "vllm/config/cache.py CacheConfig.mamba_page_size_padded",
                )
            )
    elif geometry.attention is not None:
        steps.append(
            Step("block_size", "logical block size", rank.block_size or 0, "tokens",
                 f"{rank.block_size} (no Mamba state: no hybrid alignment)")
        )  # fmt: skip
        steps.append(_kernel_step(rank, engine.profile.kernel_block_split))
    return Explanation(geometry, settings, tp, engine, rank, tuple(steps), economics(rank, engine))
