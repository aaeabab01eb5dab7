"""Mutation-testing tests for kvalign/shell/ (evaluate): expected values come from bash 5.x run
by hand on each fragment (recorded beside the test) or from the bash manual."""

from __future__ import annotations

import importlib

import pytest

from kvalign.shell import MAX_ALTERNATIVES, Command, evaluate, shown
from kvalign.shell.expand import ShellBudgetExceeded


def _commands(text: str, **kw: object) -> list[Command]:
    return evaluate(text, **kw).commands  # type: ignore[arg-type]


def _words(text: str, **kw: object) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in _commands(text, **kw)]


def _runs(text: str) -> list[list[str]]:
    return [w for w in _words(text) if w and w[0] == "run"]


# ---- where assignments reach (bash manual, "Command Execution Environment") -------------
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2: run|in|2 then run|out|1 (a subshell's assignments stay in it)
        ("A=1\n( A=2; run in $A )\nrun out $A\n", [["run", "in", "2"], ["run", "out", "1"]]),
        # bash: run|2 (a group runs in this shell)
        ("A=1\n{ A=2; }\nrun $A\n", [["run", "2"]]),
        # bash: run|1 (each part of a pipeline is a subshell)
        ("A=1\necho x | A=3\nrun $A\n", [["run", "1"]]),
        # bash: run|1|2 (several assignments on one line)
        ("A=1 B=2\nrun $A $B\n", [["run", "1", "2"]]),
        # bash: run|gone
        ('A=1\nunset A\nrun "${A-gone}"\n', [["run", "gone"]]),
        # bash: run|xy
        ("A=x\nA+=y\nrun $A\n", [["run", "xy"]]),
        # bash: run|post twice (eval runs in this shell)
        ("A=pre\neval 'A=post; run $A'\nrun $A\n", [["run", "post"], ["run", "post"]]),
        # bash: run|x then run|a|b (a function's "$@" is its own; the caller's comes back)
        ('set -- a b\nf() { run "$@"; }\nf x\nrun "$@"\n', [["run", "x"], ["run", "a", "b"]]),
        # bash: run|1|2|3 (export NAME marks a later value too)
        ("export A=1 B\nB=2\ndeclare -r C=3\nrun $A $B $C\n", [["run", "1", "2", "3"]]),
        # bash: run|in ; the redirection is no argument, the value stays
        ("A=1\n{ A=in; } > /dev/null\nrun $A\n", [["run", "in"]]),
        # bash: run|ok (a negated command still runs)
        ("! A=ok\nrun $A\n", [["run", "ok"]]),
    ],
)
def test_assignments_reach_later_commands(script: str, expected: list[list[str]]) -> None:
    assert _runs(script) == expected


def test_an_unresolved_array_item_assignment() -> None:
    # A[1]=x: the array's items are not tracked; A itself becomes unknown
    assert _words("A[1]=x\nrun $A\n") == [["run", "${A[1]}"]]


# ---- && and || (bash manual, "Lists of Commands") ----------------------------------------
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2: run|1|u|u|1
        (
            "true && A=1\nfalse && B=1\ntrue || C=1\nfalse || D=1\n"
            'run "${A-u}" "${B-u}" "${C-u}" "${D-u}"\n',
            [["run", "1", "u", "u", "1"]],
        ),
        # bash: run|t ; run|n
        ('X=5\n[ "$X" = 5 ] && R=t || R=f\nrun $R\n', [["run", "t"]]),
        ('X=5\n[ "$X" = 6 ] || R=n\nrun $R\n', [["run", "n"]]),
        # a command's outcome is unknown: `cd x && …` is taken to succeed, `cmd || …` too
        ("cd /x && A=1\nrun $A\n", [["run", "1"]]),
        ('grep -q x f || A=1\nrun "${A-u}"\n', [["run", "u"]]),
        # an undecided test: both paths
        ('[ "$Q" = 1 ] && A=1\nrun "${A-u}"\n', [["run", "1"], ["run", "u"]]),
        ('[ "$Q" = 1 ] || A=1\nrun "${A-u}"\n', [["run", "1"], ["run", "u"]]),
    ],
)
def test_and_or_lists(script: str, expected: list[list[str]]) -> None:
    assert _runs(script) == expected


def test_a_list_runs_the_right_side_on_the_taken_path_only() -> None:
    # `[ … ] && run a` with the test undecided: run a is seen once, on its own path
    commands = _commands('[ "$Q" = 1 ] && run a\nrun b\n')
    assert [[shown(w) for w in c.words] for c in commands] == [["run", "a"], ["run", "b"]]


# ---- conditions (bash manual, "Bash Conditional Expressions") ---------------------------
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2 prints each expected word list
        ("X=5\nif [ $X -ne 5 ]; then R=a; elif [ $X -ge 5 ]; then R=b; else R=c; fi\nrun $R\n",
         [["run", "b"]]),
        ("X=5\nif [ $X -lt 5 ]; then R=a; elif [ $X -gt 9 ]; then R=b; else R=c; fi\nrun $R\n",
         [["run", "c"]]),
        ('X=5\nif ! [ "$X" = 5 ]; then R=a; else R=b; fi\nrun $R\n', [["run", "b"]]),
        ("X=5\nif [[ $X -eq 5 && -n $X ]]; then R=a; else R=b; fi\n"
         "if [[ $X -eq 4 || -z $X ]]; then S=a; else S=b; fi\n"
         'if [ $X -eq 5 -a -n "$X" ]; then T=a; else T=b; fi\n'
         'if [ $X -eq 4 -o -z "$X" ]; then U=a; else U=b; fi\nrun $R $S $T $U\n',
         [["run", "a", "b", "a", "b"]]),
        ('X=5\nif test -z "$X"; then R=a; else R=b; fi\n'
         'if test "$X" != 5; then S=a; else S=b; fi\nrun $R $S\n', [["run", "b", "b"]]),
        ('X=" 5 "\nif [ "$X" -eq 5 ]; then R=a; else R=b; fi\nrun $R\n', [["run", "a"]]),
        ("if :; then R=a; else R=b; fi\nrun $R\n", [["run", "a"]]),
        ("X=abc\nif [[ $X == a?c ]]; then R=a; else R=b; fi\nrun $R\n", [["run", "a"]]),
        ('X=1\nif [ "$X" -le 1 ] && [ "$X" -ge 1 ]; then R=a; else R=b; fi\nrun $R\n',
         [["run", "a"]]),
        ('X=1\nif [ "$X" -gt 1 ] || [ "$X" -lt 1 ]; then R=a; else R=b; fi\nrun $R\n',
         [["run", "b"]]),
        ('X=1\nif [ "$X" -ne 1 ] || false; then R=a; else R=b; fi\nrun $R\n', [["run", "b"]]),
        ('X=1\nif [[ ! ( $X = 2 ) ]]; then R=a; else R=b; fi\nrun $R\n', [["run", "a"]]),
        ('X=1\nif [ -n "$X" ] && [ "$X" != 1 ]; then R=a; else R=b; fi\nrun $R\n',
         [["run", "b"]]),
        ('X=ab\nif test "$X" = ab; then R=a; else R=b; fi\nrun $R\n', [["run", "a"]]),
        ('X=\nif test -n "$X"; then R=a; else R=b; fi\nrun $R\n', [["run", "b"]]),
        ('X=\nif [ "$X" ]; then R=a; else R=b; fi\nrun $R\n', [["run", "b"]]),
        ('X=x\nif [ "$X" ]; then R=a; else R=b; fi\nrun $R\n', [["run", "a"]]),
        ('if [ "$NEVER" ]; then R=a; else R=b; fi\nrun $R\n', [["run", "b"]]),
        ("if [ -n x ]; then R=a; else R=b; fi\nrun $R\n", [["run", "a"]]),
        ('if [ -z "" ]; then R=a; else R=b; fi\nrun $R\n', [["run", "a"]]),
        ("X=7\nif [ $X -eq 7 ]; then R=a; fi\nrun ${R-none}\n", [["run", "a"]]),
        ("X=7\nif [ $X -eq 8 ]; then R=a; fi\nrun ${R-none}\n", [["run", "none"]]),
    ],
)  # fmt: skip
def test_decided_conditions(script: str, expected: list[list[str]]) -> None:
    assert _runs(script) == expected


