"""KVA003: kernel block sizes do not divide (NIXL hard failure).

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        # TP 8 = 208 vs TP 1 = 800: 800 % 208 != 0
        ("tp: 8", "tp: 1", ""),
    ],
)  # fmt: skip
def test_kva003_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA003" in {f.rule for f in audit_own(prefill, decode, extra).findings}
