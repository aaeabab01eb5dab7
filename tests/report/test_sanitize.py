"""kvalign.sanitize: what each helper escapes, at the characters on both sides of each
range of its patterns (the ranges are written in the module; each expectation below is the
escape rule applied by hand: ``\\xNN`` below U+0100, ``\\uNNNN`` above)."""

from __future__ import annotations

import pytest

from kvalign.sanitize import bounded, clean, markdown_cell, markdown_code, xml_text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain ASCII ~!", "plain ASCII ~!"),  # U+0020-U+007E: printed as given
        ("\x1b[31mred", "\\x1b[31mred"),  # ESC, the start of a terminal sequence
        ("a\x00b", "a\\x00b"),
        ("a\x08b", "a\\x08b"),  # last C0 control before TAB
        ("a\tb\nc", "a\tb\nc"),  # TAB and LF are kept
        ("a\x0bb", "a\\x0bb"),  # VT, the first control after LF
        ("a\rb", "a\\x0db"),
        ("a\x1fb", "a\\x1fb"),
        ("a\x7fb", "a\\x7fb"),  # DEL
        ("a\x9fb", "a\\x9fb"),  # last C1 control
        ("a\xa0b", "a\xa0b"),  # NO-BREAK SPACE: printable, kept
        ("café", "café"),
        ("a\u200eb\u200fc", "a\\u200eb\\u200fc"),  # LRM, RLM
        ("a\u202ab\u202ec", "a\\u202ab\\u202ec"),  # bidi embeddings and overrides
        ("a\u2066b\u2069c", "a\\u2066b\\u2069c"),  # bidi isolates
        ("a\u2070b", "a\u2070b"),  # the first code point past the isolates
        ("a\udc80b", "a\\udc80b"),  # a lone surrogate (surrogateescape)
        (7, "7"),  # not a string: str() first
    ],
)
def test_clean_escapes_controls_bidi_and_surrogates(text: object, shown: str) -> None:
    assert clean(text) == shown


def test_clean_on_one_line_escapes_newlines_and_turns_tabs_into_spaces() -> None:
    assert clean("a\nb\tc", newlines=False) == "a\\nb c"


def test_xml_text_escapes_what_xml_cannot_hold() -> None:
    assert xml_text("ok <&>") == "ok <&>"  # ElementTree escapes these itself
    assert xml_text("a\ufffeb\uffffc") == "a\\ufffeb\\uffffc"  # noncharacters
    assert xml_text("a\ufffdb") == "a\ufffdb"  # the replacement character is allowed
    assert xml_text("\x1b") == "\\x1b"  # clean's escapes come first


def test_one_line_helpers() -> None:
    assert bounded("a \n  b\x1b") == "a b\\x1b"
    long = "x" * 3000
    assert bounded(long, limit=100) == "x" * 60 + "… (2,940 more characters)"
    assert markdown_cell("a|b\nc") == "a\\|b c"
    assert markdown_code("a`b\x07") == "a'b\\x07"