@pytest.mark.parametrize(
    "condition",
    [
        '[ "$Q" = 1 ]', '[[ $Q == 1 ]]', "[ $Q -eq 1 ]", 'test "$Q" = 1', "[ -f /x ]",
        '[ "$Q" = 1 ] || [ -z x ]', "[ 1 -eq 1 -eq 1 ]",
        "test -f /x", "test a b c d", "cmd", "[[ $Q =~ x ]]", "! cmd",
        "[[ -n $Q && $Q = 1 ]]", "[[ $Q = 1 || -z x ]]", "[ x -eq y ]",
        "[[ ! ( $Q = 1 ) ]]",
    ],
)  # fmt: skip
def test_undecided_conditions_take_both_branches(condition: str) -> None:
    # Q never set: an = / -eq test on it cannot be decided (it may come from outside)
    script = f"if {condition}; then R=a; else R=b; fi\nrun $R\n"
    assert _runs(script) == [["run", "a"], ["run", "b"]]


def test_the_undecided_conditions_are_named_on_each_path() -> None:
    script = 'if [ "$Q" = 1 ]; then R=a; elif [ "$Q" = 2 ]; then R=b; else R=c; fi\nrun $R\n'
    commands = _commands(script)
    assert [(c.words[-1], c.alternative) for c in commands] == [
        ("a", ('if [ "$Q" = 1 ]',)),
        ("b", ('not if [ "$Q" = 1 ]', 'elif [ "$Q" = 2 ]')),
        ("c", ('not if [ "$Q" = 1 ]', 'not elif [ "$Q" = 2 ]')),  # else: what is left
    ]
    assert [c.hints for c in commands] == [(), (), ()]
    # inside a branch, the condition is a hint of the command
    (inner, other) = _commands('if [ "$Q" = 1 ]; then run in; fi\nrun out\n')[:2]
    assert inner.hints == ('if [ "$Q" = 1 ]',)
    assert other.hints == ()


def test_case_items_and_alternatives() -> None:
    # bash 5.2: run|1 (b|a matches a) ; run|none (no item matches)
    assert _runs("X=a\ncase $X in\n  b|a) R=1 ;;\n  *) R=2 ;;\nesac\nrun $R\n") == [["run", "1"]]
    script = 'X=zz\ncase "$X" in\n  a) R=1 ;;\n  b) R=2 ;;\nesac\nrun "${R-none}"\n'
    assert _runs(script) == [["run", "none"]]
    # an unknown subject: every item is a path; the last * item is the default
    commands = _commands("case $Q in\n  a|b) R=1 ;;\n  *) R=2 ;;\nesac\nrun $R\n")
    assert [(c.words[-1], c.alternative) for c in commands] == [
        ("1", ("case a | b)",)),
        ("2", ("not case a | b)",)),
    ]
    # a pattern with an unknown part is undecided
    assert _runs("X=a\ncase $X in\n  $Q) R=1 ;;\n  *) R=2 ;;\nesac\nrun $R\n") == [
        ["run", "1"],
        ["run", "2"],
    ]
    # an item's body sees the case pattern as a hint
    (command,) = _commands("X=a\ncase $X in\n  a) run x ;;\nesac\n")
    assert command.hints == ("case a)",)


def test_case_on_an_argument_default_takes_every_role() -> None:
    # ${1:-prefill} is the no-argument run; a run with decode is as real: both items
    # (and a run with any other argument matches no item: R unset, kept as written)
    script = 'case "${1:-prefill}" in\n  prefill) R=p ;;\n  decode) R=d ;;\nesac\nrun $R\n'
    assert _runs(script) == [["run", "p"], ["run", "d"], ["run", "$R"]]
    script = (
        'ROLE=${1:-prefill}\ncase "$ROLE" in\n  prefill) R=p ;;\n  decode) R=d ;;\nesac\nrun $R\n'
    )
    assert _runs(script) == [["run", "p"], ["run", "d"], ["run", "$R"]]
    # a default that names no role is the one value: decided
    script = 'M=${1:-org/m}\ncase "$M" in\n  org/m) R=p ;;\n  *) R=d ;;\nesac\nrun $R\n'
    assert _runs(script) == [["run", "p"]]
    # set later to a plain value: no longer from the argument
    script = 'R=${1:-prefill}\nR=decode\nif [ "$R" = decode ]; then X=1; else X=2; fi\nrun $X\n'
    assert _runs(script) == [["run", "1"]]


# ---- loops (bash manual, "Looping Constructs") -------------------------------------------
def test_for_loops() -> None:
    # bash 5.2: run|a, run|b, run|c
    assert _runs("for i in a b c; do run $i; done\n") == [["run", "a"], ["run", "b"], ["run", "c"]]
    # more than 8 items: the variable is unknown, the body seen once
    items = " ".join(str(n) for n in range(9))
    assert _runs(f"for i in {items}; do run $i; done\n") == [["run", "$i"]]
    eight = " ".join(str(n) for n in range(8))
    assert _runs(f"for i in {eight}; do run $i; done\n") == [["run", str(n)] for n in range(8)]
    # bash 5.2: run| (one item, the empty word)
    assert _runs('for i in ""; do run "$i"; done\n') == [["run", ""]]
    # a C-style loop: the body once
    assert _runs("for ((i=0; i<2; i++)); do run x; done\n") == [["run", "x"]]
    # the loop header is a hint
    (command,) = _commands("for i in a; do run $i; done\n")
    assert command.hints == ("for i in a; do run $i; done",)


def test_while_loops() -> None:
    # bash 5.2: run|after (the condition is false: the body never runs)
    assert _runs("X=1\nwhile [ $X -eq 2 ]; do run never; done\nrun after\n") == [["run", "after"]]
    # an unknown condition: the body once, and the path that skipped it (one path here:
    # both end the same)
    assert _runs("while read L; do run x; done\nrun after\n") == [["run", "x"], ["run", "after"]]
    # bash 5.2 prints nothing: `until` skips its body when the condition holds
    assert _runs("X=1\nuntil [ $X -eq 1 ]; do run u; done\n") == []
    # bash 5.2: run|u (X unset: the condition fails, the body runs)
    assert _runs("until [ $X -eq 1 ]; do run u; X=1; done\n") == [["run", "u"]]


# ---- functions -----------------------------------------------------------------------------
def test_uncalled_functions_are_read_with_unknown_arguments() -> None:
    commands = _commands("f() {\n  run $1 $#\n}\n")
    assert [[shown(w) for w in c.words] for c in commands] == [["run", "$1", "$#"]]
    assert commands[0].hints == ("function f",)
    # a called one is not read again
    assert _runs("f() { run $1; }\nf a\n") == [["run", "a"]]


