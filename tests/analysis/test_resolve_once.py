"""Resolve once: ``create_engine_config`` runs once per (pool settings, GPU class).

``check`` and ``audit`` resolve each pool's settings once for the GPU it names (or none),
and the fix proof resolves them once more on each GPU class the pool may run on
(``kvalign.fixes.PLATFORM_CLASSES``: five CUDA classes for an unpinned CUDA pool), then only
varies the block size of those configs (``EngineConfig.with_block_size``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import kvalign.engine
from kvalign.cli import app
from kvalign.engine import EngineCache, create_engine_config
from kvalign.errors import InvalidSettings
from kvalign.fixes import PLATFORM_CLASSES
from kvalign.settings import Settings
from kvalign.sources import load_model
from tests.conftest import ROOT

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN35 = "Qwen/Qwen3.5-397B-A17B"
#: the pool's own resolution (no GPU given) plus one per CUDA class the fix is proven on.
PER_SETTINGS = 1 + len(PLATFORM_CLASSES["cuda"])
KV = '{"kv_connector":"NixlConnector","kv_role":"%s"}'


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    """Every ``create_engine_config`` call's settings."""
    seen: list[Settings] = []
    real = kvalign.engine.create_engine_config

    def counting(geometry: Any, settings: Settings) -> Any:
        seen.append(settings)
        return real(geometry, settings)

    monkeypatch.setattr(kvalign.engine, "create_engine_config", counting)
    return seen


def _by_gpu(calls: list[Settings]) -> Counter[str | None]:
    return Counter(s.gpu for s in calls)


def test_check_of_three_tps_resolves_once_per_gpu_class(calls: list[Settings]) -> None:
    # the three TPs share their settings: one resolution with no GPU, one per CUDA class
    # (the fix proof and the raised --block-size lines share them); before, 79 calls
    # (--block-size 528: vLLM raises it at TP 1 and TP 4, so the fix proof and the "raised"
    # lines both run, on every class)
    result = CliRunner().invoke(
        app, ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1,4", "--block-size", "528"]
    )
    assert result.exit_code == 1, result.output
    assert "--block-size 2096" in result.output
    assert len(calls) == PER_SETTINGS == 6
    assert _by_gpu(calls) == Counter([None, "A100", "H100", "B200", "B300", "RTX-PRO-6000"])


def test_check_with_a_pinned_gpu_resolves_once(calls: list[Settings]) -> None:
    result = CliRunner().invoke(
        app, ["check", QWEN35, "--prefill-tp", "8", "--decode-tp", "1,2", "--gpu", "H200"]
    )
    assert result.exit_code == 1, result.output
    assert len(calls) == 1 and calls[0].gpu == "H200"


def test_failing_two_branch_script_audit_resolves_once_per_settings_and_class(
    calls: list[Settings],
) -> None:
    # three pools (prefill TP 8 or 4 by branch, decode TP 4), one set of settings: 6 calls
    # (before, 51)
    script = ROOT / "tests" / "deploy_corpus" / "vllm-examples" / "tp_if_else.sh"
    result = CliRunner().invoke(app, ["audit", str(script), "--format", "json"])
    assert result.exit_code == 1, result.output
    assert len(calls) == PER_SETTINGS


def test_audit_pools_with_different_settings_resolve_once_each(
    tmp_path: Path, calls: list[Settings]
) -> None:
    # two prefill and two decode pools; the decode pools add --kv-cache-dtype fp8: two
    # distinct settings, each resolved once with no GPU and once per CUDA class
    lines = ["#!/bin/bash"]
    pools = [("kv_producer", "")] * 2 + [("kv_consumer", " --kv-cache-dtype fp8")] * 2
    for i, (role, extra) in enumerate(pools):
        tp = 8 if role == "kv_producer" else 1
        lines.append(f"vllm serve {NANO} -tp {tp} --port {8000 + i}{extra} "
                     f"--kv-transfer-config '{KV % role}' &")  # fmt: skip
    path = tmp_path / "pd.sh"
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(app, ["audit", str(path), "--format", "json"])
    assert result.exit_code == 1, result.output
    assert len(calls) == 2 * PER_SETTINGS
    assert Counter(s.kv_cache_dtype for s in calls) == {"auto": 6, "fp8": 6}


