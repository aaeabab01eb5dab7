"""Plain ``vllm serve …`` command lines and shell scripts (and the ``--config`` YAML they name).

Every ``vllm serve`` (or ``python -m vllm.entrypoints.openai.api_server`` /
``python -m dynamo.vllm``) command becomes a pool. ``export VAR=value`` / ``VAR=value``
lines and ``VAR=value`` prefixes form the environment; words are split and ``$VAR`` /
``${VAR}`` expanded as bash does (:mod:`kvalign.deploy.shell`).
The role comes from the arguments (``kv_role``), else from a ``# prefill`` / ``# decode``
comment just above the command or the script's file name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from kvalign.deploy.common import PoolInput, build_pool, role_from_text
from kvalign.deploy.model import Deployment, Location, Pool, Problem
from kvalign.deploy.shell import assignments, shell_words
from kvalign.deploy.vllm_args import serve_arguments
from kvalign.errors import KvalignError

KIND = "command-line"
_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_SEPARATORS = ("&&", "||", ";", "|", "&")


def matches(text: str) -> bool:
    """Whether ``text`` launches vLLM at least once."""
    return re.search(r"\bvllm\s+serve\b|-m\s+(vllm\.entrypoints|dynamo\.vllm)\b", text) is not None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not buffer:
            start = number
        stripped = raw.rstrip()
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        out.append((start, buffer + stripped))
        buffer = ""
    if buffer:
        out.append((start, buffer))
    return out


def _cut(words: list[str]) -> list[str]:
    for i, word in enumerate(words):
        if word in _SEPARATORS:
            return words[:i]
    return words


def read(
    text: str,
    file: str,
    load_config: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> Deployment:
    """Read a command line or shell script.

    Args:
        text: the file's contents.
        file: its path (``-`` for stdin), for locations and the name fallback.
        load_config: resolves a ``--config`` path to its loaded YAML (``None`` = missing).
    """
    env: dict[str, str] = {}
    pools: list[Pool] = []
    problems: list[Problem] = []
    comment_role = ""
    count = 0
    for number, line in _logical_lines(text):
        stripped = line.strip()
        if stripped.startswith("#"):
            comment_role = stripped
            continue
        try:
            assigned = assignments(stripped, env)
        except KvalignError:
            assigned = None  # e.g. an unbalanced quote in a line that is not a launch
        if assigned is not None:
            env.update(assigned)
            continue
        if not matches(stripped):
            continue
        try:
            words = shell_words(stripped, env)
        except KvalignError as exc:
            problems.append(Problem(Location(file, number), str(exc)))
            continue
        local_env = dict(env)
        while words and _PREFIX.match(words[0]):
            key, value = words.pop(0).split("=", 1)
            local_env[key] = value
        launched = serve_arguments(words)
        if launched is None:
            continue
        launched = _cut(launched)
        count += 1
        config_files: dict[str, Mapping[str, Any]] = {}
        if "--config" in launched and load_config is not None:
            path = launched[launched.index("--config") + 1]
            loaded = load_config(path)
            if loaded is not None:
                config_files[path] = loaded
        hint = comment_role if role_from_text(comment_role) else PurePath(file).name
        found = PoolInput(
            role=None,
            role_source="args",
            name=f"command-{count}",
            args=launched,
            location=Location(file, number),
            env=local_env,
            name_hint=hint,
        )
        pool, found_problems = build_pool(found, config_files)
        problems += found_problems
        if pool is not None:
            pools.append(pool)
        comment_role = ""
    return Deployment(source=file, kind=KIND, pools=tuple(pools), problems=tuple(problems))
