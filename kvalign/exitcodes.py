"""kvalign's exit codes: one enum, used by the gate (:mod:`kvalign.policy`), audit
(:mod:`kvalign.audit`), the typed errors (:mod:`kvalign.errors`) and the CLI.

No imports: the CLI loads it before anything else.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``kvalign`` process exit status means (docs/policy.md, README)."""

    #: the gate passes (or the command succeeded).
    OK = 0
    #: the gate fails: a pair or finding at or above ``--fail-on`` (verify: a difference).
    FLAGGED = 1
    #: bad input or usage: one ``kvalign: error:`` line on stderr.
    USAGE = 2
    #: audit: a file could not be evaluated.
    UNEVALUATED = 3
    #: a bug in kvalign (no traceback; rerun with ``KVALIGN_DEBUG=1`` and report it).
    INTERNAL = 70
    #: interrupted (Ctrl-C), as shells report SIGINT.
    INTERRUPTED = 130
    #: the reader of stdout went away (``| head``): 128 + SIGPIPE.
    BROKEN_PIPE = 141
