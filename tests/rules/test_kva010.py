"""KVA010: tensor parallel size invalid for the model.

Falcon-H1-0.5B block sizes (tests/rules/harness.py): 800 / 800 / 400 / 208 at TP 1 / 2 / 4 / 8.
"""

from __future__ import annotations

import pytest

from tests.rules.harness import audit_own


@pytest.mark.parametrize(
    ("prefill", "decode", "extra"),
    [
        ("tp: 3", "tp: 1", ""),
    ],
)  # fmt: skip
def test_kva010_fires(prefill: str, decode: str, extra: str) -> None:
    assert "KVA010" in {f.rule for f in audit_own(prefill, decode, extra).findings}
