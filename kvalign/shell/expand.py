"""Expanding words as bash does, without running anything.

``NAME=value`` values and command words: quoting and backslashes, ``$V`` / ``${V}`` /
``${A[@]}``, ``${V:-d}`` / ``${V-d}`` / ``${V:=d}`` / ``${V:+x}`` (the default as the
script's author meant it, quotes removed), ``$(( ))`` with known integers, blank
splitting of unquoted expansions. What cannot be known is kept as written, marked
(:func:`kvalign.shell.commands.unresolved`); the one command substitution resolved is
the script's own folder (``$(dirname "$0")`` → ``.``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tree_sitter import Node

from kvalign.errors import InvalidConfig
from kvalign.numbers import try_int
from kvalign.safeio import MAX_FILE_BYTES
from kvalign.shell.commands import CLOSE, OPEN, Script, unresolved
from kvalign.shell.parse import node_text

__all__ = ["MAX_NESTING", "MAX_WORD", "NAME", "Builder", "Env", "Expander", "Value"]

_ENCODED = re.compile(f"{OPEN}(\\d+){CLOSE}")
#: syntax nesting (lists, subshells, substitutions) evaluated before kvalign gives up on a
#: part of the script (noted): far beyond real scripts, well within Python's stack.
MAX_NESTING = 100
#: characters one expansion may build (a word, an assignment's value): far beyond any real
#: argument; ``A="$A$A"`` repeated would otherwise double without bound (memory, time).
MAX_WORD = 256 * 1024
_MAX_WORDS = 8 * 1024 * 1024  # characters of all the words of one command
_MAX_ARITH = 1000  # characters of a $(( )) expression kvalign computes
NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_BLANKS = " \t\n"
#: the operators of ``${V:-word}`` and its kin
_OPERATORS = (":-", ":=", ":+", ":?", "-", "=", "+", "?")
#: ``$@`` / ``${@}`` / ``${A[@]}``: one word per item when quoted, none when empty.
_ALL_ITEMS = re.compile(r"\$(@|\{@\}|\{[A-Za-z_][A-Za-z0-9_]*\[@\]\})")
_DIRNAME = re.compile(r"\bdirname\b")
_SELF_REF = re.compile(r"\$0\b|\$\{0\}|BASH_SOURCE")
#: the one shell budget per script (docs/security.md, "Budgets"): text read (the file cap:
#: any file kvalign reads is evaluated whole), evaluation steps (statements and expansions
#: visited), characters built (new text: literal words, joined pieces, split words). A
#: variable's value is shared, never copied, where it is a whole word or value (``A=$V``,
#: ``"$V"``, an unquoted ``$V`` without blanks): it costs a step, not its length, so a
#: large value used thousands of times stays within the budget in time and memory.
MAX_SCRIPT_BYTES = MAX_FILE_BYTES
MAX_STEPS = 100_000
MAX_BUILT = 16 * 1024 * 1024
#: characters of shell syntax parsed in all (the script, then each eval / sh -c text):
#: blanks, operators, quotes and expansion marks, what tree-sitter's tree grows with
#: (200-400 bytes per node, up to a node or two per such character; a word without them is
#: one node however long): 8 MiB of `(` or `a;` is 2 GB of tree, a 7.8 MB word 8 MB.
MAX_SYNTAX = 512 * 1024
_SYNTAX = " \t\n\r;&|()<>{}[]$`\"'\\="  # (`#`, `*`, `?`, `!`, `~` runs are one node)
_DROP_SYNTAX = str.maketrans("", "", _SYNTAX)


class ShellBudgetExceeded(InvalidConfig):
    """A script over the shell budget (:data:`MAX_SCRIPT_BYTES`, :data:`MAX_STEPS`,
    :data:`MAX_BUILT`); the message names the budget, the caller prefixes the file."""


@dataclass
class Budget:
    """What one script has spent of the shell budget."""

    steps: int = 0
    built: int = 0
    syntax: int = 0

    def parse(self, text: str) -> None:
        """Charge the shell syntax characters of ``text``, about to be parsed (counted in C,
        before the parser allocates its tree).

        Raises:
            ShellBudgetExceeded: more than :data:`MAX_SYNTAX` in all.
        """
        self.syntax += len(text) - len(text.translate(_DROP_SYNTAX))
        _within(
            self.syntax,
            MAX_SYNTAX,
            f"{MAX_SYNTAX:,} characters of shell syntax (blanks, operators, quotes)",
        )

    def step(self, count: int = 1) -> None:
        """Charge ``count`` evaluation steps.

        Raises:
            ShellBudgetExceeded: more than :data:`MAX_STEPS`.
        """
        self.steps += count
        _within(
            self.steps, MAX_STEPS, f"{MAX_STEPS:,} evaluation steps (statements and expansions)"
        )

    def build(self, size: int) -> None:
        """Charge ``size`` characters of expanded text.

        Raises:
            ShellBudgetExceeded: more than :data:`MAX_BUILT`.
        """
        self.built += size
        _within(self.built, MAX_BUILT, f"{MAX_BUILT // (1024 * 1024)} MiB of expanded text")


def _within(spent: int, limit: int, what: str) -> None:
    """Raise :class:`ShellBudgetExceeded` ("more than ``what``") once ``spent`` > ``limit``."""
    if spent > limit:
        raise ShellBudgetExceeded(f"shell budget exceeded: more than {what}")


def self_dir(text: str) -> bool:
    """``$(dirname "$0")``-like text (a line with ``dirname`` then ``$0``/``${0}``/
    ``BASH_SOURCE``); linear: only the first ``dirname`` of each line is tried."""
    for line in text.split("\n"):
        found = _DIRNAME.search(line)
        if found is not None and _SELF_REF.search(line, found.end()) is not None:
            return True
    return False


Value = str | tuple[str, ...]


@dataclass
class Env:
    """One evaluation path: variables, which are exported, positional parameters."""

    vars: dict[str, Value] = field(default_factory=dict)
    exported: set[str] = field(default_factory=set)
    positional: tuple[str, ...] | None = None  # None: unknown ($1 … unresolved)
    allexport: bool = False
    branch: tuple[str, ...] = ()  # the undecided conditions taken, for messages
    #: the script's own arguments, none given (bash run with no arguments): ``$#`` is 0 and
    #: ``$@`` empty, but a bare ``$1`` … is the argument the user is to pass (unresolved,
    #: named as written); ``${1:-d}`` is ``d``.
    open_args: bool = False
    #: variables set from an argument's default in the no-argument run (``ROLE=${1:-prefill}``):
    #: known here, but a run with that argument is as real (:meth:`_Evaluator._operand`)
    from_args: frozenset[str] = frozenset()
    #: files this path sourced (``. FILE``, ``source FILE``; never read), as written
    sourced: tuple[str, ...] = ()

    def copy(self) -> Env:
        return Env(
            dict(self.vars),
            set(self.exported),
            self.positional,
            self.allexport,
            self.branch,
            self.open_args,
            self.from_args,
            self.sourced,
        )

    def scalar(self, name: str) -> str | None:
        value = self.vars.get(name)
        if isinstance(value, tuple):
            return value[0] if value else ""
        return value

    def environment(self) -> dict[str, str]:
        """The exported scalars (what a child process sees), in the order they were set
        (in time linear in the exported names when few of many variables are exported)."""
        out: dict[str, str] = {}
        if not self.allexport and len(self.exported) * 8 < len(self.vars):
            names = [n for n in self.exported if n in self.vars]
            if len(names) > 1:  # the order they were set in, as below
                order = {n: i for i, n in enumerate(self.vars) if n in self.exported}
                names.sort(key=order.__getitem__)
            return {n: _scalar(self.vars[n]) for n in names}
        for name, value in self.vars.items():
            if name in self.exported or self.allexport:
                out[name] = _scalar(value)
        return out


def _scalar(value: Value) -> str:
    """A variable's value as one string (an array's items joined with a blank)."""
    return value if isinstance(value, str) else " ".join(value)


class Builder:
    """Words being built (``current is None``: no word started)."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget
        self.words: list[str] = []
        self.current: list[str] | None = None
        self.size = 0  # characters of the current word
        self.total = 0  # characters of every word
        self.overflow = False  # a word or all of them grew too long (the rest dropped)
        self.shared = 0  # characters of shared pieces in the current word (not charged yet)

    def add(self, text: str, *, shared: bool = False) -> None:
        """Add ``text`` to the current word. ``shared``: a variable's value, kept by
        reference: it costs one character of the budget, and its length only if it is
        joined with other pieces (:meth:`end`, where the copy is made).

        Raises:
            ShellBudgetExceeded: more than :data:`MAX_BUILT` characters built.
        """
        if self.budget is not None:
            self.budget.build(1 if shared else len(text) + 1)
        if self.overflow:
            return
        self.size += len(text)
        self.total += len(text)
        if self.size > MAX_WORD or self.total > _MAX_WORDS:
            self.overflow = True
            return
        if self.current is None:
            self.current = []
        if text:  # "" only starts a word: a word of one piece is that piece, not a copy
            self.current.append(text)
            self.shared += len(text) if shared else 0

    def end(self) -> None:
        """End the current word (a word of several pieces is joined: a copy, charged)."""
        self.size = 0
        if self.current is not None:
            if len(self.current) > 1 and self.budget is not None:
                self.budget.build(self.shared)
            self.words.append("".join(self.current))
            self.current = None
        self.shared = 0

    def add_split(self, value: str, *, shared: bool = False) -> None:
        """An unquoted expansion: split on blanks (never inside an unresolved piece); a
        value without blanks is one piece, ``shared`` as :meth:`add` has it."""
        if _BLANK.search(value) is None:
            if value:
                self.add(value, shared=shared)
            return
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


