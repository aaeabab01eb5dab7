"""Tests written for the shell mutation survivors of share B (kvalign/shell/commands.py,
expand.py, and evaluate.py's _command, evaluate, _substituted, _list, _condition_at,
_branches, _operand, _comments_above; issue #19). Every expected value is bash 5.2.15's own
output on this machine (the script and the output are written beside the test) or a hand
derivation written out; none is kvalign's output."""

from __future__ import annotations

import pytest

from kvalign.shell import evaluate, remote_script, shell_script, shown
from kvalign.shell.commands import session_script


def _words(text: str) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in evaluate(text).commands]


def _runs(text: str) -> list[list[str]]:
    return [w for w in _words(text) if w and w[0] == "run"]


# ---- commands.py ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # bash 5.2: `/bin/bash -c - -x 'echo hi'` prints "-x: command not found" ($0 is
        # 'echo hi'): a lone "-" ends the options, the next word is the script
        (["bash", "-c", "-", "-x", "echo hi"], ("-x", [])),
        # bash 5.2: `/bin/bash -c - 'echo $0 $1' a b` prints "a b"
        (["bash", "-c", "-", "echo $0 $1", "a", "b"], ("echo $0 $1", ["b"])),
        # bash 5.2: `/bin/bash -c + -x 'echo hi'` prints "hi" and the trace "+ echo hi": a
        # lone "+" is no option and does not end them (-x is still read)
        (["bash", "-c", "+", "-x", "echo hi"], ("echo hi", [])),
        # bash 5.2: `/bin/bash + -c 'echo $0' a` prints "a"
        (["bash", "+", "-c", "echo $0", "a"], ("echo $0", [])),
        # bash 5.2: `/bin/bash - -c 'echo hi'` fails "-c: No such file or directory": after
        # the lone "-", -c is a file name, so there is no -c script
        (["bash", "-", "-c", "echo hi"], None),
        # dash (/bin/sh here): `/bin/sh -c - -x 'echo hi'` fails "-x: not found", as bash
        (["/bin/sh", "-c", "-", "-x", "echo hi"], ("-x", [])),
    ],
)
def test_shell_script_lone_dash_and_plus(
    words: list[str], expected: tuple[str, list[str]] | None
) -> None:
    assert shell_script(words) == expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # a script that starts with X is no option: bash -c 'Xvfb :1' runs Xvfb (bash(1):
        # options start with - or +)
        (["bash", "-c", "Xvfb :1", "a"], ("Xvfb :1", [])),
        # bash(1): --norc is a long option and runs no -c script: `bash --norc f.sh` runs the
        # file f.sh, so no SHELL -c SCRIPT (the c of "norc" is no -c)
        (["bash", "--norc", "f.sh"], None),
        (["bash", "--norc", "-c", "run"], ("run", [])),
        # nothing but wrappers: no command, no shell (hand derivation: env alone runs
        # nothing here)
        (["env"], None),
        (["nohup"], None),
        ([], None),
    ],
)
def test_shell_script_option_words(
    words: list[str], expected: tuple[str, list[str]] | None
) -> None:
    assert shell_script(words) == expected


def test_ssh_host_after_double_dash_starting_with_dash() -> None:
    # getopt: "--" ends ssh's options, so -l is the destination; OpenSSH 9.2 (this machine:
    # `ssh -G -- -weird` prints "hostname contains invalid characters") refuses it and runs
    # no remote command
    assert remote_script(["ssh", "--", "-l", "u", "h", "run"]) is None
    # and "--" then a host: the command after the host (ssh(1))
    assert remote_script(["ssh", "-p", "22", "--", "h", "run", "x"]) == "run x"


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        # tmux(1) and screen(1) found by path as by name: /usr/bin/tmux is tmux
        (["/usr/bin/tmux", "new", "-d", "run"], "run"),
        (["/usr/bin/screen", "-dmS", "s", "run"], "run"),
        # a wrapper before tmux: nohup runs tmux, which runs "run"
        (["nohup", "tmux", "new-session", "-d", "run"], "run"),
        (["sudo", "/usr/bin/tmux", "-L", "x", "new", "-d", "run", "a"], "run a"),
        # getopt: "--" ends tmux new's options; the word after it is the command even when
        # it starts with "-" (one word: shell text)
        (["tmux", "new", "-d", "--", "-x"], "-x"),
    ],
)
def test_session_script_paths_and_wrappers(words: list[str], expected: str | None) -> None:
    assert session_script(words) == expected


