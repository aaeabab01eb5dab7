"""Fixes proven before they are printed: the ``--block-size`` every pool keeps on every GPU.

A candidate ``--block-size B`` (:func:`kvalign.alignment.block_requirement`; docs/policy.md,
"The fix is proven before it is printed") is re-run through kvalign's own arithmetic with
``--block-size B`` for every pool on every GPU class the pool may run on: its ``--gpu`` (or node
label) when known, else each class the rules distinguish (:data:`PLATFORM_CLASSES`). ``B`` is
recommended only when every pool keeps exactly ``B`` on all of them and every pair's verdict is
then ``ok``; otherwise the next multiple of the alignment unit is tried. When no block size can
fix a pair (the release's NIXL connector lacks hybrid P/D, a TP the model rejects) the fix says
what would instead (:func:`kvalign.policy.blocking_limit`). Mirrors
``Platform._align_hybrid_block_size`` (``vllm/platforms/interface.py``) by calling
:func:`kvalign.alignment.analyze_rank`.

Resolved once: each pool arrives with its own :class:`~kvalign.engine.EngineConfig`; each
(pool settings, GPU class) is resolved once through an :class:`~kvalign.engine.EngineCache`
shared by the run, and candidate block sizes only vary the block size of those configs
(:meth:`~kvalign.engine.EngineConfig.with_block_size`). No I/O.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import NamedTuple

from kvalign.alignment import RankResult, analyze_rank, block_requirement
from kvalign.backends import get_gpu, platform_for
from kvalign.engine import EngineCache, EngineConfig
from kvalign.errors import InvalidSettings, KvalignError
from kvalign.geometry import ModelGeometry
from kvalign.policy import analyze_pair, blocking_limit
from kvalign.settings import Settings
from kvalign.versions import Profile

#: how many multiples of the alignment unit above the first candidate are tried.
MAX_STEPS = 64
#: TP sizes offered when a pool's TP is invalid.
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)


class GpuClass(NamedTuple):
    """A GPU class the rules treat alike, with the ``--gpu`` value that stands for it.

    Attributes:
        label: shown to users, e.g. ``H100/H200 (SM90)``.
        gpu: the representative ``--gpu`` name (a key of :data:`kvalign.backends.GPUS`).
    """

    label: str
    gpu: str


#: GPU classes by platform, for pools whose GPU is unknown. CUDA classes differ in the
#: FlashInfer GDN prefill (SM90; SM100/SM120 with key head dim 128), FlashInfer's large
#: kernel pages (SM100 family) and the model-config-era head-size-256 rule.
PLATFORM_CLASSES: dict[str, tuple[GpuClass, ...]] = {
    "cuda": (
        GpuClass("A100 (SM80)", "A100"),
        GpuClass("H100/H200 (SM90)", "H100"),
        GpuClass("B200 (SM100)", "B200"),
        GpuClass("B300 (SM103)", "B300"),
        GpuClass("RTX-PRO-6000 (SM120)", "RTX-PRO-6000"),
    ),
    "rocm": (GpuClass("ROCm (MI300X)", "MI300X"),),
    "xpu": (GpuClass("XPU (Max-1550)", "Max-1550"),),
    "cpu": (GpuClass("CPU", "CPU"),),
}


class RunCache(EngineCache):
    """One run's memo (a ``check``, an ``audit``): each (model, settings) resolved once
    (:class:`~kvalign.engine.EngineCache`), each (model, settings, TP) analysed once, and
    each distinct set of pools and pairs proven once (an audit of many copies of one
    deployment proves its fix once). Pure: every entry is a function of its key."""

    def __init__(self) -> None:
        super().__init__()
        self._ranks: dict[tuple[int, Settings, int], RankResult] = {}
        self._fixes: dict[tuple[object, ...], Fix] = {}
        #: (pool index, asked, raised to, GPU class) per distinct set of pools, by their
        #: (model, settings, TP) (:func:`raised_block_sizes`)
        self._raised: dict[tuple[object, ...], list[tuple[int, int, int, str]]] = {}

    def rank(self, geometry: ModelGeometry, engine: EngineConfig, tp: int) -> RankResult:
        """:func:`kvalign.alignment.analyze_rank`, once per (model, settings, TP).

        Raises:
            InvalidSettings: as :func:`kvalign.alignment.analyze_rank`.
        """
        key = (id(geometry), engine.settings, tp)
        found = self._ranks.get(key)
        if found is None:
            self.keep(geometry)
            found = self._ranks[key] = analyze_rank(geometry, engine, tp)
        return found


def gpu_classes(settings: Settings) -> tuple[GpuClass, ...]:
    """The GPU classes a pool with ``settings`` may run on: its ``--gpu`` alone, else every
    class of the platform its backend runs on (an unspecified GPU is a CUDA GPU unless the
    backend runs on one other platform only).

    Raises:
        InvalidSettings: an unknown GPU name.
    """
    gpu = get_gpu(settings.gpu)
    if gpu is not None:
        return (GpuClass(gpu.name, gpu.name),)
    return PLATFORM_CLASSES[platform_for(settings.attention_backend.strip().upper(), None)]


@dataclass(frozen=True)
class FixPool:
    """One pool a fix must hold for.

    Attributes:
        geometry: the pool's model.
        engine: the pool's settings as given, resolved (its own ``--block-size`` is
            replaced by each candidate).
        tp: tensor parallel size.
        label: how messages name the pool (``prefill TP 8``, ``decode/vllm-decode``).
    """

    geometry: ModelGeometry
    engine: EngineConfig
    tp: int
    label: str

    @property
    def settings(self) -> Settings:
        """The pool's settings as given."""
        return self.engine.settings