_BLANK = re.compile("[ \t\n]")
_UNBLANK = re.compile("[^ \t\n]+")


def _split_blanks(value: str) -> list[str]:
    if OPEN not in value:  # no unresolved piece: the runs of non-blanks (in C)
        return _UNBLANK.findall(value)
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


def _continued(left: Node, right: Node) -> bool:
    """Whether only a line continuation (backslash, newline) separates two sibling nodes:
    bash removes it before splitting words, so they are one word."""
    parent = left.parent
    if parent is None or right.start_byte != left.end_byte + 2:
        return False
    start = parent.start_byte
    return (parent.text or b"")[left.end_byte - start : right.start_byte - start] == b"\\\n"


#: a backslash and the character it escapes: any character unquoted, only ``$ ` " \\``
#: and newline in double quotes (a line continuation, backslash-newline, is removed)
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_ESCAPED_QUOTED = re.compile(r"\\([$`\"\\\n])")


def _unescaped(found: re.Match[str]) -> str:
    return "" if found.group(1) == "\n" else found.group(1)


def _unescape(text: str, quoted: bool) -> str:
    """Backslash removal: unquoted, ``\\x`` → ``x``; in double quotes only before
    ``$ ` " \\`` and newline (left to right: ``\\\\`` is one backslash; a last lone
    backslash is kept). Linear, in C: a word of megabytes is one pass."""
    if "\\" not in text:
        return text
    return (_ESCAPED_QUOTED if quoted else _ESCAPED).sub(_unescaped, text)


