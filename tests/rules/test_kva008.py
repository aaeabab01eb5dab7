"""KVA008: VLLM_SSM_CONV_STATE_LAYOUT set on one side only.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: DS}", "tp: 1", ""),
    ],
)  # fmt: skip
def test_kva008_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA008" in {f.rule for f in audit_own(prefill, decode, extra).findings}


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: SD}", "tp: 1", ""),  # SD is the default
    ],
)  # fmt: skip
def test_kva008_stays_quiet_on_matching_pools(prefill: str, decode: str, extra: str) -> None:
    # no rule fires at all on these pools (each is the matching side of KVA008)
    assert audit_own(prefill, decode, extra).findings == ()
