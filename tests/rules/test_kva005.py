"""KVA005: KV-cache settings differ between prefill and decode.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires

test_kva005_fires = fires(
    "KVA005",
    [
        ("tp: 1, args: --dtype float16", "tp: 1", ""),
    ],
)  # fmt: skip
