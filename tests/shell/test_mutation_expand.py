"""Mutation-testing tests for kvalign/shell/ (expand): expected values come from bash 5.x run
by hand on each fragment (recorded beside the test) or from the bash manual."""

from __future__ import annotations

import importlib

import pytest

from kvalign.shell import CLOSE, MAX_WORD, OPEN, evaluate, shown
from kvalign.shell.expand import (
    MAX_BUILT,
    MAX_SCRIPT_BYTES,
    MAX_STEPS,
    Budget,
    Builder,
    Env,
    ShellBudgetExceeded,
    _split_blanks,
    _unescape,
    self_dir,
)


def _words(text: str) -> list[list[str]]:
    return [[shown(w) for w in c.words] for c in evaluate(text).commands]


# ---- word splitting of unquoted expansions (bash manual, "Word Splitting") --------------
@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2 prints run|a|x|b: blanks at either end of the value end the word
        ('A=" x "\nrun a${A}b\n', ["run", "a", "x", "b"]),
        # bash: run|a|b (a value of blanks only separates the words around it)
        ('A="  "\nrun a${A}b\n', ["run", "a", "b"]),
        # bash: run|ab|ab (an empty value joins its neighbours)
        ('A=""\nrun a${A}b "a${A}b"\n', ["run", "ab", "ab"]),
        # bash: run|x|y|x  y|ax|y
        ('A="x  y"\nrun $A "$A" a${A}\n', ["run", "x", "y", "x  y", "ax", "y"]),
        # bash: run|x|y|. (tab and newline are blanks too)
        ("A=$'\\tx\\ny '\nrun $A.\n", ["run", "x", "y", "."]),
        # bash: run|x|lead ; run|trail|x ; run|x
        ('A=" lead"\nrun x${A}\n', ["run", "x", "lead"]),
        ('A="trail "\nrun ${A}x\n', ["run", "trail", "x"]),
        ('A=" "\nrun x${A}\n', ["run", "x"]),
        # bash: run|xa  by|1a  b|a  b (quoted: never split)
        ('A="a  b"\nB=1\nrun x"$A"y $B"$A" "${A}"\n', ["run", "xa  by", "1a  b", "a  b"]),
    ],
)
def test_unquoted_expansions_split_on_blanks(script: str, expected: list[str]) -> None:
    assert _words(script) == [expected]


# ---- quoting and backslashes (bash manual, "Quoting") -----------------------------------
def test_backslashes_outside_and_inside_double_quotes() -> None:
    # bash 5.2: run|a b|$x|$y|\q|z\|a\b|c"d  (in double quotes a backslash is removed only
    # before $ ` " \ and newline; in single quotes never)
    script = 'run a\\ b \\$x "\\$y" "\\q" \'z\\\' "a\\\\b" "c\\"d"\n'
    assert _words(script) == [["run", "a b", "$x", "$y", "\\q", "z\\", "a\\b", 'c"d']]


def test_a_quoted_line_continuation_is_removed() -> None:
    # bash: run|ab (backslash-newline inside double quotes is removed)
    assert _words('run "a\\\nb"\n') == [["run", "ab"]]


def test_single_quotes_and_ansi_c_quotes() -> None:
    # bash: run|raw $x|a<TAB>b|c<NL>d|it's
    script = "run 'raw $x' $'a\\tb' $'c\\nd' $'it\\'s'\n"
    assert _words(script) == [["run", "raw $x", "a\tb", "c\nd", "it's"]]


def test_empty_quotes_are_words() -> None:
    # bash: run|||x ("" and '' are empty words, not nothing)
    assert _words("run \"\" '' x\n") == [["run", "", "", "x"]]


def test_expansions_inside_double_quotes() -> None:
    # bash: run|x|prexpost|x|axbxc
    script = 'A=x\nrun "${A}" "pre${A}post" "${A:-d}" "a${A}b${A}c"\n'
    assert _words(script) == [["run", "x", "prexpost", "x", "axbxc"]]


@pytest.mark.parametrize(
    ("text", "quoted", "expected"),
    [
        ("a\\ b", False, "a b"),
        ("\\q", True, "\\q"),  # bash: "\q" keeps the backslash
        ('\\$\\`\\"\\\\', True, '$`"\\'),
        ("a\\\nb", True, "ab"),  # backslash-newline: both removed
        ("a\\\nb", False, "ab"),
        ("end\\", False, "end\\"),  # a trailing backslash has nothing to quote
        ("\\\\x", False, "\\x"),
    ],
)
def test_unescape(text: str, quoted: bool, expected: str) -> None:
    assert _unescape(text, quoted) == expected


