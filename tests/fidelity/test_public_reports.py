"""Block sizes vLLM printed in real, publicly reported deployments
(tests/golden/public-reports.yaml)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kvalign.settings import Settings
from tests.conftest import GOLDEN, geometry_for
from tests.resolve import rank_of

with (GOLDEN / "public-reports.yaml").open(encoding="utf-8") as _handle:
    CASES: list[dict[str, Any]] = yaml.safe_load(_handle)

#: the vLLM release each report was made on, when it is not the current one (0.33)
REPORTED_ON = {"qwen3.5-27b-tp1": "0.19.1", "qwen3-next-tp2": "0.10.2"}

EXPANDED = [(case, point) for case in CASES for point in case["expected"]]


def test_every_report_is_loaded() -> None:
    assert [c["id"] for c in CASES] == [
        "nemotron3-nano-fp8-tp-sweep",
        "falcon-h1-0.5b-seed",
        "qwen3.5-397b-tep8-vs-dep8",
        "qwen3.6-35b-tp4",
        "qwen3.5-27b-tp1",
        "qwen3-next-tp2",
    ]
    assert len(EXPANDED) == 9


@pytest.mark.parametrize(
    ("case", "point"), EXPANDED, ids=[f"{c['id']}-tp{p['tp']}" for c, p in EXPANDED]
)
def test_public_report(case: dict[str, Any], point: dict[str, Any]) -> None:
    geometry = geometry_for(case["config"])
    settings = Settings(**case["settings"], vllm_version=REPORTED_ON.get(case["id"]))
    result = rank_of(geometry, settings, point["tp"])
    assert result.valid
    assert result.block_size == point["block_size"]
    if "attn_page_bytes_per_token" in point:
        assert result.attn_page_bytes_per_token == point["attn_page_bytes_per_token"]
    if "mamba_page_bytes" in point:
        assert result.mamba_page_bytes == point["mamba_page_bytes"]
    if "mamba_padding_pct" in point:
        assert result.mamba_padding_pct == pytest.approx(point["mamba_padding_pct"], abs=0.005)
    for backend, kernel in point.get("kernel_block_size", {}).items():
        per_backend = rank_of(
            geometry,
            Settings(
                **case["settings"],
                attention_backend=backend,
                vllm_version=REPORTED_ON.get(case["id"]),
            ),
            point["tp"],
        )
        assert per_backend.block_size == point["block_size"]
        assert per_backend.kernel_block_size == kernel, backend


def test_reports_on_older_releases_use_their_profile() -> None:
    # the two boot logs come from the model-config era, where alignment is fixed at 16
    for case_id, version in REPORTED_ON.items():
        case = next(c for c in CASES if c["id"] == case_id)
        point = case["expected"][0]
        result = rank_of(geometry_for(case["config"]), Settings(vllm_version=version), point["tp"])
        assert result.derivation is not None
        assert result.derivation.site == "model-config"
        assert result.block_size == point["block_size"]
