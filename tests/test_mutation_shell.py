"""The shell evaluator's (kvalign/shell/) pattern matching pinned against bash's own rules:
a ``case`` pattern and the right side of ``[[ a == b ]]`` are globs, while
``[ a = b ]`` compares strings. Expected words are what bash passes to the command (bash
manual, "Conditional Constructs" and "Pattern Matching"), derived by hand."""

from __future__ import annotations

import pytest

from kvalign.shell import evaluate, shown


def _words(text: str) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in evaluate(text).commands]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("pre*", "1"),  # * matches "fill"
        ("[pd]refill", "1"),  # bracket expression
        ("p?efill", "1"),  # ? matches one character
        ("decode|pre*", "1"),  # alternatives: the second matches
        ("pre", "2"),  # a glob must match the whole word
        ("*fill?", "2"),
    ],
)
def test_case_patterns_are_globs(pattern: str, expected: str) -> None:
    script = f"ROLE=prefill\ncase $ROLE in\n  {pattern}) X=1 ;;\n  *) X=2 ;;\nesac\nrun $X\n"
    assert _words(script) == [["run", expected]]


def test_double_bracket_equality_is_a_glob_single_bracket_is_not() -> None:
    script = (
        "ROLE=prefill\n"
        "if [[ $ROLE == pre* ]]; then A=glob; else A=literal; fi\n"
        'if [ "$ROLE" = "pre*" ]; then B=glob; else B=literal; fi\n'
        "run $A $B\n"
    )
    assert _words(script) == [["run", "glob", "literal"]]
