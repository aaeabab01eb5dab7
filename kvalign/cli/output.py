"""Where command results go: one format registry per result type, one renderer signature.

Every renderer is ``render(result, view) -> str | renderable``: a string is printed (or
written to ``--output``) as it is, with a final newline; anything else is a rich
renderable, printed by the stdout console (or into the file at the report's file width).
The renderers are thin adapters over :mod:`kvalign.report`, imported only when used, so
``--format json`` never loads rich.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kvalign.cli.exit import stdout_closed

if TYPE_CHECKING:
    from rich.console import Console

    from kvalign.audit import AuditReport
    from kvalign.explain import Explanation
    from kvalign.pd import CheckReport
    from kvalign.plan import Plan
    from kvalign.rules import RuleDoc
    from kvalign.sources.catalog import CatalogEntry
    from kvalign.survey import Survey
    from kvalign.verify import Verification


def echo(text: str) -> None:
    """Write ``text`` to stdout as ``typer.echo(text, nl=False)`` does: that strips ANSI
    escape sequences when stdout is not a terminal, so text holding ESC goes through it;
    any other text is written and flushed directly (the same bytes, without loading
    typer)."""
    if "\x1b" in text:
        import typer

        typer.echo(text, nl=False)
        return
    sys.stdout.write(text)
    sys.stdout.flush()


def stdout_console() -> Console:
    """The console for data on stdout (width from the terminal, else ``COLUMNS`` or 200)."""
    from kvalign.report.layout import SafeConsole

    class _Stdout(SafeConsole):
        def on_broken_pipe(self) -> None:  # rich's default exits 1, which means "flagged"
            self.quiet = True
            stdout_closed()

    from kvalign.numbers import columns

    width = None if sys.stdout.isatty() else columns(os.environ.get("COLUMNS"))
    return _Stdout(width=width, soft_wrap=False, highlight=False)


class OutputFormat(str, Enum):
    """``--format`` values of check, matrix, models and rules."""

    table = "table"
    json = "json"
    markdown = "markdown"


class AuditFormat(str, Enum):
    """``kvalign audit --format`` values."""

    table = "table"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"
    junit = "junit"
    github = "github"


class SurveyFormat(str, Enum):
    """``kvalign survey --format`` values."""

    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


class ExplainFormat(str, Enum):
    """``explain --format`` values: the same as check's (table is the plain-text steps)."""

    table = "table"
    json = "json"
    markdown = "markdown"


class PlanFormat(str, Enum):
    """``plan --format`` values."""

    table = "table"
    json = "json"


class VerifyFormat(str, Enum):
    """``verify --format`` values."""

    table = "table"
    json = "json"


@dataclass
class View:
    """What a renderer may use besides the result: the ``--fail-on`` level, the width
    (the stdout console's, unless given: e.g. the file width for ``--output``), and
    ``audit``'s ``--verbose`` / ``--quiet``."""

    fail_on: str = "error"
    fixed_width: int | None = None
    verbose: bool = False
    quiet: bool = False

    @cached_property
    def console(self) -> Console:
        """The stdout console (created on first use: rich loads only for tables)."""
        return stdout_console()

    @property
    def width(self) -> int:
        """Columns to lay a table out in."""
        return self.fixed_width if self.fixed_width is not None else self.console.width


#: ``kvalign models``: each bundled entry with its ``model_type``.
Models = list[tuple["CatalogEntry", str]]

R = TypeVar("R")
#: one signature for every format of a result type.
Renderer = Callable[[R, View], Any]


class Formats(Generic[R]):
    """The ``--format`` values of one result type and their renderers.

    ``choices`` is the command's ``--format`` enum (what ``--help`` lists); the registry
    must name a renderer for each of its values, and no other.
    """

    def __init__(self, choices: type[Enum], renderers: Mapping[str, Renderer[R]]) -> None:
        names = [str(member.value) for member in choices]
        if sorted(names) != sorted(renderers):
            raise ValueError(f"{choices.__name__}: formats {names} != renderers {list(renderers)}")
        self.choices = choices
        self.renderers = dict(renderers)

    def emit(self, result: R, output_format: Enum | str, view: View | None = None,
             output: str | None = None) -> None:  # fmt: skip
        """Render ``result`` in ``output_format`` to stdout, or to the file ``output``.

        Raises:
            InvalidSettings: ``output`` is refused or cannot be written
                (:func:`kvalign.safeio.write_output`: never over an input, atomic).
        """
        from kvalign.safeio import write_output

        name = output_format.value if isinstance(output_format, Enum) else output_format
        view = view or View()
        rendered = self.renderers[str(name)](result, view)
        if isinstance(rendered, str):
            text = rendered if rendered.endswith("\n") or not rendered else rendered + "\n"
            if output is None:
                echo(text)
            else:
                write_output(output, text)
        elif output is None:
            view.console.print(rendered)
        else:
            import io

            from kvalign.report.layout import SafeConsole

            buffer = io.StringIO()
            SafeConsole(file=buffer, width=view.width, no_color=True).print(rendered)
            write_output(output, buffer.getvalue())


