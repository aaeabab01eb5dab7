"""The gate: one function decides a pair's verdict, one decides its severity, one the exit.

``check``, ``matrix``, ``audit`` and every output format (table, JSON, Markdown, SARIF,
JUnit, GitHub annotations) read these functions and nothing else; ``docs/policy.md``
documents them. No I/O.

Verdicts (one vocabulary everywhere)::

    ok                both pools use the same logical and kernel block size
    drift             kernel blocks match, logical blocks differ (prefix-cache grids differ)
    ratio             kernel blocks differ but divide (block_size_ratio != 1)
    split             kernel blocks do not divide; NIXL splits them into gcd-sized units
    incompatible      NIXL cannot pair the pools at all (hard failure)
    invalid           a pool's tensor parallel size is one the model rejects
    nothing-to-align  attention-only or attention-free model: no hybrid alignment

Severity of a verdict (``--fail-on`` levels ``error`` > ``warning`` > ``info``; the
default gate ``--fail-on error`` fails on errors)::

    ratio, split, incompatible, invalid      error
    drift, prefix caching on both pools      error
    drift, prefix caching on one pool only   warning (no prefix shared across pools)
    drift, prefix caching off on both        info (logical blocks do not matter then)
    ok, nothing-to-align                     none (never fails)
    --block-size raised by hybrid alignment  warning (audit KVA004; check says so too)

The pair analysis mirrors the NIXL connector of vLLM 0.33 (pull mode: decode reads from
prefill): ``vllm/distributed/kv_transfer/kv_connector/utils.py`` ``block_size_ratio``
(local = decode, remote = prefill: ``decode_block // prefill_block``, asserting
divisibility) and ``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``
``_split_remote_blocks`` (non-multiples split into gcd-sized units, at most
``_MAX_HYBRID_BLOCK_SPLIT`` units per block), as the release profile says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal, NamedTuple

from kvalign.alignment import RankResult
from kvalign.exitcodes import ExitCode
from kvalign.versions import DEFAULT_PROFILE, PROFILES, Profile, first_nixl_release

Verdict = Literal["ok", "drift", "ratio", "split", "incompatible", "invalid", "nothing-to-align"]
Level = Literal["error", "warning", "info"]

#: every verdict, in the order documentation and legends list them.
VERDICTS: tuple[Verdict, ...] = (
    "ok",
    "drift",
    "ratio",
    "split",
    "incompatible",
    "invalid",
    "nothing-to-align",
)
LEVEL_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}
#: the default ``--fail-on``.
DEFAULT_FAIL_ON: Level = "error"
#: severity of a user ``--block-size`` that hybrid alignment raises (audit KVA004).
OVERRIDE_LEVEL: Level = "warning"

#: exit codes of the gate.
EXIT_PASS, EXIT_FAIL = ExitCode.OK, ExitCode.FLAGGED

_FIXED_LEVEL: dict[str, Level | None] = {
    "ok": None,
    "nothing-to-align": None,
    "ratio": "error",
    "split": "error",
    "incompatible": "error",
    "invalid": "error",
}


def drift_level(prefill_caching: bool, decode_caching: bool) -> Level:
    """Severity of prefix-cache drift (logical blocks differ): ``error`` when prefix
    caching is on for both pools, ``warning`` when on for one only, ``info`` when off."""
    if prefill_caching and decode_caching:
        return "error"
    if prefill_caching or decode_caching:
        return "warning"
    return "info"


def verdict_level(verdict: str, prefill_caching: bool, decode_caching: bool) -> Level | None:
    """Severity of a pair's verdict (``None``: the pair passes at every ``--fail-on``).

    Raises:
        KeyError: an unknown verdict.
    """
    if verdict == "drift":
        return drift_level(prefill_caching, decode_caching)
    return _FIXED_LEVEL[verdict]


def fails(level: str | None, fail_on: str = DEFAULT_FAIL_ON) -> bool:
    """Whether a finding of ``level`` fails the gate ``--fail-on fail_on``."""
    return level is not None and LEVEL_RANK[level] >= LEVEL_RANK[fail_on]


def exit_code(levels: Iterable[str | None], fail_on: str = DEFAULT_FAIL_ON) -> int:
    """The gate's exit code: 1 when any level is at or above ``fail_on``, else 0.

    Used by ``check``, ``matrix`` and ``audit`` (audit first exits 3 for files it could
    not evaluate; usage errors exit 2 before any gate).

    Raises:
        KeyError: an unknown ``fail_on`` or level.
    """
    LEVEL_RANK[fail_on]  # validates fail_on even when there are no levels
    return EXIT_FAIL if any(fails(level, fail_on) for level in levels) else EXIT_PASS


class PairResult(NamedTuple):
    """One prefill × decode pairing and its verdict.

    Attributes:
        prefill_tp, decode_tp: tensor parallel sizes.
        prefill_block_size, decode_block_size: logical block sizes (tokens).
        prefill_kernel_block_size, decode_kernel_block_size: kernel (transfer) block sizes.
        block_size_ratio: ``decode_kernel // prefill_kernel`` when divisible, else ``None``.
        divisible: ``decode_kernel % prefill_kernel == 0``.
        prefix_cache_drift: logical block sizes differ (prefixes hash on different grids).
        split_unit: for non-divisible pairs, the gcd unit NIXL would transfer in (tokens).
        verdict: one of :data:`VERDICTS`.
        reason: one line explaining the verdict.
        prefill_prefix_caching, decode_prefix_caching: prefix caching resolved per pool.
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
    prefill_prefix_caching: bool = True
    decode_prefix_caching: bool = True

    @property
    def level(self) -> Level | None:
        """Severity of the verdict (:func:`verdict_level`)."""
        return verdict_level(self.verdict, self.prefill_prefix_caching, self.decode_prefix_caching)

    @property
    def flagged(self) -> bool:
        """Whether the pair fails the default gate (``--fail-on error``)."""
        return fails(self.level)


