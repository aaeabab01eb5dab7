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
from kvalign.deploy.model import Deployment

KIND = "justfile"
#: file names ``just`` looks for (any case), and the ``.just`` module suffix.
NAMES = frozenset({"justfile", ".justfile"})
SUFFIX = ".just"

_ASSIGNMENT = re.compile(r"\A(export\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*:=\s*(.*)\Z")
_RECIPE = re.compile(r"\A@?([A-Za-z_][A-Za-z0-9_-]*)((?:\s+[^:\s]+)*)\s*:(?!=)(.*)\Z")
_PARAMETER = re.compile(r"\A[+*$]?([A-Za-z_][A-Za-z0-9_-]*)(?:=(.*))?\Z")
_INTERPOLATION = re.compile(r"\{\{(.*?)\}\}")
_IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_-]*\Z")
#: a double-quoted string's escape sequences (the just manual, "Strings"), read left to
#: right: ``"\\n"`` is a backslash and an ``n``, not a line break
_ESCAPE = re.compile(r'\\([nrt"\\])')
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


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
    docstring)."""
    variables: dict[str, str] = {}
    out: list[str] = []
    recipe: dict[str, str] | None = None  # the open recipe's parameters with a default
    continued = False  # the previous recipe line ends with a backslash

    def interpolate(line: str, scope: dict[str, str]) -> str:
        def value(match: re.Match[str]) -> str:
            expr = match.group(1).strip()
            if expr in scope:
                return scope[expr]
            if _IDENTIFIER.match(expr):
                return "${" + expr.replace("-", "_") + "}"
            return "$(just: " + expr.replace(")", "") + ")"

        return _INTERPOLATION.sub(value, line)

    for raw in text.splitlines():
        stripped = raw.strip()
        indented = raw[:1] in (" ", "\t")
        if recipe is not None and indented and stripped:
            body = stripped if continued else stripped.lstrip("@-")  # quiet / no-fail prefix
            continued = stripped.endswith("\\")
            out.append("  " + interpolate(body, {**variables, **recipe}))
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
        """The recipes as shell (:func:`to_shell`), read by :func:`cmdline.read`."""
        found = cmdline.read(to_shell(source.text), source.file, source.load_config)
        return dataclasses.replace(found, kind=KIND)
