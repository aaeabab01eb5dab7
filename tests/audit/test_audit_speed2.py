"""audit's speed work of issue 18 (second pass): each shortcut gives what the code it
replaces gives, and the run-wide state it changes is restored."""

from __future__ import annotations

import gc
from pathlib import Path

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


def test_signature_compares_what_the_emptied_arguments_compare() -> None:
    # two alternatives that differ only in flags kvalign ignores are one pool; a
    # different --block-size is another
    import dataclasses

    from kvalign.deploy.cmdline import signature
    from kvalign.deploy.model import Location, Pool
    from kvalign.deploy.vllm_args import VllmArgs
    from kvalign.settings import Settings

    def pool(**args: object) -> Pool:
        return Pool(
            role="prefill",
            name="p",
            model="m/m",
            tp=1,
            dp=1,
            settings=Settings(),
            args=VllmArgs(**args),  # type: ignore[arg-type]
            location=Location("f.sh", 1),
        )

    plain = pool(block_size=16)
    noisy = pool(block_size=16, unknown=("--foo",), unresolved=("$X",), unresolved_noted=("$X",))
    other = pool(block_size=32)
    assert signature(plain) == signature(noisy)
    assert hash(signature(plain)) == hash(signature(noisy))
    assert signature(plain) != signature(other)
    emptied = dataclasses.replace(noisy.args, unknown=(), unresolved=(), unresolved_noted=())
    assert emptied == plain.args


def test_the_typed_walk_tells_links_and_regular_files_as_pathlib(tmp_path: Path) -> None:
    import os

    from kvalign.deploy import _walk, _walk_typed

    (tmp_path / "a-b").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.yaml").write_text("k: v\n")
    (tmp_path / "a-b" / "y.sh").write_text("echo\n")
    (tmp_path / "a.txt").write_text("t\n")
    os.symlink(tmp_path / "a" / "x.yaml", tmp_path / "link.yaml")
    os.symlink(tmp_path / "missing", tmp_path / "dangling.yaml")
    os.mkfifo(tmp_path / "fifo.yaml")
    typed = _walk_typed(tmp_path, [])
    # sorted part by part, as paths sort ("a/x.yaml" before "a-b/y.sh", unlike the text)
    assert [child for child, _, _ in typed] == sorted(child for child, _, _ in typed)
    assert [child.relative_to(tmp_path).as_posix() for child in _walk(tmp_path, [])] == [
        "a/x.yaml",
        "a-b/y.sh",
        "a.txt",
        "dangling.yaml",
        "fifo.yaml",
        "link.yaml",
    ]
    for child, link, regular in typed:
        assert link == child.is_symlink()
        assert link or regular == child.is_file()


def test_an_audit_of_the_examples_makes_no_reference_cycles() -> None:
    # what makes AUDIT_GC_THRESHOLDS safe: the data an audit builds is freed by reference
    # counting alone. The YAML tree builder's self-calling closure once kept every file's
    # loader in a cycle (~190 MB in a 10,000-file audit, until a collection).
    from kvalign.auditing import AuditRequest
    from kvalign.auditing import run as run_audit
    from kvalign.report.audit import to_json

    examples = str(Path(__file__).resolve().parents[2] / "configs" / "deployments")
    to_json(run_audit(AuditRequest((examples,))).report)  # first run: imports, caches
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        report = run_audit(AuditRequest((examples,))).report
        assert len(report.files) >= 20  # the examples were read
        to_json(report)
        del report
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()


def test_the_yaml_tree_builder_leaves_no_cycle() -> None:
    from kvalign.safeio import load_yaml_documents

    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        assert load_yaml_documents("a: [1, {b: c}]\n---\nd: e\n", "t.yaml") == [
            (1, {"a": [1, {"b": "c"}]}),
            (3, {"d": "e"}),
        ]
        assert gc.collect() == 0
    finally:
        if was_enabled:
            gc.enable()


def test_a_file_the_references_pass_parsed_is_not_parsed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the ConfigMap file is parsed by the references pass (ConfigMaps and KServe configs of
    # every file) and its documents are handed to the read: one parse per file
    import kvalign.deploy as deploy
    import kvalign.deploy.interface as interface
    from kvalign.safeio import load_yaml_documents

    parsed: list[str] = []

    def counting(text: str, name: str) -> list[tuple[int, object]]:
        parsed.append(name)
        return load_yaml_documents(text, name)

    monkeypatch.setattr(deploy, "load_yaml_documents", counting)
    monkeypatch.setattr(interface, "load_yaml_documents", counting)
    folder = Path(__file__).resolve().parents[2] / "configs" / "deployments" / "kubernetes"
    name = str(folder / "nemotron-deployments-bad.yaml")
    deployments, _ = deploy.read_paths([name])
    assert [d.source for d in deployments] == [name]
    assert len(deployments[0].pools) == 2
    assert parsed == [name]