def test_function_calls_nest_and_restore_arguments() -> None:
    script = 'g() { run g "$@"; }\nf() { g x; run f "$@"; }\nset -- p\nf a b\nrun top "$@"\n'
    # bash 5.2: run|g|x ; run|f|a|b ; run|top|p
    assert _runs(script) == [["run", "g", "x"], ["run", "f", "a", "b"], ["run", "top", "p"]]


def test_exit_inside_a_function_ends_the_path() -> None:
    # bash: run|before only
    assert _runs("f() { exit 0; }\nrun before\nf\nrun after\n") == [["run", "before"]]


# ---- set, shift, read, source, export as commands ----------------------------------------
def test_set_options_and_allexport() -> None:
    (command,) = _commands("set -a\nA=1\nrun\n")
    assert dict(command.env) == {"A": "1"}  # set -a exports every later assignment
    (command,) = _commands("set -ea\nA=1\nrun\n")
    assert dict(command.env) == {"A": "1"}
    (command,) = _commands("set -e\nA=1\nrun\n")
    assert dict(command.env) == {}
    (command,) = _commands("set -x -a\nA=1\nrun\n")
    assert dict(command.env) == {"A": "1"}
    (command,) = _commands("set -x +a\nA=1\nrun\n")
    assert dict(command.env) == {}


def test_set_dashdash_replaces_the_arguments() -> None:
    # bash 5.2: run|2|b|c
    assert _runs("set -- b c\nrun $# $1 $2\n") == [["run", "2", "b", "c"]]
    # bash: set -e -- x: run|x
    assert _runs("set -e -- x\nrun $1\n") == [["run", "x"]]
    # bash: run|0 ($# after set --)
    assert _runs("set --\nrun $# $1\n") == [["run", "0"]]


def test_shift_counts() -> None:
    # bash 5.2: run|c|1 ; run|b|c|2 (no count: one)
    assert _runs("set -- a b c\nshift 2\nrun $1 $#\n") == [["run", "c", "1"]]
    assert _runs("set -- a b c\nshift\nrun $1 $2 $#\n") == [["run", "b", "c", "2"]]
    assert _runs("set -- a b c\nshift 0\nrun $1 $#\n") == [["run", "a", "3"]]


def test_read_makes_a_variable_unknown() -> None:
    assert _runs("A=1\nread -r A B\nrun $A $B\n") == [["run", "$A", "$B"]]


def test_source_is_noted_and_never_read() -> None:
    script = evaluate("source ./e.sh\n. ./f.sh\nrun ${X:-1}\n")
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", "1"]]
    assert [n for _, n in script.notes][2] == (
        "X is not set here: its default '1' is used, but ./e.sh, ./f.sh (sourced, not read) "
        "may set it"
    )
    # a bare `source` with no file is a command like any other
    assert _words("source\n") == [["source"]]


def test_export_and_declare_as_command_words() -> None:
    # words built by expansion: `$CMD A=1` where CMD=export runs export
    (command,) = _commands("CMD=export\n$CMD A=1 B\nB=2\nrun\n")
    assert dict(command.env) == {"A": "1", "B": "2"}
    (command,) = _commands("D=declare\n$D -x A=1\n$D C=3\nrun\n")
    assert dict(command.env) == {"A": "1"}
    assert command.variables["C"] == "3"
    (command,) = _commands("export A=1\nlocal B=2\ndeclare -rx C=3\nrun\n")
    assert dict(command.env) == {"A": "1", "C": "3"}


def test_declare_flags_export() -> None:
    (command,) = _commands("declare -x A\nA=1\ntypeset -x B=2\nreadonly C=3\ndeclare -i D=4\nrun\n")
    assert dict(command.env) == {"A": "1", "B": "2"}
    assert dict(command.variables) == {"A": "1", "B": "2", "C": "3", "D": "4"}
    (command,) = _commands("export -n X\nexport 1A\nrun\n")
    assert dict(command.env) == {}


# ---- the environment a command sees --------------------------------------------------------
def test_prefix_assignments_reach_only_their_command() -> None:
    first, second = _commands("A=1 B=x$C run one\nrun two $A\n")
    assert {k: shown(v) for k, v in first.env.items()} == {"A": "1", "B": "x$C"}
    assert [shown(w) for w in second.words] == ["run", "two", "$A"]
    assert dict(second.env) == {}
    # a prefix is seen by the expansion of later prefixes, not by the command's words
    (command,) = _commands("A=1 B=$A run $B\n")
    assert dict(command.env) == {"A": "1", "B": "1"}
    # an array prefix is joined with blanks
    (command,) = _commands("A=(x y) run\n")
    assert dict(command.env) == {"A": "x y"}


def test_evaluate_with_a_given_environment_and_arguments() -> None:
    (command,) = _commands("run $A $1 $#\n", env={"A": "a"}, positional=["p"])
    assert [shown(w) for w in command.words] == ["run", "a", "p", "1"]
    assert dict(command.env) == {"A": "a"}
    # given arguments: one past the end is empty, as in bash
    assert _words("run x$2\n", positional=["p"]) == [["run", "x"]]


def test_only_assignments_no_command() -> None:
    (command,) = _commands("A=1 B=2\nrun $A$B\n")
    assert command.words == ("run", "12")
    assert _commands("A=1\n") == []


# ---- nested shells: eval, bash -c, ssh, tmux, heredocs -------------------------------------
def test_sh_c_sees_exported_variables_only() -> None:
    script = "A=1\nexport B=2\nbash -c 'run $A $B $1' zero one\n"
    # bash 5.2: run|2|one (A is not exported; $0 is zero, $1 one)
    assert _words(script) == [["run", "$A", "2", "one"]]
    (command,) = _commands("C=3 bash -c 'run $C'\n")
    assert [shown(w) for w in command.words] == ["run", "3"]
    # set -a exports everything to the child
    assert _words("set -a\nA=1\nsh -c 'run $A'\n") == [["run", "1"]]


def test_sh_c_hints_and_lines() -> None:
    (command,) = _commands("# start the server\nbash -c 'run x'\n")
    assert command.line == 2
    assert command.hints == ("bash -c 'run x'", "# start the server")


def test_tmux_and_screen_sessions_see_exported_variables() -> None:
    script = 'A=1\nexport B=2\ntmux new -d -s s "run \\$A \\$B"\nC=3 screen -dm run \\$C\n'
    # several words after screen's options are an argv run without a shell: $C literal
    assert _words(script) == [["run", "$A", "2"], ["run", "$C"]]
    assert _words("C=3 screen -dm 'run $C'\n") == [["run", "3"]]
    assert _words("set -a\nA=1\ntmux new -d 'run $A'\n") == [["run", "1"]]


def test_ssh_sees_no_local_variable() -> None:
    script = "export A=1\nssh h 'run $A'\n"
    assert _words(script) == [["run", "$A"]]


def test_heredoc_fed_to_a_shell_is_its_script() -> None:
    # an unquoted delimiter: this shell expands the text first (every variable); quoted:
    # the child shell expands it (exported variables only)
    script = "A=1\nexport B=2\nbash <<EOF\nrun $A $B\nEOF\nbash -s <<'EOF'\nrun $A $B\nEOF\n"
    assert _words(script) == [["run", "1", "2"], ["run", "$A", "2"]]
    assert _words('A=1\nbash <<"EOF"\nrun $A\nEOF\n') == [["run", "$A"]]
    assert _words("A=1\nbash <<\\EOF\nrun $A\nEOF\n") == [["run", "$A"]]
    # not a shell reading stdin: the here-document is data
    assert _words("cat <<EOF\nrun x\nEOF\n") == [["cat"]]
    assert _words("bash run.sh <<EOF\nrun x\nEOF\n") == [["bash", "run.sh"]]
    assert _words("bash -c 'run y' <<EOF\nrun x\nEOF\n") == [["run", "y"]]
    assert _words("A=1 bash <<EOF\nrun x\nEOF\n") == [["run", "x"]]


