"""KVA007: LMCache chunk_size not a multiple of the block size.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires, quiet

test_kva007_fires = fires(
    "KVA007",
    [
        ("tp: 1, env: {LMCACHE_CHUNK_SIZE: '1000'}", "tp: 1", ""),
    ],
)  # fmt: skip


#: no rule at all fires on these pools (each is the matching side of KVA007)
test_kva007_stays_quiet_on_matching_pools = quiet(
    [
        ("tp: 1, env: {LMCACHE_CHUNK_SIZE: '1600'}", "tp: 1", ""),  # 1600 = 2 x 800
    ],
)  # fmt: skip
