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


# ---- parse.node_text ----------------------------------------------------------------------


def test_an_empty_here_document_fed_to_a_shell_runs_nothing() -> None:
    # bash 5.2 (run exported with `export -f run`): `run a`, then `bash <<EOF` with an
    # empty here-document, then `run b` prints run|a| and run|b| only (the child shell
    # reads an empty script)
    assert _words("run a\nbash <<EOF\nEOF\nrun b\n") == [["run", "a"], ["run", "b"]]


# ---- _Evaluator.run / _run ----------------------------------------------------------------


def test_nothing_after_exit_is_read_not_even_a_function_definition() -> None:
    # bash 5.2: `exit 0; f() { run x; }; f` prints nothing: the definition after exit is
    # never made, so there is no function to read (with its arguments unknown) either
    assert _words("exit 0\nf() { run x; }\n") == []


def test_every_part_of_a_pipeline_is_a_command() -> None:
    # bash 5.2: `run a | cat` prints run|a| (run ran; cat passed its output on)
    assert _words("run a | cat\n") == [["run", "a"], ["cat"]]


def test_a_launch_in_a_substitution_of_export_or_of_a_command_runs() -> None:
    # bash 5.2, with vllm() { echo "ran vllm $*" >&2; }: `export A=$(vllm serve m)` and
    # `echo $(vllm serve m)` each print "ran vllm serve m" (the substitution runs first)
    assert _words("export A=$(vllm serve m)\n") == [["vllm", "serve", "m"]]
    assert ["vllm", "serve", "m"] in _words("echo $(vllm serve m)\n")


def test_assignments_alone_on_a_line_set_variables_and_export_none() -> None:
    # bash 5.2: `A=1 B=2; run $A $B; env | grep -c '^[AB]='` prints run|1|2| then 0
    (command,) = _commands("A=1 B=2; run $A $B\n")
    assert [shown(w) for w in command.words] == ["run", "1", "2"]
    assert dict(command.env) == {}


def test_unset_of_a_variable_never_set() -> None:
    # bash 5.2: `unset NOTSET; run ok` prints run|ok|
    assert _words("unset NOTSET\nrun ok\n") == [["run", "ok"]]


def test_a_statement_of_redirections_only_is_one_step() -> None:
    # `>f` alone truncates f and runs nothing (bash 5.2 prints nothing for it). The shell
    # budget is 100 000 steps (expand.MAX_STEPS), one per statement read: 60 000 such
    # lines are 60 001 steps (the program and each line; no word is expanded), within it
    assert evaluate(">f\n" * 60_000).commands == []


# ---- eval, functions, ssh / tmux / sh -c: nesting 8 levels deep (_MAX_DEPTH) --------------


def _depth_eight(body: str) -> str:
    # f1 calls f2 … f7 calls f8: f1's body runs at depth 1, f8's at depth 8
    calls = "".join(f"f{i}() {{ f{i + 1}; }}\n" for i in range(1, 8))
    return calls + f"f8() {{\n{body}\n}}\nf1\n"


def test_a_call_nine_levels_deep_is_recorded_as_the_command_it_is() -> None:
    # calls are followed 8 levels deep: f9, called from f8 (depth 8), is not entered; it
    # is the command `f9`, and f9 (never entered) is read once on its own afterwards
    assert _words(_depth_eight("run x")) == [["run", "x"]]  # depth 8 itself is read
    assert _words("f9() { run x; }\n" + _depth_eight("f9")) == [["f9"], ["run", "x"]]


def test_nested_scripts_nine_levels_deep_are_recorded_as_commands() -> None:
    # at depth 8, a here-document for a shell, ssh, tmux and sh -c are not read any deeper:
    # each is recorded as the command it is (none of them is entered)
    assert _words(_depth_eight("bash <<'EOF'\nrun x\nEOF")) == [["bash"]]
    assert _words(_depth_eight('ssh h "run x"')) == [["ssh", "h", "run x"]]
    assert _words(_depth_eight('tmux new -d "run x"')) == [["tmux", "new", "-d", "run x"]]
    assert _words(_depth_eight('bash -c "run x"')) == [["bash", "-c", "run x"]]


def test_a_nested_script_keeps_its_line_and_path() -> None:
    # Command.line: the ssh / tmux / eval line for a nested script (line 3 here);
    # Command.alternative: the undecided `if` around it
    script = "A=1\nB=2\n" + (
        'if [ "$U" = a ]; then ssh h "run x"; tmux new -d "run y"; bash -c "run z"; fi\n'
    )
    assert [(shown(c.words[1]), c.line, c.alternative) for c in _commands(script)] == [
        ("x", 3, ('if [ "$U" = a ]',)),
        ("y", 3, ('if [ "$U" = a ]',)),
        ("z", 3, ('if [ "$U" = a ]',)),
    ]
    # outside any if: no undecided condition
    for script in ('ssh h "run x"\n', 'tmux new -d "run x"\n', 'bash -c "run x"\n'):
        assert [c.alternative for c in _commands(script)] == [()], script


