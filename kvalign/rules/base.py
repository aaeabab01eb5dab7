"""Shared shapes for audit rules: results the rules read and the findings they return. No I/O."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

from kvalign.alignment import RankResult
from kvalign.deploy.model import ComponentBlockSize, Deployment, Location, Pool
from kvalign.dtypes import resolve_model_dtype
from kvalign.engine import EngineConfig
from kvalign.fixes import GroupFix, RunCache
from kvalign.geometry import ModelGeometry
from kvalign.grouping import Grouping
from kvalign.pd import PairResult
from kvalign.versions import DEFAULT_PROFILE, Profile

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Finding:
    """One rule violation.

    Attributes:
        rule: stable rule id (``KVA001`` …), also the rule's module name.
        severity: ``error``, ``warning`` or ``info``.
        pools: labels (``role/name``) of the pools concerned.
        location: file and line.
        message: one line: what is wrong, with the numbers.
        remediation: one line: what to change.
    """

    rule: str
    severity: Severity
    pools: tuple[str, ...]
    location: Location
    message: str
    remediation: str

    @property
    def fingerprint(self) -> str:
        """Stable id for baselines: rule, file and pools (not the line, which moves)."""
        key = "|".join((self.rule, self.location.file, *sorted(self.pools)))
        return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


@dataclass(frozen=True)
class PoolResult:
    """A pool with its model geometry, its settings resolved once
    (:func:`kvalign.engine.create_engine_config`) and the predicted rank result at its TP."""

    pool: Pool
    geometry: ModelGeometry
    rank: RankResult
    engine: EngineConfig


@dataclass(frozen=True)
class PairOutcome:
    """One prefill pool × decode pool and its NIXL pair analysis (``pd.analyze_pair``)."""

    prefill: PoolResult
    decode: PoolResult
    pair: PairResult


@dataclass(frozen=True)
class GroupResult:
    """Everything the rules read about one deployment: the pools ``--pair-by`` grouped.

    Attributes:
        deployments: the files whose pools are in the group, input order.
        pools: per-pool results, input order.
        pairs: every prefill × decode pairing within the group.
        profile: the vLLM release profile the version-dependent rules use.
        version_note: which version assumption was used (shown to the user).
        grouping: how the pools were grouped (:class:`kvalign.grouping.Grouping`).
        components: block sizes of routers / indexers / frontends in the group's files.
        fix: the group's proven fix, computed once (:class:`kvalign.fixes.GroupFix`); the
            rules that name a ``--block-size`` read its ``text``.
        partners: pools of other groups of the run that could be the partner of one of
            its unpaired pools (the other role, and the same model or deployment-key
            value); KVA013 makes such an unpaired pool an error.
        hidden: files of the group with a pool that could not be evaluated (its unpaired
            pools may have lost their partner there).
    """

    deployments: tuple[Deployment, ...]
    pools: tuple[PoolResult, ...]
    pairs: tuple[PairOutcome, ...]
    profile: Profile
    version_note: str
    grouping: Grouping
    components: tuple[ComponentBlockSize, ...]
    fix: GroupFix = field(
        default_factory=lambda: GroupFix([], [], DEFAULT_PROFILE, RunCache()), compare=False
    )
    partners: tuple[PoolResult, ...] = ()
    hidden: tuple[str, ...] = ()

    @property
    def unpaired(self) -> tuple[PoolResult, ...]:
        """Prefill or decode pools with no pool of the other role in the group (nothing to
        check them with); standalone servers are never unpaired."""
        pd = [r for r in self.pools if r.pool.role != "server"]
        roles = {r.pool.role for r in pd}
        return tuple(r for r in pd if len(roles) < 2)


@dataclass(frozen=True)
class FileResult:
    """One evaluated file: what its reader produced and its pools' results (file order).

    ``version_note`` is the version assumption for its pools (``--vllm-version``, else the
    file's ``vllm_version``, else the newest profile).
    """

    deployment: Deployment
    pools: tuple[PoolResult, ...]
    version_note: str


def pool_ref(pool: Pool, file: str) -> str:
    """``role/name`` for a pool declared in ``file`` (the finding's file), else
    ``role/name (its file)``: pools of other files are told apart by their file."""
    return pool.label if pool.location.file == file else f"{pool.label} ({pool.location.file})"


def pair_labels(outcome: PairOutcome) -> tuple[str, str]:
    """``(prefill label, decode label)``; when the two pools are in different files (a
    deployment grouped across files), each label carries its file."""
    prefill, decode = outcome.prefill.pool, outcome.decode.pool
    if prefill.location.file == decode.location.file:
        return prefill.label, decode.label
    return pool_ref(prefill, ""), pool_ref(decode, "")


def kv_cache_facts(result: PoolResult) -> dict[str, str]:
    """What NIXL requires to match across a pair, for one pool: model, revision and the
    KV-cache / Mamba state dtypes after vLLM resolves ``auto`` (:mod:`kvalign.dtypes`)."""
    flag = result.pool.settings.kv_cache_dtype
    if flag == "auto":
        kv = resolve_model_dtype(result.pool.settings.dtype, result.geometry.model_dtype)
    else:
        kv = "fp8_e4m3" if flag == "fp8" else flag
    facts = {
        "model": result.pool.model,
        "revision": result.pool.args.revision or "(default)",
        "kv-cache-dtype": kv,
    }
    # conv state first, then the ssm / recurrent state; a ReplaySSM pool appends its ring
    # buffers after them (model dtype and float32), which are not the ssm state
    dtypes = result.rank.mamba_state_dtypes
    if len(dtypes) >= 2:
        facts["mamba-cache-dtype"] = dtypes[0]
        facts["mamba-ssm-cache-dtype"] = dtypes[1]
    return facts


def settings_differ(outcome: PairOutcome) -> bool:
    """Whether the pair's KV-cache settings (dtypes, model, revision) differ."""
    prefill, decode = kv_cache_facts(outcome.prefill), kv_cache_facts(outcome.decode)
    return any(key in decode and decode[key] != value for key, value in prefill.items())
