"""Parsing shell text: tree-sitter-bash's tree (``tree-sitter`` + ``tree-sitter-bash``).

Quoting, nested ``$( )``, ``if``/``case``/loops, functions, redirections, heredocs and
arrays are the grammar's business; :mod:`kvalign.shell.evaluate` walks the tree.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

__all__ = ["first_error", "node_text", "parse", "same_node"]


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


#: code points tree-sitter-bash 0.25's scanner can crash on (after a ``{``; found by
#: fuzzing): planes 3-16 (mostly unassigned, tags, private use); never meaningful in a
#: deployment script.
_UNSAFE = re.compile("[\U00030000-\U0010ffff]")
#: a single-bracket test on one line (``[ … ]``, not ``[[ … ]]``), and in it a string
#: comparison operator written escaped or quoted (``\<``, ``">"``, ``'<'``): bash's
#: ``test`` compares strings with it, but tree-sitter-bash 0.25 reads no such operator
#: there and its error recovery swallows the commands that follow (found against bash 5.2).
_TEST_BRACKETS = re.compile(
    r"(^|[;&|(!]|\b(?:if|elif|while|until|then|do|else))([ \t]*)"  # in command position
    r"(\[(?=[ \t])[^\n\]]*[ \t]\])(?!\])",
    re.MULTILINE,
)
_QUOTED_ORDER = re.compile(r"(?<=[ \t])(?:\\([<>])|\"([<>])\"|'([<>])')(?=[ \t])")


def _order_operators(text: str) -> str:
    """``text`` with each escaped or quoted ``<`` / ``>`` of a ``[ … ]`` test written as a
    bare operator padded with blanks to the same length (byte offsets and lines are kept),
    which the grammar reads as a binary test."""

    def bare(found: re.Match[str]) -> str:
        operator = found.group(1) or found.group(2) or found.group(3)
        return (" " + operator).ljust(len(found.group(0)))

    return _TEST_BRACKETS.sub(
        lambda m: m.group(1) + m.group(2) + _QUOTED_ORDER.sub(bare, m.group(3)), text
    )


def parse(text: str) -> Any:
    """Parse ``text`` (unsafe code points replaced by U+FFFD first, see :data:`_UNSAFE`;
    ``[ A \\< B ]`` read as a binary test, see :data:`_TEST_BRACKETS`)."""
    safe = _order_operators(_UNSAFE.sub("\ufffd", text))
    return _parser().parse(safe.encode("utf-8", "surrogatepass"))


def node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def same_node(a: Node | None, b: Node | None) -> bool:
    """Whether two node handles are the same node (handles are not unique objects)."""
    if a is None or b is None:
        return a is b
    return (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def first_error(node: Node) -> int | None:
    """Line of the first syntax error under ``node`` (iterative: any nesting depth)."""
    current: Node | None = node
    while current is not None:
        if current.type == "ERROR" or current.is_missing:
            return current.start_point[0] + 1
        current = next((c for c in current.children if c.has_error), None)
    return None