# ---- arithmetic (bash manual, "Shell Arithmetic") ----------------------------------------
def test_arithmetic_operators_and_variables() -> None:
    # bash 5.2: run|5|-12|7|-4|4|1|1|-1|1
    script = (
        "N=4\nM=-3\n"
        "run $((N+1)) $((N*M)) $((N-M)) $((-N)) $((+N)) $((N/3)) $((N%3)) $((M/2))"
        " $(( ${N} + $M ))\n"
    )
    assert _words(script) == [["run", "5", "-12", "7", "-4", "4", "1", "1", "-1", "1"]]


def test_arithmetic_precedence_division_and_references() -> None:
    # bash: run|14|20|3|-3|1|-3 ; run|6|4|3 ; run|8 (a value's blanks are ignored) ;
    # run|7 ($[ ] is the old spelling of $(( ))) ; run|4 (an array's name is its item 0)
    script = "run $((2+3*4)) $(( (2+3)*4 )) $((7/2)) $((-7/2)) $((7%3)) $((2-5))\n"
    assert _words(script) == [["run", "14", "20", "3", "-3", "1", "-3"]]
    assert _words("X=3\nrun $(($X*2)) $((${X}+1)) $((X))\n") == [["run", "6", "4", "3"]]
    assert _words('N=" 7 "\nrun $((N+1))\n') == [["run", "8"]]
    assert _words("run $[3+4]\n") == [["run", "7"]]
    assert _words("A=(3 4)\nrun $((A+1))\n") == [["run", "4"]]
    assert _words("X=(5)\nrun $((X+0))\n") == [["run", "5"]]


def test_arithmetic_kvalign_cannot_compute_is_kept_as_written() -> None:
    # bash fails on a division by zero ("division by 0") and wraps at 64 bits; an unknown
    # or non-numeric variable is not known here: each stays as written
    assert _words("run $((5/0)) $((5%0)) $((Q+1))\n") == [
        ["run", "$((5/0))", "$((5%0))", "$((Q+1))"]
    ]
    assert _words("run $((4611686018427387904*2))\n") == [["run", "$((4611686018427387904*2))"]]
    assert _words("run $((2**3)) $((1<<2))\n") == [["run", "$((2**3))", "$((1<<2))"]]
    # within 2**62 the product is computed: bash prints 4611686014132420609 for 2147483647²
    assert _words("run $((2147483647*2147483647))\n") == [["run", "4611686014132420609"]]


def test_arithmetic_length_bound() -> None:
    # 1+1+…: 500 terms and a blank are 1,000 characters (computed: bash prints 500); 501
    # terms are 1,001 (over the 1,000-character bound: kept as written)
    short = "+".join(["1"] * 500) + " "
    assert len(short) == 1000
    assert _words(f"run $(({short}))\n") == [["run", "500"]]
    long = "+".join(["1"] * 501)
    assert _words(f"run $(({long}))\n") == [["run", f"$(({long}))"]]


# ---- positional and special parameters (bash manual, "Special Parameters") --------------
def test_positional_parameters_set_and_shifted() -> None:
    # bash: run|2|a|b c|a|b|c|a|b|c|a|b|c  ($3 is unset: empty, no word)
    script = 'set -- a "b c"\nrun $# "$@" $@ $1 $2 $3 ${1} ${2}\n'
    assert _words(script) == [["run", "2", "a", "b c", "a", "b", "c", "a", "b", "c", "a", "b", "c"]]
    # bash: run|xa|b cy ("x$@y": the first item gets the prefix, the last the suffix)
    assert _words('set -- a "b c"\nrun "x$@y"\n') == [["run", "xa", "b cy"]]
    # bash: run|r|2 ; run|r|s
    assert _words("set -- p q r s\nshift 2\nrun $1 $#\n") == [["run", "r", "2"]]
    assert _words('set -- p q r s\nshift\nshift\nrun "$@"\n') == [["run", "r", "s"]]


def test_function_arguments_are_positional() -> None:
    # bash: run|2|a|b c|a|b|c
    script = 'f() { run "$#" "$@" "${1}" ${2:-none}; }\nf a "b c"\n'
    assert _words(script) == [["run", "2", "a", "b c", "a", "b", "c"]]


