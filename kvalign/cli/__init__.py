"""The ``kvalign`` command line: parse options → Settings → analyse → render → exit code.

No arithmetic here. Exit codes: 0 the gate passes, 1 it fails (:mod:`kvalign.policy`,
``--fail-on``), 2 bad input or usage, 3 (audit) a file could not be evaluated, 70
internal error (a bug: please report it).
"""

from kvalign.cli.app import app, main
from kvalign.cli.options import parse_tp_list
from kvalign.settings import MAX_BLOCK_SIZE, MAX_SPEC_TOKENS, MAX_TP

__all__ = ["MAX_BLOCK_SIZE", "MAX_SPEC_TOKENS", "MAX_TP", "app", "main", "parse_tp_list"]
