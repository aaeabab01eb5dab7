"""KVA003: kernel block sizes do not divide (NIXL hard failure).

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires

test_kva003_fires = fires(
    "KVA003",
    [
        # TP 8 = 208 vs TP 1 = 800: 800 % 208 != 0
        ("tp: 8", "tp: 1", ""),
    ],
)  # fmt: skip