def test_special_parameters_are_not_known() -> None:
    # $? $$ $! $- (and ${?} …) are the running shell's: kept as written; $0 is the script
    # name, kept as $0
    assert _words("run $? $$ $! $- ${?} ${$} ${!} ${-} $0 ${0}\n") == [
        ["run", "$?", "$$", "$!", "$-", "${?}", "${$}", "${!}", "${-}", "$0", "$0"]
    ]
    assert _words("run ${?:-d} ${#}\n") == [["run", "${?:-d}", "0"]]  # bash: $# is 0


# ---- arrays (bash manual, "Arrays") ------------------------------------------------------
def test_arrays_items_and_appends() -> None:
    # bash: run|b|c|b c|a|b c|d|a|b|c|d  (${A[5]}: unset, no word)
    script = 'A=(a "b c" d)\nrun ${A[1]} "${A[1]}" ${A[5]} "${A[@]}" ${A[*]}\n'
    assert _words(script) == [["run", "b", "c", "b c", "a", "b c", "d", "a", "b", "c", "d"]]
    # bash: run|x|x (a scalar is an array of one item)
    assert _words("V=x\nrun ${V[0]} ${V[1]} ${V[@]}\n") == [["run", "x", "x"]]
    # bash: run|1|2|3|1
    assert _words('A=(1 2)\nB=("${A[@]}" 3)\nrun "${B[@]}" "${B[0]}"\n') == [
        ["run", "1", "2", "3", "1"]
    ]
    # bash: run|x|y|ab|c  (S+=(c) turns the scalar into an array)
    script = 'A=(x)\nA+=(y)\nS=a\nS+=b\nS+=(c)\nrun "${A[@]}" "${S[@]}"\n'
    assert _words(script) == [["run", "x", "y", "ab", "c"]]
    # bash: run|x ("${A[@]}" of an empty array is no word at all, quoted or not)
    assert _words('A=()\nrun "${A[@]}" ${A[@]} x\n') == [["run", "x"]]
    # an array item's name is not known: kept as written
    assert _words("A=(a b)\nI=1\nrun ${A[$I]} ${A[x]}\n") == [["run", "${A[$I]}", "${A[x]}"]]


# ---- parameter expansion operators (bash manual, "Shell Parameter Expansion") -----------
def test_default_operators_on_unset_empty_and_set_variables() -> None:
    # bash 5.2: run|d|e|f|f|g|g|i|f
    script = "run ${U:-d} ${U-e} ${U:=f} $U ${U2=g} $U2 ${U3:+h} ${U:+i} ${U:?}\n"
    assert _words(script) == [["run", "d", "e", "f", "f", "g", "g", "i", "f"]]
    # bash: run|d||y|z|z  (E set but empty: only the colon forms treat it as unset)
    script = 'E=\nrun ${E:-d} ${E-e} "${E:+x}" ${E+y} ${E:=z} $E\n'
    assert _words(script) == [["run", "d", "", "y", "z", "z"]]
    # bash: run|  (${E=q} on a set, empty E assigns nothing; "$E" is one empty word)
    assert _words('E=\nrun ${E=q} "$E"\n') == [["run", ""]]
    # bash: run|set|set|p|q|set|set|set|set
    script = "S=set\nrun ${S:-d} ${S-e} ${S:+p} ${S+q} ${S:?m} ${S?m} ${S:=z} ${S=z}\n"
    assert _words(script) == [["run", "set", "set", "p", "q", "set", "set", "set", "set"]]


def test_defaults_are_expanded() -> None:
    # bash: run|dflt|dflt|dfltx ; run|one|two|0
    script = 'D=dflt\nrun ${U:-$D} ${U:-"$D"} "${U-${D}x}"\n'
    assert _words(script) == [["run", "dflt", "dflt", "dfltx"]]
    assert _words('run ${1:-one} "${2-two}" ${#}\n') == [["run", "one", "two", "0"]]
    # bash: run|x|a|b ($'…' in a default; an unquoted default is split)
    assert _words("run ${U:-$'x'} ${U:-a b}\n") == [["run", "x", "a", "b"]]


def test_an_error_operator_on_an_unset_variable_is_kept_as_written() -> None:
    # bash stops with "U: msg" (no command runs): kvalign keeps the word as written
    assert _words("run ${U:?msg} ${U?msg}\n") == [["run", "${U:?msg}", "${U?msg}"]]
    # set but empty: bash stops on ${E:?msg} too ("E: msg"); ${E?msg} is the empty value
    assert _words('E=\nrun ${E:?msg} "${E?msg}"\n') == [["run", "${E:?msg}", ""]]


