"""The one validation layer for whole numbers read from text (docs/security.md).

Python's ``int()`` accepts more than a user means (``'²'`` passes ``str.isdigit()`` and
then fails ``int()``; ``'٣'`` parses as 3; ``'1_000'`` and ``' 7 '`` parse too) and raises
``ValueError`` on more than 4,300 digits. Every integer kvalign takes from text (command
lines, shell words, YAML/ENV strings, cache entries) goes through :func:`parse_int`:
ASCII digits only, at most :data:`MAX_DIGITS` of them, one error message shape:
``WHAT: 'TEXT' is not an integer (PROBLEM)``.
"""

from __future__ import annotations

from kvalign.errors import InvalidSettings

#: most digits accepted in one integer (10**18 is far above any size, count or version).
MAX_DIGITS = 18
_ASCII_DIGITS = frozenset("0123456789")
#: how much of the offending text a message quotes.
_QUOTE_CHARS = 40


def quoted(value: object) -> str:
    """``repr`` of ``value``, cut to 40 characters (error messages quote input values)."""
    shown = repr(value)
    return shown if len(shown) <= _QUOTE_CHARS else shown[:_QUOTE_CHARS] + "…"


def is_digits(text: str, max_digits: int = MAX_DIGITS) -> bool:
    """Whether ``text`` is 1 to ``max_digits`` ASCII digits (``0-9`` only)."""
    return 0 < len(text) <= max_digits and _ASCII_DIGITS.issuperset(text)


def int_problem(
    text: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    signed: bool = False,
    max_digits: int = MAX_DIGITS,
) -> str | None:
    """Why ``text`` is not an acceptable whole number, or ``None`` when it is."""
    body = text[1:] if signed and text[:1] in ("-", "+") else text
    if not body:
        return "empty"
    if not _ASCII_DIGITS.issuperset(body):
        return "ASCII digits 0-9 only"
    if len(body) > max_digits:
        return f"more than {max_digits} digits"
    value = int(text)
    if minimum is not None and value < minimum:
        return f"must be at least {minimum}"
    if maximum is not None and value > maximum:
        return f"must be at most {maximum}"
    return None


def parse_int(
    text: str,
    what: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    signed: bool = False,
    max_digits: int = MAX_DIGITS,
    error: type[Exception] = InvalidSettings,
) -> int:
    """``text`` as an int: ASCII digits (a leading sign only when ``signed``), at most
    ``max_digits`` digits, within ``minimum``..``maximum`` when given.

    Raises:
        ``error`` (default :class:`~kvalign.errors.InvalidSettings`): the one message
            shape ``WHAT: 'TEXT' is not an integer (PROBLEM)``.
    """
    problem = int_problem(
        text, minimum=minimum, maximum=maximum, signed=signed, max_digits=max_digits
    )
    if problem is not None:
        raise error(f"{what}: {quoted(text)} is not an integer ({problem})")
    return int(text)


def try_int(text: str, *, signed: bool = False, max_digits: int = MAX_DIGITS) -> int | None:
    """``text`` as an int, or ``None`` when :func:`parse_int` would refuse it."""
    if int_problem(text, signed=signed, max_digits=max_digits) is not None:
        return None
    return int(text)


def columns(
    value: str | None,
    default: int = 200,
    minimum: int = 80,
    maximum: int = 10_000,
    narrowest: int = 40,
) -> int:
    """Output width from ``COLUMNS``: ``default`` when unset, not a number (empty,
    ``abc``) or not positive (``0``, ``-5``: no terminal is that wide); a width under
    ``narrowest`` (``1``, ``10``: no real terminal either) is taken as ``minimum``, so it
    never splits the verdict line (every headline fits 80 columns); otherwise at most
    ``maximum``."""
    number = try_int((value or "").strip(), signed=True)
    if number is None or number <= 0:
        return default
    if number < narrowest:
        return minimum
    return min(maximum, number)
