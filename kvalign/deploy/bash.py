"""Evaluate a shell script far enough to know which words reach each command it runs.

Parsing is tree-sitter-bash's (``tree-sitter`` + ``tree-sitter-bash``): quoting, nested
``$( )``, ``if``/``case``/loops, functions, redirections, heredocs and arrays are the
grammar's business. This module only *evaluates* the tree, without running anything:

* Variables: ``NAME=value``, ``export`` / ``declare -x`` / ``local`` / ``readonly``,
  ``NAME+=``, arrays ``A=(…)`` / ``"${A[@]}"``, ``unset``, ``set -a``, ``set -- …``,
  ``shift``, command prefixes (``VAR=x cmd``). ``${V:-d}`` / ``${V-d}`` / ``${V:=d}`` /
  ``${V:+x}`` take the default as the script's author meant it (quotes removed);
  ``$(( ))`` with known integers is computed. Unquoted expansions are split on blanks
  like bash.
* Alternatives: both branches of an ``if`` / every ``case`` item whose condition cannot be
  decided are evaluated separately (never "last one wins"), so a command after them is
  seen once per alternative (:attr:`Command.alternative`). ``-z`` / ``-n`` tests on a
  variable the script never set count it as empty (the ``${V:-d}`` idiom); ``=`` tests on
  it are undecided. More than :data:`MAX_ALTERNATIVES` paths are merged (differing
  variables become unresolved).
* ``eval "…"`` and ``bash -c`` / ``sh -exc`` / ``-lc`` … scripts are parsed and evaluated
  in place; functions are evaluated where they are called (``$1`` … from the call), and
  once more with unknown arguments if never called.
* What cannot be known (``$1`` outside a function, an unset variable, ``$(hostname)``) is
  kept as written between :data:`OPEN` and :data:`CLOSE` (:func:`unresolved`) so that the
  argument parser reports it by its written form (``$2``, ``${EXTRA_ARGS[@]}``). The one
  command substitution kvalign does resolve is the script's own folder
  (``$(dirname "$0")``, ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)``) → ``.``.

Redirections (``> log 2>&1``) are not arguments; ``&``, ``;``, pipelines end commands.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from kvalign.errors import InvalidConfig
from kvalign.numbers import try_int

__all__ = [
    "CLOSE",
    "OPEN",
    "UNRESOLVED",
    "Command",
    "Script",
    "evaluate",
    "is_shell",
    "shell_script",
    "unresolved",
]

#: brackets around a piece kvalign cannot resolve (Unicode private-use characters).
OPEN, CLOSE = "\ue000", "\ue001"
#: one unresolved piece; group 1 is the text as written.
UNRESOLVED = re.compile(f"{OPEN}([^{OPEN}{CLOSE}]*){CLOSE}")
_ENCODED = re.compile(f"{OPEN}(\\d+){CLOSE}")
#: evaluation paths kept before differing variables are merged into unresolved ones.
MAX_ALTERNATIVES = 16
_MAX_DEPTH = 8  # eval / bash -c / function nesting
#: syntax nesting (lists, subshells, substitutions) evaluated before kvalign gives up on a
#: part of the script (noted): far beyond real scripts, well within Python's stack.
MAX_NESTING = 100
#: characters one expansion may build (a word, an assignment's value): far beyond any real
#: argument; ``A="$A$A"`` repeated would otherwise double without bound (memory, time).
MAX_WORD = 256 * 1024
#: simple commands evaluated per file (loops and calls count each time): a script with
#: more is not a deployment launcher; the rest is noted as not read (bounds the time).
MAX_COMMANDS = 20_000
_MAX_WORDS = 8 * 1024 * 1024  # characters of all the words of one command
_MAX_ARITH = 1000  # characters of a $(( )) expression kvalign computes
#: the one shell budget per script (issue 15): text read, evaluation steps (statements
#: and expansions visited), characters built (words, values, copied variables).
MAX_SCRIPT_BYTES = 1024 * 1024
MAX_STEPS = 100_000
MAX_BUILT = 16 * 1024 * 1024


class ShellBudgetExceeded(InvalidConfig):
    """A script over the shell budget (:data:`MAX_SCRIPT_BYTES`, :data:`MAX_STEPS`,
    :data:`MAX_BUILT`); the message names the budget, the caller prefixes the file."""


@dataclass
class _Budget:
    """What one script has spent of the shell budget."""

    steps: int = 0
    built: int = 0

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > MAX_STEPS:
            raise ShellBudgetExceeded(
                f"shell budget exceeded: more than {MAX_STEPS:,} evaluation steps "
                "(statements and expansions)"
            )

    def build(self, size: int) -> None:
        self.built += size
        if self.built > MAX_BUILT:
            raise ShellBudgetExceeded(
                f"shell budget exceeded: more than {MAX_BUILT // (1024 * 1024)} MiB of "
                "expanded text"
            )


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)\Z", re.DOTALL)
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
_WRAPPERS = frozenset({"exec", "nohup", "command", "time", "setsid", "sudo", "builtin"})
_BLANKS = " \t\n"
_SKIP = frozenset(
    {"file_redirect", "heredoc_redirect", "herestring_redirect", "comment", "heredoc_body"}
)
_DIRNAME = re.compile(r"\bdirname\b")
_SELF_REF = re.compile(r"\$0\b|\$\{0\}|BASH_SOURCE")


def _self_dir(text: str) -> bool:
    """``$(dirname "$0")``-like text (a line with ``dirname`` then ``$0``/``${0}``/
    ``BASH_SOURCE``); linear: only the first ``dirname`` of each line is tried."""
    for line in text.split("\n"):
        found = _DIRNAME.search(line)
        if found is not None and _SELF_REF.search(line, found.end()) is not None:
            return True
    return False


def unresolved(text: str) -> str:
    """``text`` (as written in the script) marked as a value kvalign cannot know."""
    return f"{OPEN}{text}{CLOSE}"


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


#: code points tree-sitter-bash 0.25's scanner can crash on (after a ``{``; found by
#: fuzzing): planes 3-16 (mostly unassigned, tags, private use); never meaningful in a
#: deployment script.
_UNSAFE = re.compile("[\U00030000-\U0010ffff]")


def _parse(text: str) -> Any:
    """Parse ``text`` (unsafe code points replaced by U+FFFD first, see :data:`_UNSAFE`)."""
    safe = _UNSAFE.sub("\ufffd", text)
    return _parser().parse(safe.encode("utf-8", "surrogatepass"))


Value = str | tuple[str, ...]


@dataclass
class _Env:
    """One evaluation path: variables, which are exported, positional parameters."""

    vars: dict[str, Value] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    positional: tuple[str, ...] | None = None  # None: unknown ($1 … unresolved)
    allexport: bool = False
    branch: tuple[str, ...] = ()  # the undecided conditions taken, for messages

    def copy(self) -> _Env:
        return _Env(
            dict(self.vars), set(self.exported), self.positional, self.allexport, self.branch
        )

    def scalar(self, name: str) -> str | None:
        value = self.vars.get(name)
        if isinstance(value, tuple):
            return value[0] if value else ""
        return value

    def environment(self) -> dict[str, str]:
        """The exported scalars (what a child process sees)."""
        out: dict[str, str] = {}
        for name, value in self.vars.items():
            if name in self.exported or self.allexport:
                out[name] = value if isinstance(value, str) else " ".join(value)
        return out


@dataclass(frozen=True)
class Command:
    """One simple command the script runs, after expansion.

    Attributes:
        words: argv (unresolved pieces marked, :func:`unresolved`).
        line: 1-based line in the file (the ``eval`` / ``bash -c`` line for nested scripts).
        env: what the process sees: exported variables and ``VAR=x`` prefixes.
        written: the command as written (with its redirections), for role hints.
        hints: role context, innermost first: comments just above the command, then the
            enclosing function names, ``case`` patterns, ``if`` conditions and the
            comments above those.
        site: identifies the command in the source and the function call / ``eval`` it runs
            in (``if``/``case`` alternatives and loop items share it; two calls of one
            function do not).
        alternative: the undecided ``if``/``case`` conditions on this path (``()`` when
            none).
        variables: every scalar variable on this path (to describe alternatives).
        image: for ``docker run … IMAGE ARGS`` / ``podman run``: the image (``words``
            then holds the arguments after it).
    """

    words: tuple[str, ...]
    line: int
    env: Mapping[str, str]
    written: str
    hints: tuple[str, ...]
    site: tuple[int, ...]
    alternative: tuple[str, ...] = ()
    variables: Mapping[str, str] = field(default_factory=dict)
    image: str | None = None


@dataclass
class Script:
    """What :func:`evaluate` found: the commands, and notes (parse errors, merges)."""

    commands: list[Command] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)


def is_shell(word: str) -> bool:
    """Whether ``word`` names a POSIX shell (``bash``, ``/bin/sh``, …)."""
    return word.rsplit("/", 1)[-1] in _SHELLS


def shell_script(words: list[str] | tuple[str, ...]) -> tuple[str, list[str]] | None:
    """``[sh, -exc, SCRIPT, $0, $1…]`` (options may be combined: ``-ec``, ``-lc``,
    ``-exc``; ``-o pipefail`` takes an argument) → ``(SCRIPT, [$1 …])``; ``None`` when
    ``words`` is no ``SHELL -c SCRIPT`` (after ``env`` / ``exec`` / ``nohup`` wrappers)."""
    i = 0
    while i < len(words) and not is_shell(words[i]):
        word = words[i].rsplit("/", 1)[-1]
        if word not in _WRAPPERS and word != "env" and not _ASSIGN.match(words[i]):
            return None
        i += 1
    if i >= len(words):
        return None
    i += 1
    has_c = False
    while i < len(words):
        word = words[i]
        if word in ("-o", "+o", "-O", "+O"):
            i += 2
            continue
        if word == "--":
            i += 1
            break
        if len(word) > 1 and word[0] in "-+" and not word.startswith("--"):
            has_c = has_c or (word[0] == "-" and "c" in word[1:])
            i += 1
            continue
        if word.startswith("--"):  # --login, --norc …
            i += 1
            continue
        break
    if not has_c or i >= len(words):
        return None
    return words[i], list(words[i + 2 :])


class _Builder:
    """Words being built (``current is None``: no word started)."""

    def __init__(self, budget: _Budget | None = None) -> None:
        self.budget = budget
        self.words: list[str] = []
        self.current: list[str] | None = None
        self.size = 0  # characters of the current word
        self.total = 0  # characters of every word
        self.overflow = False  # a word or all of them grew too long (the rest dropped)

    def add(self, text: str) -> None:
        if self.budget is not None:
            self.budget.build(len(text) + 1)
        if self.overflow:
            return
        self.size += len(text)
        self.total += len(text)
        if self.size > MAX_WORD or self.total > _MAX_WORDS:
            self.overflow = True
            return
        if self.current is None:
            self.current = []
        self.current.append(text)

    def end(self) -> None:
        self.size = 0
        if self.current is not None:
            self.words.append("".join(self.current))
            self.current = None

    def add_split(self, value: str) -> None:
        """An unquoted expansion: split on blanks (never inside an unresolved piece)."""
        pieces = _split_blanks(value)
        if not pieces:
            if value and value[0] in _BLANKS:
                self.end()
            return
        if value[0] in _BLANKS:
            self.end()
        for index, piece in enumerate(pieces):
            if index:
                self.end()
            self.add(piece)
        if value[-1] in _BLANKS:
            self.end()


def _split_blanks(value: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        if char == OPEN:
            depth += 1
        elif char == CLOSE:
            depth = max(0, depth - 1)
        if char in _BLANKS and depth == 0:
            if current:
                out.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        out.append("".join(current))
    return out


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _unescape(text: str, quoted: bool) -> str:
    """Backslash removal: unquoted, ``\\x`` → ``x``; in double quotes only before
    ``$ ` " \\`` and newline."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if not quoted or nxt in '$`"\\\n':
                if nxt != "\n":
                    out.append(nxt)
                i += 2
                continue
        out.append(char)
        i += 1
    return "".join(out)