def test_operators_kvalign_does_not_compute_are_kept_as_written() -> None:
    # bash: run|ab|bc|zbc|3 — these are not computed here: each is kept as written
    assert _words("V=abc\nrun ${V%c} ${V:1} ${V/a/z} ${#V}\n") == [
        ["run", "${V%c}", "${V:1}", "${V/a/z}", "${#V}"]
    ]


def test_default_of_a_variable_a_sourced_file_may_set_is_noted() -> None:
    script = evaluate(". ./env.sh\nrun ${TP:-4} ${PP-2}\n")
    assert [[shown(w) for w in c.words] for c in script.commands] == [["run", "4", "2"]]
    assert script.notes == [
        (
            1,
            "sources ./env.sh, which kvalign does not read: variables it may set are not "
            "known here (defaults written as ${V:-default} are used, each noted)",
        ),
        (2, "TP is not set here: its default '4' is used, but ./env.sh (sourced, not read) "
         "may set it"),
        (2, "PP is not set here: its default '2' is used, but ./env.sh (sourced, not read) "
         "may set it"),
    ]  # fmt: skip


# ---- the script's own folder ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('$(dirname "$0")', True),
        ("$(dirname ${0})", True),
        ('$(dirname "${BASH_SOURCE[0]}")', True),
        ("$(dirname x)", False),
        ("$(echo $0 | dirname)", False),  # $0 before dirname
        ("$(dirname x\necho $0)", False),  # each line on its own
        ("$(echo\ndirname $0)", True),
        ("$(basedirname $0)", False),  # a whole word
        ("$(dirname $01)", False),  # $01 is not $0
    ],
)
def test_self_dir(text: str, expected: bool) -> None:
    assert self_dir(text) is expected


def test_self_dir_in_a_script() -> None:
    assert _words('run $(dirname "$0")/x $(hostname)\n') == [["run", "./x", "$(hostname)"]]


# ---- budgets (docs/security.md, "Budgets") -----------------------------------------------
def test_step_budget_is_inclusive_and_its_message_pinned() -> None:
    budget = Budget()
    budget.step(MAX_STEPS)  # exactly the budget: fine
    assert budget.steps == MAX_STEPS
    with pytest.raises(ShellBudgetExceeded) as error:
        budget.step()
    assert str(error.value) == (
        "shell budget exceeded: more than 100,000 evaluation steps (statements and expansions)"
    )
    two = Budget()
    two.step(2)
    two.step()
    assert two.steps == 3  # default: one step


def test_built_budget_is_inclusive_and_its_message_pinned() -> None:
    budget = Budget()
    budget.build(MAX_BUILT)
    assert budget.built == MAX_BUILT
    with pytest.raises(ShellBudgetExceeded) as error:
        budget.build(1)
    assert str(error.value) == "shell budget exceeded: more than 16 MiB of expanded text"


def test_script_size_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module("kvalign.shell.evaluate")

    assert MAX_SCRIPT_BYTES == 8 * 1024 * 1024  # the file cap (safeio.MAX_FILE_BYTES)
    monkeypatch.setattr(module, "MAX_SCRIPT_BYTES", 2048)  # 2 KiB: the rule, faster
    evaluate("#" * 2048)  # exactly the budget: read
    with pytest.raises(ShellBudgetExceeded) as error:
        evaluate("#" * 2049)
    assert str(error.value) == "shell budget exceeded: script longer than 2 KiB"


def test_a_script_over_the_step_budget_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_STEPS", 300)
    # 100 items per "${A[@]}" (one step each): 3 commands are over 300 steps
    items = " ".join(["x"] * 100)
    with pytest.raises(ShellBudgetExceeded, match="more than 300 evaluation steps"):
        evaluate(f"A=({items})\n" + 'run "${A[@]}"\n' * 3)
    evaluate(f"A=({items})\n" + 'run "${A[@]}"\n')


