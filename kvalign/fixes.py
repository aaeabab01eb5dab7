"""Fixes proven before they are printed: the ``--block-size`` every pool keeps on every GPU.

A candidate ``--block-size B`` (spec §7, :func:`kvalign.alignment.block_requirement`) is
re-run through kvalign's own arithmetic with ``--block-size B`` for every pool on every GPU
class the pool may run on: its ``--gpu`` (or node label) when known, else each class the
rules distinguish (:data:`PLATFORM_CLASSES`). ``B`` is recommended only when every pool
keeps exactly ``B`` on all of them and every pair's verdict is then ``ok``; otherwise the
next multiple of the alignment unit is tried. When no block size can fix a pair (the
release's NIXL connector lacks hybrid P/D, a TP the model rejects) the fix says what would
instead (:func:`kvalign.policy.blocking_limit`). Mirrors ``Platform._align_hybrid_block_size``
(``vllm/platforms/interface.py``) by calling :func:`kvalign.alignment.analyze_rank`. No I/O.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from kvalign.alignment import RankResult, analyze_rank, block_requirement
from kvalign.backends import get_gpu, platform_for
from kvalign.engine import EngineConfig, create_engine_config
from kvalign.errors import InvalidSettings
from kvalign.geometry import ModelGeometry
from kvalign.policy import analyze_pair, blocking_limit
from kvalign.settings import Settings
from kvalign.versions import Profile

#: how many multiples of the alignment unit above the first candidate are tried.
MAX_STEPS = 64
#: TP sizes offered when a pool's TP is invalid.
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class GpuClass:
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
        settings: the pool's settings as given (its own ``--block-size`` is replaced).
        tp: tensor parallel size.
        label: how messages name the pool (``prefill TP 8``, ``decode/vllm-decode``).
    """

    geometry: ModelGeometry
    settings: Settings
    tp: int
    label: str


@dataclass(frozen=True)
class Fix:
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


def valid_tps(geometry: ModelGeometry, settings: Settings) -> list[int]:
    """TP sizes from :data:`TP_CHOICES` the model accepts and loads at."""
    engine = create_engine_config(geometry, settings)
    return [tp for tp in TP_CHOICES if analyze_rank(geometry, engine, tp).usable]


def _gpu_name(settings: Settings) -> str:
    gpu = get_gpu(settings.gpu)
    return gpu.name if gpu is not None else ""


def _scenarios(pools: list[FixPool]) -> list[tuple[str, list[Settings | None]]]:
    """``(label, per-pool settings)`` for each GPU class the unpinned pools may share;
    pinned pools keep their GPU. A pool whose backend cannot run on a class gets
    ``None`` there (it cannot be deployed on it)."""
    unpinned = [p for p in pools if p.settings.gpu is None]
    classes = gpu_classes(unpinned[0].settings) if unpinned else (None,)
    pinned = sorted({_gpu_name(p.settings) for p in pools if p.settings.gpu})
    out: list[tuple[str, list[Settings | None]]] = []
    for cls in classes:
        per_pool: list[Settings | None] = []
        for pool in pools:
            settings = pool.settings
            if settings.gpu is None and cls is not None:
                settings = dataclasses.replace(settings, gpu=cls.gpu)
            try:
                create_engine_config(pool.geometry, settings)
            except InvalidSettings:
                per_pool.append(None)
                continue
            per_pool.append(settings)
        label = "/".join(pinned) if cls is None else cls.label
        if any(s is not None for s in per_pool):
            out.append((label, per_pool))
    return out


def _ranks(
    pools: list[FixPool], per_pool: list[Settings | None], block: int | None
) -> list[RankResult | None]:
    ranks: list[RankResult | None] = []
    for pool, settings in zip(pools, per_pool, strict=True):
        if settings is None:
            ranks.append(None)
            continue
        if block is not None:  # None: the pool's own --block-size
            settings = dataclasses.replace(settings, block_size=block)
        engine: EngineConfig = create_engine_config(pool.geometry, settings)
        ranks.append(analyze_rank(pool.geometry, engine, pool.tp))
    return ranks


def prove_fix(pools: list[FixPool], pairs: list[tuple[int, int]], profile: Profile) -> Fix:
    """The smallest ``--block-size`` every pool keeps on every GPU class it may run on and
    that makes every pair ``ok``, or what would fix the pairs when no block size can.

    ``pairs`` are ``(prefill index, decode index)`` into ``pools``; ``profile`` is the
    release whose NIXL rules pair them.

    Raises:
        InvalidSettings, NotModelled: a pool's settings are rejected (as
            :func:`kvalign.alignment.analyze_rank`).
    """
    own = [
        analyze_rank(p.geometry, create_engine_config(p.geometry, p.settings), p.tp) for p in pools
    ]
    # one line per invalid (model, TP), naming every pool that uses it
    invalid: dict[tuple[str, int, str, str], list[str]] = {}
    for pool, rank in zip(pools, own, strict=True):
        if not rank.usable:
            choices = ", ".join(map(str, valid_tps(pool.geometry, pool.settings))) or "none"
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
    scenarios = _scenarios(pools)
    unit, need = 1, 0
    for _, per_pool in scenarios:
        for pool, settings in zip(pools, per_pool, strict=True):
            found = (
                None if settings is None else block_requirement(pool.geometry, settings, pool.tp)
            )
            if found is not None:
                unit, need = math.lcm(unit, found[0]), max(need, found[1])
    if need == 0:
        return Fix(None, aligned=False)
    block = unit * -(-need // unit)
    for _ in range(MAX_STEPS):
        kept, verdicts_ok, why = True, True, ""
        padding: dict[str, float] = {}
        for label, per_pool in scenarios:
            ranks = _ranks(pools, per_pool, block)
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
            proven = [label for label, _ in scenarios]
            if any(p.settings.gpu is None for p in pools):  # and on each pinned pool's GPU
                proven += sorted(
                    {f"{_gpu_name(p.settings)} (pinned)" for p in pools if p.settings.gpu}
                )
            return Fix(block, tuple(proven), tuple(padding.items()))
        if kept:  # every pool keeps the block, yet a pair still differs: not a block-size fix
            return Fix(None, unproven=why)
        block += unit
    return Fix(None, unproven=f"no --block-size up to {block - unit} is kept by every pool")


def raised_block_sizes(pools: list[FixPool]) -> list[str]:
    """Where vLLM would raise a pool's own ``--block-size`` (hybrid alignment), one line
    per pool and resulting size naming the GPU classes, e.g. ``prefill TP 8: vLLM raises
    --block-size 2096 to 8,384 on H100/H200 (SM90), B200 (SM100)``."""
    mine = [p for p in pools if p.settings.block_size is not None]
    if not mine:
        return []
    found: dict[tuple[str, int, int], list[str]] = {}
    for label, per_pool in _scenarios(mine):
        for pool, rank in zip(mine, _ranks(mine, per_pool, None), strict=True):
            asked = pool.settings.block_size
            assert asked is not None
            if rank is None or not rank.usable or rank.block_size in (None, asked):
                continue
            assert rank.block_size is not None
            key = (pool.label, asked, rank.block_size)
            if label not in found.setdefault(key, []):
                found[key].append(label)
    return [
        f"{who}: vLLM raises --block-size {asked} to {new:,} on {', '.join(where)}"
        for (who, asked, new), where in found.items()
    ]
