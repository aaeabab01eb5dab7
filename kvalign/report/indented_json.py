"""``json.dumps(value, indent=2)``, byte for byte, at a fraction of its cost.

The standard library's encoder runs in C only without ``indent``; with it, every value
goes through a chain of Python generators (an audit of 10,000 files writes about 4
million values). :func:`dumps_indented` walks the containers in Python and lets the C
encoder write each container whose items are all scalars (or empty containers) in one
call, with ``",\\n" + indentation`` as its item separator, which is the text the
indented encoder writes between them. Anything it does not expect (a key that is not a
string, a type other than ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` and
``None``, a container nested in itself) is left to ``json.dumps``, which writes or
raises as it always did.
"""

from __future__ import annotations

import json
import json.encoder
from typing import Any

__all__ = ["dumps_indented"]

#: CPython's C encoder (``json.encoder`` uses it whenever ``indent`` is None), ``None``
#: where there is none (then everything is left to ``json.dumps``).
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_encode_str: Any = json.encoder.encode_basestring_ascii

_INDENT = 2
_MAX_DEPTH = 200  # deeper data is left to json.dumps (kvalign's reports nest < 10)


class _Unexpected(Exception):
    """Data :func:`dumps_indented` leaves to ``json.dumps``."""


def _float_text(value: float) -> str:
    """``json``'s text for a float (``allow_nan``: ``NaN``, ``Infinity``, ``-Infinity``)."""
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _scalar_text(value: Any) -> str:
    """The text of a scalar, as ``json.dumps`` writes it."""
    kind = value.__class__
    if kind is str:
        return str(_encode_str(value))
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return _float_text(value)
    raise _Unexpected


_SCALARS = frozenset({str, int, float, bool, type(None)})


def dumps_indented(value: Any) -> str:
    """``json.dumps(value, indent=2)`` (ASCII, keys in insertion order), computed faster
    for plain data; the same text for any data.

    Raises:
        TypeError, ValueError, RecursionError: what ``json.dumps`` raises for data it
            cannot write.
    """
    if _c_make_encoder is None:  # pragma: no cover
        return json.dumps(value, indent=_INDENT)
    try:
        if value.__class__ in _SCALARS:
            return _scalar_text(value)
        return _Writer().text(value)
    except (_Unexpected, RecursionError, TypeError, ValueError):
        return json.dumps(value, indent=_INDENT)


def _default(value: Any) -> Any:
    """The C encoder's ``default``: a type :func:`dumps_indented` does not write."""
    raise _Unexpected


class _Writer:
    """One document's text, as a list of pieces; a C encoder per indentation level."""

    def __init__(self) -> None:
        self._encoders: dict[int, Any] = {}
        self._parts: list[str] = []
        self._open: set[int] = set()  # ids of the containers being written (cycles)

    def _encoder(self, level: int) -> Any:
        """The C encoder whose item separator is a newline and ``level`` indentations."""
        encoder = self._encoders.get(level)
        if encoder is None:
            encoder = _c_make_encoder(
                None, _default, _encode_str, None, ": ", ",\n" + " " * (_INDENT * level),
                False, False, True,
            )  # fmt: skip
            self._encoders[level] = encoder
        return encoder

    def text(self, value: Any) -> str:
        """The text of a ``dict`` or ``list``."""
        self._write(value, 0)
        return "".join(self._parts)

    def _write(self, value: Any, level: int) -> None:
        """Append the text of ``value`` (a container) that starts at indentation ``level``."""
        out = self._parts
        kind = value.__class__
        if kind is dict:
            items: Any = value.values()
        elif kind is list:
            items = value
        else:
            raise _Unexpected
        if not value:
            out.append("{}" if kind is dict else "[]")
            return
        scalars = _SCALARS
        inner = level + 1
        pad = "\n" + " " * (_INDENT * inner)
        close = "\n" + " " * (_INDENT * level) + ("}" if kind is dict else "]")
        # every item a scalar (or an empty container, written "{}" / "[]" as json.dumps
        # writes it): one call of the C encoder
        for item in items:
            if item.__class__ not in scalars and item:
                break
        else:
            encoders = self._encoders
            encoder = encoders[inner] if inner in encoders else self._encoder(inner)
            text = "".join(encoder(value, 0))
            out.append(text[0] + pad + text[1:-1] + close)
            return
        if level >= _MAX_DEPTH or id(value) in self._open:
            raise _Unexpected
        self._open.add(id(value))
        scalar = _scalar_text
        separator = "," + pad
        first = len(out) + 1  # where the first item's separator goes: no comma there
        if kind is dict:
            out.append("{")
            for key, item in value.items():
                if key.__class__ is not str:
                    raise _Unexpected
                out.append(separator)
                out.append(_encode_str(key))
                out.append(": ")
                if item.__class__ in scalars:
                    out.append(scalar(item))
                else:
                    self._write(item, inner)
        else:
            out.append("[")
            for item in value:
                out.append(separator)
                if item.__class__ in scalars:
                    out.append(scalar(item))
                else:
                    self._write(item, inner)
        out[first] = pad
        out.append(close)
        self._open.discard(id(value))
