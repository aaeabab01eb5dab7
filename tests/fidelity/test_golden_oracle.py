"""Every vector computed by vLLM 0.33.0's own code must be reproduced exactly."""

from __future__ import annotations

from typing import Any

import pytest

from kvalign.settings import Settings
from tests.conftest import geometry_for, oracle_rows
from tests.resolve import rank_of

ROWS = oracle_rows()


def _settings(raw: dict[str, Any]) -> Settings:
    return Settings(
        dtype=raw["dtype"],
        kv_cache_dtype=raw["kv_cache_dtype"],
        block_size=raw["block_size"],
        enable_prefix_caching=raw["enable_prefix_caching"],
        attention_backend=raw["attention_backend"],
        num_speculative_tokens=raw["num_speculative_tokens"],
    )


def _id(row: dict[str, Any]) -> str:
    s = row["settings"]
    return (
        f"{row['model']}-tp{row['tp']}-{s['attention_backend']}-kv{s['kv_cache_dtype']}"
        f"-bs{s['block_size']}-pc{int(s['enable_prefix_caching'])}-spec{s['num_speculative_tokens']}"
    )


def test_oracle_is_complete() -> None:
    # 24 models x 18 settings x 6 TP sizes, as shipped in tests/golden
    assert len(ROWS) == 2592


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_oracle_vector(row: dict[str, Any]) -> None:
    geometry = geometry_for(row["config"])
    result = rank_of(geometry, _settings(row["settings"]), row["tp"])
    expected = row["expected"]
    got: dict[str, Any] = {
        "valid": result.valid,
        "reason": result.reason,
        "attention_free": result.attention_free,
        "mamba_page_bytes": result.mamba_page_bytes,
        "mamba_state_shapes": [list(s) for s in result.mamba_state_shapes],
        "mamba_state_dtypes": list(result.mamba_state_dtypes),
        "kv_heads_per_rank": result.kv_heads_per_rank,
        "attn_page_bytes_per_token": result.attn_page_bytes_per_token,
        "block_size": result.block_size,
        "kernel_block_size": result.kernel_block_size,
        "mamba_page_size_padded": result.mamba_page_size_padded,
        "use_mla": result.use_mla,
    }
    for key, value in expected.items():
        assert got[key] == value, f"{key}: expected {value!r}, got {got[key]!r}"
