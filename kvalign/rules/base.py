"""Shared shapes for audit rules: results the rules read and the findings they return. No I/O."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from kvalign.alignment import RankResult
from kvalign.deploy.model import Deployment, Location, Pool
from kvalign.geometry import ModelGeometry
from kvalign.pd import PairResult
from kvalign.versions import Profile

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}


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
        return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PoolResult:
    """A pool with its model geometry and the predicted rank result at its TP."""

    pool: Pool
    geometry: ModelGeometry
    rank: RankResult


@dataclass(frozen=True)
class PairOutcome:
    """One prefill pool × decode pool and its NIXL pair analysis (``pd.analyze_pair``)."""

    prefill: PoolResult
    decode: PoolResult
    pair: PairResult


@dataclass(frozen=True)
class GroupResult:
    """Everything the rules read about one deployment file.

    Attributes:
        deployment: what the reader produced.
        pools: per-pool results, file order.
        pairs: every prefill × decode pairing.
        profile: the vLLM release profile the version-dependent rules use.
        version_note: which version assumption was used (shown to the user).
    """

    deployment: Deployment
    pools: tuple[PoolResult, ...]
    pairs: tuple[PairOutcome, ...]
    profile: Profile
    version_note: str


def pair_labels(outcome: PairOutcome) -> tuple[str, str]:
    """``(prefill label, decode label)``."""
    return outcome.prefill.pool.label, outcome.decode.pool.label
