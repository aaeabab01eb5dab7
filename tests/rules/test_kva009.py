"""KVA009: max_model_len below the aligned block size.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires, quiet

test_kva009_fires = fires(
    "KVA009",
    [
        ("tp: 1, args: --max-model-len 799", "tp: 1", ""),
    ],
)  # fmt: skip


#: no rule at all fires on these pools (each is the matching side of KVA009)
test_kva009_stays_quiet_on_matching_pools = quiet(
    [
        ("tp: 1, args: --max-model-len 800", "tp: 1", ""),
        ("tp: 1, args: --max-model-len 100 --no-enable-prefix-caching",
         "tp: 1, args: --no-enable-prefix-caching", ""),
    ],
)  # fmt: skip
