"""Justfile recipes (the ``just`` command runner) that launch vLLM, read as shell.

Each recipe becomes a shell function of its name (so ``prefill:`` / ``serve-decode:``
name the role as a function name does in a script), its lines the function's body,
line for line, so that every pool keeps its Justfile line. What ``just`` does before the
shell sees a line is done here, without running anything:

* ``NAME := "value"`` / ``'value'`` (and ``export NAME := …``, also in the recipes'
  environment) and recipe parameters with a default (``serve tp="2":``) are known;
  ``{{NAME}}`` is replaced by the value, as ``just`` interpolates before the shell runs;
* ``{{NAME}}`` of a parameter without a default, or of an expression kvalign does not
  evaluate (a function call, a backtick), is left to the shell as ``${NAME}`` /
  ``$(just: EXPR)``: unresolved, reported as written;
* ``@`` / ``-`` line prefixes are dropped; ``set …``, attributes (``[private]``) and
  ``alias`` lines are ignored.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePath

from kvalign.deploy import cmdline
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, Location, Problem
from kvalign.errors import InvalidConfig
from kvalign.safeio import MAX_FILE_BYTES

KIND = "justfile"
#: file names ``just`` looks for (any case), and the ``.just`` module suffix.
NAMES = frozenset({"justfile", ".justfile"})
SUFFIX = ".just"

_ASSIGNMENT = re.compile(r"\A(export\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*:=\s*(.*)\Z")
#: a recipe header ``NAME PARAM…: DEPS``; possessive: a long line with no ``:`` is given up
#: on at once instead of backtracking through each parameter
_RECIPE = re.compile(r"\A@?([A-Za-z_][A-Za-z0-9_-]*)((?:\s++[^:\s]++)*+)\s*+:(?!=)(.*)\Z")
_PARAMETER = re.compile(r"\A[+*$]?([A-Za-z_][A-Za-z0-9_-]*)(?:=(.*))?\Z")
#: characters ``{{…}}`` interpolation may add to one Justfile (the values put in, all told):
#: the file cap (:data:`kvalign.safeio.MAX_FILE_BYTES`); a value interpolated thousands of
#: times is refused before the text is built (:class:`InterpolationBudgetExceeded`).
MAX_INTERPOLATED = MAX_FILE_BYTES
_IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_-]*\Z")
#: a double-quoted string's escape sequences (the just manual, "Strings"), read left to
#: right: ``"\\n"`` is a backslash and an ``n``, not a line break
_ESCAPE = re.compile(r'\\([nrt"\\])')
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


class InterpolationBudgetExceeded(InvalidConfig):
    """``{{…}}`` interpolation would add more than :data:`MAX_INTERPOLATED` characters.

    Attributes:
        line: the 1-based Justfile line whose interpolation went over.
    """

    def __init__(self, line: int) -> None:
        super().__init__(
            "justfile: interpolation budget exceeded: more than "
            f"{MAX_INTERPOLATED // (1024 * 1024)} MiB of interpolated text"
        )
        self.line = line


def interpolations(line: str) -> list[tuple[int, int, str]]:
    """The ``{{EXPR}}`` pieces of one line, left to right: ``(start, end, EXPR)`` with
    ``line[start:end] == "{{" + EXPR + "}}"``; each ends at the first ``}}`` after its
    ``{{``. Linear in the line: once a ``{{`` has no ``}}`` after it, no later one has."""
    found: list[tuple[int, int, str]] = []
    cursor = 0
    while True:
        start = line.find("{{", cursor)
        if start < 0:
            break
        end = line.find("}}", start + 2)
        if end < 0:
            break
        found.append((start, end + 2, line[start + 2 : end]))
        cursor = end + 2
    return found


def is_justfile(file: str) -> bool:
    """Whether ``file`` is named as ``just`` looks for it (``justfile``, ``Justfile``,
    ``.justfile``, ``*.just``)."""
    name = file.rpartition("/")[2]
    if name in ("", "."):  # a trailing "/" or "/.": the name PurePath gives
        name = PurePath(file).name
    return name.lower() in NAMES or name.endswith(SUFFIX)


def _literal(text: str) -> str | None:
    """The value of a just string literal (``"…"``, ``'…'``), else ``None``."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        body = text[1:-1]
        if text[0] == '"':
            body = _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], body)
        return body
    return None


