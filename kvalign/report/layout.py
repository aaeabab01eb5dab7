"""Tables that fit the terminal: never truncate a number, never fold a cell into a tower.

A section is a rich table when its fixed columns (numbers, labels, verdicts) fit whole
in the console width and every free-text column still gets :data:`MIN_TEXT_WIDTH`
characters; otherwise it is printed stacked, one block per row (``key: value`` lines that
wrap at the console width), as ``kvalign audit``'s table does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from kvalign.report.plain import (
    MIN_TEXT_WIDTH,
    Cell,
    Column,
    Grid,
    Line,
    Part,
    Styled,
    needed_width,
)
from kvalign.sanitize import clean

__all__ = ["MIN_TEXT_WIDTH", "Column", "SafeConsole", "needed_width", "section", "to_rich"]


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


def _rich_cell(cell: Cell | Text) -> str | Text:
    return Text(cell.text, style=cell.style) if isinstance(cell, Styled) else cell


def to_rich(parts: Sequence[Part]) -> RenderableType:
    """The rich renderable of ``parts`` (:mod:`kvalign.report.plain`): a ``Text`` per
    :class:`~kvalign.report.plain.Line`, :func:`section` per
    :class:`~kvalign.report.plain.Section`, a ``Table`` per
    :class:`~kvalign.report.plain.Grid`, in one ``Group``."""
    out: list[RenderableType] = []
    for part in parts:
        if isinstance(part, Line):
            out.append(Text(part.text, style=part.style))
        elif isinstance(part, Grid):
            grid = Table(title=part.title, title_justify="left")
            for column in part.columns:
                grid.add_column(column.header, justify=column.justify)  # type: ignore[arg-type]
            for row in part.rows:
                grid.add_row(*(_rich_cell(cell) for cell in row))
            out.append(grid)
        else:
            rows = [[_rich_cell(cell) for cell in row] for row in part.rows]
            out.append(section(part.title, part.columns, rows, part.width, part.min_text_width))
    return Group(*out)


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