def test_heredoc_commands_are_hinted_by_their_shell() -> None:
    (command,) = _commands("# the server\nbash <<EOF\nrun x\nEOF\n")
    assert command.line == 2
    assert command.hints == ("bash", "# the server")


def test_eval_lines_and_hints() -> None:
    (command,) = _commands('X=1\neval "run $X"\n')
    assert command.line == 2
    assert command.hints == ('eval "run $X"',)


def test_a_substitution_that_launches_vllm_is_recorded() -> None:
    commands = _commands("PID=$(vllm serve m --port 1 > log 2>&1 & echo $!)\nrun $PID\n")
    assert [[shown(w) for w in c.words] for c in commands] == [
        ["vllm", "serve", "m", "--port", "1"],
        ["echo", "$!"],
        ["run", "$(vllm serve m --port 1 > log 2>&1 & echo $!)"],
    ]
    assert _words("X=$(python -m vllm.entrypoints.openai.api_server --model m)\n") == [
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"]
    ]
    assert _words("X=$(hostname)\n") == []


# ---- what a command records ---------------------------------------------------------------
def test_comments_above_are_hints() -> None:
    script = "#!/bin/bash\n# one\n# two\n\nrun a\n\n\n# far\n\n\nrun b\nx=1\n# c\nrun c\n"
    a, b, c = _commands(script)
    assert a.hints == ("# two", "# one")  # nearest first; one blank line allowed; no #!
    assert b.hints == ()  # two blank lines between: not its comment
    assert c.hints == ("# c",)


def test_written_form_and_duplicates() -> None:
    (command,) = _commands("run a > log 2>&1\n")
    assert command.written == "run a > log 2>&1"
    assert command.line == 1
    # the same command on the same path twice (a loop over equal items) is recorded once
    assert len(_commands("for i in a a; do run x; done\n")) == 1
    # two commands that are equal, on separate lines: both
    assert len(_commands("run x\nrun x\n")) == 2


def test_the_container_split_names_the_image() -> None:
    def split(words: list[str]) -> tuple[str, list[str]] | None:
        return ("img", words[2:]) if words[:2] == ["docker", "run"] else None

    first, second = evaluate("docker run a b\nrun c\n", container=split).commands
    assert (first.image, first.words) == ("img", ("a", "b"))
    assert (second.image, second.words) == (None, ("run", "c"))


def test_variables_on_the_path_are_decoded() -> None:
    (command,) = _commands("A=(x y)\nB=$(hostname)\nrun\n")
    assert {k: shown(v) for k, v in command.variables.items()} == {
        "A": "x y",
        "B": "$(hostname)",
    }


# ---- bounds and notes -----------------------------------------------------------------------
def test_alternatives_past_the_bound_are_merged_with_a_note() -> None:
    # 5 undecided ifs are 32 paths: over MAX_ALTERNATIVES (16), merged into one; V differs
    ifs = "".join(f'if [ "$A{i}" = x ]; then V=v{i}; fi\n' for i in range(5))
    script = evaluate(ifs + "W=same\nrun $V $W\n")
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", "$V", "same"]]
    assert script.commands[0].alternative == ()
    assert (
        5,
        f"more than {MAX_ALTERNATIVES} if/case alternatives: variables that differ between "
        "them are left unresolved",
    ) in script.notes
    # 4 ifs are 16 paths: kept
    four = "".join(f'if [ "$A{i}" = x ]; then V{i}=y; fi\n' for i in range(4))
    assert len(_commands(four + "run ${V0-n} ${V1-n} ${V2-n} ${V3-n}\n")) == 16


def test_a_big_case_is_merged_as_it_goes() -> None:
    items = "".join(f"  v{i}) R={i} ;;\n" for i in range(40))
    script = evaluate(f"case $Q in\n{items}esac\nrun $R\n")
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", "$R"]]


def test_syntax_errors_are_noted_once() -> None:
    script = evaluate("run a\nif then fi fi (\n")
    assert [n for n in script.notes if n[1] == "shell syntax not understood here"]
    assert len({n for n in script.notes}) == len(script.notes)


def test_guards_on_the_environment_inside_if() -> None:
    script = evaluate('if [ -z "$TOKEN" ]; then echo no; exit 1; fi\nrun after\n')
    assert [[shown(w) for w in c.words] for c in script.commands] == [
        ["echo", "no"],
        ["run", "after"],
    ]
    assert script.notes == [
        (
            1,
            'precondition on environment variable(s) TOKEN taken to hold ([ -z "$TOKEN" ]; '
            "the script exits otherwise): evaluated past it",
        )
    ]
    usage = evaluate('if [ $# -lt 2 ]; then echo usage; exit 1; fi\nrun "$1"\n')
    assert usage.notes == [
        (
            1,
            "precondition on the script's arguments taken to hold ([ $# -lt 2 ]; the script "
            "exits otherwise): evaluated past it",
        )
    ]
    assert [shown(w) for w in usage.commands[-1].words] == ["run", "$1"]


def test_the_command_bound_stops_reading_with_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    # the bound lowered to 3 (the rule, not the number: MAX_COMMANDS is 20,000)
    module = importlib.import_module("kvalign.shell.evaluate")

    monkeypatch.setattr(module, "MAX_COMMANDS", 3)
    script = evaluate("run 1\nrun 2\nrun 3\nrun 4\nrun 5\n")
    assert [c.words for c in script.commands] == [("run", "1"), ("run", "2"), ("run", "3")]
    assert script.notes == [(4, "more than 3 commands: the rest not read")]
    exactly = evaluate("run 1\nrun 2\nrun 3\n")
    assert len(exactly.commands) == 3 and exactly.notes == []
    # inside a group and a function body too (the call `f` is the third simple command);
    # the note is given once
    nested = evaluate("{ run 1; run 2; }\nf() { run 3; run 4; run 5; }\nf\nrun 6\n")
    assert [c.words[1] for c in nested.commands] == ["1", "2"]
    assert [n for _, n in nested.notes] == ["more than 3 commands: the rest not read"]


def test_the_nesting_bound_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_NESTING", 4)
    script = evaluate("{ { { { { run deep; }; }; }; }; }\nrun top\n")
    assert [c.words for c in script.commands] == [("run", "top")]
    assert script.notes == [(1, "nested deeper than 4 levels: not read")]


# ---- preconditions: guards on what the script is given ------------------------------------
def test_a_guard_on_several_variables_names_each() -> None:
    # a list of tests (type "list", not a test command) is a guard as well; the names are
    # sorted; lower-case names count too
    script = evaluate('if [ -z "$A" ] || [ -z "$b_2" ]; then echo no; exit 1; fi\nrun after\n')
    assert [[shown(w) for w in c.words] for c in script.commands] == [
        ["echo", "no"],
        ["run", "after"],
    ]
    assert script.notes == [
        (
            1,
            "precondition on environment variable(s) A, b_2 taken to hold "
            '([ -z "$A" ] || [ -z "$b_2" ]; the script exits otherwise): evaluated past it',
        )
    ]


