"""The version comparisons a check makes without packaging agree with packaging (PEP 440).

A plain ``check`` resolves the newest profile and the transformers release it runs with
for every pool; :mod:`kvalign.versions` does that without importing packaging when every
version involved is a plain release (``0.33.0``), and asks packaging otherwise. These
tests hold the shortcut to packaging's answers.
"""

from __future__ import annotations

import itertools

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from kvalign import versions
from kvalign.versions import (
    TRANSFORMERS_NEWEST,
    TRANSFORMERS_PINS,
    TRANSFORMERS_RESOLVED,
    TransformersChoice,
    transformers_for,
)

RELEASES = ["0.9", "0.10.0", "0.10.2", "0.11", "0.11.0", "0.11.1", "0.19.0", "0.25",
            "0.25.0.0", "1.0", "0.33.0", "0.100.0", "10.0.1"]  # fmt: skip


def test_resolved_table_is_what_packaging_resolves() -> None:
    # one entry per pin row, each the newest of TRANSFORMERS_NEWEST the row's range allows
    assert sorted(TRANSFORMERS_RESOLVED) == sorted(spec for _, spec, _ in TRANSFORMERS_PINS)
    for spec, newest in TRANSFORMERS_RESOLVED.items():
        allowed = SpecifierSet(spec)
        expected = max(Version(v) for v in TRANSFORMERS_NEWEST if Version(v) in allowed)
        assert newest == str(expected), spec
    # by hand: "<5" keeps the 4.x line (4.57.6 is its newest); every other range admits 5.20.2
    assert TRANSFORMERS_RESOLVED[">=4.56.0,<5"] == "4.57.6"


@pytest.mark.parametrize(("mine", "theirs"), list(itertools.product(RELEASES, RELEASES)))
def test_plain_comparison_agrees_with_pep440(mine: str, theirs: str) -> None:
    assert versions._at_least(mine, theirs) is (Version(mine) >= Version(theirs))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0.14.0", (0, 14)), ("0.14", (0, 14)), ("1.0.0", (1,)), ("0", (0,)), ("0.33.1", (0, 33, 1)),
     ("0.33.0rc1", None), ("0.33.0+cu128", None), ("1!0.10", None), ("v0.33", None),
     ("0.٣٣", None), ("", None), ("0..1", None)],
)  # fmt: skip
def test_plain_release(text: str, expected: tuple[int, ...] | None) -> None:
    assert versions._plain_release(text) == expected


@pytest.mark.parametrize("release", ["0.10.0", "0.11.1", "0.17.0", "0.19.1", "0.25.0", "0.33.0",
                                     "0.33.0rc1", "0.11.1.dev3"])  # fmt: skip
def test_transformers_for_matches_packaging(release: str) -> None:
    # what the function answered before it had a shortcut: packaging on every comparison
    wanted = Version(release)
    pinned = next(s for f, s, _ in reversed(TRANSFORMERS_PINS) if wanted >= Version(f))
    allowed = SpecifierSet(pinned)
    newest = str(max(Version(v) for v in TRANSFORMERS_NEWEST if Version(v) in allowed))
    transformers_for.cache_clear()
    choice = transformers_for(release, None)
    assert choice == TransformersChoice(
        newest, pinned, f"what installing vLLM {release} resolves (transformers{pinned}): {newest}"
    )


def test_major_without_and_with_packaging() -> None:
    assert TransformersChoice("5.20.2", ">=5.5.3", "").major == 5
    assert TransformersChoice("4.57.6", ">=4.56.0,<5", "").major == 4
    assert TransformersChoice("5.6.0rc1", ">=5.5.3", "").major == 5  # packaging's answer
