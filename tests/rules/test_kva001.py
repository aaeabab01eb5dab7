"""KVA001: logical block sizes differ between prefill and decode.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires, quiet

test_kva001_fires = fires(
    "KVA001",
    [
        # TP 4 = 400 tokens vs TP 1 = 800: drift (KVA001) and ratio 2 (KVA002)
        ("tp: 4", "tp: 1", ""),
    ],
)  # fmt: skip


#: no rule at all fires on these pools (each is the matching side of KVA001)
test_kva001_stays_quiet_on_matching_pools = quiet(
    [
        ("tp: 1", "tp: 2", "router: {block_size: 800}"),  # both 800 tokens
    ],
)  # fmt: skip