# ---- check and matrix: kvalign.pd.CheckReport ---------------------------------------------------
def _report_json(report: CheckReport, view: View) -> str:
    from kvalign.report.json_format import to_json

    return to_json(report, view.fail_on)


def plain_width(view: View) -> int | None:
    """The width rich would lay a table out in when it prints no colour to stdout (not a
    terminal; ``FORCE_COLOR``/``TTY_COMPATIBLE`` not asking for one; a UTF-8 stream) or
    into a file (``view.fixed_width``); ``None`` when rich may print colour, another box
    or another width (then only rich can render it)."""
    import builtins

    env = os.environ
    compatible = env.get("TTY_COMPATIBLE", "")
    if compatible == "1" or hasattr(builtins, "get_ipython"):
        return None
    if compatible != "0" and env.get("FORCE_COLOR", "") != "":
        return None
    if view.fixed_width is not None:
        return view.fixed_width
    stream = sys.stdout
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is None or isatty():
            return None
    except ValueError:
        return None
    encoding = (getattr(stream, "encoding", "utf-8") or "utf-8").lower()
    if not encoding.startswith("utf"):
        return None
    from kvalign.numbers import columns

    return columns(env.get("COLUMNS"))


def _check_table(report: CheckReport, view: View) -> Any:
    from kvalign.report.table import check_table, check_text

    width = plain_width(view)
    text = None if width is None else check_text(report, width, view.fail_on)
    return text if text is not None else check_table(report, view.width, view.fail_on)


def _check_markdown(report: CheckReport, view: View) -> str:
    from kvalign.report.markdown import check_markdown

    return check_markdown(report, view.fail_on)


def _matrix_table(report: CheckReport, view: View) -> Any:
    from kvalign.report.table import matrix_table, matrix_text

    width = plain_width(view)
    text = None if width is None else matrix_text(report, width, view.fail_on)
    return text if text is not None else matrix_table(report, view.width, view.fail_on)


def _matrix_markdown(report: CheckReport, view: View) -> str:
    from kvalign.report.markdown import matrix_markdown

    return matrix_markdown(report, view.fail_on)


# ---- models: the bundled catalog --------------------------------------------------------------
def _models_table(models: Models, view: View) -> Any:
    from kvalign.report.table import models_table

    return models_table([entry for entry, _ in models], {e.model_id: k for e, k in models})


def _models_json(models: Models, view: View) -> str:
    import json

    payload = [
        {"id": e.model_id, "model_type": kind, "config_path": str(e.config_path)}
        for e, kind in models
    ]
    return json.dumps(payload, indent=2)


def _models_markdown(models: Models, view: View) -> str:
    lines = ["| Model | Type |", "|---|---|"]
    lines += [f"| {e.model_id} | {kind} |" for e, kind in models]
    return "\n".join(lines)


# ---- rules: the rule list, and one rule's page ------------------------------------------------
def _rules_table(docs: tuple[RuleDoc, ...], view: View) -> Any:
    from kvalign.report.rules_format import rules_table

    return rules_table(docs)


def _rules_json(docs: tuple[RuleDoc, ...], view: View) -> str:
    from kvalign.report.rules_format import rules_json

    return rules_json(docs)


def _rules_markdown(docs: tuple[RuleDoc, ...], view: View) -> str:
    from kvalign.report.rules_format import rules_markdown

    return rules_markdown(docs)


def _rule_page(doc: RuleDoc, view: View) -> str:
    from kvalign.report.rules_format import WRAP, rule_page

    return rule_page(doc, width=max(40, min(view.width, WRAP)))  # the terminal's, at most 88


def _rule_markdown(doc: RuleDoc, view: View) -> str:
    from kvalign.report.rules_format import rule_page

    return rule_page(doc)