def test_a_function_defined_and_called_in_an_eval_is_at_the_eval_line() -> None:
    # Command.line is the eval's line (3) for all its text, also inside a function of it
    (command,) = _commands("A=1\nB=2\neval 'f() { run x; }; f'\n")
    assert (command.words, command.line) == (("run", "x"), 3)


def test_a_remote_or_session_shell_has_no_arguments() -> None:
    # bash 5.2: `env -i bash -c 'printf "%s|" run "$1" x'` prints run||x| (the shell ssh
    # or tmux starts has no $1; nothing is left unresolved)
    for script in ("ssh h 'run \"$1\" x'\n", "tmux new -d 'run \"$1\" x'\n"):
        assert _words(script) == [["run", "", "x"]], script


def test_a_child_shell_exports_only_what_it_was_given() -> None:
    # bash 5.2: `B=1; bash -c "B=2; env | grep -c ^B="` prints 0 (B=2 in the child is not
    # exported), and so for the shell tmux starts
    for script in ('B=1\ntmux new -d "B=2; run"\n', 'B=1\nbash -c "B=2; run"\n'):
        (command,) = _commands(script)
        assert dict(command.env) == {}, script


def test_eval_joins_its_words_with_blanks() -> None:
    # bash 5.2: `eval run a b` prints run|a|b|
    assert _words("eval run a b\n") == [["run", "a", "b"]]


def test_read_makes_its_one_variable_unknown() -> None:
    # `read A` sets A from its input, which kvalign does not know: kept as written
    assert _words("A=1\nread A\nrun $A\n") == [["run", "$A"]]


def test_declaration_builtins_written_quoted_still_assign() -> None:
    # a quoted builtin name is still the builtin (quoting only stops reserved words).
    # bash 5.2: `"typeset" A=1; run $A` and `"readonly" A=1; run $A` print run|1|;
    # `f() { "local" A=1; run $A; }; f; run "${A-unset}"` prints run|1| then run|unset|
    assert _words('"typeset" A=1\nrun $A\n') == [["run", "1"]]
    assert _words('"readonly" A=1\nrun $A\n') == [["run", "1"]]
    assert _words('f() { "local" A=1; run $A; }\nf\n') == [["run", "1"]]


def test_quoted_declare_exports_only_with_x() -> None:
    # bash 5.2: `"declare" ax=1; env | grep -c '^ax='` prints 0 (an x in a name is no
    # -x option), and `A=1; "declare" A; env | grep -c ^A=` prints 0
    for script in ('"declare" ax=1\nrun\n', 'A=1\n"declare" A\nrun\n'):
        (command,) = _commands(script)
        assert dict(command.env) == {}, script


def test_commands_are_written_as_themselves() -> None:
    # Command.written: the command as written (with its redirections), not its line's
    # neighbours
    assert [c.written for c in _commands("A=1\nrun a\nrun b > log\n")] == [
        "run a",
        "run b > log",
    ]


def test_loop_items_of_one_eval_share_its_site() -> None:
    # Command.site: loop items share it (commands.py, Command): the one eval in the loop
    # runs "run aa", then "run b", at one place
    first, second = _commands('for c in "run aa" "run b"; do eval "$c"; done\n')
    assert (first.words, second.words) == (("run", "aa"), ("run", "b"))
    assert first.site == second.site


def test_two_commands_of_two_eval_texts_have_two_sites() -> None:
    # Command.site identifies the command in the source: `run aa` and `run b`, defined as
    # f's body by two eval texts and called at one place, are two commands
    script = 'for c in "f() { run aa; }" "f() { run b; }"; do eval "$c"; f; done\n'
    first, second = _commands(script)
    assert (first.words, second.words) == (("run", "aa"), ("run", "b"))
    assert first.site != second.site


# ---- _cap: more than MAX_ALTERNATIVES (16) paths are merged --------------------------------


def _seventeen_items(before: str) -> str:
    # a case on an unknown $U with 17 items, no default: 17 paths take an item and one
    # takes none, 18 paths (over 16: merged into one; B differs, A and E do not)
    items = "".join(f"  {i}) B={i} ;;\n" for i in range(1, 18))
    return f"{before}case $U in\n{items}esac\nrun $A $B\n"


def test_past_the_merge_one_path_with_the_differing_variable_unresolved() -> None:
    # the 17 item paths are merged at the 17th (one path), then the path that took no item
    # (B=none) joins it: 2 paths, merged again, as the first merge already was (B: one
    # of 1 … 17 or none, unresolved; A the same on every path, kept)
    assert _words(_seventeen_items("A=keep\nB=none\n")) == [["run", "keep", "$B"]]


# ---- `A=1 B=2⏎cmd`: tree-sitter-bash 0.25 reads it as one command with prefixes ----------


def test_assignments_on_a_line_of_their_own_are_no_prefixes_of_the_next_command() -> None:
    # bash 5.2 (run also prints `env | grep '^[ABC]='`): `A=1 B=2⏎run $A $B` prints
    # run|1|2| and no variable; `A=1 B=2 # c⏎run x` prints run|x| and none;
    # `A=1 B=2⏎C=3 run $A` prints run|1| and C=3
    cases = [
        ("A=1 B=2\nrun $A $B\n", ["run", "1", "2"], {}),
        ("A=1 B=2 # c\nrun x\n", ["run", "x"], {}),
        ("A=1 B=2\nC=3 run $A\n", ["run", "1"], {"C": "3"}),
    ]
    for script, words, env in cases:
        (command,) = _commands(script)
        assert [shown(w) for w in command.words] == words, script
        assert dict(command.env) == env, script
        assert command.line == 2, script
        assert command.written == script.split("\n")[1], script