def test_a_long_guard_is_cut_at_80_characters_in_its_note() -> None:
    condition = '[ -z "$A_VERY_LONG_VARIABLE_NAME_FOR_A_TOKEN" ] || [ -z "$ANOTHER_NAME_XYZ_1234" ]'
    assert len(condition) > 80
    script = evaluate(f"if {condition}; then exit 1; fi\nrun after\n")
    assert script.notes == [
        (
            1,
            "precondition on environment variable(s) ANOTHER_NAME_XYZ_1234, "
            f"A_VERY_LONG_VARIABLE_NAME_FOR_A_TOKEN taken to hold ({condition[:80]}; the "
            "script exits otherwise): evaluated past it",
        )
    ]


def test_a_command_that_exits_is_no_guard() -> None:
    # bash 5.2 prints nothing: cd "" succeeds, then exit 1; a command (not a test) is
    # taken to succeed, so the path ends
    script = evaluate('cd "$DIR" && exit 1\nrun after\n')
    assert [[shown(w) for w in c.words] for c in script.commands] == [["cd", "$DIR"]]
    assert script.notes == []
    script = evaluate('if grep -q x "$F"; then exit 1; fi\nrun after\n')
    assert [[shown(w) for w in c.words] for c in script.commands] == [
        ["grep", "-q", "x", "$F"],
        ["run", "after"],
    ]
    assert script.notes == []


def test_a_heredoc_shell_has_no_arguments_and_this_shells_exports() -> None:
    # bash 5.2 (run exported with export -f) prints run|0|x|2: the child shell is given no
    # arguments; it sees the exported B
    script = "export B=2\nbash <<'X'\nrun $# x$1 $B\nX\n"
    (command,) = _commands(script)
    assert [shown(w) for w in command.words] == ["run", "0", "x", "2"]
    assert dict(command.env) == {"B": "2"}
    # on an undecided branch, the child's commands carry the branch
    script = "if [ \"$Q\" = 1 ]; then\nbash <<'X'\nrun in\nX\nfi\n"
    (command,) = _commands(script)
    assert command.alternative == ('if [ "$Q" = 1 ]',)


def test_test_command_on_empty_and_unset_values() -> None:
    # bash 5.2: run|a|a|b (test -z / -n: an unset variable is empty)
    script = (
        'E=\nif test -z "$E"; then R=a; else R=b; fi\n'
        'if test -z "$NEVER"; then S=a; else S=b; fi\n'
        'if test -n "$NEVER"; then T=a; else T=b; fi\nrun $R $S $T\n'
    )
    assert _runs(script) == [["run", "a", "a", "b"]]


def test_loop_headers_and_the_comments_above_are_hints() -> None:
    script = "# start both\nfor i in a; do\n  run $i\ndone\n"
    (command,) = _commands(script)
    assert command.hints == ("for i in a; do", "# start both")
    # a one-line loop: its first 120 characters
    body = "run " + "x" * 150
    (command,) = _commands(f"for i in a; do {body}; done\n")
    assert command.hints == (f"for i in a; do {body}; done"[:120],)
    # a blank line between the comment and the loop still counts (one is allowed)
    (command,) = _commands("# start\n\nwhile true; do\n  run w\ndone\n")
    assert command.hints == ("while true; do", "# start")


def test_for_loop_items_from_a_variable() -> None:
    # bash 5.2: run|a then run|b (an unquoted expansion is split into items)
    assert _runs('L="a b"\nfor i in $L; do run $i; done\n') == [["run", "a"], ["run", "b"]]


def test_every_path_goes_through_a_loop() -> None:
    # two paths (A=1, A=2) enter each loop; both come out of it
    two = 'if [ "$Q" = 1 ]; then A=1; else A=2; fi\n'
    assert _runs(two + "for f in $(ls); do :; done\nrun $A\n") == [["run", "1"], ["run", "2"]]
    assert _runs(two + "for f in $(ls); do run in $A; done\n") == [
        ["run", "in", "1"],
        ["run", "in", "2"],
    ]
    assert _runs(two + "for f in x; do :; done\nrun $A\n") == [["run", "1"], ["run", "2"]]


def test_paths_multiplied_in_a_loop_are_merged_at_the_loop() -> None:
    # 4 undecided ifs: 16 paths; an undecided if in the loop body doubles them to 32,
    # over MAX_ALTERNATIVES: merged at the loop (line 5)
    ifs = "".join(f'if [ "$A{i}" = x ]; then V{i}=y; fi\n' for i in range(4))
    script = evaluate(ifs + 'for i in a; do if [ "$Q" = $i ]; then B=1; fi; done\nrun $B\n')
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", "$B"]]
    assert [line for line, _ in script.notes] == [5]


def test_a_case_pattern_list_with_a_star_always_matches() -> None:
    # bash 5.2: run|1 (a|* matches anything: no path falls through the case)
    assert _runs("case $Q in\n  a|*) R=1 ;;\nesac\nrun ${R-none}\n") == [["run", "1"]]


def test_the_last_star_item_is_the_default_of_an_unknown_subject() -> None:
    commands = _commands("case $Q in\n  a) R=1 ;;\n  b) R=2 ;;\n  *) R=3 ;;\nesac\nrun $R\n")
    assert [(c.words[-1], c.alternative) for c in commands] == [
        ("1", ("case a)",)),
        ("2", ("not case a)", "case b)")),
        ("3", ("not case a)", "not case b)")),  # the default: no condition of its own
    ]


def test_declare_without_x_exports_nothing() -> None:
    # bash 5.2: `declare B` / `declare x-y B` (x-y is not a valid identifier) do not
    # export B: a child process sees no B
    for script in ("declare B\nB=2\nrun\n", "declare x-y B\nB=2\nrun\n"):
        (command,) = _commands(script)
        assert dict(command.env) == {}
        assert command.variables["B"] == "2"


def _eval_chain(levels: int) -> str:
    # C0='run x'; C1='eval "$C0"'; …; then eval "$C{levels-1}": `levels` nested evals
    texts = ["run x"] + [f'eval "$C{i}"' for i in range(levels)]
    return "".join(f"C{i}='{texts[i]}'\n" for i in range(levels)) + texts[levels] + "\n"


def test_nested_evals_are_read_eight_levels_deep() -> None:
    # eval / sh -c / function nesting is followed 8 levels deep (_MAX_DEPTH): 8 nested
    # evals reach `run x`; the 9th eval (at depth 8) is recorded as the command it is
    assert _words(_eval_chain(1)) == [["run", "x"]]
    assert _words(_eval_chain(8)) == [["run", "x"]]
    assert _words(_eval_chain(9)) == [["eval", "run x"]]


def test_two_evals_on_one_line_are_two_commands() -> None:
    # the same text, the same line: told apart by the eval each runs in
    assert _words('eval "run x"; eval "run x"\n') == [["run", "x"], ["run", "x"]]


def test_a_nested_script_has_its_own_lines_for_comments() -> None:
    script = "# outer\nbash -c '# inner\nif [ \"$Q\" = 1 ]; then run a; fi'\n"
    (command, _) = _commands(script + "run b\n")
    assert command.hints == (
        'if [ "$Q" = 1 ]',
        "# inner",
        "bash -c '# inner\nif [ \"$Q\" = 1 ]; then run a; fi'",
        "# outer",
    )


