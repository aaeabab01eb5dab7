"""The Justfile reader (kvalign/deploy/justfile.py) pinned where a wrong rule changes the
answer, for its mutants (tests/mutation/run.py justfile).

Expected values come from the ``just`` manual (just.systems/man: the file names ``just``
looks for, in any case, and ``.just`` modules; ``NAME := "value"`` / ``'value'`` and
``export NAME := …``; double-quoted strings process ``\\"`` ``\\\\`` ``\\n`` escapes,
single-quoted ones none; recipe parameters with a default ``tp="2"``, ``+`` / ``*``
variadic and ``$`` exported parameters; dependencies after the colon; ``@`` (quiet) and
``-`` (ignore errors) line prefixes; ``{{ }}`` interpolation; ``set``, ``alias`` and
``[attribute]`` lines) and from kvalign's documented mapping (module docstring: a recipe
is a shell function of its name, its lines the body line for line, unresolved
interpolations left as ``${NAME}`` / ``$(just: EXPR)``), applied by hand to the files
written in each test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.deploy.interface import Source
from kvalign.deploy.justfile import Reader, _literal, _quoted, is_justfile, to_shell

JUSTFILE = (
    "# deploy recipes\n"  # 1
    'set shell := ["bash", "-c"]\n'  # 2
    'model := "org/m"\n'  # 3
    'export hf-home := "/d/it\'s"\n'  # 4
    "computed := `date`\n"  # 5
    "[private]\n"  # 6
    "alias p := prefill\n"  # 7
    "\n"  # 8
    'prefill tp="2" +rest:\n'  # 9
    "    @vllm serve {{model}} -tp {{tp}} \\\n"  # 10
    "      --port 8100 {{ rest }}\n"  # 11
    "    # a comment in the recipe\n"  # 12
    "    \n"  # 13
    "@decode-x $dp='1': prefill\n"  # 14
    '    -vllm serve {{model}} --dp {{dp}} -tp {{tp}} {{ env("X") }} {{ computed }} {{my-arg}}\n'
    'serve model="p/q":\n'  # 16
    "    vllm serve {{model}}\n"  # 17
)


def test_a_whole_justfile_as_shell_line_for_line() -> None:
    assert to_shell(JUSTFILE).split("\n") == [
        "# deploy recipes",  # a comment line is kept
        "",  # set: nothing the shell runs
        "",  # a plain assignment: known to just, not exported
        "export hf_home='/d/it'\\''s'",  # exported, "-" made "_", one single-quoted word
        "",  # a backtick value is not evaluated
        "",  # [attribute]
        "",  # alias
        "",
        # the default's assignment opens the body; +rest has no default
        "prefill() { tp='2';",
        "  vllm serve org/m -tp 2 \\",  # "@" dropped; {{model}} and {{tp}} interpolated
        "  --port 8100 ${rest}",  # a continued line keeps its leading "--"
        "  # a comment in the recipe",
        "",  # a blank body line
        # the previous recipe closes; "@" quiet recipe, "$" parameter, dependency ignored
        "}; decode-x() { dp='1';",
        # "-" dropped; prefill's tp is not in scope; a call's ")" dropped, then closed;
        # an unevaluated variable and a dashed name left to the shell
        '  vllm serve org/m --dp 1 -tp ${tp} $(just: env("X") ${computed} ${my_arg}',
        "}; serve() { model='p/q';",
        "  vllm serve p/q",  # the parameter wins over the variable of the same name
        "}",
        "",
    ]


def test_text_without_recipes_has_no_closing_brace() -> None:
    # lines outside a recipe, indented or not: none opens a function
    assert to_shell('x := "1"\n  y:\n  z := "2"\n') == "\n\n\n"
    assert to_shell("") == "\n"


def test_a_blank_line_and_a_top_level_comment_leave_the_recipe_open() -> None:
    # only a new recipe header closes the open one (kvalign's line-for-line mapping)
    text = "a:\n\n# note\n    -x --y\nb:\n"
    assert to_shell(text).split("\n") == ["a() {", "", "# note", "  x --y", "}; b() {", "}", ""]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"a\\"b\\\\c"', 'a"b\\c'),  # \" and \\ in a double-quoted string
        ('"x\\ny"', "x\ny"),  # \n: a line break
        ("'a\\nb'", "a\\nb"),  # single quotes: no escapes
        # escapes read left to right: \\ then n is a backslash and an n, not a line break
        ('"a\\\\nb"', "a\\nb"),
        ('"\\t\\r\\\\\\""', '\t\r\\"'),  # \t \r \\ \"
        ('"a\\xb"', "a\\xb"),  # no escape: kept as written
        ("  'v'  ", "v"),  # blanks around the literal
        ('""', ""),
        ('"', None),  # one quote is no literal
        ("'a\"", None),  # mismatched quotes
        ("a", None),
        ("", None),
        ("`date`", None),
        ("XaX", None),  # only a quote opens a literal
    ],
)
def test_string_literals(text: str, value: str | None) -> None:
    assert _literal(text) == value


def test_a_value_is_one_single_quoted_shell_word() -> None:
    # bash: '…' ends at the next ', so an embedded ' is '\'' (close, escaped, reopen)
    assert _quoted("it's") == "'it'\\''s'"
    assert _quoted("") == "''"


def test_an_exported_assignment_without_a_literal_is_not_exported() -> None:
    assert to_shell("export X := `date`\nexport Y := 'v'\n") == "\n" + "export Y='v'\n"


def test_a_parameter_that_is_no_identifier_is_skipped() -> None:
    # "9x" starts with a digit: no parameter; a default not quoted is not read
    assert to_shell("r 9x=\"1\" a=b c='3':\n") == "r() { c='3';\n}\n"


@pytest.mark.parametrize(
    ("file", "named"),
    [("Justfile", True), ("JUSTFILE", True), (".JustFile", True), ("m.just", True),
     ("justfile.bak", False), ("m.justx", False), ("compose.yaml", False)],
)  # fmt: skip
def test_the_reader_takes_the_names_just_looks_for(file: str, named: bool) -> None:
    assert is_justfile(file) is named
    assert Reader().matches(Source("", file, Path("."))) is named


def test_the_reader_reads_the_recipes_as_a_script() -> None:
    text = (
        'model := "org/m"\n'  # 1
        "prefill:\n"  # 2
        "    vllm serve {{model}} -tp 2\n"  # 3
        "decode:\n"  # 4
        "    vllm serve {{model}} -tp 4\n"  # 5
    )
    found = Reader().read(Source(text, "Justfile", Path(".")))
    assert (found.kind, found.source, found.launches) == ("justfile", "Justfile", 2)
    assert [(p.role, p.model, p.tp, p.location.line) for p in found.pools] == [
        ("prefill", "org/m", 2, 3),
        ("decode", "org/m", 4, 5),
    ]
    assert Reader.kind == "justfile"


def test_set_and_alias_lines_are_no_recipe_headers() -> None:
    # "set …" and "alias …" lines are ignored (module docstring), even where the text
    # after the keyword would read as a header
    assert to_shell("set a:\nalias b:\n") == "\n\n"


def test_parameter_defaults_one_assignment_each() -> None:
    # a dashed parameter is a shell name with "_"; defaults joined by a blank
    assert to_shell("r my-tp=\"2\" b='x':\n    Xy -z\n") == "r() { my_tp='2'; b='x';\n  Xy -z\n}\n"


def test_a_tab_indents_a_recipe_line() -> None:
    assert to_shell("a:\n\t@x\n") == "a() {\n  x\n}\n"


def test_the_reader_loads_config_files_from_the_justfile_folder(tmp_path: Path) -> None:
    # vLLM 0.33.0 --config: a YAML mapping of flag names (FlexibleArgumentParser)
    (tmp_path / "c.yaml").write_text("tensor-parallel-size: 4\n")
    text = "serve:\n    vllm serve org/m --config c.yaml\n"
    found = Reader().read(Source(text, "Justfile", tmp_path))
    assert [p.tp for p in found.pools] == [4]


# ---- interpolation: linear, and budgeted before it is built (issue #31) --------------------
@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("a {{x}} b {{ y }}", [(2, 7, "x"), (10, 17, " y ")]),
        ("{{a}}}", [(0, 5, "a")]),  # the first }} after the {{ ends it
        ("{{ {{x}} }}", [(0, 8, " {{x")]),  # no nesting: as just reads it, the first }}
        ("{{x", []),
        ("{{a}} {{", [(0, 5, "a")]),
        ("}} {{}}", [(3, 7, "")]),
        ("no braces", []),
    ],
)
def test_interpolations_are_found_left_to_right(
    line: str, found: list[tuple[int, int, str]]
) -> None:
    from kvalign.deploy.justfile import interpolations

    assert interpolations(line) == found


def test_the_interpolation_budget_is_checked_before_the_text_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kvalign.deploy import justfile
    from kvalign.deploy.model import Location, Problem

    monkeypatch.setattr(justfile, "MAX_INTERPOLATED", 100)
    # line 3 puts in 10 x 10 characters: exactly the budget; line 4 one more
    text = 'v := "0123456789"\nr:\n    echo ' + "{{v}}" * 10 + "\n"
    assert to_shell(text).splitlines()[2] == "  echo " + "0123456789" * 10
    with pytest.raises(justfile.InterpolationBudgetExceeded) as over:
        to_shell(text + "    echo {{v}}\n")
    assert over.value.line == 4
    found = Reader().read(Source(text + "    echo {{v}}\n", "Justfile", Path(".")))
    assert found.pools == ()
    assert found.problems == (
        Problem(
            Location("Justfile", 4),
            "justfile: interpolation budget exceeded: more than 0 MiB of interpolated text",
        ),
    )