# ---- expand.py --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2 (run printing each argument then "|"): `set -- a b; A="$@"; run "$A"` →
        # a b| ; B=$@ → a b| ; C="x$@y" → xa by| ; with IFS=, still a b| (A="$*" is a,b)
        ('set -- a b\nA="$@"\nrun "$A"\n', [["run", "a b"]]),
        ('set -- a b\nB=$@\nrun "$B"\n', [["run", "a b"]]),
        ('set -- a b\nC="x$@y"\nrun "$C"\n', [["run", "xa by"]]),
        ('IFS=,\nset -- a b\nA="$@"\nrun "$A"\n', [["run", "a b"]]),
        ('X=(x y)\nD="${X[@]}"\nrun "$D"\n', [["run", "x y"]]),
        # bash 5.2: `set -- a b; [[ "$@" == "a b" ]] && echo t1` prints t1
        ('set -- a b\n[[ "$@" == "a b" ]] && run t1\n', [["run", "t1"]]),
    ],
)
def test_all_items_in_an_assignment_are_joined_with_a_blank(
    script: str, expected: list[list[str]]
) -> None:
    assert _runs(script) == expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2: `A="a\Xb"; run "$A" "c\Xd"` → a\Xb|c\Xd| (in double quotes a backslash is
        # removed only before $ ` " \ and newline)
        ('A="a\\Xb"\nrun "$A" "c\\Xd"\n', [["run", "a\\Xb", "c\\Xd"]]),
        # bash 5.2: `X=abc; if [[ $X = a* ]]; then run yes; else run no; fi` → yes| (the
        # grammar reads the right side of = as a regex node)
        ("X=abc\nif [[ $X = a* ]]; then run yes; else run no; fi\n", [["run", "yes"]]),
        # bash 5.2: `run ${U:-meta-llama/x}` → meta-llama/x| (the grammar splits the default
        # into a variable_name and a word)
        ("run ${U:-meta-llama/x}\n", [["run", "meta-llama/x"]]),
        # bash 5.2: `X="a b"; A=($X); run "${A[1]}" "${A[0]}"` → b|a| (an array's items
        # are split)
        ('X="a b"\nA=($X)\nrun "${A[1]}" "${A[0]}"\n', [["run", "b", "a"]]),
        # bash 5.2: `A=$"hi x"; run "$A"` → hi x| (a translated string, no catalog)
        ('A=$"hi x"\nrun "$A"\n', [["run", "hi x"]]),
        # bash 5.2: `X="p q"; run "${U:-a$X}"` → ap q| (a quoted default is not split)
        ('X="p q"\nrun "${U:-a$X}"\n', [["run", "ap q"]]),
    ],
)
def test_expansion_cases(script: str, expected: list[list[str]]) -> None:
    assert _runs(script) == expected


def test_an_unresolved_piece_inside_a_nested_script_is_shown_as_written() -> None:
    # hand derivation: run with no arguments, $1 is the argument the user is to pass
    # (unresolved); bash -c then runs `run ${V%<$1>}`, whose ${V%…} kvalign does not
    # compute: the word is shown as written in the outer script, ${V%$1}
    assert _runs('bash -c "run \\${V%$1}"\n') == [["run", "${V%$1}"]]


def test_a_word_over_max_word_is_kept_unresolved_and_the_next_word_read() -> None:
    # bash 5.2: `A=x; for i in $(seq 17); do A=$A$A; done; echo ${#A}` → 131072, and
    # B=$A$A$A has 393216 characters: more than MAX_WORD (256 * 1024 = 262144), so the word
    # is kept as written (unresolved, noted) and the following word is read as usual
    from kvalign.shell.commands import OPEN
    from kvalign.shell.expand import MAX_WORD

    assert 3 * 2**17 > MAX_WORD >= 2**17
    script = "A=x\n" + "A=$A$A\n" * 17 + "run $A$A$A next\n"
    result = evaluate(script)
    (command,) = [c for c in result.commands if c.words[0] == "run"]
    assert [shown(w) for w in command.words] == ["run", "$A$A$A", "next"]
    assert OPEN in command.words[1]
    assert command.words[2] == "next"  # read, not an unresolved piece
    assert any(f"more than {MAX_WORD} characters" in text for _, text in result.notes)


