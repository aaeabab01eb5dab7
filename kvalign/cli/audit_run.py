"""The body of ``kvalign audit``, without typer: typer's command (:mod:`kvalign.cli.audit`)
and the fast path (:mod:`kvalign.cli.fast`, a plain ``audit PATH...`` line) both run
:func:`execute`, so both print the same bytes and exit with the same code.

Nothing here imports typer, click, pydantic or rich (rich loads only when a table is
printed on a terminal; typer only on an error, to raise its ``Exit``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from enum import Enum
from typing import TYPE_CHECKING

from kvalign.cli.exit import guarded
from kvalign.cli.output import AUDIT, AuditFormat, View, echo
from kvalign.cli.sizing import warn_beyond_newest
from kvalign.errors import KvalignError

if TYPE_CHECKING:
    from kvalign.auditing import AuditRequest


class PairByChoice(str, Enum):
    """``kvalign audit --pair-by`` values (:mod:`kvalign.grouping`)."""

    label = "label"
    file = "file"
    model = "model"


#: the cyclic collector's thresholds during an audit (:func:`few_collections`). An audit
#: of well-formed files makes no reference cycles (tests/audit/test_audit_speed2.py checks
#: it on the bundled examples), so collections find nothing to free; at these thresholds a
#: 10,000-file audit runs about a tenth faster than at CPython's defaults (700, 10, 10),
#: with the same peak RSS. The cycles a bad file makes (an exception with its traceback)
#: are still collected.
AUDIT_GC_THRESHOLDS = (50_000, 100, 100)


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """Run the block with the cyclic garbage collector's start-up objects frozen
    (``gc.freeze``: the imported modules are never traversed again) and its thresholds
    set to :data:`AUDIT_GC_THRESHOLDS`; both restored afterwards.

    An audit keeps every file's deployment until the report is written, so with the
    default thresholds the collector walks an ever larger heap, again and again, for
    nothing: what an audit of well-formed files builds holds no cycle.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*AUDIT_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def execute(
    request: AuditRequest,
    output_format: AuditFormat,
    *,
    verbose: bool = False,
    quiet: bool = False,
) -> int:
    """Run one audit (:func:`kvalign.auditing.run`), print its messages on stderr and its
    report on stdout (or ``request.output``), and return the exit code
    (:meth:`~kvalign.audit.AuditReport.exit_code`).

    Raises:
        typer.Exit: a typed error (one ``kvalign: error:`` line on stderr first, and
            with ``--format json`` the JSON error document on stdout), or a bug (exit
            70), as :func:`kvalign.cli.exit.guarded` turns them.
    """
    from kvalign.auditing import AuditStopped
    from kvalign.auditing import run as run_audit
    from kvalign.report import audit as audit_report
    from kvalign.safeio import refuse_output, write_output

    output = request.output

    def run() -> int:
        warn_beyond_newest(request.vllm_version)
        try:
            if output is not None:  # a link, special file, path out of the tree: before any work
                try:
                    refuse_output(output)
                except KvalignError as exc:
                    raise AuditStopped(exc, (), ()) from None
            outcome = run_audit(request)
        except AuditStopped as exc:
            # the reasons behind "nothing found" (e.g. an image not recognised as vLLM)
            # are kept for --verbose; --format json still prints a document
            _say(exc.messages)
            if output_format is AuditFormat.json:
                text = audit_report.error_to_json(str(exc), exc.exit_code, list(exc.notes)) + "\n"
                # an error never replaces an existing file (it may be an input)
                if output is None or os.path.lexists(output):
                    echo(text)
                else:
                    try:
                        write_output(output, text, replace=False)
                    except KvalignError:
                        echo(text)
            raise
        _say(outcome.messages)
        report = outcome.report
        view = View(
            request.fail_on,
            None if output is None else audit_report.FILE_WIDTH,
            verbose=verbose,
            quiet=quiet,
        )
        AUDIT.emit(report, output_format, view, output)
        if output is not None:  # the report went to a file: say why exit 3 here, once
            _say((*outcome.unevaluated_messages(), f"{audit_report.headline(report)}"))
        return report.exit_code()

    with few_collections():
        return guarded(run)


def _say(messages: tuple[str, ...]) -> None:
    """Library messages on stderr, one ``kvalign: `` line each."""
    for message in messages:
        sys.stderr.write(f"kvalign: {message}\n")
