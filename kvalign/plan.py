"""``kvalign plan``: the one block size every component must share, its cost, and the settings
that follow it. Pure arithmetic over :mod:`kvalign.fixes` and :mod:`kvalign.alignment`; no I/O.

The common block size ``N`` is :func:`kvalign.fixes.prove_fix`'s answer (the same proof as
``check``'s fix: fed back as ``--block-size N``, every pool keeps ``N`` on every GPU class it
may run on and every pair is ``ok``). Everything else is derived from ``N``:

* cost per pool: Mamba page padding % (``Platform._align_hybrid_block_size``,
  ``vllm/platforms/interface.py``) and the KV capacity the padding takes, in attention tokens
  per GiB of Mamba-state pages (:func:`kv_tokens_lost_per_gib`);
* candidates: a lower-padding TP pair, a TP change that makes the pools agree with no
  ``--block-size``, and the TP-stable proposal (vLLM PR 45575, in no release);
* dependent settings (:class:`DependentSetting`), each with its rule and source;
* prefix-cache granularity (:class:`Granularity`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from packaging.version import Version

from kvalign.alignment import RankResult, analyze_rank
from kvalign.engine import EngineConfig, create_engine_config
from kvalign.errors import InvalidSettings, KvalignError
from kvalign.fixes import Fix, FixPool, gpu_classes, prove_fix
from kvalign.geometry import ModelGeometry
from kvalign.pd import hit_floor_blocks
from kvalign.policy import analyze_pair
from kvalign.settings import Settings
from kvalign.versions import PROFILES, Profile

#: bytes in one GiB.
GIB = 1 << 30
#: LMCache's default ``chunk_size`` in tokens (``lmcache/v1/config.py`` ``_CONFIG_DEFINITIONS``).
LMCACHE_DEFAULT_CHUNK = 256
#: prompt lengths (tokens, equally likely) used when no ``--prefix-lengths`` file is given.
DEFAULT_PREFIX_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
#: the ``vllm serve`` ``--max-num-batched-tokens`` default on H100-class GPUs (≥ 70 GiB, not
#: A100): ``EngineArgs.get_batch_defaults`` (``vllm/engine/arg_utils.py``, 0.33.0).
MNBT_FLOOR = 8192
#: releases whose ``VllmConfig`` asserts ``block_size <= max_num_batched_tokens`` in Mamba cache
#: mode ``align`` (``vllm/config/vllm.py``; read in 0.16.0: absent, 0.17.0-0.26.0: present,
#: 0.27.0: removed).
MNBT_RULE_RELEASES = ("0.17.0", "0.27.0")
#: stacks whose router or indexer settings ``plan`` lists.
STACKS = ("vllm", "llm-d", "dynamo", "kserve", "production-stack")


@dataclass(frozen=True)
class PoolPlan:
    """One pool at the common block size.

    Attributes:
        role: ``prefill`` or ``decode``.
        tp: tensor parallel size.
        own_block_size: the block size (tokens) the pool picks with no ``--block-size``
            (on the first GPU class it may run on).
        block_size: the block size it keeps with ``--block-size N`` (``N``).
        kernel_block_size: its kernel (NIXL transfer) block size at ``N``.
        padding_pct: Mamba page padding % at ``N`` (``None`` without state layers).
        kv_tokens_lost_per_gib: :func:`kv_tokens_lost_per_gib` at ``N`` (0 without state).
    """

    role: str
    tp: int
    own_block_size: int | None
    block_size: int | None
    kernel_block_size: int | None
    padding_pct: float | None
    kv_tokens_lost_per_gib: int


@dataclass(frozen=True)
class Candidate:
    """Another way to make the pools agree, and what it costs.

    Attributes:
        kind: ``lower-padding``, ``tp-change`` (no ``--block-size`` needed) or
            ``tp-stable`` (the vLLM PR 45575 proposal, in no release).
        prefill_tp, decode_tp: the TP sizes it uses.
        block_size: the block size every pool then uses (tokens), ``None`` when the
            pools would still disagree (``tp-stable`` only).
        change: the command-line change (``""`` when none is needed).
        padding_pct: Mamba padding % per role at that block size.
        note: one line for humans.
    """

    kind: str
    prefill_tp: int
    decode_tp: int
    block_size: int | None
    change: str
    padding_pct: tuple[tuple[str, float], ...]
    note: str


@dataclass(frozen=True)
class DependentSetting:
    """A setting that must follow ``N``.

    Attributes:
        component: who reads it (``vLLM prefill``, ``LMCache``, ``llm-d EPP``, ...).
        name: the setting as that project spells it.
        value: its value (``""`` when no value is required on this release).
        rule: the rule the value satisfies.
        source: the file and function, or the project's docs, the rule mirrors.
    """

    component: str
    name: str
    value: str
    rule: str
    source: str


@dataclass(frozen=True)
class Granularity:
    """Prefix-cache granularity at ``N``.

    Attributes:
        prefix_caching: whether prefix caching is on for the pools.
        hit_floor_blocks: blocks of the shortest prefix that can hit (1, 2 with
            speculative tokens).
        hit_floor_tokens: the same in tokens.
        distribution: where ``lengths`` came from (a file name or the stated default).
        lengths: the prompt lengths (tokens), equally likely.
        expected_cached_tokens: mean cached tokens per request on a repeat of its prefix.
        expected_tail_tokens: mean tokens per request past the last cached block
            (recomputed on every repeat).
        prefix_match_unit: what ``--prefix-match-unit`` / fine-grained Mamba prefix caching
            change on this release.
    """

    prefix_caching: bool
    hit_floor_blocks: int
    hit_floor_tokens: int
    distribution: str
    lengths: tuple[int, ...]
    expected_cached_tokens: float
    expected_tail_tokens: float
    prefix_match_unit: str


@dataclass(frozen=True)
class Plan:
    """The full result of ``kvalign plan``.

    Attributes:
        model: the model id.
        release: the vLLM release profile name in force.
        release_first: its first release (``0.33.0``), for image tags.
        stack: the stack whose settings are listed.
        lmcache: whether LMCache settings are listed.
        settings: the flags as given (``--block-size`` replaced by ``N`` in snippets).
        prefill_tp, decode_tp: the TP sizes.
        block_size: ``N``, the proven common block size; ``None`` when none exists.
        proven_on: the GPU classes ``N`` was re-checked on.
        aligned: the model has hybrid alignment at all (``False``: nothing to align).
        pools: per pool at ``N`` (prefill first).
        candidates: the next options and their costs.
        dependent: every setting that must follow ``N``.
        granularity: prefix-cache granularity at ``N``.
        max_num_batched_tokens: the ``--max-num-batched-tokens`` snippets set (``None``
            when the release does not constrain it).
        lmcache_chunk_size: LMCache ``chunk_size`` (``None`` without ``--lmcache``).
        hybrid_kv_cache_manager_flag: snippets must add
            ``--no-disable-hybrid-kv-cache-manager`` (vLLM 0.18-0.21, audit rule KVA012).
        prefix_caching: whether prefix caching is on (the flag, else the release default).
        no_fix: why no block size serves every pool on every GPU class (one line each).
        proposals: what would make one exist (a TP change, a release).
        notes: remarks (release, GPU assumptions).
    """

    model: str
    release: str
    release_first: str
    stack: str
    lmcache: bool
    settings: Settings
    prefill_tp: int
    decode_tp: int
    block_size: int | None
    proven_on: tuple[str, ...]
    aligned: bool
    pools: tuple[PoolPlan, ...]
    candidates: tuple[Candidate, ...]
    dependent: tuple[DependentSetting, ...]
    granularity: Granularity | None
    max_num_batched_tokens: int | None
    lmcache_chunk_size: int | None
    hybrid_kv_cache_manager_flag: bool
    prefix_caching: bool = True
    no_fix: tuple[str, ...] = ()
    proposals: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """Whether a common block size exists (or nothing needs aligning)."""
        return self.block_size is not None


def kv_tokens_lost_per_gib(block: int, attn_per_token: int, mamba_page: int) -> int:
    """Attention-KV tokens (one layer, one rank) that the Mamba padding takes per GiB of
    Mamba-state pages: a page is ``P = block · a`` bytes, of which ``P − m`` is padding,
    so a GiB of such pages wastes ``GiB · (P − m) / P`` bytes, which would hold that many
    bytes ``/ a`` tokens of attention KV. Floor; 0 when the page is not padded.

    Units: ``attn_per_token`` and ``mamba_page`` in bytes per rank (KV heads and Mamba
    state divided by TP: docs/modelled.md).
    """
    page = block * attn_per_token
    if page <= mamba_page:
        return 0
    return GIB * (page - mamba_page) // (page * attn_per_token)


def lmcache_chunk_size(block: int, default: int = LMCACHE_DEFAULT_CHUNK) -> int:
    """The multiple of ``block`` nearest LMCache's default chunk (the smaller on a tie),
    never below one block: LMCache stores whole chunks, so a chunk must be whole blocks
    (audit rule KVA007)."""
    low = max(block, block * (default // block))
    high = low + block if low < default else low
    return low if default - low <= high - default else high


def max_num_batched_tokens(block: int, profile: Profile, mamba_cache_mode: str) -> int | None:
    """``--max-num-batched-tokens`` for releases that constrain it relative to ``block``:
    vLLM 0.17.0-0.26.x assert ``block_size <= max_num_batched_tokens`` in Mamba cache mode
    ``align`` (``vllm/config/vllm.py``, ``VllmConfig``'s align-mode check). The value is
    the smallest multiple of ``block`` at or above :data:`MNBT_FLOOR` (the multiple is
    production-stack issue 1059's advice, not a vLLM rule). ``None`` elsewhere."""
    first, removed = (Version(v) for v in MNBT_RULE_RELEASES)
    if mamba_cache_mode != "align" or not first <= Version(profile.first) < removed:
        return None
    return block * -(-MNBT_FLOOR // block)


def parse_prefix_lengths(text: str, name: str) -> tuple[int, ...]:
    """Prompt lengths, one positive integer per line (blank lines and ``#`` comments
    skipped).

    Raises:
        InvalidSettings: a line that is not a positive integer (naming ``name`` and the
            line), or no length at all.
    """
    out: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        try:
            value = int(word)
        except ValueError:
            value = 0
        if value <= 0 or value > 1 << 40:
            shown = word if len(word) <= 40 else word[:40] + "…"
            raise InvalidSettings(
                f"{name}: line {number}: expected a positive prompt length, got {shown!r}"
            )
        out.append(value)
    if not out:
        raise InvalidSettings(f"{name}: no prompt length in the file")
    return tuple(out)


def cached_tokens(length: int, block: int, floor_blocks: int) -> int:
    """Tokens of a ``length``-token prompt served from the prefix cache on a repeat: whole
    blocks only (``vllm/v1/core/kv_cache_utils.py`` block hashes), minus the last matched
    block when speculative tokens are on (``floor_blocks`` 2, see
    :func:`kvalign.pd.hit_floor_blocks`)."""
    blocks = length // block
    return (blocks - (floor_blocks - 1)) * block if blocks >= floor_blocks else 0


def _prefix_match_unit_text(profile: Profile) -> str:
    # CacheConfig.prefix_match_unit and enable_mamba_fine_grained_prefix_cache
    # (vllm/config/cache.py) are absent from every profiled release (read up to 0.33.0)
    return (
        f"vLLM {profile.name} has neither --prefix-match-unit nor "
        "--enable-mamba-fine-grained-prefix-cache (no release up to 0.33.0 has them; they "
        "are on vLLM main, PR 53945): hits land on whole blocks only. Where they exist, "
        "--prefix-match-unit U (U must divide every group's block size) lets a hit land "
        "every U tokens inside a block without storing more states, and the fine-grained "
        "flag also keeps a Mamba state at the shared-prefix junction (align mode, EAGLE/MTP, "
        "U below the Mamba block)"
    )


def granularity(
    block: int, engine: EngineConfig, lengths: tuple[int, ...] | None, source: str = ""
) -> Granularity:
    """Prefix-cache granularity at ``block`` for the given prompt lengths (``None``: the
    stated default :data:`DEFAULT_PREFIX_LENGTHS`)."""
    floor = hit_floor_blocks(engine)
    if lengths is None:
        lengths = DEFAULT_PREFIX_LENGTHS
        source = "default: " + ", ".join(f"{n:,}" for n in lengths) + " tokens, equally likely"
    on = engine.prefix_caching
    cached = [cached_tokens(n, block, floor) if on else 0 for n in lengths]
    mean_cached = sum(cached) / len(lengths)
    mean_tail = sum(n - c for n, c in zip(lengths, cached, strict=True)) / len(lengths)
    return Granularity(
        prefix_caching=on,
        hit_floor_blocks=floor,
        hit_floor_tokens=floor * block,
        distribution=source,
        lengths=tuple(lengths),
        expected_cached_tokens=mean_cached,
        expected_tail_tokens=mean_tail,
        prefix_match_unit=_prefix_match_unit_text(engine.profile),
    )


def _pools(geometry: ModelGeometry, settings: Settings, prefill: int, decode: int) -> list[FixPool]:
    engine = create_engine_config(geometry, dataclasses.replace(settings, block_size=None))
    return [
        FixPool(geometry, engine, prefill, f"prefill TP {prefill}"),
        FixPool(geometry, engine, decode, f"decode TP {decode}"),
    ]


def _prove(geometry: ModelGeometry, settings: Settings, prefill: int, decode: int) -> Fix:
    engine = create_engine_config(geometry, dataclasses.replace(settings, block_size=None))
    return prove_fix(_pools(geometry, settings, prefill, decode), [(0, 1)], engine.profile)


def _rank(geometry: ModelGeometry, settings: Settings, tp: int, block: int | None) -> RankResult:
    engine = create_engine_config(geometry, dataclasses.replace(settings, block_size=block))
    return analyze_rank(geometry, engine, tp)


def _agree_without_block_size(
    geometry: ModelGeometry, settings: Settings, prefill: int, decode: int
) -> int | None:
    """The block size both pools pick with no ``--block-size`` on every GPU class they may
    run on, with the pair ``ok`` on each; ``None`` when they disagree anywhere."""
    found: int | None = None
    for cls in gpu_classes(settings):
        here = dataclasses.replace(settings, block_size=None, gpu=settings.gpu or cls.gpu)
        try:
            engine = create_engine_config(geometry, here)
        except InvalidSettings:
            continue
        p, d = analyze_rank(geometry, engine, prefill), analyze_rank(geometry, engine, decode)
        if not (p.usable and d.usable) or p.block_size != d.block_size:
            return None
        if analyze_pair(p, d, "vllm", engine.profile).verdict not in ("ok", "nothing-to-align"):
            return None
        if found is not None and found != p.block_size:
            return None
        found = p.block_size
    return found


def _neighbours(prefill: int, decode: int, valid: list[int]) -> list[tuple[int, int]]:
    """TP pairs changing one side only, nearest first (by how far the TP moves)."""
    pairs = [(prefill, tp) for tp in valid if tp != decode]
    pairs += [(tp, decode) for tp in valid if tp != prefill]
    return sorted(
        pairs,
        key=lambda pd: (abs(math.log2(pd[0] / prefill)) + abs(math.log2(pd[1] / decode)), pd),
    )


def _max_padding(fix: Fix) -> float:
    return max((pct for _, pct in fix.padding_pct), default=0.0)


def _roles(fix: Fix) -> tuple[tuple[str, float], ...]:
    return tuple((label.split(" ", 1)[0], pct) for label, pct in fix.padding_pct)


def _candidates(
    geometry: ModelGeometry, settings: Settings, prefill: int, decode: int, answer: Fix | None
) -> tuple[list[Candidate], list[str]]:
    """(candidates, proposals): a lower-padding TP pair, a TP change that needs no
    ``--block-size``, the TP-stable proposal; proposals are TP pairs that have a common
    block size when the requested one has none."""
    from kvalign.fixes import valid_tps

    valid = valid_tps(
        geometry, create_engine_config(geometry, dataclasses.replace(settings, block_size=None))
    )
    out: list[Candidate] = []
    proposals: list[str] = []
    best: tuple[float, Candidate] | None = None
    agree: Candidate | None = None
    limit = _max_padding(answer) if answer is not None and answer.block_size else math.inf
    for p, d in _neighbours(prefill, decode, valid):
        try:
            fix = _prove(geometry, settings, p, d)
        except KvalignError:
            continue
        if fix.block_size is None:
            continue
        if (answer is None or answer.block_size is None) and len(proposals) < 2:
            proposals.append(
                f"prefill TP {p}, decode TP {d}: --block-size {fix.block_size} holds "
                f"({fix.holds_on})"
            )
        pad = _max_padding(fix)
        if pad < limit and (best is None or pad < best[0]):
            best = (
                pad,
                Candidate(
                    "lower-padding",
                    p,
                    d,
                    fix.block_size,
                    f"--block-size {fix.block_size}",
                    _roles(fix),
                    f"prefill TP {p}, decode TP {d}: Mamba padding at most "
                    f"{pad:.2f}% ({fix.holds_on})",
                ),
            )
        if agree is None:
            own = _agree_without_block_size(geometry, settings, p, d)
            if own is not None:
                agree = Candidate(
                    "tp-change",
                    p,
                    d,
                    own,
                    "",
                    _roles(fix),
                    f"prefill TP {p}, decode TP {d}: both pools pick {own:,} with no "
                    "--block-size on every GPU class",
                )
    if best is not None:
        out.append(best[1])
    if agree is not None:
        out.append(agree)
    rp, rd = _rank(geometry, settings, prefill, None), _rank(geometry, settings, decode, None)
    if rp.tp_stable_block_size is not None and rd.tp_stable_block_size is not None:
        same = rp.tp_stable_block_size == rd.tp_stable_block_size
        pads = tuple(
            (role, r.tp_stable_padding_pct)
            for role, r in (("prefill", rp), ("decode", rd))
            if r.tp_stable_padding_pct is not None
        )
        text = (
            f"both pools {rp.tp_stable_block_size:,} tokens"
            if same
            else f"prefill {rp.tp_stable_block_size:,}, decode {rd.tp_stable_block_size:,} "
            "tokens (still differ)"
        )
        out.append(
            Candidate(
                "tp-stable",
                prefill,
                decode,
                rp.tp_stable_block_size if same else None,
                "",
                pads,
                text + "; in no vLLM release, for comparison only",
            )
        )
    return out, proposals


def _release_proposals(
    geometry: ModelGeometry, settings: Settings, prefill: int, decode: int, profile: Profile
) -> list[str]:
    """Newer releases on which the requested TP pair has a common block size (first one)."""
    for later in PROFILES:
        if Version(later.first) <= Version(profile.first):
            continue
        try:
            fix = _prove(
                geometry, dataclasses.replace(settings, vllm_version=later.first), prefill, decode
            )
        except KvalignError:
            continue
        if fix.block_size is not None:
            return [
                f"vLLM {later.first}: --block-size {fix.block_size} holds at prefill TP "
                f"{prefill}, decode TP {decode} ({fix.holds_on}); plan again with "
                f"--vllm-version {later.first}"
            ]
    return []


def _dependent(
    stack: str, lmcache: bool, block: int, mnbt: int | None, profile: Profile
) -> list[DependentSetting]:
    vllm_source = (
        "vllm/platforms/interface.py Platform._align_hybrid_block_size (hybrid alignment); "
        "NIXL block_size_ratio (vllm/distributed/kv_transfer/kv_connector/v1/nixl/)"
    )
    rule = "the proven common block size: every pool keeps it on every GPU class"
    out = [
        DependentSetting("vLLM prefill", "--block-size", str(block), rule, vllm_source),
        DependentSetting("vLLM decode", "--block-size", str(block), rule, vllm_source),
    ]
    if mnbt is not None:
        out.append(
            DependentSetting(
                "vLLM (both pools)",
                "--max-num-batched-tokens",
                str(mnbt),
                f">= {block} (vLLM {profile.name} asserts block_size <= max_num_batched_tokens "
                f"in Mamba cache mode align); a multiple of {block} at or above {MNBT_FLOOR:,} "
                "is a recommendation (production-stack issue 1059), not a vLLM rule",
                "vllm/config/vllm.py VllmConfig, Mamba cache align-mode check (0.17.0-0.26.x)",
            )
        )
    else:
        out.append(
            DependentSetting(
                "vLLM (both pools)",
                "--max-num-batched-tokens",
                "",
                f"no constraint relative to the block size on vLLM {profile.name} (the "
                "align-mode check is in 0.17.0-0.26.x only)",
                "vllm/config/vllm.py VllmConfig, Mamba cache align-mode check",
            )
        )
    if lmcache:
        chunk = lmcache_chunk_size(block)
        out.append(
            DependentSetting(
                "LMCache",
                "chunk_size (LMCACHE_CHUNK_SIZE)",
                str(chunk),
                f"a multiple of {block}, the nearest to LMCache's default "
                f"{LMCACHE_DEFAULT_CHUNK} (audit rule KVA007)",
                "LMCache lmcache/v1/config.py _CONFIG_DEFINITIONS (chunk_size, default 256)",
            )
        )
    if stack in ("llm-d", "kserve"):
        epp = "llm-d router EndpointPickerConfig plugin parameters (llm-d docs; audit KVA006)"
        out += [
            DependentSetting(
                "llm-d EPP precise-prefix-cache-scorer",
                "indexerConfig.tokenProcessorConfig.blockSize",
                str(block),
                "equal to the engines' block size, or the indexer drops every KV event",
                epp,
            ),
            DependentSetting(
                "llm-d EPP prefix-cache-scorer",
                "blockSizeTokens (autoTune: false)",
                str(block),
                "equal to the engines' block size; autoTune off, or the scorer infers it from "
                "endpoint metrics and ignores this value",
                epp,
            ),
        ]
    if stack == "dynamo":
        out.append(
            DependentSetting(
                "Dynamo frontend (KV router)",
                "--kv-cache-block-size / DYN_KV_CACHE_BLOCK_SIZE",
                str(block),
                "equal to the engines' block size, or the router drops every event",
                "Dynamo frontend/router options (Dynamo docs; as audit KVA006 reads)",
            )
        )
    if stack == "production-stack":
        out.append(
            DependentSetting(
                "production-stack values",
                "servingEngineSpec.modelSpec[].vllmConfig.extraArgs",
                f"--block-size {block}",
                "the chart has no block-size value: the flag goes in extraArgs; "
                "enablePrefixCaching is set explicitly (the chart turns it off when absent)",
                "production-stack helm/templates/deployment-vllm-multi.yaml",
            )
        )
        out.append(
            DependentSetting(
                "production-stack router",
                "routerSpec.routingLogic",
                "disaggregated_prefill",
                "the router takes no block size kvalign could confirm; the cache server's "
                "chunk size is the LMCache chunk_size above",
                "production-stack helm/values.yaml routerSpec",
            )
        )
    return out


def plan(
    geometry: ModelGeometry,
    settings: Settings,
    prefill_tp: int,
    decode_tp: int,
    *,
    stack: str = "vllm",
    lmcache: bool = False,
    prefix_lengths: tuple[int, ...] | None = None,
    prefix_source: str = "",
) -> Plan:
    """The common block size for one prefill TP and one decode TP, its cost, the next
    candidates, the settings that follow it and the prefix-cache granularity.

    ``settings.block_size`` is ignored (the plan chooses it). ``stack`` is one of
    :data:`STACKS`.

    Raises:
        InvalidSettings, NotModelled: the settings are rejected (as
            :func:`kvalign.alignment.analyze_rank`).
    """
    if stack not in STACKS:
        raise InvalidSettings(f"--stack: unknown stack {stack!r} (known: {', '.join(STACKS)})")
    base = dataclasses.replace(settings, block_size=None)
    engine = create_engine_config(geometry, base)
    profile = engine.profile
    fix = _prove(geometry, base, prefill_tp, decode_tp)
    notes = [engine.profile_note]
    if settings.block_size is not None:
        notes.append(f"--block-size {settings.block_size} is ignored: the plan chooses it")
    kva012 = geometry.is_hybrid and profile.nixl_hybrid and profile.kv_transfer_disables_hma
    empty = Plan(
        model=geometry.model_id,
        release=profile.name,
        release_first=profile.first,
        stack=stack,
        lmcache=lmcache,
        settings=base,
        prefill_tp=prefill_tp,
        decode_tp=decode_tp,
        block_size=None,
        proven_on=(),
        aligned=True,
        pools=(),
        candidates=(),
        dependent=(),
        granularity=None,
        max_num_batched_tokens=None,
        lmcache_chunk_size=None,
        hybrid_kv_cache_manager_flag=kva012,
        prefix_caching=engine.prefix_caching,
    )
    if not fix.aligned:
        # attention-only / attention-free: nothing to align, each pool's own block is N
        rp, rd = _rank(geometry, base, prefill_tp, None), _rank(geometry, base, decode_tp, None)
        # attention-free ranks have no KV block: vLLM keeps its base block size
        sizes = [engine.base_block if r.block_size is None else r.block_size for r in (rp, rd)]
        block = sizes[0] if sizes[0] == sizes[1] else None
        pools = tuple(
            PoolPlan(role, r.tp, size, size, r.kernel_block_size, None, 0)
            for role, r, size in (("prefill", rp, sizes[0]), ("decode", rd, sizes[1]))
        )
        notes.append("nothing to align: vLLM does no hybrid block alignment for this model")
        if block is None:
            return dataclasses.replace(
                empty, aligned=False, pools=pools, notes=tuple(notes),
                no_fix=("the pools' block sizes differ",),
            )  # fmt: skip
        return dataclasses.replace(
            empty, block_size=block, aligned=False, pools=pools, notes=tuple(notes),
            dependent=tuple(_dependent(stack, lmcache, block, None, profile)),
            granularity=granularity(block, engine, prefix_lengths, prefix_source),
            lmcache_chunk_size=lmcache_chunk_size(block) if lmcache else None,
        )  # fmt: skip
    if fix.block_size is None:
        why = list(fix.blockers) or [fix.unproven]
        candidates, proposals = _candidates(geometry, base, prefill_tp, decode_tp, None)
        proposals += _release_proposals(geometry, base, prefill_tp, decode_tp, profile)
        pools = tuple(
            PoolPlan(role, tp, r.block_size, None, None, None, 0)
            for role, tp, r in (
                ("prefill", prefill_tp, _rank(geometry, base, prefill_tp, None)),
                ("decode", decode_tp, _rank(geometry, base, decode_tp, None)),
            )
        )
        return dataclasses.replace(
            empty, pools=pools, no_fix=tuple(why), proposals=tuple(proposals),
            candidates=tuple(c for c in candidates if c.kind == "tp-stable"), notes=tuple(notes),
        )  # fmt: skip
    block = fix.block_size
    pools_out = []
    for role, tp in (("prefill", prefill_tp), ("decode", decode_tp)):
        own, at = _rank(geometry, base, tp, None), _rank(geometry, base, tp, block)
        lost = 0
        if at.mamba_page_bytes is not None and at.attn_page_bytes_per_token is not None:
            lost = kv_tokens_lost_per_gib(block, at.attn_page_bytes_per_token, at.mamba_page_bytes)
        pools_out.append(
            PoolPlan(
                role,
                tp,
                own.block_size,
                at.block_size,
                at.kernel_block_size,
                at.mamba_padding_pct,
                lost,
            )
        )
    at_engine = create_engine_config(geometry, dataclasses.replace(base, block_size=block))
    mnbt = max_num_batched_tokens(block, profile, at_engine.mamba_cache_mode)
    candidates, _ = _candidates(geometry, base, prefill_tp, decode_tp, fix)
    if settings.gpu is None:
        notes.append(
            "no --gpu: the block size is proven on every GPU class of the platform; give "
            "--gpu to plan for one"
        )
    return dataclasses.replace(
        empty,
        block_size=block,
        proven_on=fix.proven_on,
        aligned=True,
        pools=tuple(pools_out),
        candidates=tuple(candidates),
        dependent=tuple(_dependent(stack, lmcache, block, mnbt, profile)),
        granularity=granularity(block, at_engine, prefix_lengths, prefix_source),
        max_num_batched_tokens=mnbt,
        lmcache_chunk_size=lmcache_chunk_size(block) if lmcache else None,
        notes=tuple(notes),
    )
