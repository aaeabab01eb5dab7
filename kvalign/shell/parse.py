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


def parse(text: str) -> Any:
    """Parse ``text`` (unsafe code points replaced by U+FFFD first, see :data:`_UNSAFE`)."""
    safe = _UNSAFE.sub("\ufffd", text)
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