#: ``$'...'`` escapes of one letter (bash's ``ansi_cstr``).
_ANSI_C_SIMPLE = {
    "a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
    "\\": 92, "'": 39, '"': 34, "?": 63,
}  # fmt: skip
_ANSI_C_DIGITS = {"x": (16, 2), "u": (16, 4), "U": (16, 8)}


def _ansi_c(body: str) -> str:
    r"""The text of ``$'body'`` as bash makes it: ``\n``, ``\t``, ``\e``, ``\\``,
    ``\'`` ..., ``\NNN`` (octal) and ``\xHH`` bytes, ``\uHHHH`` / ``\UHHHHHHHH``
    characters, ``\cX`` controls (a NUL ends the text); another backslash stays as
    written. The bytes are read as UTF-8, a byte that is not as a lone surrogate (as
    Python keeps a file name that is not UTF-8), so ``$'\xff'`` names the same file bash
    would open."""
    out = bytearray()
    i = 0
    size = len(body)
    while i < size:
        char = body[i]
        if char != "\\" or i + 1 >= size:
            out += char.encode("utf-8", "surrogateescape")
            i += 1
            continue
        kind = body[i + 1]
        if kind in _ANSI_C_SIMPLE:
            out.append(_ANSI_C_SIMPLE[kind])
            i += 2
        elif kind in "01234567":
            end = i + 1
            while end < size and end < i + 4 and body[end] in "01234567":
                end += 1
            out.append(int(body[i + 1 : end], 8) & 0xFF)
            i = end
        elif kind in _ANSI_C_DIGITS:
            base, most = _ANSI_C_DIGITS[kind]
            end = i + 2
            while end < size and end < i + 2 + most and body[end] in "0123456789abcdefABCDEF":
                end += 1
            if end == i + 2:  # no digit: kept as written
                out += body[i : i + 2].encode("utf-8", "surrogateescape")
            elif kind == "x":
                out.append(int(body[i + 2 : end], base))
            else:
                code = int(body[i + 2 : end], base)
                out += chr(min(code, 0x10FFFF)).encode("utf-8", "surrogatepass")
            i = end
        elif kind == "c" and i + 2 < size:
            out.append(ord(body[i + 2]) & 0x1F)
            i += 3
        else:
            out += body[i : i + 2].encode("utf-8", "surrogateescape")
            i += 2
    # bash builds a C string: a NUL byte ends it
    return out.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def _arith(expr: str, env: Env) -> str | None:
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
                remainder = abs(left) % abs(right)  # C remainder: the dividend's sign (bash)
                return remainder if left >= 0 else -remainder
        raise ValueError(ast.dump(node))

    try:
        return str(calc(tree))
    except (ValueError, RecursionError):
        return None