@pytest.mark.parametrize(
    ("model", "settings"),
    [
        (NANO, Settings()),
        (NANO, Settings(gpu="H100", block_size=64)),
        (QWEN35, Settings(gpu="B200")),
        (QWEN35, Settings(vllm_version="0.18.1", mamba_ssm_cache_dtype="float32")),
        (NANO, Settings(vllm_version="0.14.0", enable_prefix_caching=True)),
        ("moonshotai/Kimi-K3", Settings(gpu="B200")),
        ("tiiuae/falcon-mamba-7b", Settings()),
    ],
)
@pytest.mark.parametrize("block", [16, 528, 2096, 4176])
def test_with_block_size_equals_resolving_that_block_size(
    model: str, settings: Settings, block: int
) -> None:
    # the fix proof's shortcut is exact: re-deriving the block-size fields gives the same
    # config as resolving the settings with that --block-size from scratch
    geometry = load_model(model)
    engine = create_engine_config(geometry, settings)
    fresh = create_engine_config(geometry, dataclasses.replace(settings, block_size=block))
    assert engine.with_block_size(block) == fresh


def test_with_block_size_rejects_what_create_engine_config_rejects() -> None:
    engine = create_engine_config(load_model(NANO), Settings())
    with pytest.raises(InvalidSettings, match="--block-size must be positive, got 0"):
        engine.with_block_size(0)


def test_engine_cache_resolves_each_model_and_settings_once(calls: list[Settings]) -> None:
    cache = EngineCache()
    nano = load_model(NANO)
    first = cache.resolve(nano, Settings())
    assert cache.resolve(nano, Settings()) is first
    cache.resolve(nano, Settings(gpu="H100"))
    with pytest.raises(InvalidSettings):
        cache.resolve(nano, Settings(gpu="no-such-gpu"))
    with pytest.raises(InvalidSettings):  # the error is kept too
        cache.resolve(nano, Settings(gpu="no-such-gpu"))
    assert [s.gpu for s in calls] == [None, "H100", "no-such-gpu"]


def test_raised_block_sizes_are_worked_out_once_per_shape_of_pools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # two groups of the same models, settings and TPs under other labels (an audit of
    # copies of one deployment): the raised --block-size lines carry each group's own
    # labels, and the second group is not worked out again. Qwen3.5-397B at
    # --block-size 2096 is raised to 8,384 on the CUDA classes from SM90 up (as
    # tests/analysis/test_policy.py states it for check).
    import kvalign.fixes as fixes

    geometry = load_model(QWEN35)
    cache = fixes.RunCache()
    engine = cache.resolve(geometry, Settings(block_size=2096))
    where = "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120)"
    first = [fixes.FixPool(geometry, engine, tp, f"a/{role}") for tp, role in ((8, "p"), (1, "d"))]
    assert fixes.raised_block_sizes(first, cache) == [
        f"a/p: vLLM raises --block-size 2096 to 8,384 on {where}",
        f"a/d: vLLM raises --block-size 2096 to 8,384 on {where}",
    ]
    worked: list[int] = []
    real = fixes.scenarios

    def counting(pools: Any, run: Any) -> Any:
        worked.append(len(pools))
        return real(pools, run)

    monkeypatch.setattr(fixes, "scenarios", counting)
    second = [dataclasses.replace(p, label=p.label.replace("a/", "b/")) for p in first]
    assert fixes.raised_block_sizes(second, cache) == [
        f"b/p: vLLM raises --block-size 2096 to 8,384 on {where}",
        f"b/d: vLLM raises --block-size 2096 to 8,384 on {where}",
    ]
    assert worked == []
    # another TP is another shape: worked out (TP 2 at 2096: raised as well)
    third = [dataclasses.replace(first[0], tp=2, label="c/p"), first[1]]
    fixes.raised_block_sizes(third, cache)
    assert worked == [2]