class Fix(NamedTuple):
    """The proven fix for a set of pools and pairs.

    Attributes:
        block_size: the ``--block-size`` (tokens) every pool keeps on every class in
            ``proven_on``; ``None`` when no block size fixes the pairs or none is needed.
        proven_on: GPU classes (labels) the block size was re-checked on.
        padding_pct: Mamba page padding % per pool label at ``block_size``.
        blockers: what would fix the pairs when no block size can (one line each).
        unproven: why no block size was found although nothing blocks ("" otherwise).
        aligned: the model has hybrid alignment at all (``False``: nothing to align).
    """

    block_size: int | None
    proven_on: tuple[str, ...] = ()
    padding_pct: tuple[tuple[str, float], ...] = ()
    blockers: tuple[str, ...] = ()
    unproven: str = ""
    aligned: bool = True

    @property
    def holds_on(self) -> str:
        """``holds on A100 (SM80), H100/H200 (SM90), …`` (``""`` without a block size)."""
        if self.block_size is None or not self.proven_on:
            return ""
        return "holds on " + ", ".join(self.proven_on)


def valid_tps(geometry: ModelGeometry, engine: EngineConfig) -> list[int]:
    """TP sizes from :data:`TP_CHOICES` the model accepts and loads at under ``engine``."""
    return [tp for tp in TP_CHOICES if analyze_rank(geometry, engine, tp).usable]


def _gpu_name(settings: Settings) -> str:
    gpu = get_gpu(settings.gpu)
    return gpu.name if gpu is not None else ""


#: per GPU class: its label and each pool's config resolved there (``None``: the pool's
#: backend cannot run on that class).
Scenario = tuple[str, list[EngineConfig | None]]


def scenarios(pools: list[FixPool], cache: EngineCache) -> list[Scenario]:
    """``(label, per-pool config)`` for each GPU class any unpinned pool may run on;
    pinned pools keep their own config. A pool whose backend cannot run on a class gets
    ``None`` there (it cannot be deployed on it). Each (pool settings, class) is resolved
    once through ``cache``."""
    unpinned = [p for p in pools if p.settings.gpu is None]
    # every class any unpinned pool may run on (a ROCm pool beside CUDA pools: the ROCm
    # class and the CUDA ones), each once, in the order found
    found: dict[GpuClass, None] = {}
    for pool in unpinned:
        found.update(dict.fromkeys(gpu_classes(pool.settings)))
    classes: tuple[GpuClass | None, ...] = tuple(found) if unpinned else (None,)
    pinned = sorted({_gpu_name(p.settings) for p in pools if p.settings.gpu})
    out: list[Scenario] = []
    for cls in classes:
        per_pool: list[EngineConfig | None] = []
        for pool in pools:
            if pool.settings.gpu is not None or cls is None:
                per_pool.append(pool.engine)
                continue
            settings = dataclasses.replace(pool.settings, gpu=cls.gpu)
            try:
                per_pool.append(cache.resolve(pool.geometry, settings))
            except InvalidSettings:
                per_pool.append(None)
        label = "/".join(pinned) if cls is None else cls.label
        if any(e is not None for e in per_pool):
            out.append((label, per_pool))
    return out


def _ranks(
    pools: list[FixPool], per_pool: list[EngineConfig | None], block: int | None, cache: RunCache
) -> list[RankResult | None]:
    """Each pool's rank on one GPU class, with ``--block-size block`` (``None``: its own)."""
    ranks: list[RankResult | None] = []
    for pool, engine in zip(pools, per_pool, strict=True):
        if engine is None:
            ranks.append(None)
            continue
        if block is not None:
            engine = engine.with_block_size(block)
        ranks.append(cache.rank(pool.geometry, engine, pool.tp))
    return ranks


