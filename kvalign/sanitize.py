"""Making input-derived text safe to print: terminals, CI logs, XML, Markdown.

Strings that come from input files (model ids, ``model_type``, pool names, file names)
may hold ESC/OSC sequences, other control characters, bidi overrides, lone surrogates
(file names that are not UTF-8) or rich markup. Everything kvalign prints passes through
one of these helpers: :func:`clean` for terminal text and logs, :func:`bounded` for error
lines (at most :data:`MAX_LINE_CHARS`), :func:`xml_text` for JUnit, :func:`markdown_cell`
for Markdown tables. Rich renderables are built from ``Text`` objects, never from markup
strings, so ``[link=…]`` or ``[/bold]`` in a name prints as itself.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from typing import IO, Any

#: longest line kvalign writes to stderr (a 1 MB ``model_type`` gives a short line).
MAX_LINE_CHARS = 2000

# The patterns are compiled on first use: compiling them costs a ``check`` more than all
# its arithmetic, and most text (all of it printable) never needs them.


@functools.cache
def _unsafe() -> re.Pattern[str]:
    """C0 controls but TAB and LF, DEL, C1 controls, bidi embeddings/overrides/isolates,
    lone surrogates (from file names that are not UTF-8, decoded with surrogateescape)."""
    return re.compile(
        "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
    )


@functools.cache
def _not_xml() -> re.Pattern[str]:
    """What XML 1.0 cannot hold at all (JUnit): every C0 control but TAB, LF, CR;
    surrogates; the noncharacters U+FFFE and U+FFFF."""
    return re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, *, newlines: bool = True) -> str:
    """``text`` with every control character, bidi override and lone surrogate shown as
    an escape (``\\x1b``); ``newlines=False`` also escapes LF and TAB. Never raises."""
    value = text if isinstance(text, str) else str(text)
    if not newlines:
        value = value.replace("\n", "\\n").replace("\t", " ")
    # every escaped character is one str.isprintable refuses (Cc, Cf, Cs): text it accepts
    # has nothing to escape
    if value.isprintable():
        return value
    return _unsafe().sub(_escape, value)


def bounded(text: object, limit: int = MAX_LINE_CHARS) -> str:
    """:func:`clean` on one line (whitespace runs collapsed), cut to ``limit`` characters
    with the number of characters left out."""
    line = " ".join(clean(text).split())
    if len(line) <= limit:
        return line
    return f"{line[: limit - 40]}… ({len(line) - limit + 40:,} more characters)"


def xml_text(text: object) -> str:
    """Text an XML 1.0 document can hold (JUnit), as :func:`clean` makes it (controls and
    bidi overrides escaped as ``\\xNN``/``\\uNNNN``), and the noncharacters XML forbids
    escaped too (ElementTree escapes ``<``, ``&`` and quotes itself)."""
    value = clean(text)
    if value.isprintable():  # the refused characters are Cc, Cs or Cn: none is printable
        return value
    return _not_xml().sub(_escape, value)


def markdown_cell(text: object) -> str:
    """Plain text for one Markdown table cell: controls escaped, one line (a newline
    cannot start a heading or a new row), ``|`` escaped (no new cell)."""
    return " ".join(clean(text).split()).replace("|", "\\|")


def markdown_code(text: object) -> str:
    """Text for inside a Markdown code span (file names in headings): one line, controls
    escaped, backticks replaced (a backtick would end the span)."""
    return " ".join(clean(text).split()).replace("`", "'")


class SafeStream:
    """A text stream wrapper whose ``write`` passes each line through :func:`bounded`
    (the stderr of every command: warnings and errors that quote input strings)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        """Write complete lines cleaned and bounded; keep a trailing partial line."""
        data = self._partial + text
        *lines, self._partial = data.split("\n")
        for line in lines:
            self._stream.write(bounded(line) + "\n")
        if len(self._partial) > 4 * MAX_LINE_CHARS:  # never buffer an unbounded line
            self._stream.write(bounded(self._partial) + "\n")
            self._partial = ""
        return len(text)

    def flush(self) -> None:
        """Write a pending partial line, then flush the wrapped stream."""
        if self._partial:
            self._stream.write(bounded(self._partial))
            self._partial = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stderr() -> None:
    """Route ``sys.stderr`` through :class:`SafeStream` (idempotent), and let stdout
    write what its encoding cannot hold (a file name that is not UTF-8, kept by Python
    as lone surrogates) as backslash escapes instead of failing."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if callable(reconfigure):
        with contextlib.suppress(ValueError, OSError):  # a stream that cannot change
            reconfigure(errors="backslashreplace")
    if not isinstance(sys.stderr, SafeStream):
        sys.stderr = SafeStream(sys.stderr)