def test_assignments_continued_by_a_backslash_are_prefixes() -> None:
    # bash 5.2: `A=1 B=2 \⏎run` prints run| and A=1 B=2 (one command: the line goes on)
    (command,) = _commands("A=1 B=2 \\\nrun\n")
    assert dict(command.env) == {"A": "1", "B": "2"}
    assert command.line == 1
    # bash 5.2: `A="1⏎2" B=2 run` shows A=1⏎2 and B=2 (a line break in a quoted value
    # ends nothing)
    (command,) = _commands('A="1\n2" B=2 run\n')
    assert dict(command.env) == {"A": "1\n2", "B": "2"}


def test_the_next_command_keeps_its_redirections_as_written() -> None:
    (command,) = _commands("A=1 B=2\nrun > log\n")
    assert (command.written, command.line, dict(command.env)) == ("run > log", 2, {})


def test_a_command_s_words_are_expanded_before_its_prefix_assignments() -> None:
    # bash manual, "Simple Command Expansion": the words that are not assignments are
    # expanded first, the assignments after (left to right). bash 5.2:
    # `B=2; B=3 printf "%s|" run $B` prints run|2|; with B unset,
    # `B=3 printf "%s|" run "${B-unset}"` prints run|unset|; `A=1 B=$A env` shows B=1;
    # `A=1 B=2⏎B=3 run $B` prints run|2| and B=3
    (command,) = _commands("B=2\nB=3 run $B\n")
    assert ([shown(w) for w in command.words], dict(command.env)) == (["run", "2"], {"B": "3"})
    assert _words('B=3 run "${B-unset}"\n') == [["run", "unset"]]
    (command,) = _commands("A=1 B=$A run\n")
    assert dict(command.env) == {"A": "1", "B": "1"}
    (command,) = _commands("A=1 B=2\nB=3 run $B\n")
    assert ([shown(w) for w in command.words], dict(command.env)) == (["run", "2"], {"B": "3"})


def test_lines_of_assignments_before_a_command() -> None:
    # bash 5.2: `A=1 B=2⏎C=3 D=4⏎run $A $C` prints run|1|3| and no variable (two
    # statements of assignments, then the command; tree-sitter reads all as one command)
    (command,) = _commands("A=1 B=2\nC=3 D=4\nrun $A $C\n")
    assert ([shown(w) for w in command.words], dict(command.env)) == (["run", "1", "3"], {})
    assert (command.line, command.written) == (3, "run $A $C")


def test_comments_above_a_command_after_assignments() -> None:
    # Command.hints: the comments just above the command's own line; as after one
    # assignment (`# c⏎A=1⏎run`), a line of assignments between them hides the comment
    for script in ("# c\nA=1\nrun\n", "# c\nA=1 B=2\nrun\n"):
        (command,) = _commands(script)
        assert command.hints == (), script
    (command,) = _commands("A=1 B=2\n# c\nrun\n")
    assert command.hints == ("# c",)


def test_set_with_a_lone_dash_or_a_lone_o() -> None:
    # bash 5.2: `set -- a b; set -; run "$@"` prints run|a|b| (no words after -: $1 …
    # kept); `set - x y; run "$@"` prints run|x|y|; `set -o` lists the options (status 0)
    assert _words('set -- a b\nset -\nrun "$@"\n') == [["run", "a", "b"]]
    assert _words('set - x y\nrun "$@"\n') == [["run", "x", "y"]]
    (command,) = _commands('set -- a\nset -o\nA=1\nrun "$@"\n')
    assert ([shown(w) for w in command.words], dict(command.env)) == (["run", "a"], {})


def test_an_assigning_default_in_a_command_s_words_stays_set() -> None:
    # bash 5.2: `X=1 printf "%s|" run3 ${W:=y}; printf "%s|" run4 "$W"` prints run3|y|
    # then run4|y| (the words are expanded in the shell itself, not with the prefixes)
    assert _words('X=1 run3 ${W:=y}\nrun4 "$W"\n') == [["run3", "y"], ["run4", "y"]]


def test_redirections_and_assignments_on_a_line_of_their_own() -> None:
    # bash 5.2 (in a scratch directory): `>log A=1 B=2⏎run "$A"; env | grep -c '^A='` prints
    # run|1| then 0 (the first line is a statement of its own: A set, not exported), and
    # so does `A=1 >log⏎run "$A"; …`
    for script in ('>log A=1 B=2\nrun "$A"\n', 'A=1 >log\nrun "$A"\n'):
        (command,) = _commands(script)
        assert ([shown(w) for w in command.words], dict(command.env)) == (["run", "1"], {})
        assert (command.line, command.written) == (2, 'run "$A"')
