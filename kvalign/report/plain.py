"""Tables and text lines without rich: the same characters rich prints when it prints no
colour (a pipe, a CI log, ``--output``), at a fraction of rich's cost.

A report is first built as :data:`Part` items (:class:`Line`, :class:`Section`,
:class:`Grid`); then either :func:`render` lays them out here, or
:mod:`kvalign.report.layout` turns them into rich renderables (a terminal, with colour).
:func:`render` reproduces rich's layout (rich 13-15: ``Text.wrap``, ``Table``) for what
kvalign prints: lines word-wrapped at the console width, and tables in rich's default
style (heavy head box, one space of padding, title justified left) whose column widths
rich's table algorithm sets (measure each column, shrink the widest wrapping columns
until the table fits, measure again). Where rich's output would depend on what this
module does not model (a character whose width is not one cell, a tab, a newline or a
raw control character, rich markup or an emoji code, a table that still does not fit
once its wrapping columns are as narrow as rich makes them, a word rich would cut) it
returns ``None`` and the caller prints through rich. tests/report/test_plain.py checks
the two agree.

Nothing here imports rich.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import NamedTuple

from kvalign.sanitize import clean

#: narrowest a free-text column may become before the stacked layout is used.
MIN_TEXT_WIDTH = 40

#: characters besides printable ASCII that this module lays out: each is one cell wide
#: in rich's measure (tests/report/test_plain.py checks it), none is whitespace.
WIDE_SAFE = frozenset("→←↑↓×…–—≠≥≤·−⊆²")

#: the same, with printable ASCII (U+0020-U+007E): what :func:`_safe` accepts.
_SAFE_CHARS = frozenset(map(chr, range(0x20, 0x7F))) | WIDE_SAFE
#: a word and the spaces after it (the spaces before the first word belong to it); no
#: leading `` *`` in the pattern, which would make a search of a long run of spaces
#: quadratic
_WORD = re.compile(r"[^ ]+ *")
#: what rich may read as markup in a string: a tag's bracket, an emoji code (``:smile:``)
_MARKUP = re.compile(r"\[|:\S*?:")


# NamedTuples, not dataclasses: a frozen dataclass compiles six methods when its module
# loads, and this module loads on every ``check``.
class Column(NamedTuple):
    """One column: ``fixed`` cells are never wrapped or truncated; others fold."""

    header: str
    fixed: bool = True
    justify: str = "left"


class Styled(NamedTuple):
    """A cell or line with a rich style name (``"bold red"``): the style matters only for
    a terminal; :func:`render` prints the text."""

    text: str
    style: str = ""


#: a table cell: text, or text with a style.
Cell = str | Styled


class Line(NamedTuple):
    """One line of text (folded at the console width, as rich folds it)."""

    text: str
    style: str = ""


class Section(NamedTuple):
    """A titled table, or its rows stacked when it does not fit
    (:func:`kvalign.report.layout.section`)."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    width: int | None
    min_text_width: int = MIN_TEXT_WIDTH