def test_a_default_the_grammar_splits_is_known_text() -> None:
    # bash 5.2: `run ${U:-meta-llama/x}` → meta-llama/x| : the whole default is known text,
    # not a piece kvalign cannot resolve (which would also be shown as written)
    from kvalign.shell.commands import OPEN

    (command,) = evaluate("run ${U:-meta-llama/x}\n").commands
    assert command.words == ("run", "meta-llama/x")
    assert OPEN not in command.words[1]


def test_the_expansion_nesting_bound_is_at_max_nesting() -> None:
    # as _condition / _expr (tests/shell/test_mutation_evaluate.py): at MAX_NESTING - 1
    # levels an expansion is still read, at MAX_NESTING it is not (noted once)
    from kvalign.shell.expand import MAX_NESTING, Builder, Env, Expander
    from kvalign.shell.parse import parse

    name = parse("run\n").root_node.named_children[0].named_children[0]  # command_name
    word = name.named_children[0]  # the word itself: no nested expansion
    assert word.type == "word"
    expander = Expander()
    expander.level = MAX_NESTING - 1
    out = Builder()
    expander.expand(word, Env(), out, quoted=False)
    out.end()
    assert out.words == ["run"] and expander.script.notes == []
    expander.level = MAX_NESTING
    out = Builder()
    expander.expand(word, Env(), out, quoted=False)
    out.end()
    assert [shown(expander.decode(w)) for w in out.words] == ["run"]
    assert expander.script.notes == [(1, f"nested deeper than {MAX_NESTING} levels: not read")]


# ---- evaluate.py: _command --------------------------------------------------------------
def test_the_command_limit_note_beside_an_earlier_note(monkeypatch: pytest.MonkeyPatch) -> None:
    # hand derivation: with MAX_COMMANDS 3, the 4th simple command is over the limit; a note
    # given before (the sourced file, line 1) does not stop the limit's own note
    module = __import__("kvalign.shell.evaluate", fromlist=["MAX_COMMANDS"])
    monkeypatch.setattr(module, "MAX_COMMANDS", 3)
    script = evaluate(". ./env.sh\nrun 1\nrun 2\nrun 3\nrun 4\n")
    assert [c.words[1] for c in script.commands if c.words[0] == "run"] == ["1", "2"]
    assert [line for line, _ in script.notes] == [1, 4]
    assert script.notes[1][1] == "more than 3 commands: the rest not read"


def test_an_array_item_prefix_does_not_stop_the_command() -> None:
    # bash 5.2: `A[1]=x /bin/echo ran` prints "`A[1]': not a valid identifier" and still
    # runs the command (prints ran)
    assert _runs("A[1]=x run ran\n") == [["run", "ran"]]
    # and `A[1]=x env` lists no A[1]: read with a default of "", its value is "" (kvalign
    # lists A[1] with the value "" today: a divergence, reported; this holds either way)
    (command,) = evaluate("A[1]=x run ran\n").commands
    assert command.env.get("A[1]", "") == ""


def _undecided(name: str) -> str:
    # an if on a variable the script reads from an unknown command: both branches are paths
    # (bash: which one runs depends on what the command prints)
    return f'{name}0=$(cat /etc/{name})\nif [ "${name}0" = x ]; then {name}=1; else {name}=2; fi\n'


def test_every_path_reaches_the_commands_after_a_command() -> None:
    # hand derivation: two paths (A=1, A=2) each run both commands
    script = _undecided("A") + "run $A\nrun $A\n"
    assert _runs(script) == [["run", "1"], ["run", "2"], ["run", "1"], ["run", "2"]]


def test_more_paths_than_max_alternatives_at_a_function_call_are_merged_there() -> None:
    # hand derivation: four undecided ifs make 2**4 = 16 paths (not more than
    # MAX_ALTERNATIVES = 16); the call f doubles each (its own undecided if): 32 paths after
    # the command on line 13, which are merged into one (noted at that line)
    from kvalign.shell import MAX_ALTERNATIVES

    assert MAX_ALTERNATIVES == 16
    script = "".join(_undecided(n) for n in "ABCD")  # lines 1-8
    script += "f() {\n" + _undecided("E") + "}\n"  # lines 9-12
    script += "f\nrun $A$B$C$D$E\n"  # lines 13-14
    result = evaluate(script)
    assert [line for line, text in result.notes if "alternatives" in text] == [13]
    assert [shown(w) for c in result.commands if c.words[0] == "run" for w in c.words] == [
        "run",
        "$A$B$C$D$E",
    ]


