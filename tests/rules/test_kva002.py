"""KVA002: kernel block sizes differ (block_size_ratio != 1).

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import dataclasses

from kvalign.rules import kva002
from kvalign.rules.base import GroupResult
from tests.rules.harness import audit_own, fires

test_kva002_fires = fires(
    "KVA002",
    [
        # TP 4 = 400 tokens vs TP 1 = 800: drift (KVA001) and ratio 2 (KVA002)
        ("tp: 4", "tp: 1", ""),
    ],
)  # fmt: skip


def test_kva002_is_an_error_on_every_release_and_names_the_old_rejection() -> None:
    group = audit_own("tp: 4", "tp: 1").groups[0]
    # ratio fails the gate (docs/policy.md) whether or not NIXL tolerates it
    (tolerated,) = kva002.find(group)
    assert tolerated.severity == "error" and "heterogeneous-block path" in tolerated.message
    strict = dataclasses.replace(group.profile, nixl_hetero_hybrid=False)
    older: GroupResult = dataclasses.replace(group, profile=strict)
    (rejected,) = kva002.find(older)
    assert rejected.severity == "error" and "rejects heterogeneous blocks" in rejected.message