def first_release(*features: str) -> str | None:
    """The first release whose profile has every one of ``features`` (boolean
    :class:`Profile` fields) set, as do all later profiles; ``None`` when the newest
    lacks one."""
    found: str | None = None
    for profile in PROFILES:
        found = (found or profile.first) if all(getattr(profile, f) for f in features) else None
    return found


def _nixl_family_limited(profile: Profile, family: str) -> bool:
    """The release's NIXL connector cannot split ``family`` state while a later release
    can (:attr:`Profile.nixl_state_families`, :func:`first_nixl_release`). Families no
    release read can split (KDA, short conv, linear attention) are not judged here."""
    families = profile.nixl_state_families
    if not family or families is None or family in families:
        return False
    return first_nixl_release(family) is not None


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
    if hybrid and _nixl_family_limited(profile, prefill.state_family):
        families = profile.nixl_state_families or frozenset()
        return (
            f"vLLM {name}'s NIXL connector cannot transfer {prefill.state_family} state "
            f"(derive_mamba_conv_split supports {', '.join(sorted(families))}: "
            "NotImplementedError at start-up)"
        )
    if hybrid and not profile.nixl_hetero_tp_mamba and prefill.tp != decode.tp:
        return f"vLLM {name}'s NIXL connector requires equal prefill/decode TP for Mamba hybrids"
    if p_kernel != d_kernel and (
        profile.nixl_equal_blocks_all or (hybrid and not profile.nixl_hetero_hybrid)
    ):
        what = "every model" if profile.nixl_equal_blocks_all else "hybrid models"
        return (
            f"kernel block sizes differ ({p_kernel} vs {d_kernel}) and vLLM {name}'s NIXL "
            f"connector requires equal block sizes for {what}"
        )
    return ""


def blocking_limit(profile: Profile, prefill: RankResult, decode: RankResult) -> str:
    """What would make the pair work when no ``--block-size`` can (``""`` when one can):
    a release whose NIXL connector serves hybrids, equal TP, or a valid TP."""
    if not prefill.usable or not decode.usable:
        return ""  # reported per pool (invalid TP), see kvalign.fixes
    hybrid = prefill.mamba_page_bytes is not None and not prefill.attention_free
    if hybrid and not profile.nixl_hybrid:
        if prefill.tp == decode.tp:
            first = first_release("nixl_hybrid")
            what = "hybrid P/D over NIXL"
        else:
            first = first_release("nixl_hybrid", "nixl_hetero_tp_mamba")
            what = "hybrid P/D over NIXL at different prefill/decode TP"
        return (
            f"vLLM {profile.name}'s NIXL connector does not serve hybrid models: upgrade to "
            f"vLLM {first} or later (the first release with {what}), then check again with "
            f"--vllm-version {first}: a common block size may still be needed there"
        )
    if hybrid and _nixl_family_limited(profile, prefill.state_family):
        first_family = first_nixl_release(prefill.state_family)
        return (
            f"vLLM {profile.name}'s NIXL connector cannot transfer {prefill.state_family} "
            f"state: upgrade to vLLM {first_family} or later (the first release whose NIXL "
            f"connector does), then check again with --vllm-version {first_family}"
        )
    if hybrid and not profile.nixl_hetero_tp_mamba and prefill.tp != decode.tp:
        first = first_release("nixl_hetero_tp_mamba")
        return (
            f"vLLM {profile.name}'s NIXL connector pairs Mamba hybrids only at equal TP: use "
            f"the same prefill and decode TP, or upgrade to vLLM {first} or later (then check "
            f"again with --vllm-version {first})"
        )
    return ""


_Facts = tuple[
    int | None, int | None, int | None, int | None, int | None, bool | None, bool | None,
    int | None,
]  # fmt: skip


