"""A small POSIX-shell word splitter with parameter expansion, for deployment scripts.

Enough of bash's rules to read the ``vllm serve`` lines real scripts contain, without running
anything: single quotes (literal), double quotes (``$`` expands, ``\\"`` ``\\$`` ``\\\\``
escape, no word splitting), backslash escapes, ``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` /
``${VAR-default}``, unquoted expansions split into words on blanks as bash does
(``COMMON="--block-size 32"``; ``vllm serve m $COMMON`` gives two words, ``"$COMMON"`` one),
``#`` comments, and the command separators ``;`` ``&&`` ``||`` ``|`` ``&`` as words of their
own. Expansions kvalign cannot know (an unset variable, ``$1`` / ``$@``, ``$(command)``,
backticks) become one word-part ``$(NAME)`` (``$(@)``, ``$(command)``) so that the argument
parser (:mod:`kvalign.deploy.vllm_args`) reports them as unresolved instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kvalign.errors import InvalidSettings

__all__ = ["assignments", "shell_words"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BLANKS = " \t\n"
_OPERATORS = ("&&", "||", ";", "|", "&")
_ASSIGN_WORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


class _Words:
    """Words being built; ``None`` part = no word started yet."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.current: list[str] | None = None

    def add(self, text: str) -> None:
        if self.current is None:
            self.current = []
        self.current.append(text)

    def end(self) -> None:
        if self.current is not None:
            self.words.append("".join(self.current))
            self.current = None

    def add_split(self, value: str) -> None:
        """An unquoted expansion: split on blanks, joining the first and last pieces to the
        text around it (``a$X`` with ``X="1 2"`` gives ``a1`` ``2``)."""
        if not value:
            return
        pieces = value.split()
        if value[0] in _BLANKS:
            self.end()
        for index, piece in enumerate(pieces):
            if index:
                self.end()
            self.add(piece)
        if value[-1] in _BLANKS:
            self.end()


def _closing_brace(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            if depth == 0:
                return index
            depth -= 1
    raise InvalidSettings("cannot split command line: no closing '}' for '${'")


def _closing_paren(text: str, start: int) -> int:
    depth = 0
    quote = ""
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return index
            depth -= 1
    raise InvalidSettings("cannot split command line: no closing ')' for '$('")


def _expand(text: str, i: int, env: Mapping[str, str]) -> tuple[str, int, bool]:
    """The expansion starting at ``text[i] == '$'``: ``(value, next index, known?)``."""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if nxt == "{":
        end = _closing_brace(text, i + 2)
        body = text[i + 2 : end]
        match = _NAME.match(body)
        if match is None:
            return f"$({body})", end + 1, False
        name, rest = match.group(0), body[match.end() :]
        if rest.startswith((":-", "-")) and (name not in env or (rest[0] == ":" and not env[name])):
            default = rest[2:] if rest.startswith(":-") else rest[1:]
            return default, end + 1, True
        if name in env and (not rest or rest.startswith((":-", "-"))):
            return env[name], end + 1, True
        return f"$({name})", end + 1, False
    if nxt == "(":
        end = _closing_paren(text, i + 2)
        return f"$({text[i + 2 : end].strip()})", end + 1, False
    match = _NAME.match(text, i + 1)
    if match is not None:
        name = match.group(0)
        if name in env:
            return env[name], match.end(), True
        return f"$({name})", match.end(), False
    if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
        return f"$({nxt})", i + 2, False
    return "$", i + 1, True


def _backticks(text: str, i: int) -> tuple[str, int]:
    """A `` `command` `` substitution at ``text[i]``: kept as an unresolved ``$(command)``
    word piece, and the index after the closing backtick.

    Raises:
        InvalidSettings: no closing backtick.
    """
    end = text.find("`", i + 1)
    if end < 0:
        raise InvalidSettings("cannot split command line: no closing '`'")
    return f"$({text[i + 1 : end].strip()})", end + 1


def shell_words(text: str, env: Mapping[str, str], *, split: bool = True) -> list[str]:
    """Split one (logical) shell line into words, expanding variables from ``env``.

    ``split=False`` does not split unquoted expansions (bash's rule for the value of an
    assignment, ``A=$B``). Unknown expansions become ``$(NAME)`` (module docstring).

    Raises:
        InvalidSettings: an unterminated quote, ``${`` or ``$(``.
    """
    out = _Words()
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in _BLANKS:
            out.end()
            i += 1
        elif char == "#" and out.current is None:
            break
        elif char == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                out.add(text[i + 1])
            i += 2
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise InvalidSettings("cannot split command line: no closing quotation")
            out.add(text[i + 1 : end])
            i = end + 1
        elif char == '"':
            out.add("")
            i += 1
            while True:
                if i >= n:
                    raise InvalidSettings("cannot split command line: no closing quotation")
                char = text[i]
                if char == '"':
                    i += 1
                    break
                if char == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    if text[i + 1] != "\n":
                        out.add(text[i + 1])
                    i += 2
                elif char == "$":
                    value, i, _ = _expand(text, i, env)
                    out.add(value)
                elif char == "`":
                    value, i = _backticks(text, i)
                    out.add(value)
                else:
                    out.add(char)
                    i += 1
        elif char == "$":
            value, i, known = _expand(text, i, env)
            if split and known:
                out.add_split(value)
            else:
                out.add(value)
        elif char == "`":
            value, i = _backticks(text, i)
            out.add(value)
        elif any(text.startswith(op, i) for op in _OPERATORS):
            op = next(op for op in _OPERATORS if text.startswith(op, i))
            out.end()
            out.words.append(op)
            i += len(op)
        else:
            out.add(char)
            i += 1
    out.end()
    return out.words


def assignments(text: str, env: Mapping[str, str]) -> dict[str, str] | None:
    """``NAME=value`` / ``export NAME=value [NAME2=value2 …]`` lines → the new variables
    (values expanded with ``env``, not word-split, as bash does); ``None`` when the line is
    not only assignments (e.g. ``VAR=x vllm serve …``, a prefix to a command).

    Raises:
        InvalidSettings: as :func:`shell_words`.
    """
    stripped = text.strip()
    exported = stripped.startswith("export ")
    if not exported and _ASSIGN_WORD.match(stripped) is None:
        return None
    words = shell_words(stripped, env, split=False)
    if exported:
        words = words[1:]
    found: dict[str, str] = {}
    for word in words:
        match = _ASSIGN_WORD.match(word)
        if match is None:
            if exported:  # `export NAME` (no value): nothing new
                continue
            return None
        found[match.group(1)] = match.group(2)
    return found