def _arith(expr: str, env: _Env) -> str | None:
    """``$(( expr ))`` with integer literals, + - * / % and known integer variables."""

    def value(name: str) -> str:
        got = env.scalar(name)
        if got is None or not re.fullmatch(r"-?\d+", got.strip()):
            raise ValueError(name)
        return got.strip()

    if len(expr) > _MAX_ARITH:
        return None  # Python's parser recurses per operator: far beyond real scripts
    try:
        text = re.sub(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: value(m.group(1)), expr)
        tree = ast.parse(text.strip(), mode="eval")
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None

    def calc(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return calc(node.body)
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = calc(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp):
            left, right = calc(node.left), calc(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult) and abs(left * right) < 2**62:
                return left * right
            if isinstance(node.op, (ast.Div, ast.FloorDiv)) and right:
                quotient = abs(left) // abs(right)  # integers, truncated toward zero as in bash
                return quotient if (left < 0) == (right < 0) else -quotient
            if isinstance(node.op, ast.Mod) and right:
                return left % right
        raise ValueError(ast.dump(node))

    try:
        return str(calc(tree))
    except (ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class _Ctx:
    hints: tuple[str, ...] = ()
    line: int | None = None  # fixed line (eval / bash -c text)
    depth: int = 0
    in_function: bool = False
    site: tuple[int, ...] = ()  # the calls / evals this code runs in (function calls differ)


class _Evaluator:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.script = Script()
        self.functions: dict[str, Node] = {}
        self.called: set[str] = set()
        self.seen: set[tuple[tuple[int, ...], tuple[str, ...], tuple[tuple[str, str], ...]]] = set()
        self.level = 0  # current syntax nesting (run / expand)
        self.commands = 0  # simple commands evaluated (bounded by MAX_COMMANDS)
        self.budget = _Budget()
        # unresolved pieces are kept as OPEN index CLOSE while evaluating, so that text
        # re-parsed by eval / sh -c never splits them; decoded when a command is recorded
        self.holes: dict[str, int] = {}
        self.texts: list[str] = []

    def hole(self, text: str) -> str:
        """``text`` (as written) marked unresolved, in its internal encoded form."""
        text = self.plain(text)
        if text not in self.holes:
            self.holes[text] = len(self.texts)
            self.texts.append(text)
        return f"{OPEN}{self.holes[text]}{CLOSE}"

    def plain(self, text: str) -> str:
        """Encoded pieces back to their written text (no brackets)."""
        return _ENCODED.sub(lambda m: self.texts[int(m.group(1))], text)

    def decode(self, text: str) -> str:
        """Encoded pieces back to :func:`unresolved` form."""
        return _ENCODED.sub(lambda m: unresolved(self.texts[int(m.group(1))]), text)

    def _too_deep(self, node: Node) -> bool:
        if self.level < MAX_NESTING:
            return False
        note = (node.start_point[0] + 1, f"nested deeper than {MAX_NESTING} levels: not read")
        if note not in self.script.notes:
            self.script.notes.append(note)
        return True

    # ---- expansion ----------------------------------------------------------------------
    def _too_long(self, node: Node) -> str:
        """``node`` as written, unresolved, because its expansion exceeds :data:`MAX_WORD`."""
        note = (node.start_point[0] + 1, f"expands to more than {MAX_WORD} characters: not read")
        if note not in self.script.notes:
            self.script.notes.append(note)
        return self.hole(_text(node)[:200])

    def words(self, nodes: list[Node], env: _Env) -> list[str]:
        out = _Builder(self.budget)
        for node in nodes:
            before = len(out.words)
            self.expand(node, env, out, quoted=False)
            out.end()
            if out.overflow:
                del out.words[before:]
                out.words.append(self._too_long(node))
                out.overflow = False  # later nodes: still bounded by the total
        return out.words

    def joined(self, node: Node, env: _Env) -> str:
        """The value of an assignment's right side: expanded, not split."""
        out = _Builder(self.budget)
        self.expand(node, env, out, quoted=True, assignment=True)
        out.end()
        if out.overflow:
            return self._too_long(node)
        return "".join(out.words) if out.words else ""

    def expand(
        self, node: Node, env: _Env, out: _Builder, *, quoted: bool, assignment: bool = False
    ) -> None:
        if self._too_deep(node):
            out.add(self.hole(_text(node)))
            return
        self.budget.step()
        self.level += 1
        try:
            self._expand(node, env, out, quoted=quoted, assignment=assignment)
        finally:
            self.level -= 1

    def _expand(
        self, node: Node, env: _Env, out: _Builder, *, quoted: bool, assignment: bool
    ) -> None:
        kind = node.type
        if kind in ("word", "number", "extglob_pattern", "regex", "special_variable_name"):
            out.add(_unescape(_text(node), quoted=False))
        elif kind == "raw_string":
            out.add(_text(node)[1:-1])
        elif kind == "ansi_c_string":
            body = _text(node)[2:-1]
            out.add(body.replace("\\t", "\t").replace("\\n", "\n").replace("\\'", "'"))
        elif kind == "string_content":
            out.add(_unescape(_text(node), quoted=True))
        elif kind in ("string", "translated_string"):
            self._string(node, env, out)
        elif kind in ("concatenation", "command_name"):
            for child in node.children:
                self.expand(child, env, out, quoted=quoted, assignment=assignment)
        elif kind == "simple_expansion":
            self._simple(node, env, out, quoted=quoted or assignment)
        elif kind == "expansion":
            self._braced(node, env, out, quoted=quoted or assignment)
        elif kind == "command_substitution":
            inner = _text(node)
            value = "." if _self_dir(inner) else self.hole(inner)
            out.add(value)
        elif kind == "arithmetic_expansion":
            inner = _text(node)
            body = inner[3:-2] if inner.startswith("$((") else inner[2:-1]
            computed = _arith(body, env)
            out.add(computed if computed is not None else self.hole(inner))
        elif kind == "array":
            for child in node.named_children:
                self.expand(child, env, out, quoted=False)
                out.end()
        elif not node.is_named:
            out.add(_text(node))
        else:  # process substitution, brace expansion, …: as written, unresolved
            out.add(self.hole(_text(node)))

    def _string(self, node: Node, env: _Env, out: _Builder) -> None:
        out.add("")
        text = node.text or b""
        base = node.start_byte
        cursor = base + 1
        end = node.end_byte - 1
        for child in node.children:
            if not child.is_named:
                continue
            if child.start_byte > cursor:
                gap = text[cursor - base : child.start_byte - base].decode("utf-8", "replace")
                out.add(_unescape(gap, quoted=True))
            self.expand(child, env, out, quoted=True)
            cursor = child.end_byte
        if end > cursor:
            gap = text[cursor - base : end - base].decode("utf-8", "replace")
            out.add(_unescape(gap, quoted=True))

    def _param(self, name: str, env: _Env) -> Value | None:
        if name.isdigit():
            if name == "0":
                return "$0"  # the script's name: never a vLLM setting
            if env.positional is None:
                return None
            index = try_int(name)
            if index is None:  # '²' or 5,000 digits: no such parameter
                return ""
            return env.positional[index - 1] if index <= len(env.positional) else ""
        if name in ("@", "*"):
            return None if env.positional is None else tuple(env.positional)
        if name == "#":
            return None if env.positional is None else str(len(env.positional))
        if name in ("?", "$", "!", "-"):
            return None
        return env.vars.get(name)

    def _emit(self, value: Value, out: _Builder, quoted: bool, written: str) -> None:
        if isinstance(value, tuple):
            self.budget.step(len(value))
            if not quoted:
                for item in value:
                    out.add_split(item)
                    out.end()
                return
            for index, item in enumerate(value):
                if index:
                    out.end()
                out.add(item)
            if not value:
                out.add("")
            return
        if quoted:
            out.add(value)
        else:
            out.add_split(value)

    @staticmethod
    def _lead(node: Node, out: _Builder) -> str:
        """The node's text without the blanks tree-sitter-bash sometimes puts at the start
        of an expansion inside a string (``"$A $B"``); the blanks are kept as text."""
        raw = _text(node)
        written = raw.lstrip(_BLANKS)
        if len(written) < len(raw):
            out.add(raw[: len(raw) - len(written)])
        return written

    def _simple(self, node: Node, env: _Env, out: _Builder, quoted: bool) -> None:
        written = self._lead(node, out)
        value = self._param(written[1:], env)
        if value is None:
            out.add(self.hole(written))
        else:
            self._emit(value, out, quoted, written)

    def _braced(self, node: Node, env: _Env, out: _Builder, quoted: bool) -> None:
        written = self._lead(node, out)
        body = written[2:-1]
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*|\d+|[@*#?$!-])(\[([^\]]*)\])?", body)
        if match is None or (body.startswith("#") and len(body) > 1 and body != "#"):
            out.add(self.hole(written))
            return
        name, index = match.group(1), match.group(3)
        rest = body[match.end() :]
        value = self._param(name, env)
        if index is not None and value is not None:
            items = value if isinstance(value, tuple) else (value,)
            if index in ("@", "*"):
                value = items
            elif try_int(index) is not None:
                number = int(index)
                value = items[number] if number < len(items) else ""
            else:
                value = None
        operator = next(
            (op for op in (":-", ":=", ":+", ":?", "-", "=", "+", "?") if rest.startswith(op)),
            None,
        )
        if rest and operator is None:
            out.add(self.hole(written))  # ${V%/*}, ${V/a/b}, ${V:0:3} …
            return
        if operator is None:
            if value is None:
                out.add(self.hole(written))
            else:
                self._emit(value, out, quoted, written)
            return
        is_set = value is not None and not (
            operator.startswith(":") and (value == "" or value == ())
        )
        unknown = value is None and (name.isdigit() or name in "@*#?$!-") and len(name) == 1
        if unknown and not name.isdigit():
            out.add(self.hole(written))
            return
        if unknown and env.positional is None:
            out.add(self.hole(written))
            return
        if operator.lstrip(":") in ("-", "="):
            if is_set and value is not None:
                self._emit(value, out, quoted, written)
                return
            default = self._default(node, env, quoted)
            if operator.lstrip(":") == "=" and _NAME.match(name):
                env.vars[name] = default
            self._emit(default, out, quoted, written)
        elif operator.lstrip(":") == "+":
            if is_set:
                self._emit(self._default(node, env, quoted), out, quoted, written)
        else:  # ${V:?message}
            if is_set and value is not None:
                self._emit(value, out, quoted, written)
            else:
                out.add(self.hole(written))

    def _default(self, node: Node, env: _Env, quoted: bool) -> str:
        """The word after the operator of ``${V:-word}``, expanded (quotes removed)."""
        after = False
        inner = _Builder(self.budget)
        for child in node.children:
            if not child.is_named and _text(child) in (":-", ":=", ":+", ":?", "-", "=", "+", "?"):
                after = True
                continue
            if after and _text(child) != "}":
                self.expand(child, env, inner, quoted=True)
        inner.end()
        if inner.overflow:
            return self._too_long(node)
        return "".join(inner.words)

    # ---- statements ---------------------------------------------------------------------
    def run(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        if not envs or self.commands > MAX_COMMANDS or self._too_deep(node):
            return envs
        self.budget.step(len(envs))
        self.level += 1
        try:
            return self._run(node, envs, ctx)
        finally:
            self.level -= 1

    def _run(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        kind = node.type
        if kind in ("program", "compound_statement", "do_group"):
            for child in node.named_children:
                envs = self.run(child, envs, ctx)
                if self.commands > MAX_COMMANDS:
                    break
            return envs
        if kind == "subshell":
            copies = [e.copy() for e in envs]
            for child in node.named_children:
                copies = self.run(child, copies, ctx)
            return envs
        if kind in ("redirected_statement", "negated_command"):
            body = node.child_by_field_name("body") or (
                node.named_children[0] if node.named_children else None
            )
            if body is not None and body.type not in _SKIP:
                envs = self.run(body, envs, ctx)
            return envs
        if kind == "pipeline":
            for child in node.named_children:
                self.run(child, [e.copy() for e in envs], ctx)
            return envs
        if kind == "list":
            return self._list(node, envs, ctx)
        if kind == "variable_assignment":
            for env in envs:
                self._assign(node, env)
            return envs
        if kind == "variable_assignments":
            for child in node.named_children:
                envs = self.run(child, envs, ctx)
            return envs
        if kind == "declaration_command":
            return self._declare(node, envs)
        if kind == "unset_command":
            for env in envs:
                for child in node.named_children:
                    env.vars.pop(_text(child), None)
            return envs
        if kind == "if_statement":
            return self._if(node, envs, ctx)
        if kind == "case_statement":
            return self._case(node, envs, ctx)
        if kind in ("for_statement", "c_style_for_statement", "while_statement"):
            return self._loop(node, envs, ctx)
        if kind == "function_definition":
            name_node = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name_node is not None and body is not None:
                self.functions[_text(name_node)] = body
            return envs
        if kind == "command":
            return self._command(node, envs, ctx)
        if kind == "ERROR":
            line = node.start_point[0] + 1
            self.script.notes.append((ctx.line or line, "shell syntax not understood here"))
            return envs
        return envs  # test_command, comments, …

    def _assign(self, node: Node, env: _Env, *, export: bool = False) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            return
        name = _text(name_node)
        if name_node.type == "subscript":
            inner = name_node.child_by_field_name("name")
            name = _text(inner) if inner is not None else name
            env.vars[name] = self.hole("${" + _text(name_node) + "}")
            return
        append = any(not c.is_named and _text(c) == "+=" for c in node.children)
        value: Value
        if value_node is None:
            value = ""
        elif value_node.type == "array":
            out = _Builder(self.budget)
            self.expand(value_node, env, out, quoted=False)
            out.end()
            value = tuple(out.words) if not out.overflow else self._too_long(value_node)
        else:
            value = self.joined(value_node, env)
        if append:
            old = env.vars.get(name, "")
            if isinstance(old, tuple) or isinstance(value, tuple):
                left = old if isinstance(old, tuple) else ((old,) if old else ())
                right = value if isinstance(value, tuple) else (value,)
                value = left + right
            else:
                value = old + value
            if (len(value) if isinstance(value, str) else sum(map(len, value))) > MAX_WORD:
                value = self._too_long(node)
        env.vars[name] = value
        if export:
            env.exported.add(name)

    def _declare(self, node: Node, envs: list[_Env]) -> list[_Env]:
        keyword = _text(node.children[0]) if node.children else ""
        flags = [_text(c) for c in node.named_children if c.type == "word" and _text(c)[:1] == "-"]
        export = keyword == "export" or any("x" in f for f in flags)
        for env in envs:
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(child, env, export=export)
                elif (
                    export and child.type in ("variable_name", "word") and _NAME.match(_text(child))
                ):
                    env.exported.add(_text(child))
        return envs

    def _list(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        children = node.children
        left, right = node.named_children[0], node.named_children[-1]
        operator = next((_text(c) for c in children if not c.is_named), "&&")
        envs = self.run(left, envs, ctx)
        out: list[_Env] = []
        for env in envs:
            decided = self._condition(left, env)
            if operator == "||":
                decided = None if decided is None else not decided
                if decided is None and left.type not in ("test_command",) and not _is_test(left):
                    decided = False  # `cmd || exit 1`: the command is taken to succeed
            elif decided is None and not _is_test(left):
                decided = True  # `cd x && vllm serve …`
            if decided is True:
                out += self.run(right, [env], ctx)
            elif decided is False:
                out.append(env)
            else:
                out += [*self.run(right, [env.copy()], ctx), env]
        return self._cap(out, node)

    def _condition(self, node: Node, env: _Env) -> bool | None:
        """Whether a condition holds on this path (``None``: cannot tell, also past
        :data:`MAX_NESTING` levels: ``a && b && …`` nests one level per operator)."""
        if self.level >= MAX_NESTING:
            return None
        self.level += 1
        try:
            return self._condition_at(node, env)
        finally:
            self.level -= 1

    def _condition_at(self, node: Node, env: _Env) -> bool | None:
        if node.type == "test_command":
            exprs = node.named_children
            return self._expr(exprs[0], env) if len(exprs) == 1 else None
        if node.type == "negated_command" and node.named_children:
            inner = self._condition(node.named_children[0], env)
            return None if inner is None else not inner
        if node.type == "list" and len(node.named_children) == 2:  # [ a ] && [ b ]
            operator = next((_text(c) for c in node.children if not c.is_named), "")
            p, q = (self._condition(c, env) for c in node.named_children)
            if operator == "&&":
                return False if False in (p, q) else (None if None in (p, q) else True)
            if operator == "||":
                return True if True in (p, q) else (None if None in (p, q) else False)
            return None
        if node.type == "command":
            name = node.child_by_field_name("name")
            if name is not None and _text(name) == "test":
                args = [c for c in node.children_by_field_name("argument")]
                return self._test_words(args, env)
            if name is not None and _text(name) in ("true", ":"):
                return True
            if name is not None and _text(name) == "false":
                return False
        return None

    def _operand(self, node: Node, env: _Env, unset_empty: bool) -> str | None:
        if node.type in ("simple_expansion", "expansion") or (
            node.type == "string"
            and len(node.named_children) == 1
            and node.named_children[0].type in ("simple_expansion", "expansion")
        ):
            inner = node if node.type != "string" else node.named_children[0]
            written = _text(inner)
            name = written[1:].strip("{}")
            if _NAME.match(name) and name not in env.vars:
                return "" if unset_empty else None
        value = self.joined(node, env)
        return None if OPEN in value else value

    def _expr(self, node: Node, env: _Env) -> bool | None:
        """A ``[ … ]`` / ``[[ … ]]`` expression's truth (``None``: cannot tell, also past
        :data:`MAX_NESTING` levels)."""
        if self.level >= MAX_NESTING:
            return None
        self.level += 1
        try:
            return self._expr_at(node, env)
        finally:
            self.level -= 1

    def _expr_at(self, node: Node, env: _Env) -> bool | None:
        if node.type == "parenthesized_expression" and node.named_children:
            return self._expr(node.named_children[0], env)
        if node.type == "unary_expression":
            operator = node.child_by_field_name("operator")
            operands = [c for c in node.named_children if c.type != "test_operator"]
            op = _text(operator) if operator is not None else ""
            if op == "!" or (not op and _text(node).startswith("!")):
                inner = self._expr(operands[0], env) if operands else None
                return None if inner is None else not inner
            if op in ("-z", "-n") and operands:
                value = self._operand(operands[0], env, unset_empty=True)
                if value is None:
                    return None
                return (value == "") if op == "-z" else (value != "")
            return None
        if node.type == "binary_expression":
            left = node.child_by_field_name("left")
            right = node.child_by_field_name("right")
            operator = node.child_by_field_name("operator")
            if left is None or right is None or operator is None:
                return None
            op = _text(operator)
            if op in ("&&", "||", "-a", "-o"):
                p, q = self._expr(left, env), self._expr(right, env)
                if op in ("&&", "-a"):
                    return False if False in (p, q) else (None if None in (p, q) else True)
                return True if True in (p, q) else (None if None in (p, q) else False)
            a = self._operand(left, env, unset_empty=False)
            b = self._operand(right, env, unset_empty=False)
            if a is None or b is None:
                return None
            return _compare(a, op, b)
        if node.type in ("string", "word", "simple_expansion", "expansion"):
            value = self._operand(node, env, unset_empty=True)
            return None if value is None else value != ""
        return None

    def _test_words(self, args: list[Node], env: _Env) -> bool | None:
        if len(args) == 2 and _text(args[0]) in ("-z", "-n"):
            value = self._operand(args[1], env, unset_empty=True)
            if value is None:
                return None
            return (value == "") if _text(args[0]) == "-z" else (value != "")
        if len(args) == 3:
            a = self._operand(args[0], env, unset_empty=False)
            b = self._operand(args[2], env, unset_empty=False)
            if a is None or b is None:
                return None
            return _compare(a, _text(args[1]), b)
        return None

    def _if(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        conditions = node.children_by_field_name("condition")
        condition = next((c for c in conditions if c.is_named), None)
        clauses: list[tuple[Node | None, list[Node], str]] = []
        body: list[Node] = []
        header = f"if {_text(condition)}" if condition is not None else "if"
        for child in node.named_children:
            if (condition is not None and _same(child, condition)) or child.type == "comment":
                continue
            if child.type in ("elif_clause", "else_clause"):
                continue
            body.append(child)
        clauses.append((condition, body, header))
        for child in node.named_children:
            if child.type == "elif_clause":
                parts = [c for c in child.named_children if c.type != "comment"]
                cond = parts[0] if parts else None
                clauses.append((cond, parts[1:], f"elif {_text(cond) if cond else ''}"))
            elif child.type == "else_clause":
                parts = [c for c in child.named_children if c.type != "comment"]
                clauses.append((None, parts, "else"))
        has_else = clauses[-1][0] is None and len(clauses) > 1
        return self._branches(node, envs, ctx, clauses, has_else)

    def _branches(
        self,
        node: Node,
        envs: list[_Env],
        ctx: _Ctx,
        clauses: list[tuple[Node | None, list[Node], str]],
        exhaustive: bool,
        matcher: Any = None,
    ) -> list[_Env]:
        out: list[_Env] = []
        merged = False
        hint_above = self._comments_above(node.start_point[0] + 1)
        for env in envs:
            remaining = [env]
            for cond, statements, header in clauses:
                if not remaining:
                    break
                taken: list[_Env] = []
                rest: list[_Env] = []
                for path in remaining:
                    if matcher is not None:
                        decided = matcher(cond, path)
                    elif cond is None:
                        decided = True
                    else:
                        self.run(cond, [path.copy()], ctx)
                        decided = self._condition(cond, path)
                    if decided is None:
                        branch = path.copy()
                        branch.branch = (*branch.branch, header)
                        taken.append(branch)
                        if cond is not None and len(path.branch) < MAX_ALTERNATIVES:
                            path.branch = (*path.branch, f"not {header}")
                        rest.append(path)
                    elif decided:
                        taken.append(path)
                    else:
                        rest.append(path)
                inner = dataclasses.replace(ctx, hints=(header, *hint_above, *ctx.hints))
                for statement in statements:
                    taken = self.run(statement, taken, inner)
                out += taken
                if len(out) > MAX_ALTERNATIVES:  # merge as we go: a 10 000-item case
                    out, merged = self._cap(out, node), True
                remaining = rest
            if not exhaustive:
                out += remaining
        return self._cap(out, node, force=merged)

    def _case(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        value_node = node.child_by_field_name("value")
        clauses: list[tuple[Node | None, list[Node], str]] = []
        exhaustive = False
        for item in node.named_children:
            if item.type != "case_item":
                continue
            patterns = item.children_by_field_name("value")
            texts = [_text(p) for p in patterns]
            if "*" in texts:
                exhaustive = True
            body = [
                c
                for c in item.named_children
                if not any(_same(c, p) for p in patterns) and c.type != "comment"
            ]
            clauses.append((item, body, f"case {' | '.join(texts)})"))

        def matcher(item: Node | None, env: _Env) -> bool | None:
            if item is None or value_node is None:
                return None
            subject = self._operand(value_node, env, unset_empty=False)
            patterns = item.children_by_field_name("value")
            if subject is None:
                return (
                    True
                    if any(_text(p) == "*" for p in patterns)
                    and len(patterns) == 1
                    and _same(item, clauses[-1][0])
                    else None
                )
            for pattern in patterns:
                wanted = self.joined(pattern, env)
                if OPEN in wanted:
                    return None
                if fnmatchcase(subject, wanted):
                    return True
            return False

        return self._branches(node, envs, ctx, clauses, exhaustive, matcher)

    def _loop(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        body = node.child_by_field_name("body")
        if body is None:
            return envs
        header = _text(node).split("\n", 1)[0][:120]
        inner = dataclasses.replace(
            ctx, hints=(header, *self._comments_above(node.start_point[0] + 1), *ctx.hints)
        )
        if node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            out: list[_Env] = []
            for env in envs:
                items = self.words(values, env) if values else None
                if variable is None:
                    out += self.run(body, [env], inner)
                    continue
                name = _text(variable)
                if items is None or any(OPEN in i for i in items) or len(items) > 8 or not items:
                    env.vars[name] = self.hole(f"${name}")
                    out += self.run(body, [env], inner)
                    continue
                paths = [env]
                for item in items:
                    for path in paths:
                        path.vars[name] = item
                    paths = self.run(body, paths, inner)
                out += paths
            return self._cap(out, node)
        return self.run(body, envs, inner)

    def _comments_above(self, line: int) -> tuple[str, ...]:
        """The comment block just above ``line`` (1-based), nearest first."""
        found: list[str] = []
        index = line - 2
        blanks = 0
        while index >= 0:
            text = self.lines[index].strip()
            if text.startswith("#") and not text.startswith("#!"):
                found.append(text)
                blanks = 0
            elif not text and blanks == 0 and not found:
                blanks += 1
            else:
                break
            index -= 1
        return tuple(found)

    def _command(self, node: Node, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        self.commands += len(envs)
        if self.commands > MAX_COMMANDS:
            note = (
                node.start_point[0] + 1,
                f"more than {MAX_COMMANDS} commands: the rest not read",
            )
            if not any(n[1] == note[1] for n in self.script.notes):
                self.script.notes.append(note)
            return envs
        name_node = node.child_by_field_name("name")
        prefixes = [c for c in node.named_children if c.type == "variable_assignment"]
        if name_node is None:
            for env in envs:
                for prefix in prefixes:
                    self._assign(prefix, env)
            return envs
        arguments = [
            c
            for c in node.children
            if (c.is_named or _text(c) == "$")
            and not _same(c, name_node)
            and c.type not in _SKIP
            and c.type != "variable_assignment"
        ]
        line = ctx.line or node.start_point[0] + 1
        out: list[_Env] = []
        for env in envs:
            local = env.copy()
            extra: dict[str, str] = {}
            for prefix in prefixes:
                self._assign(prefix, local, export=True)
                key = prefix.child_by_field_name("name")
                if key is not None:
                    value = local.vars.get(_text(key), "")
                    extra[_text(key)] = value if isinstance(value, str) else " ".join(value)
            words = self.words([name_node, *arguments], local)
            out += self._dispatch(node, words, env, extra, line, ctx)
        return self._cap(out, node)

    def _dispatch(
        self,
        node: Node,
        words: list[str],
        env: _Env,
        extra: dict[str, str],
        line: int,
        ctx: _Ctx,
    ) -> list[_Env]:
        if not words:
            return [env]
        name = words[0]
        if name in ("export", "declare", "typeset", "local", "readonly"):
            export = name == "export" or any(w.startswith("-") and "x" in w for w in words[1:])
            for word in words[1:]:
                match = _ASSIGN.match(word)
                if match:
                    env.vars[match.group(1)] = match.group(3)
                    if export:
                        env.exported.add(match.group(1))
                elif _NAME.match(word) and export:
                    env.exported.add(word)
            return [env]
        if name == "set":
            if "-a" in words[1:] or any(w.startswith("-") and "a" in w[1:] for w in words[1:2]):
                env.allexport = True
            if "--" in words:
                env.positional = tuple(words[words.index("--") + 1 :])
            return [env]
        if name == "shift":
            given = try_int(words[1]) if len(words) > 1 else None
            count = 1 if given is None else given
            if env.positional is not None:
                env.positional = env.positional[count:]
            return [env]
        if name in ("exit",):
            return []
        if name == "read":
            for word in words[1:]:
                if _NAME.match(word):
                    env.vars[word] = self.hole(f"${word}")
            return [env]
        if name == "eval" and ctx.depth < _MAX_DEPTH:
            text = " ".join(words[1:])
            return self.source(text, [env], self._nested(node, line, ctx, "eval"))
        if name in self.functions and ctx.depth < _MAX_DEPTH:
            self.called.add(name)
            saved = env.positional
            env.positional = tuple(words[1:])
            inner = _Ctx(
                (self.plain(_text(node)), f"function {name}", *ctx.hints),
                ctx.line, ctx.depth + 1, True, (*ctx.site, node.start_byte),
            )  # fmt: skip
            result = self.run(self.functions[name], [env], inner)
            for path in result:
                path.positional = saved
            return result
        script = shell_script(words)
        if script is not None and ctx.depth < _MAX_DEPTH:
            child = _Env(
                {k: v for k, v in env.vars.items() if k in env.exported or env.allexport},
                set(env.exported),
                tuple(script[1]),
                False,
                env.branch,
            )
            child.vars.update(extra)
            child.exported.update(extra)
            self.source(script[0], [child], self._nested(node, line, ctx, "sh -c"))
            return [env]
        self._record(node, words, env, extra, line, ctx)
        return [env]

    def _nested(self, node: Node, line: int, ctx: _Ctx, what: str) -> _Ctx:
        return _Ctx(
            (self.plain(_text(node)), *self._comments_above(node.start_point[0] + 1), *ctx.hints),
            line, ctx.depth + 1, ctx.in_function, (*ctx.site, node.start_byte),
        )  # fmt: skip

    def _record(
        self, node: Node, words: list[str], env: _Env, extra: dict[str, str], line: int, ctx: _Ctx
    ) -> None:
        environment = {k: self.decode(v) for k, v in env.environment().items()}
        environment.update({k: self.decode(v) for k, v in extra.items()})
        words = [self.decode(w) for w in words]
        image: str | None = None
        rest = words
        container = _container_image(words)
        if container is not None:
            image, rest = container
        key = (
            (*ctx.site, node.start_byte, node.end_byte)
            if ctx.line is None
            else (*ctx.site, line, node.start_byte),
            tuple(rest),
            tuple(sorted(environment.items())),
        )
        if key in self.seen:
            return
        self.seen.add(key)
        own_line = node.start_point[0] + 1
        hints = (*self._comments_above(own_line), *ctx.hints) if ctx.line is None else ctx.hints
        written = self.plain(
            _text(
                node.parent
                if node.parent is not None and node.parent.type == "redirected_statement"
                else node
            )
        )
        hints = tuple(self.plain(h) for h in hints)
        variables = {
            k: self.decode(v if isinstance(v, str) else " ".join(v)) for k, v in env.vars.items()
        }
        self.script.commands.append(
            Command(
                words=tuple(rest),
                line=line,
                env=environment,
                written=written,
                hints=hints,
                site=key[0],
                alternative=env.branch,
                variables=variables,
                image=image,
            )
        )

    def source(self, text: str, envs: list[_Env], ctx: _Ctx) -> list[_Env]:
        tree = _parse(text)
        saved = self.lines
        if ctx.line is not None:
            self.lines = text.splitlines()
        try:
            return self.run(tree.root_node, envs, ctx)
        finally:
            self.lines = saved

    def _cap(self, envs: list[_Env], node: Node, force: bool = False) -> list[_Env]:
        """More than :data:`MAX_ALTERNATIVES` paths (or ``force``: some already were) →
        one path whose differing variables are unresolved (noted)."""
        if len(envs) <= 1 or (len(envs) <= MAX_ALTERNATIVES and not force):
            return envs
        merged = envs[0].copy()
        names = set().union(*(e.vars for e in envs))
        for name in names:
            values = {repr(e.vars.get(name)) for e in envs}
            if len(values) > 1:
                merged.vars[name] = self.hole(f"${name}")
        merged.branch = ()
        note = (
            node.start_point[0] + 1,
            f"more than {MAX_ALTERNATIVES} if/case alternatives: variables that differ "
            "between them are left unresolved",
        )
        if note not in self.script.notes:
            self.script.notes.append(note)
        return [merged]


def _same(a: Node | None, b: Node | None) -> bool:
    """Whether two node handles are the same node (handles are not unique objects)."""
    if a is None or b is None:
        return a is b
    return (a.start_byte, a.end_byte, a.type) == (b.start_byte, b.end_byte, b.type)


def _is_test(node: Node) -> bool:
    while node.type == "negated_command" and node.named_children:  # iterative: ! ! ! …
        node = node.named_children[0]
    if node.type == "test_command":
        return True
    if node.type == "command":
        name = node.child_by_field_name("name")
        return name is not None and _text(name) in ("test", "true", "false", ":")
    return False


def _compare(a: str, op: str, b: str) -> bool | None:
    if op in ("=", "=="):
        return fnmatchcase(a, b) if op == "==" else a == b
    if op == "!=":
        return a != b
    if op in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        x, y = try_int(a.strip(), signed=True), try_int(b.strip(), signed=True)
        if x is None or y is None:
            return None
        return {
            "-eq": x == y, "-ne": x != y, "-lt": x < y,
            "-gt": x > y, "-le": x <= y, "-ge": x >= y,
        }[op]  # fmt: skip
    return None


_DOCKER_VALUE_OPTIONS = frozenset(
    {"-e", "--env", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--ipc",
     "--network", "--net", "--shm-size", "-w", "--workdir", "--env-file", "--runtime",
     "-u", "--user", "--entrypoint", "--device", "--mount", "--label", "-l", "--ulimit",
     "--cap-add", "--security-opt", "--platform", "--memory", "-m", "--cpus", "--pull",
     "--restart", "--hostname", "-h", "--add-host", "--log-driver", "--pid", "--uts"}
)  # fmt: skip


def _container_image(words: list[str]) -> tuple[str, list[str]] | None:
    """``docker run [options] IMAGE ARGS…`` (also ``podman``, ``nerdctl``) →
    ``(IMAGE, ARGS)``; the ``--entrypoint`` is put before ARGS when given."""
    if len(words) < 3 or words[0].rsplit("/", 1)[-1] not in ("docker", "podman", "nerdctl"):
        return None
    if words[1] not in ("run", "create"):
        return None
    entrypoint: list[str] = []
    i = 2
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-"):
            break
        flag, eq, value = word.partition("=")
        if flag == "--entrypoint":
            entrypoint = [value] if eq else ([words[i + 1]] if i + 1 < len(words) else [])
        if not eq and flag in _DOCKER_VALUE_OPTIONS:
            i += 2
        else:
            i += 1
    if i >= len(words):
        return None
    return words[i], entrypoint + list(words[i + 1 :])


def evaluate(
    text: str,
    env: Mapping[str, str] | None = None,
    positional: list[str] | tuple[str, ...] | None = None,
) -> Script:
    """Evaluate a whole script (see the module docstring).

    Args:
        text: the script.
        env: variables already set (a container's ``env``): exported, known.
        positional: ``$1`` … (``sh -c SCRIPT $0 $1 …``); ``None``: unknown.

    Returns:
        A :class:`Script`; never raises for bad shell (tree-sitter recovers; the parts it
        cannot read are noted).

    Raises:
        ShellBudgetExceeded: the script is over the shell budget (text longer than
            :data:`MAX_SCRIPT_BYTES`, more than :data:`MAX_STEPS` steps, more than
            :data:`MAX_BUILT` characters expanded); the message names the budget.
    """
    if len(text) > MAX_SCRIPT_BYTES:
        raise ShellBudgetExceeded(
            f"shell budget exceeded: script longer than {MAX_SCRIPT_BYTES // 1024} KiB"
        )
    evaluator = _Evaluator(text.splitlines())
    start = _Env(
        dict(env or {}), set(env or {}), tuple(positional) if positional is not None else None
    )
    tree = _parse(text)
    envs = evaluator.run(tree.root_node, [start], _Ctx())
    final = envs or [start]
    for name, body in list(evaluator.functions.items()):
        if name not in evaluator.called:
            evaluator.called.add(name)
            for path in final:
                path.positional = None
            evaluator.run(
                body, [e.copy() for e in final], _Ctx((f"function {name}",), None, 1, True)
            )
    if tree.root_node.has_error:
        first = _first_error(tree.root_node)
        if first is not None and all(n[0] != first for n in evaluator.script.notes):
            evaluator.script.notes.append((first, "shell syntax not understood here"))
    return evaluator.script


def _first_error(node: Node) -> int | None:
    """Line of the first syntax error under ``node`` (iterative: any nesting depth)."""
    current: Node | None = node
    while current is not None:
        if current.type == "ERROR" or current.is_missing:
            return current.start_point[0] + 1
        current = next((c for c in current.children if c.has_error), None)
    return None


def shown(text: str) -> str:
    """``text`` for people: unresolved pieces as written."""
    return UNRESOLVED.sub(lambda m: m.group(1), text)