def test_a_script_over_the_built_budget_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_BUILT", 1024 * 1024)
    # a 100,000-character value copied 12 times (x joined to it): 1.2 MB of words (over 1 MiB)
    value = "y" * 100_000
    with pytest.raises(ShellBudgetExceeded, match="more than 1 MiB of expanded text"):
        evaluate(f"A={value}\n" + 'run "x$A" "x$A" "x$A"\n' * 4)
    evaluate(f"A={value}\n" + 'run "x$A" "x$A" "x$A"\n' * 2)
    # the value as a whole word is shared, not copied: 100 such words cost no more
    evaluate(f"A={value}\n" + 'run "$A" $A "$A"\n' * 100)


# ---- the word builder ----------------------------------------------------------------------
def test_builder_word_bound_is_inclusive() -> None:
    out = Builder()
    out.add("x" * MAX_WORD)
    assert not out.overflow
    out.end()
    assert out.words == ["x" * MAX_WORD]
    out.add("a" * (MAX_WORD - 1))
    out.add("bb")
    assert out.overflow  # the word is one character over
    out.add("c")  # once over, nothing more is kept
    out.end()
    assert out.words == ["x" * MAX_WORD, "a" * (MAX_WORD - 1)]


def test_builder_total_bound() -> None:
    # 8 MiB for all the words of one command: 32 words of 256 KiB fit, a 33rd does not
    out = Builder()
    for _ in range(32):
        out.add("w" * MAX_WORD)
        out.end()
    assert not out.overflow and len(out.words) == 32
    out.add("z")
    assert out.overflow


def test_builder_charges_its_budget() -> None:
    budget = Budget()
    out = Builder(budget)
    out.add("abc")
    out.add("")
    assert budget.built == 5  # each piece and one more
    out.end()
    out.end()  # no word started: nothing added
    assert out.words == ["abc"]
    assert out.size == 0 and out.total == 3


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        ([("add", "a"), ("split", " x "), ("add", "b")], ["a", "x", "b"]),
        ([("add", "a"), ("split", "  "), ("add", "b")], ["a", "b"]),
        ([("add", "a"), ("split", ""), ("add", "b")], ["ab"]),
        ([("add", "a"), ("split", "x y"), ("add", "b")], ["ax", "yb"]),
        ([("add", "a"), ("split", "\tx\n"), ("add", "b")], ["a", "x", "b"]),
        ([("split", "x"), ("add", "b")], ["xb"]),
    ],
)
def test_builder_add_split(pieces: list[tuple[str, str]], expected: list[str]) -> None:
    out = Builder()
    for how, text in pieces:
        out.add(text) if how == "add" else out.add_split(text)
    out.end()
    assert out.words == expected


def test_split_blanks_never_inside_an_unresolved_piece() -> None:
    piece = f"{OPEN}b c{CLOSE}"
    assert _split_blanks(f"a {piece} d") == ["a", piece, "d"]
    assert _split_blanks(f"{OPEN}{OPEN}x y{CLOSE} z{CLOSE} w") == [
        f"{OPEN}{OPEN}x y{CLOSE} z{CLOSE}",
        "w",
    ]
    # a stray closing bracket does not count below zero
    assert _split_blanks(f"{CLOSE} x y") == [CLOSE, "x", "y"]
    assert _split_blanks(" \t\n") == []
    assert _split_blanks("a\tb\nc d") == ["a", "b", "c", "d"]


# ---- one evaluation path -------------------------------------------------------------------
def test_env_copy_is_independent_and_complete() -> None:
    env = Env({"A": "1", "L": ("x", "y")}, {"A"}, ("p",), True, ("if c",), True,
              frozenset({"R"}), ("env.sh",))  # fmt: skip
    copy = env.copy()
    assert copy == env
    copy.vars["B"] = "2"
    copy.exported.add("B")
    assert "B" not in env.vars and "B" not in env.exported


def test_env_scalar_and_environment() -> None:
    env = Env({"A": "1", "L": ("x", "y"), "E": (), "H": "h"}, {"A", "L"})
    assert [env.scalar(n) for n in ("A", "L", "E", "U")] == ["1", "x", "", None]
    assert env.environment() == {"A": "1", "L": "x y"}
    env.allexport = True
    assert env.environment() == {"A": "1", "L": "x y", "E": "", "H": "h"}


