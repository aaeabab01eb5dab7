"""KVA010: tensor parallel size invalid for the model.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

from tests.rules.harness import fires

test_kva010_fires = fires(
    "KVA010",
    [
        ("tp: 3", "tp: 1", ""),
    ],
)  # fmt: skip
