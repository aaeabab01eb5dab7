"""KVA004: --block-size silently overridden by hybrid alignment.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires, quiet

test_kva004_fires = fires(
    "KVA004",
    [
        # --block-size 16 raised to 800 at TP 1
        ("tp: 1, args: --block-size 16", "tp: 1, args: --block-size 16", ""),
    ],
)  # fmt: skip


#: no rule at all fires on these pools (each is the matching side of KVA004)
test_kva004_stays_quiet_on_matching_pools = quiet(
    [
        ("tp: 1, args: --block-size 800", "tp: 1, args: --block-size 800", ""),  # not raised
    ],
)  # fmt: skip