def _quoted(value: str) -> str:
    """``value`` as one single-quoted shell word."""
    return "'" + value.replace("'", "'\\''") + "'"


def to_shell(text: str) -> str:
    """The Justfile ``text`` as a shell script with the same line numbers (see the module
    docstring).

    Raises:
        InterpolationBudgetExceeded: the ``{{…}}`` values put in would come to more than
            :data:`MAX_INTERPOLATED` characters (checked before any is built).
    """
    variables: dict[str, str] = {}
    out: list[str] = []
    recipe: dict[str, str] | None = None  # the open recipe's parameters with a default
    continued = False  # the previous recipe line ends with a backslash
    spent = 0  # characters interpolation has put in so far

    def value(expr: str, scope: dict[str, str]) -> str:
        expr = expr.strip()
        if expr in scope:
            return scope[expr]
        if _IDENTIFIER.match(expr):
            return "${" + expr.replace("-", "_") + "}"
        return "$(just: " + expr.replace(")", "") + ")"

    def interpolate(line: str, scope: dict[str, str], number: int) -> str:
        nonlocal spent
        pieces = interpolations(line)
        values = [value(expr, scope) for _, _, expr in pieces]
        spent += sum(map(len, values))  # the values are shared; counted before joining
        if spent > MAX_INTERPOLATED:
            raise InterpolationBudgetExceeded(number)
        parts: list[str] = []
        cursor = 0
        for (start, end, _), put in zip(pieces, values, strict=True):
            parts += (line[cursor:start], put)
            cursor = end
        parts.append(line[cursor:])
        return "".join(parts)

    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        indented = raw[:1] in (" ", "\t")
        if recipe is not None and indented and stripped:
            body = stripped if continued else stripped.lstrip("@-")  # quiet / no-fail prefix
            continued = stripped.endswith("\\")
            out.append("  " + interpolate(body, {**variables, **recipe}, number))
            continue
        continued = False
        if not stripped or stripped.startswith("#"):
            out.append(raw if not indented else "")
            continue
        assignment = _ASSIGNMENT.match(stripped)
        if assignment is not None and not indented:
            name = assignment.group(2)
            literal = _literal(assignment.group(3))
            if literal is not None:
                variables[name] = literal
            out.append(
                f"export {name.replace('-', '_')}={_quoted(literal)}"
                if assignment.group(1) and literal is not None
                else ""
            )
            continue
        header = _RECIPE.match(stripped)
        if header is not None and not indented and not stripped.startswith(("set ", "alias ")):
            name = header.group(1)
            parameters: dict[str, str] = {}
            prefix = "}; " if recipe is not None else ""
            assigns: list[str] = []
            for word in header.group(2).split():
                parameter = _PARAMETER.match(word)
                if parameter is None:
                    continue
                default = _literal(parameter.group(2) or "")
                if default is not None:
                    parameters[parameter.group(1)] = default
                    assigns.append(f"{parameter.group(1).replace('-', '_')}={_quoted(default)};")
            recipe = parameters
            out.append(f"{prefix}{name}() {{ {' '.join(assigns)}".rstrip())
            continue
        out.append("")  # set …, [attribute], alias …, import …: nothing the shell runs
    if recipe is not None:
        out.append("}")
    return "\n".join(out) + "\n"


class Reader:
    """Justfile recipes as a :class:`~kvalign.deploy.interface.Reader`."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """A file named ``justfile`` / ``Justfile`` / ``.justfile`` / ``*.just``."""
        return is_justfile(source.file)

    def read(self, source: Source) -> Deployment:
        """The recipes as shell (:func:`to_shell`), read by :func:`cmdline.read`; a Justfile
        over the interpolation budget is one blocking problem at its line (not evaluated)."""
        try:
            shell = to_shell(source.text)
        except InterpolationBudgetExceeded as exc:
            problem = Problem(Location(source.file, exc.line), str(exc))
            return Deployment(source=source.file, kind=KIND, problems=(problem,))
        found = cmdline.read(shell, source.file, source.load_config)
        return dataclasses.replace(found, kind=KIND)
