"""A fast path for the common ``check`` and ``matrix`` command lines.

typer coerces every option through a pydantic adapter, and importing pydantic costs more
than the whole check (warm ``check`` measured at 21-26× a bare interpreter). This module
reads the command's own typer declarations (the ``Annotated`` options on its signature,
so there is still one list of options) and parses a plain command line without pydantic:
``MODEL`` and ``--name value`` / ``--name=value`` / flags, whole numbers within the
declared bounds, enum values spelled exactly. Anything else (``--help``, a value it would
have to judge, an unknown or repeated option) returns ``None`` and typer parses as
before, so every message about a bad command line is still typer's.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from enum import Enum
from types import NoneType, UnionType
from typing import Any

from kvalign.numbers import is_digits

#: commands the fast path serves.
FAST_COMMANDS = ("check", "matrix")


def _options(
    params: typing.Mapping[str, inspect.Parameter],
) -> tuple[str | None, dict[str, tuple[str, Any, Any]]]:
    """The command's argument name and ``{option spelling: (parameter, type, info)}``."""
    argument: str | None = None
    spelled: dict[str, tuple[str, Any, Any]] = {}
    for param in params.values():
        kind, info = typing.get_args(param.annotation)[:2]
        if type(info).__name__ == "ArgumentInfo":
            argument = param.name
            continue
        decls = [info.default, *info.param_decls] if isinstance(info.default, str) else []
        for decl in decls:
            for name in decl.split("/"):
                spelled[name.strip()] = (param.name, kind, info)
    return argument, spelled


def _plain_type(kind: Any) -> Any:
    """``int | None`` → ``int``; other unions are not served."""
    if isinstance(kind, UnionType) or typing.get_origin(kind) is typing.Union:
        members = [k for k in typing.get_args(kind) if k is not NoneType]
        return members[0] if len(members) == 1 else None
    return kind


def _value(kind: Any, info: Any, text: str) -> tuple[bool, Any]:
    """``(ok, value)`` for one option value; not ok = leave it to typer."""
    plain = _plain_type(kind)
    if plain is str:
        return (not text.startswith("-")), text
    if plain is int:
        if not is_digits(text) or (len(text) > 1 and text[0] == "0"):
            return False, None
        number = int(text)
        low, high = info.min, info.max
        ok = (low is None or number >= low) and (high is None or number <= high)
        return ok, number
    if isinstance(plain, type) and issubclass(plain, Enum):
        for member in plain:
            if member.value == text:
                return True, member
    return False, None


def parse(command: Callable[..., None], args: list[str]) -> dict[str, Any] | None:
    """Keyword arguments for ``command`` from ``args`` (after the command name), or
    ``None`` when typer should parse them."""
    params = inspect.signature(command, eval_str=True).parameters
    argument, spelled = _options(params)
    given: dict[str, Any] = {}
    tokens = iter(args)
    for token in tokens:
        if not token.startswith("-"):
            if argument is None or argument in given:
                return None
            given[argument] = token
            continue
        name, has_value, inline = token.partition("=")
        if name not in spelled:
            return None
        param, kind, info = spelled[name]
        if param in given:
            return None
        if _plain_type(kind) is bool:
            if has_value:
                return None
            given[param] = not name.startswith("--no-") or name == info.default.split("/")[0]
            continue
        text = inline if has_value else next(tokens, None)
        if text is None:
            return None
        ok, value = _value(kind, info, text)
        if not ok:
            return None
        given[param] = value
    if argument is not None and argument not in given:
        return None
    for param, _, _ in spelled.values():
        given.setdefault(param, params[param].default)
    return given