def test_a_value_written_too_long_is_noted_at_its_line() -> None:
    script = evaluate("\nA=" + "a" * 300_000 + '\nrun "$A"\n')
    assert script.notes == [(2, "expands to more than 262144 characters: not read")]
    # kept as written, its first 200 characters
    assert [shown(w) for w in script.commands[0].words] == ["run", "a" * 200]


def test_integer_tests_on_negative_numbers() -> None:
    # bash 5.2: run|a|a (-3 < -2, and -2 > -3)
    script = (
        'X=-3\nY=-2\nif [ "$X" -lt "$Y" ]; then R=a; else R=b; fi\n'
        'if [ "$Y" -gt "$X" ]; then S=a; else S=b; fi\nrun $R $S\n'
    )
    assert _runs(script) == [["run", "a", "a"]]


def test_defaults_of_unknown_arguments_are_kept_as_written() -> None:
    # a function never called is read with its arguments unknown: ${1:-d} may be either
    assert _words('f() { run ${1:-d} "${2-e}"; }\n') == [["run", "${1:-d}", "${2-e}"]]


def test_exit_in_a_subshell_ends_only_the_subshell() -> None:
    # bash 5.2: run|after
    assert _runs("( exit 1 )\nrun after\n") == [["run", "after"]]
    assert _runs("echo x | exit 1\nrun after\n") == [["run", "after"]]


def test_one_command_is_recorded_per_environment() -> None:
    # bash 5.2: run sees X=a, then X=b: two launches of one command
    commands = _commands("for i in a b; do X=$i; export X; run; done\n")
    assert [dict(c.env) for c in commands] == [{"X": "a"}, {"X": "b"}]
    # the same words and environment on another line: two commands of their own
    assert len(_commands("run\nrun\n")) == 2


def test_unresolved_values_in_the_environment_are_marked() -> None:
    (command,) = _commands("export A=$(hostname)\nB=$C run\n")
    assert {k: shown(v) for k, v in command.env.items()} == {"A": "$(hostname)", "B": "$C"}
    assert command.env["A"] != "$(hostname)"  # marked unresolved, not plain text


def test_syntax_errors_are_noted_at_the_line_that_runs_them() -> None:
    # in eval'd text, at the eval's line; in the file, at the error's own line (once)
    script = evaluate('run a\n\neval "if then"\n')
    assert script.notes == [(3, "shell syntax not understood here")]
    script = evaluate("run a\nrun b )\nrun c\n")
    assert [[shown(w) for w in c.words] for c in script.commands] == [
        ["run", "a"],
        ["run", "b"],
        ["run", "c"],
    ]
    assert script.notes == [(2, "shell syntax not understood here")]


def test_the_comment_block_above_ends_at_a_blank_line() -> None:
    # the block nearest the command: a blank line inside it ends it; indentation is not
    # part of a comment; a #! line is no comment
    a, b, c = _commands("# a\n\n# b\nrun a\n  # c\n  run b\n#!/bin/sh\nrun c\n")
    assert a.hints == ("# b",)
    assert b.hints == ("# c",)
    assert c.hints == ()
    (first,) = _commands("# top\nrun x\n")
    assert first.hints == ("# top",)


def test_an_array_too_long_is_kept_as_written_with_a_note() -> None:
    value = "b" * 200_000
    script = evaluate(f'B={value}\nA=(x "$B$B")\nrun "${{A[@]}}"\n')  # an item of 400,000
    assert script.notes == [(2, "expands to more than 262144 characters: not read")]
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", '(x "$B$B")']]


def test_an_array_value_is_charged_to_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import kvalign.shell.expand as expand

    monkeypatch.setattr(expand, "MAX_BUILT", 1024 * 1024)
    value = "b" * 100_000
    # B's value (100,001 characters) and ten items "x$B" of 100,004 (a copy each: the
    # piece x joined to B's value) are over 1 MiB; five are not
    with pytest.raises(ShellBudgetExceeded):
        evaluate(f"B={value}\nA=(" + ' "x$B"' * 10 + ")\n")
    evaluate(f"B={value}\nA=(" + ' "x$B"' * 5 + ")\n")
    # an item that is B's value as a whole ("$B") shares it: no copy, one character each
    shared = evaluate(f"B={value}\nA=(" + ' "$B"' * 10 + ')\nrun "${A[@]}"\n')
    assert [len(w) for w in shared.commands[0].words] == [3] + [100_000] * 10


def test_appending_to_an_unset_variable() -> None:
    # bash 5.2 prints [x][a][b]: += on an unset variable starts from nothing
    assert _runs('U+=x\nV+=(a b)\nrun $U "${V[@]}"\n') == [["run", "x", "a", "b"]]


def test_an_append_past_the_word_bound_is_kept_as_written() -> None:
    # two items of 200,000 characters: 400,000 in all, over MAX_WORD (262,144)
    value = "b" * 200_000
    script = evaluate(f'B={value}\nA=("$B")\nA+=("$B")\nrun "${{A[@]}}"\n')
    assert script.notes == [(3, "expands to more than 262144 characters: not read")]
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", 'A+=("$B")']]


def test_appending_a_word_to_an_array_is_read() -> None:
    # bash appends y to A[0] (A is then "xy"); the next command is read either way
    assert _runs("A=(x)\nA+=y\nrun ok\n") == [["run", "ok"]]


