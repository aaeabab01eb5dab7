"""Tables that fit the terminal: never truncate a number, never fold a cell into a tower.

A section is a rich table when its fixed columns (numbers, labels, verdicts) fit whole
in the console width and every free-text column still gets :data:`MIN_TEXT_WIDTH`
characters; otherwise it is printed stacked, one block per row (``key: value`` lines that
wrap at the console width), as ``kvalign audit``'s table does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from kvalign.sanitize import clean

#: narrowest a free-text column may become before the stacked layout is used.
MIN_TEXT_WIDTH = 40


@dataclass(frozen=True)
class Column:
    """One column: ``fixed`` cells are never wrapped or truncated; others fold."""

    header: str
    fixed: bool = True
    justify: str = "left"


def _plain(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def needed_width(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    min_text_width: int = MIN_TEXT_WIDTH,
) -> int:
    """Narrowest table width (characters) that shows every fixed column whole and gives
    each free-text column :data:`MIN_TEXT_WIDTH` (rich's box: one border per column plus
    one, one space of padding each side)."""
    total = 1
    for index, column in enumerate(columns):
        if column.fixed:
            longest = max([len(column.header)] + [len(_plain(row[index])) for row in rows])
        else:
            longest = min(
                min_text_width,
                max([len(column.header)] + [len(_plain(row[index])) for row in rows]),
            )
        total += longest + 3
    return total


def section(
    title: str,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str | Text]],
    width: int | None,
    min_text_width: int = MIN_TEXT_WIDTH,
) -> RenderableType:
    """A table when it fits in ``width`` (``None``: unlimited), else one block per row;
    free-text columns fold down to ``min_text_width`` characters first."""
    if width is None or needed_width(columns, rows, min_text_width) <= width:
        # Text, never markup: a pool named "[/bold]" or "[link=…]" prints as itself
        table = Table(title=Text(clean(title)), title_justify="left")
        for column in columns:
            if column.fixed:
                table.add_column(
                    column.header,
                    no_wrap=True,
                    overflow="fold",  # never reached: the width was checked above
                    justify=column.justify,  # type: ignore[arg-type]
                )
            else:
                table.add_column(column.header, overflow="fold", min_width=min_text_width)
        for row in rows:
            table.add_row(*(cell if isinstance(cell, Text) else Text(clean(cell)) for cell in row))
        return table
    blocks: list[RenderableType] = [Text(clean(title), style="italic")]
    for row in rows:
        lines = Text()
        for index, (column, cell) in enumerate(zip(columns, row, strict=True)):
            lines.append(("" if index == 0 else "\n  ") + f"{column.header}: ")
            lines.append(cell if isinstance(cell, Text) else Text(clean(cell)))
        blocks.append(lines)
    return Group(*blocks)


class SafeConsole(Console):
    """A rich ``Console`` that escapes control characters in every piece of text it
    renders (:func:`kvalign.sanitize.clean`): an ESC/OSC sequence from a model id, pool
    name or file name never reaches the terminal or a CI log. Its own styling (colour
    codes it adds itself) is unaffected."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(clean(segment.text), segment.style)
            for segment in buffer
        )
