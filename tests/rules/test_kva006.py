"""KVA006: router / indexer / frontend block size disagrees.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires, quiet

test_kva006_fires = fires(
    "KVA006",
    [
        ("tp: 1", "tp: 1", "router: {block_size: 16}"),
    ],
)  # fmt: skip


#: no rule at all fires on these pools (each is the matching side of KVA006)
test_kva006_stays_quiet_on_matching_pools = quiet(
    [
        ("tp: 1", "tp: 2", "router: {block_size: 800}"),  # both 800 tokens
    ],
)  # fmt: skip