def _pair(
    prefill: RankResult, decode: RankResult, facts: _Facts, *, verdict: Verdict, reason: str
) -> PairResult:
    p_block, d_block, p_kernel, d_kernel, ratio, divisible, drift, unit = facts
    return PairResult(
        prefill.tp, decode.tp, p_block, d_block, p_kernel, d_kernel, ratio, divisible, drift,
        unit, verdict, reason, prefill.prefix_caching, decode.prefix_caching,
    )  # fmt: skip


def analyze_pair(
    prefill: RankResult,
    decode: RankResult,
    alignment: str = "vllm",
    profile: Profile = DEFAULT_PROFILE,
) -> PairResult:
    """The verdict of one prefill rank result paired with one decode rank result.

    ``alignment`` is ``vllm`` (the release's rule) or ``tp-stable`` (the vLLM PR 45575
    proposal, for what-if output only: the gate always uses ``vllm``).
    """
    none: _Facts = (None,) * 8
    if not prefill.usable or not decode.usable:
        bad = prefill if not prefill.usable else decode
        side = "prefill" if bad is prefill else "decode"
        return _pair(
            prefill, decode, none, verdict="invalid",
            reason=f"{side} TP {bad.tp} is invalid: {bad.problem}",
        )  # fmt: skip
    if prefill.attention_free:
        return _pair(
            prefill, decode, none, verdict="nothing-to-align",
            reason="attention-free model: no KV blocks, nothing to align",
        )  # fmt: skip
    p_block, d_block = prefill.logical(alignment), decode.logical(alignment)
    p_kernel, d_kernel = prefill.kernel(alignment), decode.kernel(alignment)
    assert p_block is not None and d_block is not None
    drift = p_block != d_block
    if p_kernel is None or d_kernel is None:
        return _pair(
            prefill, decode, (p_block, d_block, p_kernel, d_kernel, None, False, drift, None),
            verdict="incompatible",
            reason="no kernel block size the backend supports divides the logical block size",
        )  # fmt: skip
    divisible = d_kernel % p_kernel == 0
    ratio = d_kernel // p_kernel if divisible else None
    facts = (p_block, d_block, p_kernel, d_kernel, ratio, divisible, drift)
    limit = release_limit(profile, prefill, decode, p_kernel, d_kernel)
    if limit:
        return _pair(prefill, decode, (*facts, None), verdict="incompatible", reason=limit)
    attention_only = prefill.mamba_page_bytes is None
    if divisible and ratio == 1 and not drift and attention_only:
        return _pair(
            prefill, decode, (*facts, None), verdict="nothing-to-align",
            reason=f"attention-only model: no hybrid alignment; block size {p_block} on both",
        )  # fmt: skip
    if divisible and ratio == 1:
        if drift:
            caching = (prefill.prefix_caching, decode.prefix_caching)
            tail = {
                (True, True): "prefix-cache hashes never match across pools",
                (False, False): "prefix caching is off on both pools, so this costs nothing",
            }.get(caching, "prefix caching is on for one pool only")
            return _pair(
                prefill, decode, (*facts, None), verdict="drift",
                reason=f"kernel blocks match ({p_kernel}) but logical blocks differ "
                f"({p_block} vs {d_block}): {tail}",
            )  # fmt: skip
        return _pair(
            prefill, decode, (*facts, None), verdict="ok",
            reason=f"same block size {p_block} on both sides",
        )  # fmt: skip
    if divisible:
        return _pair(
            prefill, decode, (*facts, None), verdict="ratio",
            reason=f"block_size_ratio {ratio}: decode kernel block {d_kernel} = {ratio} x "
            f"prefill {p_kernel}; heterogeneous-block handling on the decode path",
        )  # fmt: skip
    unit = math.gcd(p_kernel, d_kernel)
    splits = max(p_kernel // unit, d_kernel // unit)
    # NIXL's rule, as it applies it: the decode kernel block must be a multiple of the
    # prefill one (so 528 vs 1056 fails although 528 divides 1056)
    rule = (
        f"NIXL needs the decode kernel block to be a multiple of the prefill one: "
        f"{d_kernel} is not a multiple of {p_kernel}"
        + (" (here prefill's is the larger)" if p_kernel > d_kernel else "")
    )
    if profile.nixl_gcd_split and splits <= profile.nixl_split_limit:
        return _pair(
            prefill, decode, (*facts, unit), verdict="split",
            reason=f"{rule}; NIXL splits into {unit}-token units ({splits} per block); "
            "hard failure on releases without the split path",
        )  # fmt: skip
    if profile.nixl_gcd_split:
        why = f"a {unit}-token split needs {splits} > {profile.nixl_split_limit} units"
    else:
        why = f"vLLM {profile.name} has no gcd split path"
    return _pair(
        prefill, decode, (*facts, unit), verdict="incompatible",
        reason=f"{rule}, and {why}: NIXL transfer fails",
    )  # fmt: skip
