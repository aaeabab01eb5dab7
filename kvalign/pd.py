"""Prefill/decode analysis for ``check``/``matrix``: every pair's verdict, the proven fix.

The verdict of one pair and the gate are :mod:`kvalign.policy` (re-exported here); the
fix is :mod:`kvalign.fixes` (re-run on every GPU class before it is printed). No I/O.
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kvalign.alignment import RankResult
from kvalign.backends import platform_note
from kvalign.engine import EngineConfig
from kvalign.fixes import Fix, FixPool, RunCache, prove_fix, raised_block_sizes
from kvalign.geometry import ModelGeometry
from kvalign.policy import (
    DEFAULT_FAIL_ON,
    OVERRIDE_LEVEL,
    Level,
    PairResult,
    Verdict,
    analyze_pair,
    exit_code,
    release_limit,
)
from kvalign.settings import Settings

__all__ = [
    "CheckReport",
    "PairResult",
    "Recommendation",
    "Verdict",
    "analyze",
    "analyze_pair",
    "economics_notes",
    "release_limit",
]


class Recommendation(NamedTuple):
    """The one command-line change that fixes the pairs, proven on every GPU class
    (:func:`kvalign.fixes.prove_fix`).

    Attributes:
        block_size: the ``--block-size`` (tokens) to set on every pool, ``None`` when no
            change is needed, nothing can be aligned, or no block size can fix the pairs.
        padding_pct: Mamba page padding % per TP at that block size.
        needed: whether a pair (or a raised ``--block-size``) is at warning level or above.
        text: one line for humans.
        proven_on: GPU classes the block size was re-checked on.
        blockers: what would fix the pairs when no block size can.
        raised: where vLLM raises the user's own ``--block-size`` (one line each).
        only_tps: when some requested TP sizes are invalid for the model, the valid TP
            sizes ``block_size`` was proven for (``blockers`` then names the invalid ones);
            empty when it holds for every requested TP.
    """

    block_size: int | None
    padding_pct: dict[int, float]
    needed: bool
    text: str
    proven_on: tuple[str, ...] = ()
    blockers: tuple[str, ...] = ()
    raised: tuple[str, ...] = ()
    only_tps: tuple[int, ...] = ()

    @property
    def change(self) -> str:
        """The command-line change, e.g. ``--block-size 2112`` (``""`` when none)."""
        return f"--block-size {self.block_size}" if self.block_size is not None else ""


class CheckReport(NamedTuple):
    """The full result of ``check``/``matrix``: what every layer above reads (``engine``:
    the settings resolved once for every TP).

    ``pairs`` always follow vLLM's rules (the gate); ``tp_stable_pairs`` is the what-if
    under the vLLM PR 45575 proposal when ``--alignment tp-stable`` was asked for (never
    gated), else ``None``.
    """

    geometry: ModelGeometry
    settings: Settings
    prefill_tps: tuple[int, ...]
    decode_tps: tuple[int, ...]
    ranks: dict[int, RankResult]
    pairs: tuple[PairResult, ...]
    recommendation: Recommendation
    engine: EngineConfig
    notes: tuple[str, ...] = field(default=())
    tp_stable_pairs: tuple[PairResult, ...] | None = None

    def levels(self, among: set[int] | None = None) -> list[Level | None]:
        """Severity of every pair's verdict, plus :data:`~kvalign.policy.OVERRIDE_LEVEL`
        for each requested TP whose ``--block-size`` hybrid alignment raises (and, without
        ``among``, for each pool whose ``--block-size`` it raises on some GPU class the pool
        may run on: ``recommendation.raised``); with ``among``, only pairs (and TPs) whose
        TP sizes are all in it."""
        levels: list[Level | None] = [
            pair.level
            for pair in self.pairs
            if among is None or (pair.prefill_tp in among and pair.decode_tp in among)
        ]
        requested = set(self.prefill_tps) | set(self.decode_tps)
        if among is not None:
            requested &= among
        levels += [
            OVERRIDE_LEVEL
            for tp, rank in sorted(self.ranks.items())
            if tp in requested and rank.usable and rank.block_size_overridden
        ]
        if among is None:  # raised on a GPU class the pools may run on: as audit's KVA004
            levels += [OVERRIDE_LEVEL for _ in self.recommendation.raised]
        return levels

    def exit_code(self, fail_on: str = DEFAULT_FAIL_ON) -> int:
        """The gate (:func:`kvalign.policy.exit_code`): 1 when a level reaches ``fail_on``."""
        return exit_code(self.levels(), fail_on)

    @property
    def flagged(self) -> bool:
        """Whether the default gate (``--fail-on error``) fails."""
        return self.exit_code() == 1

    @property
    def invalid_tps(self) -> list[RankResult]:
        """Requested TP sizes vLLM would reject (config check or model load)."""
        return [r for r in self.ranks.values() if not r.usable]


def hit_floor_blocks(engine: EngineConfig) -> int:
    """Blocks of the smallest prefix that gives a prefix-cache hit: 1, or 2 with
    speculative tokens (MTP/EAGLE groups drop back the last matched block:
    ``vllm/v1/core/kv_cache_coordinator.py`` ``replay_boundaries`` and the ``use_eagle``
    path of ``vllm/v1/core/single_type_kv_cache_manager.py``)."""
    return 2 if engine.num_speculative_tokens > 0 else 1


def economics_notes(ranks: dict[int, RankResult], engine: EngineConfig | None = None) -> list[str]:
    """Prefix-cache economics per valid hybrid TP with prefix caching on: smallest prefix
    that gives a hit (one logical block; two with speculative tokens), worst-case
    recompute per turn (up to two blocks) and Mamba padding bytes per layer per block
    (``block * a - m``). Nothing when prefix caching is off."""
    notes = []
    floor = 1 if engine is None else hit_floor_blocks(engine)
    for tp, rank in sorted(ranks.items()):
        if not rank.usable or rank.block_size is None or rank.mamba_page_bytes is None:
            continue
        if not rank.prefix_caching:
            continue
        assert rank.attn_page_bytes_per_token is not None
        pad = rank.block_size * rank.attn_page_bytes_per_token - rank.mamba_page_bytes
        smallest = floor * rank.block_size
        spec = (
            f" ({floor} blocks: with speculative tokens vLLM drops the last matched block)"
            if floor > 1
            else ""
        )
        notes.append(
            f"prefix caching at TP {tp}: smallest prefix that gives a hit {smallest:,} "
            f"tokens{spec}, worst-case recompute per turn up to {2 * rank.block_size:,} "
            f"tokens, Mamba padding {pad:,} bytes per layer per block"
        )
    return notes


def kv_cache_group_notes(ranks: dict[int, RankResult]) -> list[str]:
    """One line per TP of a hybrid: how many KV-cache groups, their kinds, layers and block
    sizes (:func:`kvalign.alignment.kv_cache_groups`)."""
    notes = []
    for tp, rank in sorted(ranks.items()):
        groups = rank.kv_cache_groups
        if not groups or not rank.usable:
            continue
        parts = []
        for kind in dict.fromkeys(group.kind for group in groups):
            mine = [group for group in groups if group.kind == kind]
            blocks = {group.block_size for group in mine}
            block = (
                "block max_model_len"
                if blocks == {None}
                else "block " + "/".join(str(b) for b in sorted(b for b in blocks if b))
            )
            layers = "/".join(str(group.layers) for group in mine)
            parts.append(f"{len(mine)} {kind} ({layers} layers, {block})")
        notes.append(f"KV-cache groups at TP {tp}: {len(groups)}: " + ", ".join(parts))
    return notes


def pp_stage_notes(ranks: dict[int, RankResult]) -> list[str]:
    """One line per TP with ``--pipeline-parallel-size`` > 1: each stage's layers and
    block size (:func:`kvalign.alignment.pp_stages`), the stage that keeps its block named."""
    notes = []
    for tp, rank in sorted(ranks.items()):
        if not rank.pp_stages:
            continue
        parts = []
        for stage in rank.pp_stages:
            what = (
                f"block {stage.block_size}"
                if stage.aligned
                else f"no attention layer, keeps block {stage.block_size}"
            )
            parts.append(
                f"stage {stage.rank} layers {stage.start}-{stage.end - 1} "
                f"({stage.attention_layers} attention, {stage.state_layers} state): {what}"
            )
        notes.append(f"pipeline stages at TP {tp}: " + "; ".join(parts))
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


def _padding_text(padding: dict[int, float]) -> str:
    cost = ", ".join(f"TP {tp} {pct:.2f}%" for tp, pct in sorted(padding.items()))
    text = f"Mamba page padding: {cost}"
    costly = sorted(tp for tp, pct in padding.items() if pct > 100)
    if costly:
        text += (
            f"; at TP {', '.join(map(str, costly))} the padding exceeds the state itself: "
            "closer prefill/decode TP sizes cost less"
        )
    return text


def _recommend(report_levels: list[Level | None], geometry: ModelGeometry, engine: EngineConfig,
               prefill_tps: list[int], decode_tps: list[int], cache: RunCache,
               report: CheckReport | None = None) -> Recommendation:  # fmt: skip
    invalid = {tp for tp, r in (report.ranks if report else {}).items() if not r.usable}
    good_p = [tp for tp in prefill_tps if tp not in invalid]
    good_d = [tp for tp in decode_tps if tp not in invalid]
    if invalid and good_p and good_d:
        # TP sizes the model rejects: no block size fixes those, but the valid pools still
        # get the block size that fixes their pairs (an invalid TP must not hide it)
        whole = _recommend(report_levels, geometry, engine, prefill_tps, decode_tps, cache)
        assert report is not None
        good = set(good_p) | set(good_d)
        part = _recommend(report.levels(good), geometry, engine, good_p, good_d, cache)
        if part.block_size is None:
            return whole
        tps = tuple(sorted(set(good_p) | set(good_d)))
        only = ", ".join(map(str, tps))
        # "prefill TP 16: TP 16 is invalid …" and "decode TP 16: …" say the same thing once
        blockers = tuple(
            dict.fromkeys(
                b.split(": ", 1)[1] if b.startswith(("prefill TP ", "decode TP ")) else b
                for b in whole.blockers
            )
        )
        return part._replace(
            text=f"{part.text.replace(' pool (', f' pool at TP {only} (', 1)}; "
            + "; ".join(blockers),
            blockers=blockers,
            raised=whole.raised,
            only_tps=tps,
        )
    pools = [FixPool(geometry, engine, tp, f"prefill TP {tp}") for tp in prefill_tps]
    pools += [FixPool(geometry, engine, tp, f"decode TP {tp}") for tp in decode_tps]
    pairs = [
        (p, len(prefill_tps) + d) for p in range(len(prefill_tps)) for d in range(len(decode_tps))
    ]
    needed = any(level in ("warning", "error") for level in report_levels)
    raised = tuple(dict.fromkeys(raised_block_sizes(pools, cache)))
    needed = needed or bool(raised)  # raised on some GPU class: say which --block-size holds
    fix: Fix = prove_fix(pools, pairs, engine.profile, cache)
    if not fix.aligned:
        kind = "attention-free" if geometry.attention_free else "attention-only"
        return Recommendation(
            None, {}, False,
            f"nothing to align: {kind} model, vLLM does no hybrid block alignment",
        )  # fmt: skip
    if fix.blockers:
        return Recommendation(
            None, {}, needed, "no --block-size can fix this: " + "; ".join(fix.blockers),
            blockers=fix.blockers, raised=raised,
        )  # fmt: skip
    if fix.block_size is None:
        return Recommendation(
            None, {}, needed, f"no --block-size fixes every pair: {fix.unproven}", raised=raised
        )
    if not needed:
        return Recommendation(None, {}, False, "no change needed", raised=raised)
    by_tp: dict[int, float] = {}
    for label, pct in fix.padding_pct:
        by_tp[int(label.rsplit(" ", 1)[1])] = pct
    text = (
        f"set --block-size {fix.block_size} on every prefill and decode pool ({fix.holds_on}; "
        f"{_padding_text(by_tp)})"
    )
    return Recommendation(fix.block_size, by_tp, True, text, proven_on=fix.proven_on, raised=raised)


def analyze(
    geometry: ModelGeometry,
    settings: Settings,
    prefill_tps: list[int],
    decode_tps: list[int],
) -> CheckReport:
    """Analyse every prefill × decode TP pair for one model and settings.

    Pairs follow vLLM's rules; with ``settings.alignment == "tp-stable"`` the same pairs
    under the vLLM PR 45575 proposal are added as a what-if (``tp_stable_pairs``).

    Raises:
        InvalidSettings, NotModelled: see :func:`kvalign.alignment.analyze_rank`.
    """
    cache = RunCache()
    engine = cache.resolve(geometry, settings)
    profile = engine.profile
    tps = sorted(set(prefill_tps) | set(decode_tps))
    ranks = {tp: cache.rank(geometry, engine, tp) for tp in tps}
    pairs = tuple(
        analyze_pair(ranks[p], ranks[d], "vllm", profile) for p in prefill_tps for d in decode_tps
    )
    what_if: tuple[PairResult, ...] | None = None
    if settings.alignment == "tp-stable":
        what_if = tuple(
            analyze_pair(ranks[p], ranks[d], "tp-stable", profile)
            for p in prefill_tps
            for d in decode_tps
        )
    notes = [engine.profile_note, *geometry.notes, *engine.notes]
    if geometry.attention is not None:
        chosen = engine.backend.name if engine.backend is not None else None
        notes.append(platform_note(settings.attention_backend, settings.gpu, chosen))
    if (
        geometry.state is not None
        and geometry.state.family == "gdn"
        and profile.gdn_checkpoint_alignment
        and engine.prefix_caching
    ):
        notes.append(engine.checkpoint_note)
    if not engine.prefix_caching and geometry.is_hybrid:
        source = (
            "--no-enable-prefix-caching"
            if settings.enable_prefix_caching is False
            else f"vLLM {profile.name}'s default for hybrid models"
        )
        if profile.prefix_caching_refusal(geometry.model_type, True):
            source = f"vLLM {profile.name} turns it off for {geometry.model_type}"
        notes.append(
            f"prefix caching is off ({source}): logical block sizes only matter for "
            "prefix-cache hashing, so drift alone does not fail the gate"
        )
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
    elif not geometry.is_hybrid:
        notes.append("attention-only model: vLLM does no hybrid block alignment")
    family = geometry.state.family if geometry.state is not None else None
    if settings.gdn_prefill_backend != "auto" and family != "gdn":
        notes.append("--gdn-prefill-backend has no effect: the model has no gated delta net layers")
    if settings.alignment == "tp-stable":
        notes.append(
            "--alignment tp-stable: the vLLM PR 45575 proposal, in no vLLM release; shown as "
            "a what-if next to vLLM's rules, which decide the verdict and the exit code"
        )
    if geometry.is_hybrid and profile.nixl_hybrid and profile.kv_transfer_disables_hma:
        notes.append(
            f"vLLM {profile.name}: --kv-transfer-config turns the hybrid KV-cache manager off, "
            "and NIXL then cannot serve this hybrid model: start both pools with "
            "--no-disable-hybrid-kv-cache-manager (audit rule KVA012)"
        )
    notes += economics_notes(ranks, engine)
    notes += max_model_len_notes(ranks, engine)
    notes += pp_stage_notes(ranks)
    notes += kv_cache_group_notes(ranks)
    report = CheckReport(
        geometry=geometry,
        settings=settings,
        prefill_tps=tuple(prefill_tps),
        decode_tps=tuple(decode_tps),
        ranks=ranks,
        pairs=pairs,
        recommendation=Recommendation(None, {}, False, ""),
        engine=engine,
        notes=tuple(notes),
        tp_stable_pairs=what_if,
    )
    rec = _recommend(report.levels(), geometry, engine, prefill_tps, decode_tps, cache, report)
    return report._replace(recommendation=rec)
