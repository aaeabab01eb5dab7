"""Shared fixtures: the bundled catalog and the golden vectors of tests/golden."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvalign.geometry import ModelGeometry
from kvalign.sources import load_model

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
GOLDEN = TESTS / "golden"
CATALOG = ROOT / "configs" / "models"


def catalog_path(golden_config: str) -> Path:
    """Map a golden ``hf-configs/<org>__<name>/config.json`` to the bundled copy (a
    ``tests/…`` path names a test config of this repository)."""
    if golden_config.startswith("tests/"):
        return ROOT / golden_config
    folder = Path(golden_config).parent.name
    org, name = folder.split("__", 1)
    return CATALOG / org / name / "config.json"


@cache
def geometry_for(golden_config: str) -> ModelGeometry:
    """Load (once) the bundled config a golden vector names."""
    return load_model(str(catalog_path(golden_config)))


def oracle_rows() -> list[dict[str, Any]]:
    """Every line of the vLLM 0.33.0 oracle."""
    with (GOLDEN / "vllm-0.33.0-oracle.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reaches the network: the Hub is offline and the HF cache is empty."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The geometry cache of every test lives in its own tmp folder, never in ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
