"""KVA008: VLLM_SSM_CONV_STATE_LAYOUT set on one side only.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires, quiet

test_kva008_fires = fires(
    "KVA008",
    [
        ("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: DS}", "tp: 1", ""),
    ],
)  # fmt: skip


#: no rule at all fires on these pools (each is the matching side of KVA008)
test_kva008_stays_quiet_on_matching_pools = quiet(
    [
        ("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: SD}", "tp: 1", ""),  # SD is the default
    ],
)  # fmt: skip