def _rule_json(doc: RuleDoc, view: View) -> str:
    from kvalign.report.rules_format import rule_json

    return rule_json(doc)


# ---- audit, survey: kvalign.report.<module>.<prefix><format> -----------------------------------
def _named(module: str, prefix: str, name: str) -> Renderer[Any]:
    """The renderer ``kvalign.report.<module>.<prefix><name>`` (tables take the width)."""

    def render(result: Any, view: View) -> Any:
        import importlib

        formats = importlib.import_module(f"kvalign.report.{module}")
        if name == "table":
            return getattr(formats, f"{prefix}table")(result, view.width)
        return getattr(formats, f"{prefix}{name}")(result)

    return render


# ---- explain, verify ---------------------------------------------------------------------------
def _explain(name: str) -> Renderer[Explanation]:
    def render(explanation: Explanation, view: View) -> str:
        from kvalign.report import explain_format

        return str(getattr(explain_format, f"explain_{name}")(explanation))

    return render


def _verify(name: str) -> Renderer[Verification]:
    def render(result: Verification, view: View) -> Any:
        from kvalign.report import verify_format

        return getattr(verify_format, f"verify_{name}")(result)

    return render


CHECK: Formats[CheckReport] = Formats(
    OutputFormat, {"table": _check_table, "json": _report_json, "markdown": _check_markdown}
)
MATRIX: Formats[CheckReport] = Formats(
    OutputFormat, {"table": _matrix_table, "json": _report_json, "markdown": _matrix_markdown}
)
MODELS: Formats[Models] = Formats(
    OutputFormat, {"table": _models_table, "json": _models_json, "markdown": _models_markdown}
)
RULES: Formats[tuple[RuleDoc, ...]] = Formats(
    OutputFormat, {"table": _rules_table, "json": _rules_json, "markdown": _rules_markdown}
)
#: ``rules ID``: one rule's page (table and markdown print the same page).
RULE: Formats[RuleDoc] = Formats(
    OutputFormat, {"table": _rule_page, "json": _rule_json, "markdown": _rule_markdown}
)


def _audit_table(report: AuditReport, view: View) -> Any:
    """audit's table: on a terminal (or a width asked for with ``COLUMNS``) sections that
    fit it (laid out without rich when no colour is printed, :func:`plain_width`); anything
    else (a pipe, a CI log, ``--output``) plain lines, unwrapped."""
    from kvalign.report import audit as audit_report

    terminal = sys.stdout.isatty() or "COLUMNS" in os.environ
    if terminal and view.fixed_width is None:
        width = plain_width(view)
        text = (
            None
            if width is None
            else audit_report.to_plain_table(report, width, verbose=view.verbose, quiet=view.quiet)
        )
        if text is not None:
            return text
        return audit_report.to_table(report, view.width, verbose=view.verbose, quiet=view.quiet)
    return audit_report.to_text(report, verbose=view.verbose, quiet=view.quiet)


AUDIT: Formats[AuditReport] = Formats(
    AuditFormat,
    {
        f.value: _audit_table if f is AuditFormat.table else _named("audit", "to_", f.value)
        for f in AuditFormat
    },
)
SURVEY: Formats[Survey] = Formats(
    SurveyFormat, {f.value: _named("survey", "survey_", f.value) for f in SurveyFormat}
)
EXPLAIN: Formats[Explanation] = Formats(
    ExplainFormat, {f.value: _explain(f.value) for f in ExplainFormat}
)


def _plan_table(plan: Plan, view: View) -> Any:
    from kvalign.report.plan import plan_table

    return plan_table(plan, view.width)


def _plan_json(plan: Plan, view: View) -> str:
    from kvalign.report.plan import plan_json

    return plan_json(plan)


PLAN: Formats[Plan] = Formats(PlanFormat, {"table": _plan_table, "json": _plan_json})
VERIFY: Formats[Verification] = Formats(
    VerifyFormat, {f.value: _verify(f.value) for f in VerifyFormat}
)
#: every command's registry (``rule``: ``rules ID``).
REGISTRIES: dict[str, Formats[Any]] = {
    "check": CHECK, "matrix": MATRIX, "plan": PLAN, "models": MODELS, "rules": RULES,
    "rule": RULE,
    "audit": AUDIT, "survey": SURVEY, "explain": EXPLAIN, "verify": VERIFY,
}  # fmt: skip
