"""KVA006: router / indexer / frontend block size disagrees.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1", "tp: 1", "router: {block_size: 16}"),
    ],
)  # fmt: skip
def test_kva006_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA006" in {f.rule for f in audit_own(prefill, decode, extra).findings}


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1", "tp: 2", "router: {block_size: 800}"),  # both 800 tokens
    ],
)  # fmt: skip
def test_kva006_stays_quiet_on_matching_pools(prefill: str, decode: str, extra: str) -> None:
    # no rule fires at all on these pools (each is the matching side of KVA006)
    assert audit_own(prefill, decode, extra).findings == ()
