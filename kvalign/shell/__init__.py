"""Evaluate a shell script far enough to know which words reach each command it runs.

Nothing is ever run. :mod:`.parse` parses (tree-sitter-bash), :mod:`.expand` expands words
as bash does, :mod:`.evaluate` walks the statements on each evaluation path (variables,
``if``/``case`` alternatives, functions, ``eval`` and ``sh -c``), and :mod:`.commands`
holds what comes out (:class:`Command`, :class:`Script`) and the markers of what could
not be resolved. Knows nothing of vLLM or containers: :mod:`kvalign.deploy.cmdline` reads
launches from the commands.
"""

from __future__ import annotations

from kvalign.shell.commands import (
    CLOSE,
    OPEN,
    UNRESOLVED,
    Command,
    Script,
    is_shell,
    remote_script,
    shell_script,
    shown,
    unresolved,
)
from kvalign.shell.evaluate import MAX_ALTERNATIVES, MAX_COMMANDS, ContainerSplit, evaluate
from kvalign.shell.expand import MAX_NESTING, MAX_WORD

__all__ = [
    "CLOSE",
    "MAX_ALTERNATIVES",
    "MAX_COMMANDS",
    "MAX_NESTING",
    "MAX_WORD",
    "OPEN",
    "UNRESOLVED",
    "Command",
    "ContainerSplit",
    "Script",
    "evaluate",
    "is_shell",
    "remote_script",
    "shell_script",
    "shown",
    "unresolved",
]