def test_arithmetic_on_lower_case_names() -> None:
    # bash 5.2: run|5|8
    assert _words("n=4\nm_2=8\nrun $((n+1)) $((m_2))\n") == [["run", "5", "8"]]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # bash 5.2 prints each: "${@}" and "$@" of no arguments are no word
        ('set --\nrun "${@}" "$@" x\n', ["run", "x"]),
        ('set -- a b\nrun "${@}" "x${@}"\n', ["run", "a", "b", "xa", "b"]),
        # ${10} and $10 (= ${1}0)
        ("set -- 1 2 3 4 5 6 7 8 9 10\nrun ${10} $10\n", ["run", "10", "10"]),
        ('run "${1:-d}" "${1-d}" "${@:-d}"\n', ["run", "d", "d", "d"]),
        ('X=\nrun ${X:+a} "${X:+a}" ${NEVER+b} x\n', ["run", "", "x"]),
        ('A=(x y)\nrun ${A[@]:-d} "${A[0]:-d}" "${A[1]}"\n', ["run", "x", "y", "x", "y"]),
        ("V=1\nrun ${V:=2} $V\n", ["run", "1", "1"]),
        # a lone $ is text
        ('run "$" "a$" $ x\n', ["run", "$", "a$", "$", "x"]),
        # a glob matching no file is kept as written (bash's default, no nullglob)
        ("run *.nothing-matches-here\n", ["run", "*.nothing-matches-here"]),
    ],
)
def test_more_parameter_expansions(script: str, expected: list[str]) -> None:
    assert _words(script) == [expected]


def test_expansions_kvalign_leaves_as_written() -> None:
    # bash expands these (brace expansion, ~, an unset variable to nothing); kvalign keeps
    # them as written: a piece it cannot know from the script alone
    assert _words("run {a,b} ~/x --x=$NEVER_Y\n") == [["run", "{a,b}", "~/x", "--x=$NEVER_Y"]]


def test_arithmetic_operators_kvalign_does_not_compute() -> None:
    # bash 5.2 prints 1 -2 for $((1<2)) $((~1)): comparisons and ~ are not computed here
    assert _words("run $((1<2)) $((~1))\n") == [["run", "$((1<2))", "$((~1))"]]


def test_arithmetic_products_from_2_to_the_62_are_kept_as_written() -> None:
    # bash 5.2: 2147483647*2147483648 = 4611686016279904256 (under 2**62: computed);
    # 2147483648*2147483648 = 2**62 = 4611686018427387904: at the bound, kept as written
    assert _words("run $((2147483647*2147483648)) $((2147483648*2147483648))\n") == [
        ["run", "4611686016279904256", "$((2147483648*2147483648))"]
    ]


def test_a_default_is_expanded_as_if_quoted() -> None:
    # bash 5.2 prints [a  b]: inside "${U:-$V}" the value of V is not split
    assert _words('V="a  b"\nrun "${U:-$V}"\n') == [["run", "a  b"]]


def test_a_default_too_long_is_noted_and_kept_as_written() -> None:
    value = "b" * 200_000
    script = evaluate(f'B={value}\nrun "${{U:-$B$B}}"\n')  # 400,000 characters
    assert script.notes == [(2, "expands to more than 262144 characters: not read")]
    assert [shown(w) for w in script.commands[0].words] == ["run", "${U:-$B$B}"]


def test_a_default_is_charged_to_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import kvalign.shell.expand as expand

    monkeypatch.setattr(expand, "MAX_BUILT", 1024 * 1024)
    value = "b" * 100_000
    # each "${U:-x$B}" builds its default (x joined to B's value: a copy of 100,001
    # characters, and the pieces): 100,001 for B's value + 12 x 100,004 is over 1 MiB
    with pytest.raises(ShellBudgetExceeded):
        evaluate(f"B={value}\n" + 'run "${U:-x$B}"\n' * 12)
    evaluate(f"B={value}\n" + 'run "${U:-x$B}"\n' * 6)


def test_braced_names_and_scalar_items() -> None:
    # bash 5.2: run|1|abc|abc (lower-case names; item 0 of a scalar is the whole value)
    assert _words("v=1\nV=abc\nrun ${v} ${V[0]} ${v_1:-abc}\n") == [["run", "1", "abc", "abc"]]


def test_length_of_a_special_parameter_is_kept_as_written() -> None:
    # ${#-} / ${#?} are the lengths of $- and $? (bash prints 3 and 1 under bash -c): the
    # running shell's, not known here; ${#} alone is $#
    assert _words("run ${#-} ${#?} ${#}\n") == [["run", "${#-}", "${#?}", "0"]]


