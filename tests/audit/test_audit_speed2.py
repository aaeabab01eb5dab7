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


def test_keys_built_alike_take_the_checked_path() -> None:
    # `1` and `0x1` are both the int 1 (YAML 1.1 ints): PyYAML keeps the last value; the
    # same key twice is refused (its line named), as the checked path does
    from kvalign.errors import InvalidConfig
    from kvalign.safeio import load_yaml_documents

    assert load_yaml_documents("1: a\n0x1: b\n", "t.yaml") == [(1, {1: "b"})]
    assert load_yaml_documents("k: [x, 1, true, ~]\n", "t.yaml") == [
        (1, {"k": ["x", 1, True, None]})
    ]
    with pytest.raises(InvalidConfig, match=r"t.yaml:2: duplicate YAML key 'a'"):
        load_yaml_documents("a: 1\na: 2\n", "t.yaml")


def test_the_loader_resolves_tags_as_pyyaml_and_keeps_no_path_state() -> None:
    import yaml

    from kvalign.safeio import _loader_class

    loader = _loader_class()
    plain = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for value, implicit in (("12", (True, False)), ("12", (False, True)), ("yes", (True, False))):
        assert loader.resolve(yaml.ScalarNode, value, implicit) == plain("").resolve(
            yaml.ScalarNode, value, implicit
        )
    assert loader.descend_resolver(None, None) is None
    assert loader.ascend_resolver() == ()