def decoded(texts: list[str], text: str) -> str:
    """``text`` with its encoded pieces (``OPEN index CLOSE``, the index into ``texts``, the
    pieces as written) back in :func:`unresolved` form."""
    if OPEN not in text:  # (a text of one-byte characters is told at once)
        return text
    return _ENCODED.sub(lambda m: unresolved(texts[int(m.group(1))]), text)


class Expander:
    """Expansion state shared by an evaluation: notes, nesting level, unresolved pieces."""

    def __init__(self, launches: Callable[[str], bool] | None = None) -> None:
        self.budget = Budget()
        self.script = Script()
        self.level = 0  # current syntax nesting (run / expand)
        # unresolved pieces are kept as OPEN index CLOSE while evaluating, so that text
        # re-parsed by eval / sh -c never splits them; decoded when a command is recorded
        self.holes: dict[str, int] = {}
        self.texts: list[str] = []
        #: whether a text not read could launch vLLM (the caller's test; ``None``: never)
        self.launches = launches
        self.source_id = 0  # which text is being evaluated (the script, an eval's text, …)
        self._checked: dict[tuple[int, int, int], bool] = {}  # launches() per part
        self.overflowed: set[int] = set()  # the holes of words too long to read

    def stop(
        self,
        line: int,
        key: tuple[int, int],
        text: Callable[[], str],
        limit: str,
        unread: str = "a vLLM launch there not read",
        noted: str = "not read",
    ) -> bool:
        """A part of the script (``text()``, ``key``: its byte range in the text being
        evaluated) that ``limit`` keeps from being read: a stop when a vLLM launch could be
        in it (:attr:`Script.stops`: "LIMIT: UNREAD"), else a note ("LIMIT: NOTED").
        Whether it could is asked once per part. Returns whether it was a stop."""
        cache = (self.source_id, *key)
        could = self._checked.get(cache)
        if could is None:
            could = self.launches is not None and self.launches(text())
            self._checked[cache] = could
        if could:
            found = (line, f"{limit}: {unread}")
            if found not in self.script.stops:
                self.script.stops.append(found)
        else:
            self.note(line, f"{limit}: {noted}")
        return could

    def note(self, line: int, text: str) -> None:
        """Add a note (once) to the script's notes."""
        if (line, text) not in self.script.notes:
            self.script.notes.append((line, text))

    def hole(self, text: str) -> str:
        """``text`` (as written) marked unresolved, in its internal encoded form."""
        text = self.plain(text)
        if text not in self.holes:
            self.holes[text] = len(self.texts)
            self.texts.append(text)
        return f"{OPEN}{self.holes[text]}{CLOSE}"

    def plain(self, text: str) -> str:
        """Encoded pieces back to their written text (no brackets)."""
        if OPEN not in text:  # (a text of one-byte characters is told at once)
            return text
        return _ENCODED.sub(lambda m: self.texts[int(m.group(1))], text)

    def decode(self, text: str) -> str:
        """Encoded pieces back to :func:`unresolved` form."""
        return decoded(self.texts, text)

    def joined_words(self, words: list[str]) -> str:
        """``words`` joined with a blank; several are copied: charged to the budget.

        Raises:
            ShellBudgetExceeded: more than :data:`MAX_BUILT` characters built.
        """
        if len(words) > 1:
            self.budget.build(sum(map(len, words)) + len(words))
        return " ".join(words)

    def _too_deep(self, node: Node) -> bool:
        if self.level < MAX_NESTING:
            return False
        self.stop(
            node.start_point[0] + 1,
            (node.start_byte, node.end_byte),
            lambda: node_text(node),
            f"nested deeper than {MAX_NESTING} levels",
        )
        return True

    # ---- expansion ----------------------------------------------------------------------
    def _too_long(self, node: Node) -> str:
        """``node`` as written, unresolved, because its expansion exceeds :data:`MAX_WORD`."""
        note = (node.start_point[0] + 1, f"expands to more than {MAX_WORD} characters: not read")
        if note not in self.script.notes:
            self.script.notes.append(note)
        hole = self.hole(node_text(node)[:200])
        self.overflowed.add(int(hole[1:-1]))  # OPEN index CLOSE
        return hole

    def limits(self, words: list[str]) -> tuple[str, ...]:
        """What kept ``words`` (encoded) from being read: ``("an argument expands to more
        than MAX_WORD characters",)`` when one holds a word too long to read, else ``()``."""
        for word in words:
            if OPEN in word and any(
                int(index) in self.overflowed for index in _ENCODED.findall(word)
            ):
                return (f"an argument expands to more than {MAX_WORD} characters",)
        return ()

    def words(self, nodes: list[Node], env: Env) -> list[str]:
        """The words ``nodes`` (a command's name and arguments) expand to; two nodes the
        grammar splits at a line continuation (``c\\<newline>d``) are one word, as in bash."""
        out = Builder(self.budget)
        before = 0
        for index, node in enumerate(nodes):
            self.expand(node, env, out, quoted=False)
            if index + 1 < len(nodes) and _continued(node, nodes[index + 1]):
                continue
            out.end()
            if out.overflow:
                del out.words[before:]
                out.words.append(self._too_long(node))
                out.overflow = False  # later nodes: still bounded by the total
            before = len(out.words)
        return out.words

    def joined(self, node: Node, env: Env) -> str:
        """The value of an assignment's right side: expanded, not split; the words of a
        ``"$@"`` / ``"${A[@]}"`` in it are joined with a blank (bash 5.2, whatever ``IFS``)."""
        out = Builder(self.budget)
        self.expand(node, env, out, quoted=True, assignment=True)
        out.end()
        if out.overflow:
            return self._too_long(node)
        return self.joined_words(out.words)

    def expand(
        self, node: Node, env: Env, out: Builder, *, quoted: bool, assignment: bool = False
    ) -> None:
        if self._too_deep(node):
            out.add(self.hole(node_text(node)))
            return
        self.budget.step()
        self.level += 1
        try:
            self._expand(node, env, out, quoted=quoted, assignment=assignment)
        finally:
            self.level -= 1

    def _expand(
        self, node: Node, env: Env, out: Builder, *, quoted: bool, assignment: bool
    ) -> None:
        kind = node.type
        if kind in (
            "word",
            "number",
            "extglob_pattern",
            "regex",
            "special_variable_name",
            "variable_name",  # a default's text the grammar splits: ${M:-meta-llama/…}
        ):
            out.add(_unescape(node_text(node), quoted=False))
        elif kind == "raw_string":
            out.add(node_text(node)[1:-1])
        elif kind == "ansi_c_string":
            out.add(_ansi_c(node_text(node)[2:-1]))
        elif kind == "string_content":
            out.add(_unescape(node_text(node), quoted=True))
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
            inner = node_text(node)
            value = "." if self_dir(inner) else self.hole(inner)
            out.add(value)
        elif kind == "arithmetic_expansion":
            inner = node_text(node)
            body = inner[3:-2] if inner.startswith("$((") else inner[2:-1]
            computed = _arith(body, env)
            out.add(computed if computed is not None else self.hole(inner))
        elif kind == "array":
            for child in node.named_children:
                self.expand(child, env, out, quoted=False)
                out.end()
        elif not node.is_named:
            out.add(node_text(node))
        else:  # process substitution, brace expansion, …: as written, unresolved
            out.add(self.hole(node_text(node)))

    def _string(self, node: Node, env: Env, out: Builder) -> None:
        named = [c for c in node.children if c.is_named]
        whole = len(named) == 1 and node_text(node) == f'"{node_text(named[0])}"'
        if not (whole and _ALL_ITEMS.fullmatch(node_text(named[0]))):
            out.add("")  # "" is a word; "$@" / "${A[@]}" of nothing is none (as in bash)
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

    def _param(self, name: str, env: Env) -> Value | None:
        if name.isdigit():
            if name == "0":
                return "$0"  # the script's name: never a vLLM setting
            if env.positional is None:
                return None
            index = try_int(name)
            if index is None:  # '²' or 5,000 digits: no such parameter
                return ""
            if index <= len(env.positional):
                return env.positional[index - 1]
            return None if env.open_args else ""
        if name in ("@", "*"):
            return None if env.positional is None else tuple(env.positional)
        if name == "#":
            return None if env.positional is None else str(len(env.positional))
        if name in ("?", "$", "!", "-"):
            return None
        return env.vars.get(name)

    def _star(self, value: Value, env: Env, written: str) -> str:
        """A quoted ``"$*"`` / ``"${A[*]}"``: the items joined into one word with the first
        character of ``IFS`` (a blank when the script never sets it, none when it is empty;
        bash 5.2, "Special Parameters"); unresolved when ``IFS`` is not known."""
        if not isinstance(value, tuple):
            return value
        separator = env.scalar("IFS")
        if separator is not None and OPEN in separator:
            return self.hole(written)
        if len(value) > 1:
            self.budget.build(sum(map(len, value)) + len(value))
        return (" " if separator is None else separator[:1]).join(value)

    def _emit(self, value: Value, out: Builder, quoted: bool, written: str) -> None:
        """A value into the words: shared, not copied, where it is a whole word."""
        if isinstance(value, tuple):
            self.budget.step(len(value))
            if not quoted:
                for item in value:
                    out.add_split(item, shared=True)
                    out.end()
                return
            for index, item in enumerate(value):
                if index:
                    out.end()
                out.add(item, shared=True)
            return
        if quoted:
            out.add(value, shared=True)
        else:
            out.add_split(value, shared=True)

    @staticmethod
    def _lead(node: Node, out: Builder) -> str:
        """The node's text without the blanks tree-sitter-bash sometimes puts at the start
        of an expansion inside a string (``"$A $B"``); the blanks are kept as text."""
        raw = node_text(node)
        written = raw.lstrip(_BLANKS)
        if len(written) < len(raw):
            out.add(raw[: len(raw) - len(written)])
        return written

    def _simple(self, node: Node, env: Env, out: Builder, quoted: bool) -> None:
        written = self._lead(node, out)
        value = self._param(written[1:], env)
        if isinstance(value, tuple) and NAME.match(written[1:]):
            value = value[0] if value else ""  # `$A` of an array: item 0 (bash 5.2)
        if quoted and value is not None and written[1:] == "*":
            value = self._star(value, env, written)
        if value is None:
            out.add(self.hole(written))
        else:
            self._emit(value, out, quoted, written)

    def _braced(self, node: Node, env: Env, out: Builder, quoted: bool) -> None:
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
                value = self._star(items, env, written) if index == "*" and quoted else items
            elif try_int(index) is not None:
                number = int(index)
                value = items[number] if number < len(items) else ""
            else:
                value = None
        # `${A}` of an array is item 0 (bash 5.2, "Arrays"); of an empty array, unset
        empty_array = value == () and index is None and NAME.match(name) is not None
        if isinstance(value, tuple) and index is None and NAME.match(name):
            value = value[0] if value else None
        if quoted and value is not None and name == "*":
            value = self._star(value, env, written)
        operator = next(
            (op for op in (":-", ":=", ":+", ":?", "-", "=", "+", "?") if rest.startswith(op)),
            None,
        )
        if rest and operator is None:
            out.add(self.hole(written))  # ${V%/*}, ${V/a/b}, ${V:0:3} …
            return
        if operator is None:
            if value is None and empty_array:
                out.add("")
            elif value is None:
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
            if env.sourced and NAME.match(name):
                self.note(
                    node.start_point[0] + 1,
                    f"{name} is not set here: its default {self.plain(default)!r} is used, but "
                    f"{', '.join(env.sourced)} (sourced, not read) may set it",
                )
            if operator.lstrip(":") == "=" and NAME.match(name):
                env.vars[name] = default
                self._emit(default, out, quoted, written)  # the value assigned, then split
            elif quoted:
                self._emit(default, out, quoted, written)
            else:
                self._default_words(node, env, out)
        elif operator.lstrip(":") == "+":
            if is_set and quoted:
                self._emit(self._default(node, env, quoted), out, quoted, written)
            elif is_set:
                self._default_words(node, env, out)
        else:  # ${V:?message}
            if is_set and value is not None:
                self._emit(value, out, quoted, written)
            else:
                out.add(self.hole(written))

    def _default_words(self, node: Node, env: Env, out: Builder) -> None:
        """The word after the operator of an unquoted ``${V:-word}`` / ``${V:+word}``, as
        words: its quoted parts kept whole, the rest split on blanks (``${U:-"a b"}`` is
        the one word ``a b``, ``${U:-a b}`` two; bash 5.2)."""
        after = False
        for child in node.children:
            if not child.is_named and node_text(child) in _OPERATORS:
                after = True
            elif after and node_text(child) != "}":
                self._split_default(child, env, out)

    def _split_default(self, node: Node, env: Env, out: Builder) -> None:
        if node.type in ("string", "raw_string", "ansi_c_string", "translated_string"):
            self.expand(node, env, out, quoted=True)
            return
        if node.type == "concatenation":
            for child in node.children:
                self._split_default(child, env, out)
            return
        inner = Builder(self.budget)
        self.expand(node, env, inner, quoted=True)
        inner.end()
        # an array's items (`${U:-${A[@]}}`) are words of their own, then split as the rest
        out.add_split(self._too_long(node) if inner.overflow else self.joined_words(inner.words))

    def _default(self, node: Node, env: Env, quoted: bool) -> str:
        """The word after the operator of ``${V:-word}``, expanded (quotes removed)."""
        after = False
        inner = Builder(self.budget)
        for child in node.children:
            if not child.is_named and node_text(child) in _OPERATORS:
                after = True
                continue
            if after and node_text(child) != "}":
                self.expand(child, env, inner, quoted=True)
        inner.end()
        if inner.overflow:
            return self._too_long(node)
        return "".join(inner.words)
