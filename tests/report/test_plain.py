"""kvalign.report.plain prints exactly what rich prints without colour, wherever it is used.

rich stays the reference: each test renders the same parts through rich (the console
``kvalign`` uses when stdout is no terminal) and through :func:`kvalign.report.plain.render`,
and wherever the latter gives an answer (it returns ``None`` where only rich can say) the
two must be the same characters. Real reports (``check`` of bundled models, ``audit`` of
the example deployments) at many widths, and generated tables with words of every length,
free-text and fixed columns, every justification, long titles and input escapes.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from kvalign.auditing import AuditRequest
from kvalign.auditing import run as run_audit
from kvalign.pd import analyze
from kvalign.report.audit import to_plain_table, to_table
from kvalign.report.layout import SafeConsole, to_rich
from kvalign.report.plain import WIDE_SAFE, Column, Grid, Line, Part, Section, Styled, render
from kvalign.report.table import check_table, check_text, matrix_table, matrix_text
from kvalign.settings import Settings
from kvalign.sources import load_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "deployments"
WIDTHS = (40, 57, 80, 100, 120, 160, 200, 250)


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


def _rich(renderable: object, width: int) -> str:
    """What ``kvalign`` prints through rich when stdout is no terminal (the console of
    kvalign.cli.output.stdout_console: given width, no soft wrap, no highlighting)."""
    buffer = io.StringIO()
    SafeConsole(file=buffer, width=width, soft_wrap=False, highlight=False).print(renderable)
    return buffer.getvalue()


def test_characters_taken_as_one_cell_are_one_cell_in_rich() -> None:
    assert all(cell_len(c) == 1 and not c.isspace() for c in WIDE_SAFE)


# ---- real reports ------------------------------------------------------------------------
CHECKS = [
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {}, [8], [1]),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"alignment": "tp-stable"}, [1, 2, 8], [1, 4]),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
     {"attention_backend": "FLASHINFER", "enable_prefix_caching": False}, [8], [1]),
    ("Qwen/Qwen3.5-397B-A17B", {}, [8], [1]),
    ("Qwen/Qwen3.5-397B-A17B", {"block_size": 2096}, [1, 2, 4, 8], [1, 2, 4, 8]),
    ("mistralai/Mamba-Codestral-7B-v0.1", {}, [1, 2], [4]),
    ("LiquidAI/LFM2-1.2B", {"gpu": "B200"}, [2], [1]),
]  # fmt: skip


@pytest.mark.parametrize(("model", "flags", "prefill", "decode"), CHECKS)
def test_check_table_is_richs(
    model: str, flags: dict[str, object], prefill: list[int], decode: list[int]
) -> None:
    report = analyze(load_model(model), Settings(**flags), prefill, decode)  # type: ignore[arg-type]
    for width in WIDTHS:
        text = check_text(report, width)
        if width in (80, 200):  # the snapshot widths: the plain renderer is the one used
            assert text is not None, width
        if text is not None:
            assert text == _rich(check_table(report, width), width), width


MATRICES = [
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {}, [1, 2, 4, 8, 16]),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"alignment": "tp-stable"}, [1, 2, 4, 8]),
    ("Qwen/Qwen3.5-397B-A17B", {"block_size": 64}, [1, 2, 4, 8]),
    ("LiquidAI/LFM2-1.2B", {}, [1, 2]),
]


@pytest.mark.parametrize(("model", "flags", "tps"), MATRICES)
def test_matrix_table_is_richs(model: str, flags: dict[str, object], tps: list[int]) -> None:
    report = analyze(load_model(model), Settings(**flags), tps, tps)  # type: ignore[arg-type]
    used = 0
    for width in WIDTHS:
        text = matrix_text(report, width)
        if text is not None:
            used += 1
            assert text == _rich(matrix_table(report, width), width), width
    assert used  # at 250 columns every grid fits unwrapped


def _audits() -> list[tuple[str, object]]:
    paths = [EXAMPLES, *sorted(p for p in EXAMPLES.iterdir() if p.is_dir())]
    return [
        (p.name, run_audit(AuditRequest(paths=(str(p),), skip_unrelated=True)).report)
        for p in paths
    ]


@pytest.mark.parametrize(("name", "report"), _audits())
@pytest.mark.parametrize("view", [{}, {"verbose": True}, {"quiet": True}])
def test_audit_table_is_richs(name: str, report: object, view: dict[str, bool]) -> None:
    used = 0
    for width in WIDTHS:
        text = to_plain_table(report, width, **view)  # type: ignore[arg-type]
        if text is not None:
            used += 1
            assert text == _rich(to_table(report, width, **view), width), width  # type: ignore[arg-type]
    assert used == len(WIDTHS)  # the examples need no fallback at any width


# ---- generated tables ---------------------------------------------------------------------
_LETTERS = "abcdefgXYZ0123456789-_./:()=,%" + "".join(sorted(WIDE_SAFE))
_word = st.text(st.sampled_from(_LETTERS), min_size=1, max_size=30)
# now and then something only rich can lay out (a tab, a wide or combining character, an
# escape the console makes visible, a header holding markup)
_odd = st.sampled_from(["\t", "漢字", "e\u0301", "\x1b[31m", "[bold]", ":smile:", "\n"])
_body = st.lists(
    st.one_of(_word, _word, _word, _word, _odd), min_size=0, max_size=14
).flatmap(
    lambda words: st.lists(st.sampled_from([" ", " ", "  "]), min_size=len(words),
                           max_size=len(words)).map(
        lambda gaps: "".join(w + g for w, g in zip(words, gaps, strict=True)).rstrip(" ")
    )
)  # fmt: skip
# now and then spaces before the first word (rich's first word carries them)
_text = st.tuples(st.sampled_from(["", "", "", " ", "   "]), _body).map("".join)
_column = st.builds(
    Column, st.one_of(_word, st.just("")), st.booleans(),
    st.sampled_from(["left", "right", "center"]),
)  # fmt: skip


@st.composite
def _section(draw: st.DrawFn) -> Section:
    columns = tuple(draw(st.lists(_column, min_size=1, max_size=6)))
    cell = st.one_of(_text, st.builds(Styled, _text, st.just("bold red")))
    rows = draw(st.lists(st.tuples(*[cell for _ in columns]), min_size=0, max_size=4))
    width = draw(st.integers(20, 220))
    title = draw(_text)
    return Section(title, columns, tuple(rows), width, draw(st.integers(4, 40)))


@st.composite
def _grid(draw: st.DrawFn) -> Grid:
    columns = tuple(draw(st.lists(_column, min_size=1, max_size=6)))
    cell = st.one_of(_text, st.builds(Styled, _text, st.just("green")))
    rows = draw(st.lists(st.tuples(*[cell for _ in columns]), min_size=0, max_size=4))
    return Grid(draw(_text), columns, tuple(rows))


@st.composite
def _parts(draw: st.DrawFn) -> tuple[list[Part], int]:
    parts: list[Part] = draw(
        st.lists(st.one_of(st.builds(Line, _text), _section(), _grid()), min_size=1, max_size=4)
    )
    return parts, draw(st.integers(20, 220))


def _check(parts: Sequence[Part], width: int) -> str | None:
    text = render(parts, width)
    if text is not None:
        assert text == _rich(to_rich(parts), width)
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_parts())
# a styled cell holding an escape: rich measures it raw (found by a longer run)
@example(([Section("", (Column("", False),), ((Styled("\x1b[31m", "bold red"),),), 20, 4)], 20))
def test_generated_parts_are_richs(case: tuple[list[Part], int]) -> None:
    parts, width = case
    _check(parts, width)


@pytest.mark.parametrize("width", [24, 40, 80, 133])
def test_a_narrow_table_folds_its_free_text_as_rich_does(width: int) -> None:
    # the free-text column is shrunk to what is left; a word longer than a line folds;
    # at 24 columns the fixed columns do not fit: one block per row
    words = "a " * 30 + "x" * 70 + " tail of the text, three more words"
    section = Section(
        "A title longer than the table itself so that it wraps inside the table width",
        (Column("Key"), Column("Why", fixed=False), Column("N", justify="right"),
         Column("Mid", justify="center")),
        (("k1", words, "12", "c"), ("key-two", "short", "3", "cc")),
        width, 4,
    )  # fmt: skip
    assert _check([section, Line(words)], width) is not None


def test_what_only_rich_can_lay_out_is_left_to_rich() -> None:
    column = (Column("H"),)
    assert render([Line("tab\there")], 80) is None
    assert render([Line("漢字")], 80) is None  # two cells each
    assert render([Line("\x1b[31m")], 80) is None  # rich measures the raw escape
    assert render([Section("t", (Column("[b]x"),), (("v",),), None)], 80) is None  # markup
    assert render([Section("t", column, (("line\nbreak",),), None)], 80) is None
    # a cell cleaned before it is measured is plain text: the escape prints as \x1b
    text = render([Section("t", column, (("a\x1bb",),), None)], 80)
    assert text is not None and "a\\x1bb" in text
    # a styled cell reaches rich as it is (rich measures the escape, the console shows it)
    assert render([Section("t", column, ((Styled("a\x1bb", "red"),),), None)], 80) is None


@pytest.mark.parametrize("text", ["ab cd", "ab cd ", "ab cde", " ab cd", "abcdef", "     ", ""])
def test_a_line_at_the_width_is_wrapped_as_rich_wraps_it(text: str) -> None:
    # the width is 5: a text of at most 5 characters is kept whole (the short cut of
    # _divide), one character more is wrapped or trimmed as rich does it
    from rich.text import Text

    from kvalign.report.plain import _wrap

    console = SafeConsole(file=io.StringIO(), width=5)
    expected = [line.plain for line in Text(text, overflow="fold").wrap(console, 5)]
    assert _wrap(text, 5) == expected


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="ab ", max_size=48), st.integers(1, 12))
@example("   aaaaaaaaaa b", 4)  # the spaces before a first word longer than the line
@example("a  aaaaaaaaa  b", 3)  # a folded word's spaces, then a word on its last piece
@example("ab ab ab", 2)  # every word exactly the width
def test_a_line_is_wrapped_as_rich_wraps_it(text: str, width: int) -> None:
    # words of every length against every width, spaces before, between and after them:
    # rich's Text.wrap (overflow "fold") is the reference
    from rich.text import Text

    from kvalign.report.plain import _wrap

    console = SafeConsole(file=io.StringIO(), width=width)
    expected = [line.plain for line in Text(text, overflow="fold").wrap(console, width)]
    assert _wrap(text, width) == expected