class Grid(NamedTuple):
    """A rich ``Table`` in rich's defaults (``title_justify="left"``, each column's
    ``justify``): ``title``, headers and plain cells are rich markup (the matrix grid)."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]


#: what a report is made of.
Part = Line | Section | Grid


def _shown(cell: Cell) -> str:
    """A cell's text as :func:`kvalign.report.layout.section` hands it to rich: plain text
    cleaned of control characters first, styled text as it is (the console escapes it
    after rich has measured it, so only rich can lay that out when it holds any)."""
    return cell.text if isinstance(cell, Styled) else clean(cell)


def needed_width(
    columns: Sequence[Column],
    rows: Sequence[Sequence[object]],
    min_text_width: int = MIN_TEXT_WIDTH,
) -> int:
    """Narrowest table width (characters) that shows every fixed column whole and gives
    each free-text column ``min_text_width`` (rich's box: one border per column plus
    one, one space of padding each side). Cells are text, :class:`Styled` or anything
    with a ``plain`` text (a rich ``Text``)."""

    def plain(cell: object) -> str:
        if isinstance(cell, str):
            return cell
        if isinstance(cell, Styled):
            return cell.text
        return str(getattr(cell, "plain", cell))

    total = 1
    for index, column in enumerate(columns):
        longest = max([len(column.header)] + [len(plain(row[index])) for row in rows])
        total += (longest if column.fixed else min(min_text_width, longest)) + 3
    return total


def fits_as_table(section: Section) -> bool:
    """True when ``section`` is printed as a table (it fits its width), False when its
    rows are stacked one block each."""
    return section.width is None or (
        needed_width(section.columns, section.rows, section.min_text_width) <= section.width
    )


# ---- rich's text wrapping (rich.text.Text.wrap, rich._wrap.divide_line) ----------------------
def _safe(text: str) -> bool:
    """Only characters this module measures as rich does (one cell each, no tab/newline)."""
    return _SAFE_CHARS.issuperset(text)


def _divide(text: str, width: int) -> list[str]:
    """``text`` cut where rich's word wrap breaks it at ``width`` cells (words longer than
    a line are folded), each piece with its trailing spaces beyond ``width`` removed.

    ``text`` is :func:`_safe` (a space is its only whitespace). A word is a run of
    non-spaces with the spaces after it; the spaces before the first word belong to it.
    A word fits on a line that starts at ``line`` when its last non-space is within
    ``width`` of ``line``, so each line is found with one search instead of word by word:
    the first word that does not fit starts the next line, or is folded into pieces of
    ``width`` when it is longer than a line (the last piece starts the next line).
    """
    if len(text) <= width:  # every word fits where it is: rich breaks nothing
        return [text]
    end = len(text.rstrip(" "))  # past the last non-space
    lead = len(text) - len(text.lstrip(" "))
    breaks: list[int] = []
    line = 0  # where the current line starts
    while line + width < end:  # some non-space is past the line: a word does not fit
        limit = line + width
        if text[limit] == " ":  # the word before the limit fits; the next one does not
            start = len(text) - len(text[limit:].lstrip(" "))
        else:  # the word that holds the character at the limit does not fit
            space = text.rfind(" ", line, limit)
            start = space + 1 if space >= 0 else line
        if line == 0 and start <= lead:
            start = 0  # the first word, with the spaces before it
        stop = text.find(" ", lead if start == 0 else start)
        stop = len(text) if stop < 0 else stop  # past the word's non-spaces
        if stop - start > width:  # longer than a line: folded, spaces after it included
            after = len(text) - len(text[stop:].lstrip(" "))
            pieces = range(start, after, width)
            breaks += [piece for piece in pieces if piece]
            line = pieces[-1]
        else:
            breaks.append(start)
            line = start
    bounds = [0, *breaks, len(text)]
    out = []
    for a, b in itertools.pairwise(bounds):
        piece = text[a:b]
        if len(piece) > width:
            trailing = len(piece) - len(piece.rstrip())
            piece = piece[: len(piece) - min(trailing, len(piece) - width)]
        out.append(piece)
    return out


def _wrap(text: str, width: int, justify: str = "default", no_wrap: bool = False) -> list[str]:
    """One line of text as rich's ``Text.wrap`` lays it out in ``width`` cells (overflow
    "fold"): ``default`` keeps each line as wrapped, ``left``/``right``/``center`` pad it
    to ``width``."""
    lines = [text] if no_wrap else _divide(text, width)
    out = []
    for line in lines:
        if justify == "left":
            line = line[:width].ljust(width)
        elif justify == "right":
            line = line.rstrip()[:width]
            line = " " * (width - len(line)) + line
        elif justify == "center":
            line = line.rstrip()[:width]
            left = " " * ((width - len(line)) // 2)
            line = (left + line).ljust(width)
        out.append(line[:width])
    return out


# ---- rich's table layout (rich.table.Table._calculate_column_widths) --------------------------
def _measure(text: str, limit: int) -> tuple[int, int]:
    """``(minimum, maximum)`` width of one padded cell when ``limit`` cells are free (rich's
    ``Measurement.get`` of ``Padding(Text)``)."""
    longest_line = len(text)
    words = text.split()
    low = max(map(len, words)) if words else longest_line
    low, high = min(low, longest_line), longest_line
    low, high = min(low, limit), min(high, limit)
    if high < 1:
        low = high = 0
    if limit - 2 < 1:
        return limit, limit
    low, high = min(low + 2, limit), min(high + 2, limit)
    if high < 1:
        return 0, 0
    return min(low, high), high


def _column_range(cells: Sequence[str], limit: int, min_width: int | None) -> tuple[int, int]:
    """A column's ``(minimum, maximum)`` width, padding included, within ``limit``."""
    if limit < 1:
        return 0, 0
    ranges = [_measure(cell, limit) for cell in cells]
    low = min(max(r[0] for r in ranges), limit)
    high = min(max(r[1] for r in ranges), limit)
    if min_width is not None:
        floor = max(0, min_width + 2)
        low, high = max(low, floor), max(high, floor)
    return low, high


