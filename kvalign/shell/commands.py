"""What an evaluation yields (:class:`Command`, :class:`Script`), the markers of what it
could not resolve (:func:`unresolved`, :func:`shown`), and ``SHELL -c SCRIPT`` commands.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "ASSIGN",
    "CLOSE",
    "OPEN",
    "UNRESOLVED",
    "Command",
    "Script",
    "is_shell",
    "remote_script",
    "shell_script",
    "shown",
    "unresolved",
]

#: brackets around a piece kvalign cannot resolve (Unicode private-use characters).
OPEN, CLOSE = "\ue000", "\ue001"
#: one unresolved piece; group 1 is the text as written.
UNRESOLVED = re.compile(f"{OPEN}([^{OPEN}{CLOSE}]*){CLOSE}")
ASSIGN = re.compile(r"\A([A-Za-z_][A-Za-z0-9_]*)(\+?)=(.*)\Z", re.DOTALL)
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
_WRAPPERS = frozenset({"exec", "nohup", "command", "time", "setsid", "sudo", "builtin"})


def unresolved(text: str) -> str:
    """``text`` (as written in the script) marked as a value kvalign cannot know."""
    return f"{OPEN}{text}{CLOSE}"


def shown(text: str) -> str:
    """``text`` for people: unresolved pieces as written."""
    return UNRESOLVED.sub(lambda m: m.group(1), text)


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
        limits: what kept a word of this command from being read (a value expanding to more
            than :data:`kvalign.shell.MAX_WORD` characters, kept as written); ``()`` when
            every word was read. A launch with one is not evaluated.
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
    limits: tuple[str, ...] = ()


@dataclass
class Script:
    """What :func:`evaluate` found: the commands, notes (parse errors, merges) and stops.

    ``stops`` are the parts of the script a limit kept from being read (nested too deep,
    too many commands) in which a vLLM launch could be (by the ``launches`` test the caller
    gives :func:`evaluate`): ``(line, message naming the limit)``; such a file cannot be
    judged whole. A part with no launch in it is a note instead.
    """

    commands: list[Command] = field(default_factory=list)
    notes: list[tuple[int, str]] = field(default_factory=list)
    stops: list[tuple[int, str]] = field(default_factory=list)


def is_shell(word: str) -> bool:
    """Whether ``word`` names a POSIX shell (``bash``, ``/bin/sh``, …)."""
    return word.rsplit("/", 1)[-1] in _SHELLS


#: Slurm ``srun`` options that take a separate value (``-N 2``, ``--nodes 2``); others are
#: flags or written ``--name=value``.
_SRUN_VALUE_OPTIONS = frozenset(
    {"-A", "-B", "-C", "-D", "-G", "-J", "-N", "-c", "-d", "-e", "-i", "-m", "-n", "-o",
     "-p", "-q", "-t", "-w", "-x", "--account", "--chdir", "--constraint",
     "--container-image", "--container-mounts", "--container-name", "--container-workdir",
     "--cpus-per-task", "--dependency", "--distribution", "--error", "--exclude", "--export",
     "--gpus", "--gpus-per-node", "--gpus-per-task", "--gres", "--input", "--job-name",
     "--jobid", "--mem", "--mem-per-cpu", "--mem-per-gpu", "--mpi", "--nodelist", "--nodes",
     "--ntasks", "--ntasks-per-node", "--output", "--partition", "--qos", "--reservation",
     "--time"}
)  # fmt: skip
#: ``ssh`` options that take a value (OpenSSH ``ssh(1)``).
_SSH_VALUE_OPTIONS = frozenset("BbcDEeFIiJLlmOopQRSWw")


def _command_start(words: list[str] | tuple[str, ...]) -> int:
    """Index of the command that ``words`` run after wrappers: ``exec`` / ``nohup`` /
    ``sudo`` …, ``env`` and its ``VAR=x``, Slurm ``srun`` and its options."""
    i = 0
    while i < len(words):
        word = words[i].rsplit("/", 1)[-1]
        if word == "srun":
            i += 1
            while i < len(words) and words[i].startswith("-") and words[i] != "--":
                i += 2 if words[i] in _SRUN_VALUE_OPTIONS else 1
            if i < len(words) and words[i] == "--":
                i += 1
            continue
        if word not in _WRAPPERS and word != "env" and not ASSIGN.match(words[i]):
            return i
        i += 1
    return i


def remote_script(words: list[str] | tuple[str, ...]) -> str | None:
    """``ssh [options] HOST COMMAND…`` (after wrappers) → the command the remote shell
    runs (ssh joins the words with blanks); ``None`` when ``words`` is no such ssh."""
    i = _command_start(words)
    if i >= len(words) or words[i].rsplit("/", 1)[-1] != "ssh":
        return None
    i += 1
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        word = words[i]
        i += 2 if len(word) == 2 and word[1] in _SSH_VALUE_OPTIONS else 1
    if i < len(words) and words[i] == "--":
        i += 1
    if i + 1 >= len(words):  # no host, or no command: an interactive login
        return None
    if words[i].startswith("-"):  # after "--": ssh refuses such a host name, runs nothing
        return None
    return " ".join(words[i + 1 :])


#: ``tmux new-session`` / ``new-window`` / ``split-window`` options that take a value
#: (``tmux(1)``), and the spellings of those commands.
_TMUX_VALUE_OPTIONS = frozenset("cefFlnpstxyL")
_TMUX_COMMANDS = frozenset({"new", "new-session", "neww", "new-window", "splitw", "split-window"})
#: ``screen(1)`` options that take a value (``-S NAME``, also last in a cluster: ``-dmS``)
_SCREEN_VALUE_OPTIONS = frozenset("ScehpsTt")


def session_script(words: list[str] | tuple[str, ...]) -> str | None:
    """``tmux new [-d] [-s NAME] … COMMAND…`` or ``screen -dmS NAME COMMAND…`` (after
    wrappers) → the command the session runs, as shell text: one word is a shell command
    (tmux hands it to the shell), several are an argv run as given; ``None`` when
    ``words`` is neither, or the session runs no command (an interactive shell)."""
    i = _command_start(words)
    if i >= len(words):
        return None
    program = words[i].rsplit("/", 1)[-1]
    if program == "tmux":
        i += 1
        while i < len(words) and words[i].startswith("-"):  # tmux's own options
            i += 2 if words[i][1:] in ("L", "S", "f", "T") else 1
        if i >= len(words) or words[i] not in _TMUX_COMMANDS:
            return None
        values = _TMUX_VALUE_OPTIONS
    elif program == "screen":
        values = _SCREEN_VALUE_OPTIONS
    else:
        return None
    i += 1
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        word = words[i]
        i += 2 if len(word) > 1 and word[-1] in values else 1
    if i < len(words) and words[i] == "--":
        i += 1
    if i >= len(words):
        return None
    # one word is shell text; several are argv, run as given (quoted back for the parser)
    return words[i] if i + 1 == len(words) else shlex.join(words[i:])


def shell_script(words: list[str] | tuple[str, ...]) -> tuple[str, list[str]] | None:
    """``[sh, -exc, SCRIPT, $0, $1…]`` (options may be combined: ``-ec``, ``-lc``,
    ``-exc``; ``-o pipefail`` takes an argument) → ``(SCRIPT, [$1 …])``; ``None`` when
    ``words`` is no ``SHELL -c SCRIPT`` (after ``env`` / ``exec`` / ``nohup`` wrappers)."""
    i = _command_start(words)
    if i >= len(words) or not is_shell(words[i]):
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
        if word in ("-", "+"):  # a lone "-" ends the options as "--" does; a lone "+" is none
            i += 1
            if word == "-":
                break
            continue
        break
    if not has_c or i >= len(words):
        return None
    return words[i], list(words[i + 2 :])
