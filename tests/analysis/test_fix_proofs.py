"""Every recommended --block-size, fed back, is kept on every pool on every GPU class it
claims: for each model and settings of the golden oracle and of the public
reports, ``check``'s recommendation over the TP sizes recorded there is re-run with
``--block-size B`` and ``--gpu`` set to each class in ``proven_on``."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import yaml

from kvalign.errors import KvalignError
from kvalign.fixes import PLATFORM_CLASSES
from kvalign.pd import analyze
from kvalign.settings import Settings
from tests.conftest import GOLDEN, geometry_for, oracle_rows
from tests.resolve import rank_of

GPU_OF_LABEL = {c.label: c.gpu for classes in PLATFORM_CLASSES.values() for c in classes}


def _groups() -> list[tuple[str, dict[str, Any], list[int]]]:
    groups: dict[tuple[str, str], set[int]] = {}
    for row in oracle_rows():
        settings = {k: v for k, v in row["settings"].items() if k != "block_size"}
        groups.setdefault((row["config"], json.dumps(settings, sort_keys=True)), set()).add(
            row["tp"]
        )
    with (GOLDEN / "public-reports.yaml").open(encoding="utf-8") as handle:
        for case in yaml.safe_load(handle):
            settings = {k: v for k, v in case["settings"].items() if k != "block_size"}
            key = (case["config"], json.dumps(settings, sort_keys=True))
            groups.setdefault(key, set()).update(p["tp"] for p in case["expected"])
    return [(config, json.loads(s), sorted(tps)) for (config, s), tps in sorted(groups.items())]


GROUPS = _groups()


def test_there_are_cases_to_prove() -> None:
    # 240 oracle (model, settings) groups; the public reports add their own settings
    assert len(GROUPS) > 240


#: group index -> (class, TP) points re-run for its recommendation (0: none printed).
PROVEN: dict[int, int] = {}


def _proven(config: str, raw: dict[str, Any], tps: list[int]) -> int:
    """Check each recommendation; returns how many (class, TP) points were re-run."""
    geometry = geometry_for(config)
    settings = Settings(**raw)
    try:
        report = analyze(geometry, settings, tps, tps)
    except KvalignError:
        return 0  # settings the model cannot take (e.g. a packed KV-cache dtype)
    rec = report.recommendation
    if rec.block_size is None:
        return 0
    assert rec.proven_on, (config, raw)
    points = 0
    usable = [tp for tp in tps if report.ranks[tp].usable]
    for label in rec.proven_on:
        gpu = GPU_OF_LABEL[label]
        fed_back = dataclasses.replace(settings, block_size=rec.block_size, gpu=gpu)
        for tp in usable:
            kept = rank_of(geometry, fed_back, tp).block_size
            assert kept == rec.block_size, (config, raw, label, tp, kept)
            points += 1
        # and every pair is then ok on that class
        again = analyze(geometry, fed_back, usable, usable)
        assert {p.verdict for p in again.pairs} == {"ok"}, (config, raw, label)
    return points


@pytest.mark.parametrize("index", range(0, len(GROUPS), 25))
def test_recommendations_hold_where_they_claim(index: int) -> None:
    for offset, group in enumerate(GROUPS[index : index + 25]):
        PROVEN[index + offset] = _proven(*group)


def test_the_proofs_covered_real_recommendations() -> None:
    # runs after the chunks above (file order); every group was visited once
    if len(PROVEN) < len(GROUPS):  # pragma: no cover - only when run on its own
        for index, group in enumerate(GROUPS):
            PROVEN.setdefault(index, _proven(*group))
    # most oracle groups need no change (equal TPs or prefix caching off); those whose
    # pairs fail get a block size, each re-run on 5 CUDA classes x its usable TPs
    proven = [points for points in PROVEN.values() if points]
    assert len(proven) >= 10
    assert all(points % 5 == 0 for points in proven)  # 5 classes, same TPs on each


def test_public_report_qwen35_tep8_vs_dep8_fix() -> None:
    # vLLM issue 42895: Qwen3.5-397B fp8 KV at TP 8 (TEP8) and TP 1 (DEP8)
    geometry = geometry_for("hf-configs/Qwen__Qwen3.5-397B-A17B/config.json")
    report = analyze(geometry, Settings(kv_cache_dtype="fp8"), [8], [1])
    rec = report.recommendation
    # fp8 KV, 2 KV heads (256 + 256 per head, 1 B): a = 1,024 B/token at TP 1; state m =
    # (2·16·128 + 64·128) · 3 · 2 B + 64 · 128 · 128 · 4 B = 73,728 + 4,194,304 = 4,268,032 B
    # → 4,168 tokens. On SM90 (and SM100/SM120, Dk 128; FA4 pages are off with fp8) the
    # FlashInfer GDN prefill checkpoints every 64 tokens: 64 · cdiv(4,168, 64) = 4,224; on
    # A100 16 · cdiv(4,168, 16) = 4,176, which 4,224 also keeps (a multiple of 16 above it).
    # TP 8 (a = 512, m = 533,504 → 1,042 tokens) keeps any larger multiple of 64: 4,224.
    assert rec.block_size == 4224
    assert report.ranks[1].block_size == 4176 and report.ranks[8].block_size == 1056
    for label in rec.proven_on:
        for tp in (8, 1):
            fed = Settings(kv_cache_dtype="fp8", block_size=rec.block_size, gpu=GPU_OF_LABEL[label])
            assert rank_of(geometry, fed, tp).block_size == rec.block_size