# ---- evaluate.py: _substituted ----------------------------------------------------------
def _vllm(text: str) -> list[tuple[list[str], int]]:
    return [
        ([shown(w) for w in c.words], c.line)
        for c in evaluate(text).commands
        if c.words[:1] == ("vllm",)
    ]


def test_a_launching_substitution_among_other_words() -> None:
    # hand derivation: bash runs each $( ) of a command line before the command, so the
    # vllm serve inside runs whatever words follow it or whichever other $( ) there is
    assert _vllm("run $(vllm serve m) x\n") == [(["vllm", "serve", "m"], 1)]
    assert _vllm("run $(vllm serve m) $(date)\n") == [(["vllm", "serve", "m"], 1)]


def test_a_launching_substitution_keeps_its_line() -> None:
    # hand derivation: the substitution on line 3 runs there; inside eval (line 3) the
    # command is reported at the eval's line
    assert _vllm("\n\nX=$(vllm serve m)\n") == [(["vllm", "serve", "m"], 3)]
    assert _vllm("\n\neval 'X=$(vllm serve m)'\n") == [(["vllm", "serve", "m"], 3)]


def test_a_launching_substitution_in_a_function_runs_at_each_call() -> None:
    # hand derivation: bash runs the function body, so the substitution, at each call: two
    # launches, the same command from two calls (Command.site: two calls of one function
    # are two sites)
    script = "f() { X=$(vllm serve m); }\nf\nf\n"
    assert _vllm(script) == [(["vllm", "serve", "m"], 1), (["vllm", "serve", "m"], 1)]


def _chain(depth: int, body: str) -> str:
    # f1 calls f2 … calls f<depth>, whose body is ``body``: that body runs `depth` calls
    # deep (f1's body is one level below the script)
    lines = [f"f{i}() {{ f{i + 1}; }}" for i in range(1, depth)]
    lines.append(f"f{depth}() {{ {body}; }}")
    return "\n".join(lines) + "\nf1\n"


@pytest.mark.parametrize(
    ("depth", "body", "launched"),
    [
        # hand derivation from _MAX_DEPTH = 8 (eval / bash -c / function nesting): a body 7
        # calls deep still runs its $( ); one 8 deep does not
        (7, "X=$(vllm serve m)", True),
        (8, "X=$(vllm serve m)", False),
        # the $( ) is one level more: its bash -c runs only from 6 calls deep (7 < 8)
        (6, "X=$(bash -c 'vllm serve m')", True),
        (7, "X=$(bash -c 'vllm serve m')", False),
    ],
)
def test_the_nesting_bound_of_substitutions(depth: int, body: str, launched: bool) -> None:
    module = __import__("kvalign.shell.evaluate", fromlist=["_MAX_DEPTH"])
    assert module._MAX_DEPTH == 8
    found = [w for w, _ in _vllm(_chain(depth, body))]
    assert found == ([["vllm", "serve", "m"]] if launched else [])


# ---- evaluate.py: _list, _condition_at, _operand ---------------------------------------
def test_a_comment_between_and_and_the_command() -> None:
    # bash 5.2: `true && # note<newline> run x` → x| (the comment is no command)
    assert _runs("true && # note\n run x\n") == [["run", "x"]]


def test_each_path_through_a_list() -> None:
    # bash 5.2, with A0 printed as x and as something else by the unknown command:
    #   B=; A=1: `[ "$A" = 2 ] && B=x; run "$A" "$B"` → 1|| ; A=2 → 2|x|
    decided = "B=\n" + _undecided("A") + '[ "$A" = 2 ] && B=x\nrun "$A" "$B"\n'
    assert _runs(decided) == [["run", "1", ""], ["run", "2", "x"]]
    # bash 5.2: `true && B=y; run "$B"` → y| on each path
    taken = _undecided("A") + 'true && B=y\nrun "$A" "$B"\n'
    assert _runs(taken) == [["run", "1", "y"], ["run", "2", "y"]]
    # an undecided test (U from an unknown command): B=y or not, on each path
    undecided = "B=\n" + _undecided("A") + 'U=$(cat /etc/U)\n[ "$U" = x ] && B=y\nrun "$A" "$B"\n'
    assert sorted(_runs(undecided)) == [
        ["run", "1", ""],
        ["run", "1", "y"],
        ["run", "2", ""],
        ["run", "2", "y"],
    ]


