"""KVA007: LMCache chunk_size not a multiple of the block size.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, env: {LMCACHE_CHUNK_SIZE: '1000'}", "tp: 1", ""),
    ],
)  # fmt: skip
def test_kva007_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA007" in {f.rule for f in audit_own(prefill, decode, extra).findings}


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, env: {LMCACHE_CHUNK_SIZE: '1600'}", "tp: 1", ""),  # 1600 = 2 x 800
    ],
)  # fmt: skip
def test_kva007_stays_quiet_on_matching_pools(prefill: str, decode: str, extra: str) -> None:
    # no rule fires at all on these pools (each is the matching side of KVA007)
    assert audit_own(prefill, decode, extra).findings == ()
