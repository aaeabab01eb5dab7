"""KVA009: max_model_len below the aligned block size.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, args: --max-model-len 799", "tp: 1", ""),
    ],
)  # fmt: skip
def test_kva009_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA009" in {f.rule for f in audit_own(prefill, decode, extra).findings}


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, args: --max-model-len 800", "tp: 1", ""),
        ("tp: 1, args: --max-model-len 100 --no-enable-prefix-caching",
         "tp: 1, args: --no-enable-prefix-caching", ""),
    ],
)  # fmt: skip
def test_kva009_stays_quiet_on_matching_pools(prefill: str, decode: str, extra: str) -> None:
    # no rule fires at all on these pools (each is the matching side of KVA009)
    assert audit_own(prefill, decode, extra).findings == ()
