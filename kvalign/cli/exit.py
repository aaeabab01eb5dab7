"""Exit codes (:class:`~kvalign.exitcodes.ExitCode`) and the one place typed errors become
a line on stderr and an exit code.

typer is imported only when an exit is raised, so the fast path
(:mod:`kvalign.cli.fast`) runs a passing or failing check without loading it.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from enum import Enum
from typing import NoReturn, TypeVar

from kvalign.errors import KvalignError
from kvalign.exitcodes import ExitCode


def fail(message: str, code: int = ExitCode.USAGE) -> NoReturn:
    """Print ``kvalign: error: message`` (one line) on stderr and exit with ``code``."""
    import typer

    one_line = " ".join(message.split())
    try:  # what stdout holds goes before the error line (a JSON error document)
        sys.stdout.flush()
    except (OSError, ValueError):  # a full device: the line below says so
        silence_stdout()
    sys.stderr.write(f"kvalign: error: {one_line}\n")
    raise typer.Exit(code)


#: errors of a write to stdout that say the device cannot take it (``> /dev/full``, a
#: quota, a file too large, an I/O error): one line and exit 2, never an internal error.
_WRITE_ERRNOS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name)
)


def is_write_failure(exc: BaseException) -> bool:
    """``exc`` is a write to stdout the device refused (no file name: not a path)."""
    return isinstance(exc, OSError) and exc.filename is None and exc.errno in _WRITE_ERRNOS


def stdout_failed(exc: OSError) -> NoReturn:
    """stdout cannot be written (``exc``: a full device, ...): point it at the null
    device (the final flush must not fail again) and stop with one line, exit 2."""
    silence_stdout()
    fail(f"stdout: cannot write the output ({exc.strerror or type(exc).__name__})")


def _flush_stdout() -> None:
    """Flush stdout inside :func:`guarded`, so a write that fails is reported there and
    not at the interpreter's exit."""
    stdout = sys.stdout
    if stdout is not None:
        stdout.flush()


T = TypeVar("T")


def silence_stdout() -> None:
    """Point stdout at the null device (its reader is gone: later writes and the final
    flush must not raise again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


def stdout_closed() -> NoReturn:
    """The reader of stdout closed the pipe (``| head``): stop quietly with exit 141."""
    import typer

    silence_stdout()
    raise typer.Exit(ExitCode.BROKEN_PIPE)


def exit_code_of(exc: BaseException) -> int | None:
    """The code of a ``typer.Exit`` (``None`` for anything else), without importing
    typer: when it is not loaded, nothing can have raised its ``Exit``."""
    typer = sys.modules.get("typer")
    if typer is not None and isinstance(exc, typer.Exit):
        return int(exc.exit_code)
    return None


def guarded(action: Callable[[], T]) -> T:
    """Run ``action`` and flush stdout; typed errors become one line on stderr + exit 2
    (also stdout on a full device: ``stdout: cannot write the output (...)``), a closed
    pipe exits 141, bugs exit 70."""
    try:
        result = action()
        _flush_stdout()
        return result
    except KvalignError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", ExitCode.INTERRUPTED)
    except BrokenPipeError:
        stdout_closed()
    except Exception as exc:  # a bug: no traceback, no locals
        if exit_code_of(exc) is not None or os.environ.get("KVALIGN_DEBUG"):
            raise
        if isinstance(exc, OSError) and is_write_failure(exc):
            stdout_failed(exc)
        if isinstance(exc, OSError) and exc.filename is not None:
            # a path the user named that the OS refuses (ENAMETOOLONG, EACCES, ...)
            fail(f"{exc.filename}: cannot be read ({exc.strerror or type(exc).__name__})")
        fail(
            f"internal error ({type(exc).__name__}: {exc}); rerun with KVALIGN_DEBUG=1 "
            "and report it",
            ExitCode.INTERNAL,
        )


def json_on_error(action: Callable[[], T], output_format: Enum | None) -> Callable[[], T]:
    """``action``, printing a JSON error document on stdout before a typed error when
    ``--format json`` was asked for (a CI consumer always gets a document to parse; the
    one-line message still goes to stderr and the exit code is unchanged)."""

    def run() -> T:
        try:
            return action()
        except KvalignError as exc:
            if output_format is not None and output_format.value == "json":
                from kvalign.cli.output import echo
                from kvalign.report.json_format import error_to_json

                echo(error_to_json(str(exc), exc.exit_code) + "\n")
            raise

    return run