def test_quoted_operators_on_a_set_value_keep_it_whole() -> None:
    # bash 5.2 prints [a  b] five times: inside double quotes no operator splits
    script = 'V="a  b"\nrun "${V:-d}" "${V-d}" "${V:=d}" "${V:?m}" "${V:+$V}"\n'
    assert _words(script) == [["run"] + ["a  b"] * 5]


def test_quoted_defaults_are_one_word_and_unnoted() -> None:
    # bash 5.2 prints [a  b][c  d][c  d]
    script = evaluate('run "${U:-a  b}" "${U=c  d}" "$U"\n')
    assert [[shown(w) for w in c.words] for c in script.commands] == [
        ["run", "a  b", "c  d", "c  d"]
    ]
    assert script.notes == []  # no file sourced: nothing to say about the defaults


def test_all_arguments_unquoted_and_unknown() -> None:
    # bash 5.2: run|a|b ($* unquoted: one word per argument, split)
    assert _words("set -- a b\nrun $*\n") == [["run", "a", "b"]]
    # a function never called: its arguments are unknown, kept as written
    assert _words('f() { run "$@" $*; }\n') == [["run", "$@", "$*"]]


def test_a_parameter_number_past_18_digits_is_empty() -> None:
    # bash 5.2 prints xy: there is no 1234567890123456789th argument (kvalign reads at
    # most 18 digits as a number: longer is no such parameter)
    assert _words("set -- a\nrun x${1234567890123456789}y\n") == [["run", "xy"]]


def test_special_parameters_are_never_variables() -> None:
    # $? $$ $! $- are the running shell's own (bash manual, "Special Parameters"), even if
    # the given environment had such a key
    env = {"?": "0", "$": "1", "!": "2", "-": "3"}
    script = evaluate("run $? $$ $! $-\n", env=env)
    assert [[shown(w) for w in c.words] for c in script.commands] == [
        ["run", "$?", "$$", "$!", "$-"]
    ]


def test_blanks_around_expansions_inside_double_quotes_are_kept() -> None:
    # bash 5.2 prints [ ][  1  ][1<NL>2] (tree-sitter-bash leaves these blanks and the
    # newline between the string's parts, outside its string_content)
    script = 'A=1\nB=2\nrun " " "  ${A}  " "$A\n$B"\n'
    assert _words(script) == [["run", " ", "  1  ", "1\n2"]]


def test_the_environment_keeps_the_order_variables_were_set_in() -> None:
    from kvalign.shell.expand import Env

    # few of many exported (the fast path) and most exported: the same order, vars' order
    many = Env({f"V{i}": str(i) for i in range(40)}, {"V30", "V3", "V12"})
    assert list(many.environment().items()) == [("V3", "3"), ("V12", "12"), ("V30", "30")]
    few = Env({"B": "b", "A": ("x", "y"), "C": "c"}, {"C", "A"})
    assert list(few.environment().items()) == [("A", "x y"), ("C", "c")]
    assert Env({"B": "b", "A": "a"}, set(), allexport=True).environment() == {"B": "b", "A": "a"}
    assert Env({f"V{i}": "" for i in range(40)}, {"V1", "gone"}).environment() == {"V1": ""}


def test_the_syntax_budget_counts_what_the_parse_tree_grows_with(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # blanks, operators, quotes and expansion marks count; word characters do not: a word
    # of 100,000 characters is one node of the tree, 100 `;` are 100
    from kvalign.shell import expand

    monkeypatch.setattr(expand, "MAX_SYNTAX", 100)
    evaluate("echo " + "x" * 100_000 + "\n" + ";" * 98)  # 1 blank, 1 newline, 98 `;`
    with pytest.raises(ShellBudgetExceeded) as over:
        evaluate("echo " + "x" * 100_000 + "\n" + ";" * 99)
    assert str(over.value) == (
        "shell budget exceeded: more than 100 characters of shell syntax (blanks, operators, "
        "quotes)"
    )
    for mark in " \t\n\r;&|()<>{}[]$`\"'\\=":
        with pytest.raises(ShellBudgetExceeded):
            evaluate(mark * 101)
    evaluate("#*?!~" * 1000)  # a comment, a glob: one node however long
    # an eval's text counts too: the script has 84 (29 + 5 + 50), the eval's text 25 more
    script = "V=';;;;;;;;;;;;;;;;;;;;;;;;;'\n" + 'eval "$V"\n' + "=" * 50
    with pytest.raises(ShellBudgetExceeded):
        evaluate(script)
    evaluate(script.replace("eval", "echo"))