def prove_fix(
    pools: list[FixPool],
    pairs: list[tuple[int, int]],
    profile: Profile,
    cache: RunCache | None = None,
) -> Fix:
    """The smallest ``--block-size`` every pool keeps on every GPU class it may run on and
    that makes every pair ``ok``, or what would fix the pairs when no block size can.

    ``pairs`` are ``(prefill index, decode index)`` into ``pools``; ``profile`` is the
    release whose NIXL rules pair them; ``cache`` resolves each pool on each GPU class
    once (share it with :func:`raised_block_sizes` of the same run).

    Raises:
        InvalidSettings, NotModelled: a pool's settings are rejected (as
            :func:`kvalign.alignment.analyze_rank`).
    """
    cache = cache if cache is not None else RunCache()
    key = (
        tuple((id(p.geometry), p.settings, p.tp, p.label) for p in pools),
        tuple(pairs),
        profile.name,
    )
    found = cache._fixes.get(key)
    if found is None:
        for pool in pools:
            cache.keep(pool.geometry)
        found = cache._fixes[key] = _prove_fix(pools, pairs, profile, cache)
    return found


def _prove_fix(
    pools: list[FixPool], pairs: list[tuple[int, int]], profile: Profile, cache: RunCache
) -> Fix:
    own = [cache.rank(p.geometry, p.engine, p.tp) for p in pools]
    # one line per invalid (model, TP), naming every pool that uses it
    invalid: dict[tuple[str, int, str, str], list[str]] = {}
    for pool, rank in zip(pools, own, strict=True):
        if not rank.usable and not rank.stage_block_problem:
            # (a pipeline stage that keeps its block is fixed by the block size below)
            choices = ", ".join(map(str, valid_tps(pool.geometry, pool.engine))) or "none"
            key = (pool.geometry.model_id, pool.tp, rank.problem, choices)
            labels = invalid.setdefault(key, [])
            if pool.label not in labels:
                labels.append(pool.label)
    blockers = [
        f"{', '.join(labels)}: TP {tp} is invalid for {model} ({problem}): use a valid TP "
        f"({choices})"
        for (model, tp, problem, choices), labels in invalid.items()
    ]
    for p, d in pairs:
        limit = blocking_limit(profile, own[p], own[d])
        if limit and limit not in blockers:
            blockers.append(limit)
    if blockers:
        return Fix(None, blockers=tuple(blockers))
    classes = scenarios(pools, cache)
    unit, need = 1, 0
    for _, per_pool in classes:
        for pool, engine in zip(pools, per_pool, strict=True):
            found = None if engine is None else block_requirement(pool.geometry, engine, pool.tp)
            if found is not None:
                unit, need = math.lcm(unit, found[0]), max(need, found[1])
    if need == 0:
        return Fix(None, aligned=False)
    block = unit * -(-need // unit)
    for _ in range(MAX_STEPS):
        kept, verdicts_ok, why = True, True, ""
        padding: dict[str, float] = {}
        for label, per_pool in classes:
            ranks = _ranks(pools, per_pool, block, cache)
            for pool, result in zip(pools, ranks, strict=True):
                if result is None:
                    continue
                if result.block_size != block:
                    kept = False
                if result.mamba_padding_pct is not None:
                    padding.setdefault(pool.label, result.mamba_padding_pct)
            if not kept:
                break
            for p, d in pairs:
                rp, rd = ranks[p], ranks[d]
                if rp is None or rd is None:
                    continue
                pair = analyze_pair(rp, rd, "vllm", profile)
                if pair.verdict not in ("ok", "nothing-to-align"):
                    verdicts_ok = False
                    why = (
                        f"with --block-size {block} on {label}, {pools[p].label} → "
                        f"{pools[d].label} is still {pair.verdict}: {pair.reason}"
                    )
                    backends = sorted({r.backend for r in ranks if r is not None and r.backend})
                    if len(backends) > 1:
                        why += (
                            f"; the pools run different attention backends "
                            f"({', '.join(backends)}): use the same --attention-backend on "
                            "every pool"
                        )
                    break
            if not verdicts_ok:
                break
        if kept and verdicts_ok:
            proven = [label for label, _ in classes]
            if any(p.settings.gpu is None for p in pools):  # and on each pinned pool's GPU
                proven += sorted(
                    {f"{_gpu_name(p.settings)} (pinned)" for p in pools if p.settings.gpu}
                )
            return Fix(block, tuple(proven), tuple(padding.items()))
        if kept:  # every pool keeps the block, yet a pair still differs: not a block-size fix
            return Fix(None, unproven=why)
        block += unit
    return Fix(None, unproven=f"no --block-size up to {block - unit} is kept by every pool")


def _raised(pools: list[FixPool], cache: RunCache | None) -> dict[tuple[str, int, int], list[str]]:
    """``(pool label, asked, raised to) → GPU class labels`` where vLLM raises a pool's own
    ``--block-size`` (in the order found)."""
    mine = [p for p in pools if p.settings.block_size is not None]
    if not mine:
        return {}
    cache = cache if cache is not None else RunCache()
    # what is raised depends on each pool's model, settings and TP, not on its label: an
    # audit of many copies of one deployment computes it once
    shape = tuple((id(p.geometry), p.settings, p.tp) for p in mine)
    raises = cache._raised.get(shape)
    if raises is None:
        raises = []
        for label, per_pool in scenarios(mine, cache):
            for index, (pool, rank) in enumerate(
                zip(mine, _ranks(mine, per_pool, None, cache), strict=True)
            ):
                asked = pool.settings.block_size
                assert asked is not None
                if rank is None or not rank.usable or rank.block_size in (None, asked):
                    continue
                assert rank.block_size is not None
                raises.append((index, asked, rank.block_size, label))
        for pool in mine:
            cache.keep(pool.geometry)
        cache._raised[shape] = raises
    found: dict[tuple[str, int, int], list[str]] = {}
    for index, asked, new, label in raises:
        key = (mine[index].label, asked, new)
        if label not in found.setdefault(key, []):
            found[key].append(label)
    return found


def _raised_text(asked: int, new: int, where: list[str]) -> str:
    return f"vLLM raises --block-size {asked} to {new:,} on {', '.join(where)}"


def raised_block_sizes(pools: list[FixPool], cache: RunCache | None = None) -> list[str]:
    """Where vLLM would raise a pool's own ``--block-size`` (hybrid alignment), one line
    per pool and resulting size naming the GPU classes, e.g. ``prefill TP 8: vLLM raises
    --block-size 2096 to 8,384 on H100/H200 (SM90), B200 (SM100)``. ``cache`` as in
    :func:`prove_fix`."""
    return [
        f"{who}: {_raised_text(asked, new, where)}"
        for (who, asked, new), where in _raised(pools, cache).items()
    ]


def raised_by_pool(pools: list[FixPool], cache: RunCache | None = None) -> dict[str, list[str]]:
    """:func:`raised_block_sizes` keyed by pool label, each line without the label
    (``vLLM raises --block-size 2096 to 8,384 on H100/H200 (SM90), …``)."""
    out: dict[str, list[str]] = {}
    for (who, asked, new), where in _raised(pools, cache).items():
        out.setdefault(who, []).append(_raised_text(asked, new, where))
    return out


class GroupFix:
    """One audit group's fix, proven once on first use (:func:`prove_fix`) and then kept:
    every finding of the group names the same fix (an audit of 24 prefill x 24 decode
    pools in one group would otherwise prove it 720 times). The audit builds it with its
    group; the rules read :attr:`text`.

    Args:
        pools: the group's pools, each with its resolved config.
        pairs: ``(prefill index, decode index)`` into ``pools``.
        profile: the release whose NIXL rules pair them.
        cache: the run's :class:`~kvalign.engine.EngineCache`.
        settings_differ: the pools' KV-cache settings differ (audit rule KVA005).
    """

    def __init__(
        self,
        pools: list[FixPool],
        pairs: list[tuple[int, int]],
        profile: Profile,
        cache: RunCache,
        settings_differ: bool = False,
    ) -> None:
        self._pools, self._pairs, self._profile = pools, pairs, profile
        self._cache, self._differ = cache, settings_differ
        self._text: str | None = None
        self._raised: dict[str, list[str]] | None = None

    @property
    def raised(self) -> dict[str, list[str]]:
        """Where vLLM raises each pool's own ``--block-size`` on a GPU class it may run on
        (:func:`raised_by_pool`, keyed by pool label), computed once."""
        if self._raised is None:
            self._raised = raised_by_pool(self._pools, self._cache)
        return self._raised

    @property
    def text(self) -> str:
        """The remediation, one line: ``set --block-size B on every prefill and decode
        pool (holds on …)`` with each pool's own settings on every GPU class it may run
        on, or what would fix the pairs when no block size can. When the pools' KV-cache
        settings differ the text says to fix that first: ``B`` still works then, but a
        smaller one may."""
        if self._text is None:
            self._text = self._prove()
        return self._text

    def _prove(self) -> str:
        generic = "set the same --block-size on every pool"
        if not self._pools:
            return generic
        try:
            fix = prove_fix(self._pools, self._pairs, self._profile, self._cache)
        except KvalignError:  # pragma: no cover - the pools were analysed with these settings
            return generic
        if fix.blockers:
            return "no --block-size can fix this: " + "; ".join(fix.blockers)
        if fix.block_size is None:
            return f"no --block-size fixes every pair: {fix.unproven}" if fix.unproven else generic
        text = (
            f"set --block-size {fix.block_size} on every prefill and decode pool ({fix.holds_on})"
        )
        if self._differ:
            text += (
                " (each pool's own settings; their KV-cache settings differ: fix KVA005 "
                "first, then a smaller --block-size may do)"
            )
        return text
