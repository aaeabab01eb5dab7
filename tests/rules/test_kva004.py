"""KVA004: --block-size silently overridden by hybrid alignment.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        # --block-size 16 raised to 800 at TP 1
        ("tp: 1, args: --block-size 16", "tp: 1, args: --block-size 16", ""),
    ],
)  # fmt: skip
def test_kva004_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA004" in {f.rule for f in audit_own(prefill, decode, extra).findings}


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, args: --block-size 800", "tp: 1, args: --block-size 800", ""),  # not raised
    ],
)  # fmt: skip
def test_kva004_stays_quiet_on_matching_pools(prefill: str, decode: str, extra: str) -> None:
    # no rule fires at all on these pools (each is the matching side of KVA004)
    assert audit_own(prefill, decode, extra).findings == ()
