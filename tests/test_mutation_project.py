"""The project-level audit inputs (kvalign/deploy/project.py: ``.kvalign.yaml`` ignores and
``--baseline`` files) pinned where a wrong rule changes the answer, for its mutants
(tests/mutation/run.py project).

Expected values come from the functions' documented schema (``ignore:`` a list of
``{rule, reason, path}`` mappings, ``path`` optional; an entry without ``reason`` is a
non-blocking problem; a baseline is ``kvalign audit --format json`` output, whose
``findings`` each carry a ``fingerprint``; the refusals named in the docstrings) and the
files written in each test, read by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kvalign.deploy.model import Ignore, Location, Problem
from kvalign.deploy.project import load_baseline, load_ignores
from kvalign.errors import InvalidConfig


def _file(tmp_path: Path, text: str, name: str = ".kvalign.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_no_file_no_ignores(tmp_path: Path) -> None:
    assert load_ignores(tmp_path / ".kvalign.yaml") == ((), [])
    assert load_ignores(tmp_path) == ((), [])  # a folder is no file
    assert load_ignores(_file(tmp_path, "")) == ((), [])  # an empty file
    assert load_ignores(_file(tmp_path, "other: 1\n")) == ((), [])  # no ignore key


def test_entries_are_read_in_order(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "ignore:\n"
        "- {rule: KVA002, reason: shared cache, path: 'deploy/*.yaml'}\n"
        "- {rule: KVA003}\n"  # no reason: not honoured, a warning
        "- {rule: KVA004, reason: ''}\n"  # an empty reason is none
        "- {rule: 7, reason: 8, path: 9}\n"  # values as written, as text
        "- {rule: KVA005, reason: r}\n",  # no path: every file
    )
    where = Location(str(path))
    assert load_ignores(path) == (
        (
            Ignore("KVA002", "shared cache", where, "deploy/*.yaml"),
            Ignore("7", "8", where, "9"),
            Ignore("KVA005", "r", where, None),
        ),
        [
            Problem(where, "ignore[1] (KVA003) without reason is not honoured", blocking=False),
            Problem(where, "ignore[2] (KVA004) without reason is not honoured", blocking=False),
        ],
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ignore: {rule: KVA002}\n", "ignore: expected a list"),
        ("ignore:\n", "ignore: expected a list"),  # null
        ("- {rule: KVA002}\n", "ignore: expected a list"),  # the file is no mapping
        ("ignore:\n- {rule: KVA002, reason: r}\n- KVA003\n", "ignore[1]: needs rule and reason"),
        ("ignore:\n- {reason: r}\n", "ignore[0]: needs rule and reason"),
        ("ignore:\n- {rule: '', reason: r}\n", "ignore[0]: needs rule and reason"),
    ],
)
def test_malformed_ignores_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(InvalidConfig) as raised:
        load_ignores(path)
    assert str(raised.value) == f"{path}: {message}"


def test_the_baseline_fingerprints(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        '{"findings": [{"fingerprint": "ab12"}, {"fingerprint": 7, "rule": "KVA002"}]}',
        "b.json",
    )
    assert load_baseline(path) == frozenset({"ab12", "7"})
    assert load_baseline(_file(tmp_path, '{"findings": []}', "e.json")) == frozenset()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"other": []}',  # no findings
        '{"findings": [{"rule": "KVA002"}]}',  # a finding without a fingerprint
        '{"findings": [1]}',  # a finding that is no object
        "[1]",  # no object
    ],
)
def test_a_file_of_another_shape_is_refused(tmp_path: Path, text: str) -> None:
    path = _file(tmp_path, text, "b.json")
    with pytest.raises(InvalidConfig) as raised:
        load_baseline(path)
    assert str(raised.value) == f"--baseline {path}: not a `kvalign audit --format json` output"


def test_an_unreadable_baseline_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "gone.json"
    with pytest.raises(InvalidConfig, match=rf"\A--baseline {re.escape(str(missing))}: ") as raised:
        load_baseline(missing)
    assert raised.type is InvalidConfig  # not the file error's own class


def test_unparsable_yaml_is_refused_naming_the_file(tmp_path: Path) -> None:
    # an unclosed flow list: the error is located in the file (its path, then a line)
    path = _file(tmp_path, "ignore: [1\n")
    with pytest.raises(InvalidConfig, match=rf"\A{re.escape(str(path))}:\d+: "):
        load_ignores(path)