def test_an_append_of_exactly_the_word_bound_is_read() -> None:
    half = "a" * (262_144 // 2)
    script = evaluate(f'A={half}\nA+="$A"\nrun "$A"\n')  # 262,144 characters: the bound
    assert script.notes == []
    assert [len(w) for w in script.commands[0].words] == [3, 262_144]


def test_the_nesting_bound_of_conditions_and_expressions() -> None:
    # _condition / _expr give up (None: undecided) at MAX_NESTING levels, below it they
    # decide, and they leave the level as they found it
    module = importlib.import_module("kvalign.shell.evaluate")
    from kvalign.shell import MAX_NESTING
    from kvalign.shell.expand import Env
    from kvalign.shell.parse import parse

    # `true` and `-z $U` (U unset) are decided without expanding anything
    command = parse("true\n").root_node.named_children[0]
    expr = parse("[[ -z $U ]]\n").root_node.named_children[0].named_children[0]
    evaluator = module._Evaluator([])
    for method, node in ((evaluator._condition, command), (evaluator._expr, expr)):
        evaluator.level = MAX_NESTING - 1
        assert method(node, Env()) is True
        assert evaluator.level == MAX_NESTING - 1
        evaluator.level = MAX_NESTING
        assert method(node, Env()) is None
        assert evaluator.level == MAX_NESTING
        evaluator.level = 0
        assert method(node, Env()) is True
        assert evaluator.level == 0


@pytest.mark.parametrize(
    ("condition", "taken"),
    [
        # bash 5.2 (X=5) takes the branch written beside each
        ("[[ $X -eq 5 && -z $X ]]", ["b"]),
        ('[ $X -eq 5 -a -z "$X" ]', ["b"]),
        ('[ $X -eq 4 -o -n "$X" ]', ["a"]),
        ("[[ $X -eq 4 || -n $X ]]", ["a"]),
        # with an undecided side ($Q never set: an = test on it is undecided; in
        # parentheses, as tree-sitter-bash reads `A && $Q = 1` as `(A && $Q) = 1`)
        ("[[ $X -eq 4 && ( $Q = 1 ) ]]", ["b"]),  # false whatever Q is
        ("[[ $X -eq 5 && ( $Q = 1 ) ]]", ["a", "b"]),
        ("[[ $X -eq 4 || ( $Q = 1 ) ]]", ["a", "b"]),
        ("[[ $X -eq 5 || ( $Q = 1 ) ]]", ["a"]),  # true whatever Q is
        # a variable on the right side: known (5) or never set (undecided)
        ("[[ 5 -eq $X ]]", ["a"]),
        ("[[ x = $NEVER ]]", ["a", "b"]),
    ],
)
def test_and_or_inside_one_test(condition: str, taken: list[str]) -> None:
    script = f"X=5\nif {condition}; then R=a; else R=b; fi\nrun $R\n"
    assert [c.words[-1] for c in _commands(script)] == taken


@pytest.mark.parametrize(
    ("condition", "taken"),
    [
        # a bare operand is true when non-empty (bash manual: "string: true if the
        # string is not null"); bash 5.2 (X=5, E empty) takes the branch written beside
        ("[[ $X ]]", ["a"]),
        ("[[ ${X} ]]", ["a"]),
        ("[[ word ]]", ["a"]),
        ("[[ $E ]]", ["b"]),
        ("[[ ${E} ]]", ["b"]),
        ("[[ $NEVER ]]", ["b"]),
        ('[[ "$(hostname)" ]]', ["a", "b"]),  # not known here: undecided
    ],
)
def test_a_bare_operand_is_a_non_empty_test(condition: str, taken: list[str]) -> None:
    script = f"X=5\nE=\nif {condition}; then R=a; else R=b; fi\nrun $R\n"
    assert [c.words[-1] for c in _commands(script)] == taken


@pytest.mark.parametrize(
    "script",
    [
        "test -f /x && A=1\n",
        "[ -f /x ] && A=1\n",
        "! test -f /x && A=1\n",
        "test -f /x || A=1\n",
        "! [ -f /x ] || A=1\n",
    ],
)
def test_an_undecided_test_in_a_list_is_both_paths(script: str) -> None:
    # whether /x exists is not known: with and without A=1 (a test is no command that is
    # taken to succeed)
    assert _runs(script + "run ${A-u}\n") == [["run", "1"], ["run", "u"]]


def test_a_comment_before_an_elif_condition_is_no_condition() -> None:
    # bash 5.2 accepts `elif # c<NL>[ … ]` (it prints y for `elif # c<NL>true; then echo y`)
    script = 'if [ "$Q" = 1 ]; then R=a; elif # c\n[ "$Q" = 2 ]; then R=b; fi\nrun ${R-n}\n'
    assert [(c.words[-1], c.alternative) for c in _commands(script)] == [
        ("a", ('if [ "$Q" = 1 ]',)),
        ("b", ('not if [ "$Q" = 1 ]', 'elif [ "$Q" = 2 ]')),
        ("n", ('not if [ "$Q" = 1 ]', 'not elif [ "$Q" = 2 ]')),
    ]


def test_an_unquoted_heredoc_sees_every_variable_but_exports_only_the_exported() -> None:
    # the unquoted here-document is expanded by this shell (A is seen), but the child
    # shell's environment holds only the exported B (bash: A is not exported)
    (command,) = _commands("A=1\nexport B=2\nbash <<X\nrun $A\nX\n")
    assert [shown(w) for w in command.words] == ["run", "1"]
    assert dict(command.env) == {"B": "2"}


def test_test_command_with_a_variable_on_the_right() -> None:
    # bash 5.2: run|a (X=5); an = test on a variable never set is undecided
    assert _runs('X=5\nif test 5 = "$X"; then R=a; else R=b; fi\nrun $R\n') == [["run", "a"]]
    assert _runs('if test x = "$NEVER"; then R=a; else R=b; fi\nrun $R\n') == [
        ["run", "a"],
        ["run", "b"],
    ]


def test_a_command_in_an_else_branch_has_else_as_its_hint() -> None:
    commands = _commands('if [ "$Q" = 1 ]; then run a; else run b; fi\n')
    assert [c.hints for c in commands] == [('if [ "$Q" = 1 ]',), ("else",)]


# ---- evaluate(): functions never called, and the syntax note (issue 19, session 7) ----
def test_a_function_never_called_runs_with_the_variables_set_by_the_end_of_the_script() -> None:
    # f is defined and never called: kvalign evaluates its body once, as if it were called
    # at the end of the script (module docstring), so "$A" is the 8 set before it; bash
    # would expand it to 8 too if f were called there
    script = evaluate('A=8\nf() { vllm serve m --tensor-parallel-size "$A"; }\n')
    assert [c.words for c in script.commands] == [
        ("vllm", "serve", "m", "--tensor-parallel-size", "8")
    ]
    # ... on every path the script can end on: X is not set, so both branches are paths
    # (A=8 where [ "$X" = a ] holds, A=4 where it does not), and f is evaluated on each
    branches = evaluate(
        'if [ "$X" = a ]; then A=8; else A=4; fi\n'
        'f() { vllm serve m --tensor-parallel-size "$A"; }\n'
    )
    assert [c.words[-1] for c in branches.commands] == ["8", "4"]


def test_a_function_never_called_has_seven_levels_of_eval_left() -> None:
    # eval / bash -c / function nesting is bounded at 8 levels (_MAX_DEPTH) and a function
    # body is one level: `eval` seven times inside it still reaches the command (bash runs
    # `vllm serve m` for any number of evals); an eighth eval is past the bound and the
    # command stays as written
    seven = evaluate("f() { " + "eval " * 7 + "vllm serve m; }\n")
    assert [c.words for c in seven.commands] == [("vllm", "serve", "m")]
    eight = evaluate("f() { " + "eval " * 8 + "vllm serve m; }\n")
    assert [c.words for c in eight.commands] == [("eval", "vllm", "serve", "m")]


def test_a_syntax_error_is_noted_at_its_line() -> None:
    # bash 5.2.15: `bash -n` on this script: "line 3: syntax error near unexpected token `)'"
    script = evaluate("A=1\necho ok\necho )\n")
    assert script.notes == [(3, "shell syntax not understood here")]
    assert evaluate("A=1\necho ok\n").notes == []
    # an `if` never closed: bash -n says "line 4: syntax error: unexpected end of file"
    # (the line after the last); the note names line 3, where the unclosed `if` starts (the
    # first line the parser marks): no command of the script reports it, so this note is
    # the only sign that part of the script was not read
    unclosed = evaluate("A=1\necho ok\nif true; then\n")
    assert unclosed.notes == [(3, "shell syntax not understood here")]


# ---- limits: a part not read that could launch vLLM is a stop (issue #31) ------------------
class _Asked:
    """A ``launches`` test that says yes for text holding ``vllm serve``, and records what it
    was asked (to pin which part a stop is about)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, text: str) -> bool:
        self.asked.append(text)
        return "vllm serve" in text


def test_a_part_nested_too_deep_is_a_stop_when_it_could_launch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_NESTING", 4)
    asked = _Asked()
    script = evaluate("{ { { { { vllm serve m; }; }; }; }; }\nrun top\n", launches=asked)
    assert [c.words for c in script.commands] == [("run", "top")]
    assert script.stops == [(1, "nested deeper than 4 levels: a vLLM launch there not read")]
    assert script.notes == []
    assert asked.asked == ["{ { vllm serve m; }; }"]  # the part not read, asked once
    # no launch in the part: a note, as without the test
    quiet = evaluate("{ { { { { run deep; }; }; }; }; }\n", launches=asked)
    assert quiet.stops == []
    assert quiet.notes == [(1, "nested deeper than 4 levels: not read")]
    # without a launch test, never a stop
    assert evaluate("{ { { { { vllm serve m; }; }; }; }; }\n").stops == []


def test_an_eval_nested_too_deep_is_a_stop_when_it_could_launch() -> None:
    # the 9th eval (at depth 8) would run `vllm serve m`: a stop, and it is not recorded
    # as the command `eval …` (whose words would read as a launch with its quoting lost)
    chain = _eval_chain(9).replace("run x", "vllm serve m")
    script = evaluate(chain, launches=_Asked())
    assert script.commands == []
    assert script.stops == [(10, "eval nested deeper than 8 levels: a vLLM launch there not read")]
    # 8 evals are read
    eight = evaluate(_eval_chain(8).replace("run x", "vllm serve m"), launches=_Asked())
    assert [c.words for c in eight.commands] == [("vllm", "serve", "m")] and eight.stops == []
    # nine evals of no launch: recorded as the command it is, no stop, no note
    plain = evaluate(_eval_chain(9), launches=_Asked())
    assert [[shown(w) for w in c.words] for c in plain.commands] == [["eval", "run x"]]
    assert plain.stops == [] and plain.notes == []


def test_a_call_nested_too_deep_is_a_stop_but_recursion_is_not() -> None:
    # f1 … f8 call each other; f9, called at depth 8, launches vLLM: a stop at its call
    calls = "".join(f"f{i}() {{ f{i + 1}; }}\n" for i in range(1, 9))
    script = evaluate("f9() { vllm serve m; }\n" + calls + "f1\n", launches=_Asked())
    assert script.stops == [
        (9, "function f9 nested deeper than 8 levels: a vLLM launch there not read")
    ]
    # f9 is read on its own afterwards (never entered by a call): its launch is recorded
    assert [c.words for c in script.commands] == [("vllm", "serve", "m")]
    # a function that calls itself: its body was read when first called, so the call
    # past the depth is no stop (bash would recurse for ever); it is the command `f`
    recursive = evaluate("f() { vllm serve m; f; }\nf\n", launches=_Asked())
    assert recursive.stops == []
    assert {c.words for c in recursive.commands} == {("vllm", "serve", "m"), ("f",)}


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ('ssh h "vllm serve m"', "ssh"),
        ('tmux new -d "vllm serve m"', "tmux / screen session"),
        ('bash -c "vllm serve m"', "sh -c"),
        ("bash <<'EOF'\nvllm serve m\nEOF", "here-document script"),
        ("X=$(vllm serve m)", "command substitution"),
    ],
)
def test_nested_scripts_too_deep_are_stops_when_they_could_launch(body: str, kind: str) -> None:
    # at depth 8 (f8's body, called through f1 … f7), each is not entered: a stop
    calls = "".join(f"f{i}() {{ f{i + 1}; }}\n" for i in range(1, 8))
    script = evaluate(calls + f"f8() {{\n{body}\n}}\nf1\n", launches=_Asked())
    assert script.stops == [
        (9, f"{kind} nested deeper than 8 levels: a vLLM launch there not read")
    ]
    assert [c for c in script.commands if "vllm" in c.words] == []


def test_the_command_bound_is_a_stop_in_a_script_that_launches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = importlib.import_module("kvalign.shell.evaluate")
    monkeypatch.setattr(module, "MAX_COMMANDS", 3)
    script = evaluate("run 1\nrun 2\nrun 3\nrun 4\nvllm serve m\n", launches=_Asked())
    assert script.stops == [
        (4, "more than 3 commands: the rest not read, and the script launches vLLM")
    ]
    assert script.notes == []
    quiet = evaluate("run 1\nrun 2\nrun 3\nrun 4\n", launches=_Asked())
    assert quiet.stops == [] and quiet.notes == [(4, "more than 3 commands: the rest not read")]


def test_a_word_too_long_to_read_is_a_limit_of_its_command() -> None:
    script = evaluate("A=" + "a" * 300_000 + '\nvllm serve m --x "$A"\nvllm serve m --x b\n')
    assert [c.limits for c in script.commands] == [
        ("an argument expands to more than 262144 characters",),
        (),
    ]


def test_a_value_is_shared_not_copied_by_its_expansions(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvalign.shell import expand

    # a 100,000-character value expanded 1,000 times as a whole word: within a budget of
    # 200,000 characters (it is never copied); each word is the one value
    monkeypatch.setattr(expand, "MAX_BUILT", 200_000)
    value = "v" * 100_000
    script = evaluate(f"V={value}\nA=$V\n" + 'run "$A" $V\n' * 500)
    words = {id(w) for c in script.commands for w in c.words[1:]}
    assert len(script.commands) == 500 and len(words) == 1
    assert script.commands[0].words[1] == value
    # the value joined to other text is a copy: charged
    with pytest.raises(ShellBudgetExceeded):
        evaluate(f"V={value}\n" + 'run "x$V"\n' * 2)


def _unescape_by_hand(text: str, quoted: bool) -> str:
    """The bash manual's backslash removal, one character at a time (the reference)."""
    out, i = [], 0
    while i < len(text):
        escapes = i + 1 < len(text) and (not quoted or text[i + 1] in '$`"\\\n')
        if text[i] == "\\" and escapes:
            out.append("" if text[i + 1] == "\n" else text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


@pytest.mark.parametrize(
    "text",
    ["plain", "a\\b", "a\\\\b", "end\\", "line\\\ncontinued", "\\$x \\a \\\\\\$", "\\\\\\", "\\\n"],
)
def test_backslash_removal_matches_the_manual(text: str) -> None:
    from kvalign.shell.expand import _unescape

    for quoted in (False, True):
        assert _unescape(text, quoted) == _unescape_by_hand(text, quoted), (text, quoted)


def test_blank_splitting_without_unresolved_pieces_is_runs_of_non_blanks() -> None:
    from kvalign.shell.commands import CLOSE, OPEN
    from kvalign.shell.expand import _split_blanks

    assert _split_blanks(" a\tb\n\nc  ") == ["a", "b", "c"]
    assert _split_blanks("a\u00a0b\rc") == ["a\u00a0b\rc"]  # only space, tab, newline split
    assert _split_blanks(f"a {OPEN}x y{CLOSE} b") == ["a", f"{OPEN}x y{CLOSE}", "b"]
    assert _split_blanks(f"x{CLOSE} y") == [f"x{CLOSE}", "y"]


def test_each_command_is_charged_for_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # a command's snapshot costs one step per 20 exported variables (and one per 1,000 of
    # all): with `set -a`, 100 exported variables cost 5 steps at each of 50 commands
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_STEPS", 600)  # 405 steps without the 250 charged
    body = "".join(f"A{i}=1\n" for i in range(100)) + "run x\n" * 50
    assert len(evaluate("set +a\n" + body).commands) == 50
    with pytest.raises(ShellBudgetExceeded):
        evaluate("set -a\n" + body)


def test_the_text_an_eval_parses_is_charged(monkeypatch: pytest.MonkeyPatch) -> None:
    # a 100,000-character value eval'd 12 times is parsed 12 times: 1.2 MB (over 1 MiB);
    # it was not charged, and 1,000 evals of 200 KB took 16 s
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_BUILT", 1024 * 1024)
    value = "V='#" + "x" * 100_000 + "'\n"
    with pytest.raises(ShellBudgetExceeded):
        evaluate(value + 'eval "$V"\n' * 12)
    evaluate(value + 'eval "$V"\n' * 5)
