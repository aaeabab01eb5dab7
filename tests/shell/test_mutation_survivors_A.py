"""Tests written for the shell mutation survivors of share A (docs/mutation-report.md, section
"shell": parse.py and evaluate.py's ``_Evaluator._run`` / ``run`` / ``_if`` / ``_cap`` /
``_record`` / ``_dispatch``). Each was checked by hand to fail with its mutant applied.

Expected values are what ``/bin/bash`` (5.2.15) printed for the same fragment (``run`` there
is ``run() { printf "%s|" run "$@"; echo; }``, so ``run|a|b|`` is the words ``run a b``;
``env | grep -c '^A='`` tells whether a child process sees ``A``), recorded as
``# bash 5.2: …``, or a hand derivation written next to the test.
"""

from __future__ import annotations

from kvalign.shell import Command, evaluate, shown


def _commands(text: str) -> list[Command]:
    return evaluate(text).commands


def _words(text: str) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in _commands(text)]


# ---- set: options, then the positional parameters (bash manual, "The Set Builtin") -------


def test_set_reads_a_in_any_option_word() -> None:
    # bash 5.2: `set -e -ax; A=1; env | grep -c '^A='` prints 1 (-a in the second option
    # word turns allexport on), and `set -ae; …` prints 1
    for script in ("set -e -ax\nA=1\nrun\n", "set -ae\nA=1\nrun\n", "set -a\nA=1\nrun\n"):
        (command,) = _commands(script)
        assert dict(command.env) == {"A": "1"}, script


def test_set_plus_a_turns_allexport_off() -> None:
    # bash 5.2: `set -a; set +a; A=1; env | grep -c '^A='` prints 0, and so does
    # `set -ae +a; …` (options are read left to right)
    for script in ("set -a\nset +a\nA=1\nrun\n", "set -ae +a\nA=1\nrun\n"):
        (command,) = _commands(script)
        assert dict(command.env) == {}, script


def test_set_arguments_after_the_options_are_not_options() -> None:
    # bash 5.2: `set -- -a; A=1; env | grep -c '^A='; run "$@"` prints 0 then run|-a|;
    # `set x -a; …` prints 0 (x ends the options: x and -a are $1 and $2), and
    # `set - -a; …` prints 0 (a lone - ends the options too)
    assert _words('set -- -a\nA=1\nrun "$@"\n') == [["run", "-a"]]
    for script in ("set -- -a\nA=1\nrun\n", "set x -a\nA=1\nrun\n", "set - -a\nA=1\nrun\n"):
        (command,) = _commands(script)
        assert dict(command.env) == {}, script


def test_set_positional_parameters() -> None:
    # bash 5.2: `set x -- y; run "$@"` prints run|x|--|y| (-- after a word is a word);
    # `set -e -- a b; run "$@"` prints run|a|b|; `set x -a; run "$@"` prints run|x|-a|
    assert _words('set x -- y\nrun "$@"\n') == [["run", "x", "--", "y"]]
    assert _words('set -e -- a b\nrun "$@"\n') == [["run", "a", "b"]]
    assert _words('set x -a\nrun "$@"\n') == [["run", "x", "-a"]]


def test_set_o_takes_the_next_word() -> None:
    # bash 5.2: `set -- a b; set -eo pipefail; run "$@"` prints run|a|b| (pipefail is -o's
    # argument, not $1); `set -euo pipefail x; run "$@"` prints run|x|
    assert _words('set -- a b\nset -eo pipefail\nrun "$@"\n') == [["run", "a", "b"]]
    assert _words('set -euo pipefail x\nrun "$@"\n') == [["run", "x"]]
    # bash 5.2: `set -o allexport; A=1; env | grep -c '^A='` prints 1; after
    # `set -a; set +o allexport` it prints 0
    (command,) = _commands("set -o allexport\nA=1\nrun\n")
    assert dict(command.env) == {"A": "1"}
    (command,) = _commands("set -a\nset +o allexport\nA=1\nrun\n")
    assert dict(command.env) == {}
