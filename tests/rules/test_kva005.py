"""KVA005: KV-cache settings differ between prefill and decode.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, args: --dtype float16", "tp: 1", ""),
    ],
)  # fmt: skip
def test_kva005_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA005" in {f.rule for f in audit_own(prefill, decode, extra).findings}
