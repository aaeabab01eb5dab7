"""Evaluating a parsed script: which assignments reach which command, without running it.

* Variables: ``NAME=value``, ``export`` / ``declare -x`` / ``local`` / ``readonly``,
  ``NAME+=``, arrays ``A=(…)`` / ``"${A[@]}"``, ``unset``, ``set -a``, ``set -- …``,
  ``shift``, command prefixes (``VAR=x cmd``); words are expanded by
  :mod:`kvalign.shell.expand`.
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
  kept as written, marked (:func:`kvalign.shell.commands.unresolved`), so that the
  argument parser reports it by its written form (``$2``, ``${EXTRA_ARGS[@]}``).

Redirections (``> log 2>&1``) are not arguments; ``&``, ``;``, pipelines end commands.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from tree_sitter import Node

from kvalign.numbers import try_int
from kvalign.shell.commands import (
    ASSIGN,
    OPEN,
    Command,
    Script,
    is_shell,
    remote_script,
    session_script,
    shell_script,
)
from kvalign.shell.expand import (
    MAX_NESTING,
    MAX_SCRIPT_BYTES,
    MAX_WORD,
    NAME,
    Builder,
    Env,
    Expander,
    ShellBudgetExceeded,
    Value,
    decoded,
)
from kvalign.shell.parse import first_error, node_text, parse, same_node

__all__ = ["MAX_ALTERNATIVES", "MAX_COMMANDS", "ContainerSplit", "LaunchTest", "evaluate"]

#: evaluation paths kept before differing variables are merged into unresolved ones.
MAX_ALTERNATIVES = 16
_MAX_DEPTH = 8  # eval / bash -c / function nesting
#: an argument with a default: ``${1:-prefill}``, ``"${2-decode}"``, ``${1:=x}``
_ARG_DEFAULT = re.compile(r'"?\$\{[1-9]:?[-=]')
#: a signed integer written unquoted in a test (``-2``)
_SIGNED = re.compile(r"[-+][0-9]+")
#: a P/D role in a value (:meth:`_Evaluator._operand`)
_ROLE_WORD = re.compile(r"prefill|decode|producer|consumer", re.IGNORECASE)
#: a command substitution run for its launch (:meth:`_Evaluator._substituted`)
_LAUNCH_TEXT = re.compile(r"\bvllm\s+serve\b|-m\s+(?:vllm\.entrypoints|dynamo\.vllm)\b")
#: simple commands evaluated per file (loops and calls count each time): a script with
#: more is not a deployment launcher; the rest is noted as not read (bounds the time).
MAX_COMMANDS = 20_000
_SKIP = frozenset(
    {"file_redirect", "heredoc_redirect", "herestring_redirect", "comment", "heredoc_body"}
)
#: ``docker run … IMAGE ARGS`` → ``(IMAGE, ARGS)`` (``None``: not a container launch);
#: given by the caller, which knows container runtimes (:mod:`kvalign.deploy.cmdline`).
ContainerSplit = Callable[[list[str]], "tuple[str, list[str]] | None"]
#: whether a text could launch vLLM (``vllm serve``, a vLLM image, …): given by the caller
#: (:mod:`kvalign.deploy.cmdline`), asked of a part a limit keeps from being read
#: (:attr:`Script.stops`)
LaunchTest = Callable[[str], bool]


@dataclass(frozen=True)
class _Ctx:
    hints: tuple[str, ...] = ()
    line: int | None = None  # fixed line (eval / bash -c text)
    depth: int = 0
    in_function: bool = False
    site: tuple[int, ...] = ()  # the calls / evals this code runs in (function calls differ)


class _Evaluator(Expander):
    def __init__(
        self,
        lines: list[str],
        container: ContainerSplit | None = None,
        launches: LaunchTest | None = None,
        text: str = "",
    ) -> None:
        super().__init__(launches)
        self.text = text  # the whole script (what a stop of MAX_COMMANDS leaves unread)
        self.lines = lines
        self.container = container
        self.functions: dict[str, Node] = {}
        self.called: set[str] = set()
        self.seen: set[tuple[tuple[int, ...], tuple[str, ...], tuple[tuple[str, str], ...]]] = set()
        self.commands = 0  # simple commands evaluated (bounded by MAX_COMMANDS)
        self.active: list[str] = []  # the functions being run, outermost first
        self.sources = 0  # texts parsed so far (each eval / sh -c text is one more)

    def _too_nested(self, node: Node, line: int, kind: str, text: str) -> bool:
        """``kind`` (``eval``, ``sh -c``, a function, …) at :data:`_MAX_DEPTH` levels of
        eval / sh -c / function nesting is not entered: a stop when ``text`` (what it
        would run) could launch vLLM (:meth:`stop`); nothing otherwise (bash would go on,
        a recursive function forever). Returns whether it was a stop."""
        if self.launches is None or not self.launches(text):
            return False
        self.stop(
            line,
            (node.start_byte, node.end_byte),
            lambda: text,
            f"{kind} nested deeper than {_MAX_DEPTH} levels",
        )
        return True

    def run(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
        if not envs or self.commands > MAX_COMMANDS or self._too_deep(node):
            return envs
        self.budget.step(len(envs))
        self.level += 1
        try:
            return self._run(node, envs, ctx)
        finally:
            self.level -= 1

    def _run(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
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
                script = self._heredoc_script(node, body)
                if script is not None and ctx.depth < _MAX_DEPTH:
                    return self._run_heredoc(node, body, script, envs, ctx)
                line = ctx.line or node.start_point[0] + 1
                if script is not None and self._too_nested(node, line, "here-document script",
                                                           node_text(script)):  # fmt: skip
                    return envs
                envs = self.run(body, envs, ctx)
            return envs
        if kind == "pipeline":
            for child in node.named_children:
                self.run(child, [e.copy() for e in envs], ctx)
            return envs
        if kind == "list":
            return self._list(node, envs, ctx)
        if kind in ("variable_assignment", "declaration_command", "command"):
            self._substituted(node, envs, ctx)
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
                    env.vars.pop(node_text(child), None)
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
                self.functions[node_text(name_node)] = body
            return envs
        if kind == "command":
            return self._command(node, envs, ctx)
        if kind == "ERROR":
            line = node.start_point[0] + 1
            self.script.notes.append((ctx.line or line, "shell syntax not understood here"))
            return envs
        return envs  # test_command, comments, …

    def _assign(self, node: Node, env: Env, *, export: bool = False) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None:
            return
        name = node_text(name_node)
        if name_node.type == "subscript":
            inner = name_node.child_by_field_name("name")
            name = node_text(inner) if inner is not None else name
            env.vars[name] = self.hole("${" + node_text(name_node) + "}")
            return
        append = any(not c.is_named and node_text(c) == "+=" for c in node.children)
        value: Value
        if value_node is None:
            value = ""
        elif value_node.type == "array":
            out = Builder(self.budget)
            self.expand(value_node, env, out, quoted=False)
            out.end()
            value = tuple(out.words) if not out.overflow else self._too_long(value_node)
        else:
            value = self.joined(value_node, env)
        if append:
            old = env.vars.get(name, "")
            if isinstance(old, tuple) and isinstance(value, str):
                # `A+=y` on an array appends to item 0 (bash 5.2); `A+=(y)` adds an item
                value = ((old[0] if old else "") + value, *old[1:])
            elif isinstance(old, tuple) or isinstance(value, tuple):
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
        if value_node is not None and env.open_args and _ARG_DEFAULT.match(node_text(value_node)):
            env.from_args = env.from_args | {name}
        elif name in env.from_args:
            env.from_args = env.from_args - {name}

    def _declare(self, node: Node, envs: list[Env]) -> list[Env]:
        keyword = node_text(node.children[0]) if node.children else ""
        flags = [
            node_text(c)
            for c in node.named_children
            if c.type == "word" and node_text(c)[:1] == "-"
        ]
        export = keyword == "export" or any("x" in f for f in flags)
        for env in envs:
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(child, env, export=export)
                elif (
                    export
                    and child.type in ("variable_name", "word")
                    and NAME.match(node_text(child))
                ):
                    env.exported.add(node_text(child))
        return envs

    def _list(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
        children = node.children
        left, right = node.named_children[0], node.named_children[-1]
        operator = next((node_text(c) for c in children if not c.is_named), "&&")
        envs = self.run(left, envs, ctx)
        out: list[Env] = []
        for env in envs:
            decided = self._condition(left, env)
            if operator == "||":
                decided = None if decided is None else not decided
                if decided is None and left.type not in ("test_command",) and not _is_test(left):
                    decided = False  # `cmd || exit 1`: the command is taken to succeed
            elif decided is None and not _is_test(left):
                decided = True  # `cd x && vllm serve …`
            if decided is False:
                out.append(env)
                continue
            before = env.copy()
            taken = self.run(right, [env if decided else env.copy()], ctx)
            if not taken and self._precondition(left, before):
                out.append(before)  # `[ -z "$HF_TOKEN" ] && { echo …; exit 1; }`
            elif decided:
                out += taken
            else:
                out += [*taken, env]
        return self._cap(out, node)

    def _precondition(self, cond: Node, env: Env) -> bool:
        """Whether ``cond``, whose branch exits on every path, is a guard on what the
        script is given (the environment or its arguments) rather than a path: then the
        precondition is taken to hold (noted) and the evaluation goes on past the ``exit``.

        A test on variables the script never sets (``[ -z "$HF_TOKEN" ]``) is a guard on
        the environment; a test on ``$#`` a guard on the arguments (``[ $# -lt 1 ]``, the
        usage message): evaluation then goes on with the arguments unknown.
        """
        if not (_is_test(cond) or cond.type in ("list", "test_command")):
            return False
        written = self.plain(node_text(cond))
        names = sorted(set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", written)))
        arguments = re.search(r"\$\{?#\}?", written) is not None
        if not arguments and (not names or any(n in env.vars for n in names)):
            return False
        if arguments:
            env.positional, env.open_args = None, False
            what = "the script's arguments"
        else:
            what = "environment variable(s) " + ", ".join(names)
        note = (
            cond.start_point[0] + 1,
            f"precondition on {what} taken to hold ({written.strip()[:80]}; the script "
            "exits otherwise): evaluated past it",
        )
        if note not in self.script.notes:
            self.script.notes.append(note)
        return True

    def _condition(self, node: Node, env: Env) -> bool | None:
        """Whether a condition holds on this path (``None``: cannot tell, also past
        :data:`MAX_NESTING` levels: ``a && b && …`` nests one level per operator)."""
        if self.level >= MAX_NESTING:
            return None
        self.level += 1
        try:
            return self._condition_at(node, env)
        finally:
            self.level -= 1

    def _condition_at(self, node: Node, env: Env) -> bool | None:
        if node.type == "test_command":
            exprs = node.named_children
            double = bool(node.children) and node_text(node.children[0]) == "[["
            return self._expr(exprs[0], env, double) if len(exprs) == 1 else None
        if node.type == "negated_command" and node.named_children:
            inner = self._condition(node.named_children[0], env)
            return None if inner is None else not inner
        if node.type == "list" and len(node.named_children) == 2:  # [ a ] && [ b ]
            operator = next((node_text(c) for c in node.children if not c.is_named), "")
            p, q = (self._condition(c, env) for c in node.named_children)
            if operator == "&&":
                return False if False in (p, q) else (None if None in (p, q) else True)
            if operator == "||":
                return True if True in (p, q) else (None if None in (p, q) else False)
            return None
        if node.type == "command":
            name = node.child_by_field_name("name")
            if name is not None and node_text(name) == "test":
                args = [c for c in node.children_by_field_name("argument")]
                return self._test_words(args, env)
            if name is not None and node_text(name) in ("true", ":"):
                return True
            if name is not None and node_text(name) == "false":
                return False
        return None

    def _operand(self, node: Node, env: Env, unset_empty: bool) -> str | None:
        if node.type == "unary_expression" and _SIGNED.fullmatch(node_text(node)):
            return node_text(node)  # `[ $X -lt -2 ]`: the grammar reads `-2` as an operator
        if node.type in ("simple_expansion", "expansion") or (
            node.type == "string"
            and len(node.named_children) == 1
            and node.named_children[0].type in ("simple_expansion", "expansion")
        ):
            inner = node if node.type != "string" else node.named_children[0]
            written = node_text(inner)
            name = written[1:].strip("{}")
            if NAME.match(name) and name not in env.vars:
                return "" if unset_empty else None
            role_default = name in env.from_args or (
                env.open_args and _ARG_DEFAULT.match(written) is not None
            )
        else:
            role_default = False
        value = self.joined(node, env)
        if role_default and _ROLE_WORD.search(value):
            # `case "${1:-prefill}"` / `ROLE=${1:-prefill}; case "$ROLE"`: the default is
            # the no-argument run, but a run with `decode` is as real: each branch is taken
            return None
        return None if OPEN in value else value

    def _expr(self, node: Node, env: Env, double: bool = False) -> bool | None:
        """A ``[ … ]`` / ``[[ … ]]`` (``double``) expression's truth (``None``: cannot tell,
        also past :data:`MAX_NESTING` levels)."""
        if self.level >= MAX_NESTING:
            return None
        self.level += 1
        try:
            return self._expr_at(node, env, double)
        finally:
            self.level -= 1

    def _expr_at(self, node: Node, env: Env, double: bool) -> bool | None:
        if node.type == "parenthesized_expression" and node.named_children:
            return self._expr(node.named_children[0], env, double)
        if node.type == "unary_expression":
            operator = node.child_by_field_name("operator")
            operands = [c for c in node.named_children if c.type != "test_operator"]
            op = node_text(operator) if operator is not None else ""
            if op == "!" or (not op and node_text(node).startswith("!")):
                inner = self._expr(operands[0], env, double) if operands else None
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
            op = node_text(operator)
            if op in ("&&", "||", "-a", "-o"):
                p, q = self._expr(left, env, double), self._expr(right, env, double)
                if op in ("&&", "-a"):
                    return False if False in (p, q) else (None if None in (p, q) else True)
                return True if True in (p, q) else (None if None in (p, q) else False)
            a = self._operand(left, env, unset_empty=False)
            b = self._operand(right, env, unset_empty=False)
            if a is None or b is None:
                return None
            if double and op in ("=", "==", "!="):
                # [[ ]]: an unquoted right side is a pattern, a quoted one literal
                matched = _pattern_match(a, b, right)
                return None if matched is None else matched == (op != "!=")
            return _compare(a, op, b)
        if node.type in ("string", "word", "simple_expansion", "expansion"):
            value = self._operand(node, env, unset_empty=True)
            return None if value is None else value != ""
        return None

    def _test_words(self, args: list[Node], env: Env) -> bool | None:
        if len(args) == 2 and node_text(args[0]) in ("-z", "-n"):
            value = self._operand(args[1], env, unset_empty=True)
            if value is None:
                return None
            return (value == "") if node_text(args[0]) == "-z" else (value != "")
        if len(args) == 3:
            a = self._operand(args[0], env, unset_empty=False)
            b = self._operand(args[2], env, unset_empty=False)
            if a is None or b is None:
                return None
            return _compare(a, node_text(args[1]), b)
        return None

    def _if(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
        conditions = node.children_by_field_name("condition")
        condition = next((c for c in conditions if c.is_named), None)
        clauses: list[tuple[Node | None, list[Node], str]] = []
        body: list[Node] = []
        header = f"if {node_text(condition)}" if condition is not None else "if"
        for child in node.named_children:
            if (condition is not None and same_node(child, condition)) or child.type == "comment":
                continue
            if child.type in ("elif_clause", "else_clause"):
                continue
            body.append(child)
        clauses.append((condition, body, header))
        for child in node.named_children:
            if child.type == "elif_clause":
                parts = [c for c in child.named_children if c.type != "comment"]
                cond = parts[0] if parts else None
                clauses.append((cond, parts[1:], f"elif {node_text(cond) if cond else ''}"))
            elif child.type == "else_clause":
                parts = [c for c in child.named_children if c.type != "comment"]
                clauses.append((None, parts, "else"))
        has_else = clauses[-1][0] is None and len(clauses) > 1
        return self._branches(node, envs, ctx, clauses, has_else)

    def _branches(
        self,
        node: Node,
        envs: list[Env],
        ctx: _Ctx,
        clauses: list[tuple[Node | None, list[Node], str]],
        exhaustive: bool,
        matcher: Any = None,
    ) -> list[Env]:
        out: list[Env] = []
        merged = False
        hint_above = self._comments_above(node.start_point[0] + 1)
        for env in envs:
            remaining = [env]
            for cond, statements, header in clauses:
                if not remaining:
                    break
                taken: list[Env] = []
                rest: list[Env] = []
                entered: list[Env] = []  # the paths as they were before the branch
                for path in remaining:
                    if matcher is None and cond is not None:
                        entered.append(path.copy())
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
                if (
                    entered
                    and cond is not None
                    and not taken
                    and len(rest) < len(entered)  # decided: the branch is taken
                    and self._precondition(cond, entered[0])
                ):
                    # `if [ -z "$HF_TOKEN" ]; then …; exit 1; fi`: past it, not a path
                    for path in entered:
                        self._precondition(cond, path)
                    rest = entered
                out += taken
                if len(out) > MAX_ALTERNATIVES:  # merge as we go: a 10 000-item case
                    out, merged = self._cap(out, node), True
                remaining = rest
            if not exhaustive:
                out += remaining
        return self._cap(out, node, force=merged)

    def _case(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
        value_node = node.child_by_field_name("value")
        clauses: list[tuple[Node | None, list[Node], str]] = []
        exhaustive = False
        for item in node.named_children:
            if item.type != "case_item":
                continue
            patterns = item.children_by_field_name("value")
            texts = [node_text(p) for p in patterns]
            if "*" in texts:
                exhaustive = True
            body = [
                c
                for c in item.named_children
                if not any(same_node(c, p) for p in patterns) and c.type != "comment"
            ]
            clauses.append((item, body, f"case {' | '.join(texts)})"))

        def matcher(item: Node | None, env: Env) -> bool | None:
            if item is None or value_node is None:
                return None
            subject = self._operand(value_node, env, unset_empty=False)
            patterns = item.children_by_field_name("value")
            if subject is None:
                return (
                    True
                    if any(node_text(p) == "*" for p in patterns)
                    and len(patterns) == 1
                    and same_node(item, clauses[-1][0])
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

    def _loop(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
        body = node.child_by_field_name("body")
        if body is None:
            return envs
        header = node_text(node).split("\n", 1)[0][:120]
        inner = dataclasses.replace(
            ctx, hints=(header, *self._comments_above(node.start_point[0] + 1), *ctx.hints)
        )
        if node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            out: list[Env] = []
            for env in envs:
                items = self.words(values, env) if values else None
                if variable is None:
                    out += self.run(body, [env], inner)
                    continue
                name = node_text(variable)
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
        condition = node.child_by_field_name("condition")
        if node.type == "while_statement" and condition is not None:
            # `while [[ $# -gt 0 ]]; do … shift; done` run with no arguments: zero times;
            # tree-sitter-bash reads `until` as a while_statement whose first child is the
            # `until` keyword: its body never runs when the condition holds
            ends = node.children[0].type == "until" if node.children else False
            skipped = [e for e in envs if self._condition(condition, e) is ends]
            looped = [e for e in envs if not any(e is s for s in skipped)]
            return [*skipped, *self.run(body, looped, inner)] if looped else skipped
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

    def _command(self, node: Node, envs: list[Env], ctx: _Ctx) -> list[Env]:
        self.commands += len(envs)
        if self.commands > MAX_COMMANDS:
            # the rest is not read: a stop when the script launches vLLM anywhere (where
            # the rest lies, with loops and functions, is not known), noted once
            limit = f"more than {MAX_COMMANDS} commands"
            if not any(n[1].startswith(limit) for n in (*self.script.notes, *self.script.stops)):
                self.stop(
                    ctx.line or node.start_point[0] + 1, (-1, -1), lambda: self.text,
                    limit, "the rest not read, and the script launches vLLM", "the rest not read",
                )  # fmt: skip
            return envs
        name_node = node.child_by_field_name("name")
        prefixes = [c for c in node.named_children if c.type == "variable_assignment"]
        own = _own_start(node)  # `A=1 B=2⏎cmd`: the assignments first, then the command
        ahead = [p for p in prefixes if p.start_byte < own.start_byte]
        for env in envs:
            for prefix in ahead:
                self._assign(prefix, env)
        prefixes = prefixes[len(ahead) :]
        if name_node is None:
            for env in envs:
                for prefix in prefixes:
                    self._assign(prefix, env)
            return envs
        arguments = [
            c
            for c in node.children
            if (c.is_named or node_text(c) == "$")
            and not same_node(c, name_node)
            and c.type not in _SKIP
            and c.type != "variable_assignment"
        ]
        line = ctx.line or own.start_point[0] + 1
        out: list[Env] = []
        for env in envs:
            local = env.copy() if prefixes else env  # (a copy only for VAR=x prefixes)
            extra: dict[str, str] = {}
            for prefix in prefixes:
                self._assign(prefix, local, export=True)
                key = prefix.child_by_field_name("name")
                if key is not None:
                    value = local.vars.get(node_text(key), "")
                    extra[node_text(key)] = value if isinstance(value, str) else " ".join(value)
            # expanded before the prefixes are assigned (bash: "Simple Command Expansion")
            words = self.words([name_node, *arguments], env)
            out += self._dispatch(node, words, env, extra, line, ctx)
        return self._cap(out, node)

    def _dispatch(
        self,
        node: Node,
        words: list[str],
        env: Env,
        extra: dict[str, str],
        line: int,
        ctx: _Ctx,
    ) -> list[Env]:
        if not words:
            return [env]
        name = words[0]
        if name in ("export", "declare", "typeset", "local", "readonly"):
            export = name == "export" or any(w.startswith("-") and "x" in w for w in words[1:])
            for word in words[1:]:
                match = ASSIGN.match(word)
                if match:
                    env.vars[match.group(1)] = match.group(3)
                    if export:
                        env.exported.add(match.group(1))
                elif NAME.match(word) and export:
                    env.exported.add(word)
            return [env]
        if name == "set":
            # options left to right (-a / -o allexport on, + off; -o takes the next word)
            # up to the first word that is none; `--` or `-` ends them, and the words after
            # are $1 … (`set -` with none after keeps them); a word that is no option starts
            # them (bash 5.2, "The Set Builtin")
            i = 1
            while i < len(words) and words[i][:1] in ("-", "+") and words[i] not in ("-", "--"):
                flags, on = words[i][1:], words[i][0] == "-"
                if "o" in flags and i + 1 < len(words):
                    i += 1
                    if words[i] == "allexport":
                        env.allexport = on
                if "a" in flags:
                    env.allexport = on
                i += 1
            if i < len(words) and (words[i] != "-" or i + 1 < len(words)):
                env.positional = tuple(words[i + (words[i] in ("-", "--")) :])
                env.open_args = False
            return [env]
        if name == "shift":
            given = try_int(words[1]) if len(words) > 1 else None
            count = 1 if given is None else given
            if env.positional is not None:
                env.positional = env.positional[count:]
            return [env]
        if name in ("exit",):
            return []
        if name in ("source", ".") and len(words) > 1:
            # kvalign never reads or runs a sourced file: what it sets is unknown here
            file = self.plain(words[1])
            self.note(
                line,
                f"sources {file}, which kvalign does not read: variables it may set are not "
                "known here (defaults written as ${V:-default} are used, each noted)",
            )
            env.sourced = (*env.sourced, file)
            return [env]
        if name == "read":
            for word in words[1:]:
                if NAME.match(word):
                    env.vars[word] = self.hole(f"${word}")
            return [env]
        if name == "eval" and ctx.depth < _MAX_DEPTH:
            text = " ".join(words[1:])
            return self.source(text, [env], self._nested(node, line, ctx, "eval"))
        if name == "eval" and self._too_nested(
            node, line, "eval", self.plain(self.joined_words(words))
        ):
            return [env]
        if (
            name in self.functions
            and ctx.depth >= _MAX_DEPTH
            and name not in self.active  # recursion: its body was read when first called
            and self._too_nested(node, line, f"function {name}", node_text(self.functions[name]))
        ):
            return [env]
        if name in self.functions and ctx.depth < _MAX_DEPTH:
            self.called.add(name)
            saved = env.positional, env.open_args
            env.positional, env.open_args = tuple(words[1:]), False
            inner = _Ctx(
                (self.plain(node_text(node)), f"function {name}", *ctx.hints),
                ctx.line, ctx.depth + 1, True, (*ctx.site, node.start_byte),
            )  # fmt: skip
            self.active.append(name)
            try:
                result = self.run(self.functions[name], [env], inner)
            finally:
                self.active.pop()
            for path in result:
                path.positional, path.open_args = saved
            return result
        deep = ctx.depth >= _MAX_DEPTH
        remote = remote_script(words)
        if (
            remote is not None
            and deep
            and self._too_nested(node, line, "ssh", self.plain(self.joined_words(words)))
        ):
            return [env]
        if remote is not None and ctx.depth < _MAX_DEPTH:
            # `ssh HOST "vllm serve …"`: the remote shell sees none of this one's variables
            child = Env(positional=(), branch=env.branch)
            self.source(remote, [child], self._nested(node, line, ctx, "ssh"))
            return [env]
        session = session_script(words)
        if (
            session is not None
            and deep
            and self._too_nested(
                node, line, "tmux / screen session", self.plain(self.joined_words(words))
            )
        ):
            return [env]
        if session is not None and ctx.depth < _MAX_DEPTH:
            # `tmux new -d "vllm serve …"`, `screen -dmS NAME CMD…`: the session's shell
            # runs the command with this one's exported variables
            child = Env(
                {k: v for k, v in env.vars.items() if k in env.exported or env.allexport},
                set(env.exported),
                (),
                False,
                env.branch,
            )
            child.vars.update(extra)
            child.exported.update(extra)
            self.source(session, [child], self._nested(node, line, ctx, "session"))
            return [env]
        script = shell_script(words)
        if (
            script is not None
            and deep
            and self._too_nested(node, line, "sh -c", self.plain(self.joined_words(words)))
        ):
            return [env]
        if script is not None and ctx.depth < _MAX_DEPTH:
            child = Env(
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

    def _substituted(self, node: Node, envs: list[Env], ctx: _Ctx) -> None:
        """Run the commands of each ``$( … )`` / backquote substitution in ``node`` (not in
        nested compound statements) that plainly launches vLLM (``X=$(vllm serve …) &``):
        bash runs it, so its launch is recorded; the variable it sets stays a hole."""
        stack = list(node.children)
        while stack:
            child = stack.pop()
            if child.type != "command_substitution":
                stack += child.children
                continue
            if _LAUNCH_TEXT.search(node_text(child)) is None:
                continue
            if ctx.depth >= _MAX_DEPTH:
                line = ctx.line or child.start_point[0] + 1
                self._too_nested(child, line, "command substitution", node_text(child))
                continue
            inner = _Ctx(ctx.hints, ctx.line, ctx.depth + 1, ctx.in_function, ctx.site)
            for env in envs:
                copies = [env.copy()]
                for part in child.named_children:
                    copies = self.run(part, copies, inner)

    def _heredoc_script(self, node: Node, body: Node) -> Node | None:
        """The ``heredoc_body`` of ``SHELL [-options] <<DELIM`` (a here-document fed to a
        shell that reads its commands from stdin), else ``None``."""
        if body.type != "command":
            return None
        name = body.child_by_field_name("name")
        if name is None or not is_shell(node_text(name)):
            return None
        arguments = [
            c
            for c in body.named_children
            if not same_node(c, name) and c.type != "variable_assignment" and c.type not in _SKIP
        ]
        if any(not node_text(a).startswith("-") or "c" in node_text(a)[1:] for a in arguments):
            return None  # a script file or `-c SCRIPT`: stdin is not the script
        for redirect in node.named_children:
            if redirect.type == "heredoc_redirect":
                found = next((c for c in redirect.children if c.type == "heredoc_body"), None)
                if found is not None:
                    return found
        return None

    def _run_heredoc(
        self, node: Node, body: Node, script: Node, envs: list[Env], ctx: _Ctx
    ) -> list[Env]:
        """``bash <<'X' … X``: the here-document is the child shell's script (with this
        shell's exported variables; an unquoted delimiter expands the others first, so
        then they are all seen)."""
        start = next(
            (c for r in node.named_children for c in r.children if c.type == "heredoc_start"),
            None,
        )
        quoted = start is not None and node_text(start)[:1] in ("'", '"', "\\")
        line = ctx.line or node.start_point[0] + 1
        for env in envs:
            seen = {k: v for k, v in env.vars.items()}
            if quoted:
                seen = {k: v for k, v in seen.items() if k in env.exported or env.allexport}
            child = Env(seen, set(env.exported), (), False, env.branch)
            self.source(node_text(script), [child], self._nested(body, line, ctx, "heredoc"))
        return envs

    def _nested(self, node: Node, line: int, ctx: _Ctx, what: str) -> _Ctx:
        hints = (self.plain(node_text(node)), *self._comments_above(node.start_point[0] + 1))
        return _Ctx(
            (*hints, *ctx.hints), line, ctx.depth + 1, ctx.in_function, (*ctx.site, node.start_byte)
        )

    def _record(
        self, node: Node, words: list[str], env: Env, extra: dict[str, str], line: int, ctx: _Ctx
    ) -> None:
        environment = {k: self.decode(v) for k, v in env.environment().items()}
        environment.update({k: self.decode(v) for k, v in extra.items()})
        limits = self.limits(words)
        words = [self.decode(w) for w in words]
        image: str | None = None
        rest = words
        container = self.container(words) if self.container is not None else None
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
        own = _own_start(node)
        own_line = own.start_point[0] + 1
        hints = (*self._comments_above(own_line), *ctx.hints) if ctx.line is None else ctx.hints
        outer = (
            node.parent
            if node.parent is not None and node.parent.type == "redirected_statement"
            else node
        )
        written = self.plain(
            (outer.text or b"")[own.start_byte - outer.start_byte :].decode("utf-8", "replace")
        )
        hints = tuple(self.plain(h) for h in hints)
        # every variable on this path, decoded only when asked for (a launch's differences):
        # the snapshot is a copy in C, charged one step per 1,000 variables, and the
        # environment (decoded and sorted for the key) one per 20 exported: thousands of
        # variables times thousands of commands meet the step budget in seconds
        self.budget.step(len(env.vars) // 1000 + len(environment) // 20)
        variables = _Decoded(dict(env.vars), self.texts)  # (the texts, not self: no cycle)
        self.script.commands.append(
            Command(
                limits=limits,
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

    def source(self, text: str, envs: list[Env], ctx: _Ctx) -> list[Env]:
        """Parse and evaluate ``text`` (an ``eval`` / ``sh -c`` / here-document script), its
        length charged to the budget (a large value eval'd many times is parsed each time).

        Raises:
            ShellBudgetExceeded: more than :data:`MAX_BUILT` characters built or parsed, or
                more than :data:`MAX_SYNTAX` characters of shell syntax parsed in all.
        """
        self.budget.build(len(text))
        self.budget.parse(text)
        tree = parse(text)
        saved = self.lines, self.source_id
        if ctx.line is not None:
            self.lines = text.splitlines()
        self.sources += 1
        self.source_id = self.sources
        try:
            return self.run(tree.root_node, envs, ctx)
        finally:
            self.lines, self.source_id = saved

    def _cap(self, envs: list[Env], node: Node, force: bool = False) -> list[Env]:
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


class _Decoded(Mapping[str, str]):
    """Variables as they were when a command ran (arrays joined with a blank), each
    decoded (:func:`kvalign.shell.expand.decoded`, with the evaluation's ``texts``) when
    it is read."""

    def __init__(self, raw: dict[str, Value], texts: list[str]) -> None:
        self._raw = raw
        self._texts = texts

    def __getitem__(self, name: str) -> str:
        value = self._raw[name]
        return decoded(self._texts, value if isinstance(value, str) else " ".join(value))

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def _own_start(node: Node) -> Node:
    """The first part of a command's own (``cmd`` of ``A=1 B=2⏎cmd`` or ``A=1 >log⏎cmd``:
    tree-sitter-bash 0.25 reads assignments and redirections (two or more, one of them an
    assignment), a line break and a command as one command; bash ends the statement at the
    line break), else ``node``."""
    text = node.text or b""
    found = node
    for part, after in itertools.pairwise(node.children):
        gap = text[part.end_byte - node.start_byte : after.start_byte - node.start_byte]
        if b"\n" in gap.replace(b"\\\n", b""):  # a line break, not a continued line
            found = after
    return found


def _is_test(node: Node) -> bool:
    while node.type == "negated_command" and node.named_children:  # iterative: ! ! ! …
        node = node.named_children[0]
    if node.type == "test_command":
        return True
    if node.type == "command":
        name = node.child_by_field_name("name")
        return name is not None and node_text(name) in ("test", "true", "false", ":")
    return False


#: pattern syntax :func:`fnmatch.fnmatchcase` does not read as bash does: backslash
#: escapes, ``[^…]`` sets, extglob groups ``@(…)`` / ``!(…)`` / ``+(…)`` …
_UNLIKE_FNMATCH = re.compile(r"\\|\[\^|[?*+@!]\(")
_QUOTED_NODES = frozenset({"string", "raw_string", "ansi_c_string", "translated_string"})


def _pattern_match(value: str, pattern: str, written: Node) -> bool | None:
    """Whether ``value`` matches the right side of ``[[ A == B ]]`` (bash 5.2, "Conditional
    Constructs": an unquoted right side of ``=`` / ``==`` / ``!=`` is a pattern, a quoted one
    is matched literally); ``pattern`` is the expanded text of ``written``. ``None`` when it
    cannot be told: part quoted and part not with pattern characters in it, or pattern
    syntax fnmatch does not share (:data:`_UNLIKE_FNMATCH`)."""
    if written.type in _QUOTED_NODES:
        return value == pattern
    if not any(c in pattern for c in "*?["):
        return value == pattern
    if (
        _holds_quoted(written)  # `"a"*`, `${U:-"a*"}`: the quoted part is literal
        or "\\" in node_text(written)  # `a\*`: the star is literal
        or _UNLIKE_FNMATCH.search(pattern)
    ):
        return None
    return fnmatchcase(value, pattern)


def _holds_quoted(node: Node) -> bool:
    """Whether a quoted string is part of ``node`` (at any depth: a default's
    ``${U:-"a*"}`` as well as a concatenation's ``"a"*``)."""
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.type in _QUOTED_NODES:
            return True
        stack += child.children
    return False


def _compare(a: str, op: str, b: str) -> bool | None:
    """``[ a OP b ]`` / ``test a OP b`` (never a pattern match: ``[`` has none)."""
    if op in ("=", "=="):
        return a == b
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


def evaluate(
    text: str,
    env: Mapping[str, str] | None = None,
    positional: list[str] | tuple[str, ...] | None = None,
    container: ContainerSplit | None = None,
    launches: LaunchTest | None = None,
) -> Script:
    """Evaluate a whole script (see the module docstring).

    Args:
        text: the script.
        env: variables already set (a container's ``env``): exported, known.
        positional: ``$1`` … (``sh -c SCRIPT $0 $1 …``); ``None``: the script run with
            no arguments (``$#`` is 0, ``$@`` empty; a bare ``$1`` stays unresolved, named
            as written, as the argument the user is to pass).
        container: splits a container launch (``docker run … IMAGE ARGS``) into
            :attr:`Command.image` and its words (``None``: no command is one).
        launches: whether a text could launch vLLM: a part a limit keeps from being read
            (nested deeper than :data:`MAX_NESTING` levels, eval / sh -c / function calls
            nested deeper than 8, more than :data:`MAX_COMMANDS` commands) is a stop
            (:attr:`Script.stops`) when it could, else a note (``None``: always a note).

    Returns:
        A :class:`Script`; never raises for bad shell (tree-sitter recovers; the parts it
        cannot read are noted).

    Raises:
        ShellBudgetExceeded: the script is over the shell budget (text longer than
            :data:`MAX_SCRIPT_BYTES`, more than :data:`MAX_SYNTAX` characters of shell
            syntax parsed, more than :data:`MAX_STEPS` steps, more than :data:`MAX_BUILT`
            characters expanded); the message names the budget.
    """
    if len(text) > MAX_SCRIPT_BYTES:
        raise ShellBudgetExceeded(
            f"shell budget exceeded: script longer than {MAX_SCRIPT_BYTES // 1024} KiB"
        )
    evaluator = _Evaluator(text.splitlines(), container, launches, text)
    evaluator.budget.parse(text)
    start = Env(
        dict(env or {}),
        set(env or {}),
        tuple(positional) if positional is not None else (),
        open_args=positional is None,
    )
    tree = parse(text)
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
        first = first_error(tree.root_node)
        if first is not None and all(n[0] != first for n in evaluator.script.notes):
            evaluator.script.notes.append((first, "shell syntax not understood here"))
    return evaluator.script
