"""Prefill/decode pair analysis: ``block_size_ratio``, divisibility, prefix-cache drift.

Mirrors the NIXL connector of vLLM 0.33 (pull mode: decode reads from prefill):
``vllm/distributed/kv_transfer/kv_connector/utils.py`` ``block_size_ratio`` (local =
decode, remote = prefill: ``decode_block // prefill_block``, asserting divisibility) and
``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``
``_split_remote_blocks`` (non-multiples split into gcd-sized units, at most
``_MAX_HYBRID_BLOCK_SPLIT`` units per block), as the release profile says
(:mod:`kvalign.versions`). No I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from kvalign.alignment import RankResult, analyze_rank, common_block_size
from kvalign.backends import platform_note
from kvalign.engine import EngineConfig, create_engine_config
from kvalign.geometry import ModelGeometry
from kvalign.settings import Settings
from kvalign.versions import DEFAULT_PROFILE, Profile

Verdict = Literal["ok", "drift", "ratio", "split", "incompatible", "invalid", "attention-free"]

#: verdicts that make ``kvalign check`` exit 1.
FLAGGED: frozenset[str] = frozenset({"drift", "ratio", "split", "incompatible"})


@dataclass(frozen=True)
class PairResult:
    """One prefill TP × decode TP pair under the chosen alignment.

    Attributes:
        prefill_tp, decode_tp: tensor parallel sizes.
        prefill_block_size, decode_block_size: logical block sizes (tokens).
        prefill_kernel_block_size, decode_kernel_block_size: kernel (transfer) block sizes.
        block_size_ratio: ``decode_kernel // prefill_kernel`` when divisible, else ``None``.
        divisible: ``decode_kernel % prefill_kernel == 0``.
        prefix_cache_drift: logical block sizes differ (prefixes hash on different grids).
        split_unit: for non-divisible pairs, the gcd unit NIXL would transfer in (tokens).
        verdict: ``ok``, ``drift``, ``ratio`` (heterogeneous blocks, divisible), ``split``
            (non-divisible, gcd split path), ``incompatible`` (hard failure), ``invalid``
            (a side's TP is invalid), ``attention-free``.
        reason: one line explaining the verdict.
    """

    prefill_tp: int
    decode_tp: int
    prefill_block_size: int | None
    decode_block_size: int | None
    prefill_kernel_block_size: int | None
    decode_kernel_block_size: int | None
    block_size_ratio: int | None
    divisible: bool | None
    prefix_cache_drift: bool | None
    split_unit: int | None
    verdict: Verdict
    reason: str

    @property
    def flagged(self) -> bool:
        """Whether this pair makes ``check`` exit 1."""
        return self.verdict in FLAGGED


def release_limit(
    profile: Profile, prefill: RankResult, decode: RankResult, p_kernel: int, d_kernel: int
) -> str:
    """Why the release's NIXL connector cannot pair these sides at all (``""`` if it can).

    Older releases: no hybrid support in NIXL (< 0.19, the connector lacks ``SupportsHMA``),
    equal TP required for Mamba hybrids (0.19: "Mamba does not support heterogeneous TP
    yet"), equal block sizes required (0.10: for every model; < 0.27: for hybrids, under
    the hybrid KV-cache manager).
    """
    hybrid = prefill.mamba_page_bytes is not None and not prefill.attention_free
    name = profile.name
    if hybrid and not profile.nixl_hybrid:
        return f"vLLM {name}'s NIXL connector does not serve hybrid models (no SupportsHMA)"
    if hybrid and not profile.nixl_hetero_tp_mamba and prefill.tp != decode.tp:
        return f"vLLM {name}'s NIXL connector requires equal prefill/decode TP for Mamba hybrids"
    if p_kernel != d_kernel and (
        profile.nixl_equal_blocks_all or (hybrid and not profile.nixl_hetero_hybrid)
    ):
        what = "every model" if profile.nixl_equal_blocks_all else "hybrid models"
        return (
            f"block sizes differ ({p_kernel} vs {d_kernel}) and vLLM {name}'s NIXL connector "
            f"requires equal block sizes for {what}"
        )
    return ""


def analyze_pair(
    prefill: RankResult,
    decode: RankResult,
    alignment: str,
    profile: Profile = DEFAULT_PROFILE,
) -> PairResult:
    """Compare one prefill rank result with one decode rank result under ``profile``."""
    if not prefill.usable or not decode.usable:
        bad = prefill if not prefill.usable else decode
        side = "prefill" if bad is prefill else "decode"
        return PairResult(
            prefill.tp, decode.tp, None, None, None, None, None, None, None, None,
            "invalid", f"{side} TP {bad.tp} is invalid: {bad.problem}",
        )  # fmt: skip
    if prefill.attention_free:
        return PairResult(
            prefill.tp, decode.tp, None, None, None, None, None, None, None, None,
            "attention-free", "attention-free model: no block alignment, no KV blocks to match",
        )  # fmt: skip
    p_block, d_block = prefill.logical(alignment), decode.logical(alignment)
    p_kernel, d_kernel = prefill.kernel(alignment), decode.kernel(alignment)
    assert p_block is not None and d_block is not None
    drift = p_block != d_block
    if p_kernel is None or d_kernel is None:
        return PairResult(
            prefill.tp, decode.tp, p_block, d_block, p_kernel, d_kernel, None, False, drift,
            None, "incompatible",
            "no kernel block size the backend supports divides the logical block size",
        )  # fmt: skip
    divisible = d_kernel % p_kernel == 0
    ratio = d_kernel // p_kernel if divisible else None
    limit = release_limit(profile, prefill, decode, p_kernel, d_kernel)
    if limit:
        return PairResult(
            prefill.tp, decode.tp, p_block, d_block, p_kernel, d_kernel, ratio, divisible,
            drift, None, "incompatible", limit,
        )  # fmt: skip
    unit: int | None = None
    if divisible and ratio == 1:
        if drift:
            verdict: Verdict = "drift"
            reason = (
                f"kernel blocks match ({p_kernel}) but logical blocks differ "
                f"({p_block} vs {d_block}): prefix-cache granularity drift"
            )
        else:
            verdict, reason = "ok", f"same block size {p_block} on both sides"
    elif divisible:
        verdict = "ratio"
        reason = (
            f"block_size_ratio {ratio}: decode kernel block {d_kernel} = {ratio} x prefill "
            f"{p_kernel}; heterogeneous-block handling on the decode path"
        )
    else:
        unit = math.gcd(p_kernel, d_kernel)
        splits = max(p_kernel // unit, d_kernel // unit)
        if profile.nixl_gcd_split and splits <= profile.nixl_split_limit:
            verdict = "split"
            reason = (
                f"decode kernel block {d_kernel} is not a multiple of prefill {p_kernel}: "
                f"NIXL splits into {unit}-token units ({splits} per block); hard failure "
                "on releases without the split path"
            )
        else:
            verdict = "incompatible"
            if profile.nixl_gcd_split:
                why = f"a {unit}-token split needs {splits} > {profile.nixl_split_limit} units"
            else:
                why = f"vLLM {profile.name} has no gcd split path"
            reason = (
                f"decode kernel block {d_kernel} is not a multiple of prefill {p_kernel} and "
                f"{why}: NIXL transfer fails"
            )
    return PairResult(
        prefill.tp, decode.tp, p_block, d_block, p_kernel, d_kernel, ratio, divisible,
        drift, unit, verdict, reason,
    )  # fmt: skip


@dataclass(frozen=True)
class Recommendation:
    """Smallest common ``--block-size`` that makes every pool agree (spec §7).

    Attributes:
        block_size: tokens, or ``None`` when nothing applies (attention-free, no valid TP).
        padding_pct: Mamba page padding % per TP at that block size.
        needed: whether any pair is flagged (else the recommendation is optional).
        text: one line for humans.
    """

    block_size: int | None
    padding_pct: dict[int, float]
    needed: bool
    text: str


@dataclass(frozen=True)
class Report:
    """The full result of ``check``/``matrix``: what every layer above reads (``engine``:
    the settings resolved once for every TP)."""

    geometry: ModelGeometry
    settings: Settings
    prefill_tps: tuple[int, ...]
    decode_tps: tuple[int, ...]
    ranks: dict[int, RankResult]
    pairs: tuple[PairResult, ...]
    recommendation: Recommendation
    engine: EngineConfig
    notes: tuple[str, ...] = field(default=())

    @property
    def flagged(self) -> bool:
        """Whether any pair is flagged (``check`` exits 1)."""
        return any(pair.flagged for pair in self.pairs)

    @property
    def invalid_tps(self) -> list[RankResult]:
        """Requested TP sizes vLLM would reject (config check or model load)."""
        return [r for r in self.ranks.values() if not r.usable]


def economics_notes(ranks: dict[int, RankResult]) -> list[str]:
    """Prefix-cache economics per valid hybrid TP: smallest cacheable prefix (one logical
    block), worst-case recompute per turn (up to two blocks) and Mamba padding bytes per
    layer per block (``block * a - m``)."""
    notes = []
    for tp, rank in sorted(ranks.items()):
        if not rank.usable or rank.block_size is None or rank.mamba_page_bytes is None:
            continue
        assert rank.attn_page_bytes_per_token is not None
        pad = rank.block_size * rank.attn_page_bytes_per_token - rank.mamba_page_bytes
        notes.append(
            f"prefix caching at TP {tp}: smallest cacheable prefix {rank.block_size:,} tokens, "
            f"worst-case recompute per turn up to {2 * rank.block_size:,} tokens, Mamba "
            f"padding {pad:,} bytes per layer per block"
        )
    return notes


def max_model_len_notes(ranks: dict[int, RankResult], engine: EngineConfig) -> list[str]:
    """Where ``--max-model-len`` is below one logical block: prefix caching can never hit
    there (vLLM caches whole blocks only, ``vllm/v1/core/kv_cache_utils.py`` block
    hashes), for hybrid ranks with prefix caching on."""
    limit = engine.max_model_len
    if limit is None or not engine.prefix_caching:
        return []
    short = sorted(
        (tp, r.block_size)
        for tp, r in ranks.items()
        if r.usable and r.mamba_page_bytes is not None and r.block_size is not None
        and r.block_size > limit
    )  # fmt: skip
    if not short:
        return []
    where = ", ".join(f"TP {tp} ({block:,}-token blocks)" for tp, block in short)
    return [
        f"--max-model-len {limit:,} is below one block at {where}: prefix caching can never "
        "hit there (only whole blocks are cached)"
    ]


def _recommend(
    geometry: ModelGeometry, engine: EngineConfig, tps: list[int], flagged: bool
) -> Recommendation:
    found = common_block_size(geometry, engine, tps)
    if found is None:
        if geometry.attention_free:
            why = "attention-free model: there is no KV block size to align"
        elif not geometry.is_hybrid:
            why = "pure attention model: the block size does not depend on TP"
        else:
            why = "no usable TP size among those asked for: nothing to recommend"
        return Recommendation(None, {}, False, why)
    block, padding = found
    verb = "set" if flagged else "optional: set"
    cost = ", ".join(f"TP {tp} {pct:.2f}%" for tp, pct in sorted(padding.items()))
    text = (
        f"{verb} --block-size {block} on every prefill and decode pool: all sides then use "
        f"{block}-token blocks (Mamba page padding: {cost})"
    )
    costly = sorted(tp for tp, pct in padding.items() if pct > 100)
    if costly:
        text += (
            f"; at TP {', '.join(map(str, costly))} the padding exceeds the state itself: "
            "closer prefill/decode TP sizes cost less"
        )
    return Recommendation(block, padding, flagged, text)


def analyze(
    geometry: ModelGeometry,
    settings: Settings,
    prefill_tps: list[int],
    decode_tps: list[int],
) -> Report:
    """Analyse every prefill × decode TP pair for one model and settings.

    Raises:
        InvalidSettings, NotModelled: see :func:`kvalign.alignment.analyze_rank`.
    """
    engine = create_engine_config(geometry, settings)
    profile = engine.profile
    tps = sorted(set(prefill_tps) | set(decode_tps))
    ranks = {tp: analyze_rank(geometry, engine, tp) for tp in tps}
    pairs = tuple(
        analyze_pair(ranks[p], ranks[d], settings.alignment, profile)
        for p in prefill_tps
        for d in decode_tps
    )
    flagged = any(pair.flagged for pair in pairs)
    notes = [engine.profile_note, *geometry.notes, *engine.notes]
    if geometry.attention is not None:
        chosen = engine.backend.name if engine.backend is not None else None
        notes.append(platform_note(settings.attention_backend, settings.gpu, chosen))
    if (
        geometry.state is not None
        and geometry.state.family == "gdn"
        and profile.gdn_checkpoint_alignment
    ):
        notes.append(engine.checkpoint_note)
    chunk = engine.chunk
    if chunk is not None:
        notes.append(
            f"prefix caching in Mamba cache mode 'all' (vLLM {profile.name}): blocks aligned "
            f"to the Mamba chunk size {chunk}"
        )
    if geometry.is_hybrid:
        first = next((r for r in ranks.values() if r.usable), None)
        if (
            first is not None
            and first.use_mla
            and first.backend != settings.attention_backend.upper()
        ):
            notes.append(f"MLA model: attention runs on {first.backend}")
        overridden = sorted(r.tp for r in ranks.values() if r.block_size_overridden)
        if overridden:
            notes.append(
                f"--block-size {settings.block_size} is overridden by hybrid alignment at TP "
                + ", ".join(map(str, overridden))
            )
    if geometry.attention_free:
        notes.append("attention-free model: vLLM does no block alignment")
    family = geometry.state.family if geometry.state is not None else None
    if settings.gdn_prefill_backend != "auto" and family != "gdn":
        notes.append("--gdn-prefill-backend has no effect: the model has no gated delta net layers")
    notes += economics_notes(ranks)
    notes += max_model_len_notes(ranks, engine)
    return Report(
        geometry=geometry,
        settings=settings,
        prefill_tps=tuple(prefill_tps),
        decode_tps=tuple(decode_tps),
        ranks=ranks,
        pairs=pairs,
        recommendation=_recommend(geometry, engine, tps, flagged),
        engine=engine,
        notes=tuple(notes),
    )