def _ratio_reduce(
    total: int, ratios: list[int], maximums: list[int], values: list[int]
) -> list[int]:
    """``values`` less ``total`` shared out by ``ratios``, at most ``maximums`` each, in
    whole cells rounded as rich rounds them (``rich._ratio.ratio_reduce``)."""
    ratios = [r if m else 0 for r, m in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, maximum, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            distributed = min(maximum, round(ratio * remaining / total_ratio))
            result.append(value - distributed)
            remaining -= distributed
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _collapse(widths: list[int], wrapable: list[bool], max_width: int) -> list[int]:
    """Shrink the widest wrapping columns, step by step, until the total fits (rich's
    ``Table._collapse_widths``)."""
    total = sum(widths)
    excess = total - max_width
    if not any(wrapable):
        return widths
    while total and excess > 0:
        widest = max(w for w, ok in zip(widths, wrapable, strict=True) if ok)
        second = max(w if ok and w != widest else 0 for w, ok in zip(widths, wrapable, strict=True))
        ratios = [1 if (w == widest and ok) else 0 for w, ok in zip(widths, wrapable, strict=True)]
        if not any(ratios) or not widest - second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def _table(part: Section | Grid, console_width: int) -> list[str] | None:
    """The lines of a rich table (title, box, header, rows), or ``None`` when rich would
    lay it out in a way not modelled here. A :class:`Section` is built as
    :func:`kvalign.report.layout.section` builds it (plain cells cleaned, fixed columns
    never wrapped, free-text ones folding down to ``min_text_width``); a :class:`Grid` in
    rich's defaults (title, header and cells are markup, every column may wrap, a word
    too long for its column would end in an ellipsis)."""
    grid = isinstance(part, Grid)
    columns = part.columns
    title = part.title if grid else clean(part.title)
    headers = [c.header for c in columns]
    if grid:
        body = [
            [cell.text if isinstance(cell, Styled) else cell for cell in row] for row in part.rows
        ]
        markup = [title, *headers, *(c for row in part.rows for c in row if isinstance(c, str))]
    else:
        body = [[_shown(cell) for cell in row] for row in part.rows]
        markup = headers
    if not all(_safe(t) for t in [title, *headers, *(c for row in body for c in row)]):
        return None
    if any(_MARKUP.search(text) for text in markup):
        return None
    extra = len(columns) + 1
    limit = console_width - extra
    cells = [[h, *(row[i] for row in body)] for i, h in enumerate(headers)]
    fixed = [not grid and c.fixed for c in columns]
    min_widths = [None if grid or c.fixed else part.min_text_width for c in columns]  # type: ignore[union-attr]
    ranges = [_column_range(cells[i], limit, min_widths[i]) for i in range(len(columns))]
    widths = [r[1] or 1 for r in ranges]
    if sum(widths) > limit:
        widths = _collapse(widths, [not f for f in fixed], limit)
        if sum(widths) > limit:
            return None  # rich's last resort: every column shrinks
        widths = [_column_range(cells[i], w, min_widths[i])[1] or 0 for i, w in enumerate(widths)]
    table_width = sum(widths) + extra
    if table_width > console_width or min(widths) < 3:
        return None
    if grid and any(len(word) > width - 2 for column, width in zip(cells, widths, strict=True)
                    for text in column for word in text.split()):  # fmt: skip
        return None  # rich would cut the word with an ellipsis
    rendered: list[list[list[str]]] = []  # per row, per column, the cell's lines
    for index in range(len(body) + 1):
        row = []
        for col, (column, width) in enumerate(zip(columns, widths, strict=True)):
            text = cells[col][index]
            inner = width - 2
            if fixed[col] and len(text) > inner:
                return None  # rich would fold a column kvalign keeps whole
            # layout.section justifies its fixed columns only
            justify = column.justify if grid or fixed[col] else "left"
            row.append([f" {line} " for line in _wrap(text, inner, justify, fixed[col])])
        rendered.append(row)
    lines = _wrap(title, table_width, "left") if title else []  # rich skips an empty title
    lines.append("┏" + "┳".join("━" * w for w in widths) + "┓")
    for index, row in enumerate(rendered):
        height = max(len(cell) for cell in row)
        bar = "┃" if index == 0 else "│"
        for col, cell in enumerate(row):
            blank = [" " * widths[col]] * (height - len(cell))
            row[col] = blank + cell if index == 0 else cell + blank  # header: bottom-aligned
        lines += [bar + bar.join(cell[n] for cell in row) + bar for n in range(height)]
        if index == 0:
            lines.append("┡" + "╇".join("━" * w for w in widths) + "┩")
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return lines


def _stacked(section: Section, width: int) -> list[str] | None:
    """One block per row: ``Header: value`` lines, the row's first one unindented."""
    lines = _wrap(clean(section.title), width)
    for row in section.rows:
        for index, (column, cell) in enumerate(zip(section.columns, row, strict=True)):
            text = ("" if index == 0 else "  ") + f"{column.header}: " + _shown(cell)
            if not _safe(text):
                return None
            lines += _wrap(text, width)
    return lines


def render(parts: Sequence[Part], width: int) -> str | None:
    """``parts`` as rich prints them without colour on a console ``width`` characters
    wide (every line ends with a newline), or ``None`` when only rich can say (see the
    module docstring)."""
    if width < 1:
        return None
    lines: list[str] = []
    for part in parts:
        if isinstance(part, Line):
            if not _safe(part.text):
                return None
            lines += _wrap(part.text, width)
            continue
        if isinstance(part, Grid):
            laid = _table(part, width)
        elif not _safe(clean(part.title)):
            return None
        else:
            laid = _table(part, width) if fits_as_table(part) else _stacked(part, width)
        if laid is None:
            return None
        lines += laid
    return "".join(line + "\n" for line in lines)