def test_more_paths_than_max_alternatives_at_a_list_are_merged_there() -> None:
    # hand derivation: 16 paths (four undecided ifs, lines 1-8), each split by the
    # undecided list on line 9: 32 paths, merged into one there (noted at line 9)
    script = "".join(_undecided(n) for n in "ABCD")
    script += 'E=$(cat /etc/E); [ "$E" = x ] && B=y\nrun "$A$B"\n'
    result = evaluate(script)
    assert [line for line, text in result.notes if "alternatives" in text] == [9]


@pytest.mark.parametrize(
    ("condition", "taken"),
    [
        # bash 5.2: `if [ ]; then run a; else run b; fi` → b| (kvalign: cannot tell, so
        # both paths; b is among them)
        ("[ ]", ["b"]),
        # bash 5.2: `if true x; then …` → a| ; `if false x; then …` → b| (arguments of
        # true / false do not matter)
        ("true x", ["a"]),
        ("false x", ["b"]),
        # bash 5.2, U=x: a| ; U unset: b| — U comes from an unknown command: both paths
        ('[ "$U" = x ] && [ 1 = 1 ]', ["a", "b"]),
        # bash 5.2 (X unset): `if [ -z "${X}" ]` → za…: the braced forms as the plain ones
        ('[ -z "${X}" ]', ["a"]),
        ("[ -z ${X} ]", ["a"]),
    ],
)
def test_conditions(condition: str, taken: list[str]) -> None:
    runs = _runs(f"U=$(cat /etc/U)\nif {condition}; then run a; else run b; fi\n")
    if condition == "[ ]":
        assert ["run", "b"] in runs
    else:
        assert runs == [["run", t] for t in taken]


# ---- evaluate.py: _branches -------------------------------------------------------------
def test_sixteen_paths_are_kept_apart() -> None:
    # hand derivation: four undecided if/else make 2**4 = 16 paths, not more than
    # MAX_ALTERNATIVES = 16: each is kept (the 16 values of $A$B$C$D), nothing merged
    script = "".join(_undecided(n) for n in "ABCD") + "run $A$B$C$D\n"
    result = evaluate(script)
    values = sorted(c.words[1] for c in result.commands if c.words[0] == "run")
    expected = sorted(f"{a}{b}{c}{d}" for a in "12" for b in "12" for c in "12" for d in "12")
    assert values == expected and len(values) == 16
    assert not [text for _, text in result.notes if "alternatives" in text]


def test_an_undecided_exit_is_an_alternative_not_a_precondition() -> None:
    # bash 5.2: `if [ "$HF" = x ]; then exit 1; fi; run ok` exits (status 1) with HF=x and
    # prints ok| with HF unset: HF is not known here, so `run ok` is one alternative (the
    # path where the test fails), not a guard taken to hold (that is for a test decided
    # true, such as [ -z "$HF_TOKEN" ] with HF_TOKEN unset)
    result = evaluate('if [ "$HF" = x ]; then exit 1; fi\nrun ok\n')
    (command,) = [c for c in result.commands if c.words[0] == "run"]
    assert command.words == ("run", "ok")
    assert len(command.alternative) == 1 and command.alternative[0].startswith("not if")
    assert not [text for _, text in result.notes if "precondition" in text]


def test_the_alternative_of_a_path_names_at_most_max_alternatives_conditions() -> None:
    # hand derivation: 18 undecided ifs whose branch exits (A from an unknown command) leave
    # one path, past 18 failed tests; its description keeps the first MAX_ALTERNATIVES (16)
    from kvalign.shell import MAX_ALTERNATIVES

    script = "A=$(cat /etc/a)\n"
    script += "".join(f'if [ "$A" = {k} ]; then exit 1; fi\n' for k in range(18))
    script += "run ok\n"
    (command,) = [c for c in evaluate(script).commands if c.words[0] == "run"]
    assert len(command.alternative) == MAX_ALTERNATIVES == 16
