"""audit's speed work of issue 18 (second pass): each shortcut gives what the code it
replaces gives, and the run-wide state it changes is restored."""

from __future__ import annotations

import gc

import pytest

from kvalign.cli.audit import AUDIT_GC_THRESHOLDS, few_collections


def test_few_collections_raises_the_thresholds_and_restores_them() -> None:
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with few_collections():
        assert gc.get_threshold() == AUDIT_GC_THRESHOLDS
        assert gc.get_freeze_count() >= frozen
        assert gc.isenabled()  # cycles are still collected, only less often
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_few_collections_restores_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), few_collections():
        raise RuntimeError("stop")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
