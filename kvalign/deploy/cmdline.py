"""Shell scripts and plain command lines that launch vLLM (and the ``--config`` YAML they
name).

The script is evaluated by :mod:`kvalign.shell` (tree-sitter-bash parse; which
assignments reach which command); ``docker run`` / ``podman run`` commands are split into
image and arguments here (:func:`container_image`). Every command that launches vLLM becomes a pool:
``vllm serve`` (also through a variable, ``$VLLM serve``), ``python -m
vllm.entrypoints.openai.api_server``, ``python -m dynamo.vllm`` (also
``python3 -m "$WORKER_MODULE"``), ``eval "$CMD"``, ``bash -c`` / ``-exc`` scripts, and
``docker run … vllm/vllm-openai:vX.Y.Z [MODEL] ARGS`` (the image's entrypoint is
``vllm serve``; its tag gives the release profile).

The role is decided per command: the arguments (``kv_role``, ``--disaggregation-mode``,
``--is-prefill-worker``), else the command as written (``--port $PREFILL_PORT``,
``> prefill.log``), the comments just above it, the enclosing function name, ``case``
pattern or ``if`` condition; the file name only when the file launches vLLM once. A
command whose ``if``/``case`` alternatives give different pools yields one pool per
alternative (named ``command-N.a``, ``command-N.b``), with a note listing them.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from kvalign.deploy.common import (
    PoolInput,
    build_pool,
    is_vllm_image,
    off_path,
    role_from_text,
    version_from_image,
)
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, Location, Pool, Problem
from kvalign.deploy.vllm_args import VllmArgs, dynamo_worker, serve_arguments
from kvalign.errors import InvalidSettings
from kvalign.shell import UNRESOLVED, Command, Script, is_shell, shown
from kvalign.shell import evaluate as evaluate_shell
from kvalign.shell.expand import ShellBudgetExceeded

KIND = "command-line"
_LAUNCH = re.compile(
    r"\bvllm\s+serve\b|-m\s+(vllm\.entrypoints|dynamo\.vllm)\b|vllm/vllm-openai|\bserve\b"
    r"|\bdynamo\.vllm\b|\bvllm\.entrypoints\b"
)
_STRICT = re.compile(r"\bvllm\s+serve\b|-m\s+(vllm\.entrypoints|dynamo\.vllm)\b")


_DOCKER_VALUE_OPTIONS = frozenset(
    {"-e", "--env", "-v", "--volume", "-p", "--publish", "--name", "--gpus", "--ipc",
     "--network", "--net", "--shm-size", "-w", "--workdir", "--env-file", "--runtime",
     "-u", "--user", "--entrypoint", "--device", "--mount", "--label", "-l", "--ulimit",
     "--cap-add", "--security-opt", "--platform", "--memory", "-m", "--cpus", "--pull",
     "--restart", "--hostname", "-h", "--add-host", "--log-driver", "--pid", "--uts"}
)  # fmt: skip


def container_image(words: list[str]) -> tuple[str, list[str]] | None:
    """``docker run [options] IMAGE ARGS…`` (also ``podman``, ``nerdctl``; ``create`` as
    ``run``) → ``(IMAGE, ARGS)``; the ``--entrypoint`` is put before ARGS when given.
    ``None`` when ``words`` is no container launch (or names no image)."""
    if len(words) < 3 or words[0].rsplit("/", 1)[-1] not in ("docker", "podman", "nerdctl"):
        return None
    if words[1] not in ("run", "create"):
        return None
    entrypoint: list[str] = []
    i = 2
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-"):
            break
        flag, eq, value = word.partition("=")
        if flag == "--entrypoint":
            entrypoint = [value] if eq else ([words[i + 1]] if i + 1 < len(words) else [])
        if not eq and flag in _DOCKER_VALUE_OPTIONS:
            i += 2
        else:
            i += 1
    if i >= len(words):
        return None
    return words[i], entrypoint + list(words[i + 1 :])


class ShellLimitReached(ShellBudgetExceeded):
    """A script another file runs (a container's ``bash -c``) holds a vLLM launch that a
    limit of the shell evaluator kept from being read; the message names the limit and
    the script's line. The file is not evaluated (a shell budget stop, see
    :func:`kvalign.deploy._read`)."""


def evaluate(
    text: str,
    env: Mapping[str, str] | None = None,
    positional: list[str] | tuple[str, ...] | None = None,
) -> Script:
    """The launches of a script another file runs (a container's ``command`` / ``args``):
    :func:`evaluate_script`, where a launch a limit kept from being read stops the file.

    Raises:
        ShellLimitReached: a stop (:attr:`~kvalign.shell.Script.stops`), or a launch with a
            word too long to read (:attr:`~kvalign.shell.Command.limits`).
    """
    script = evaluate_script(text, env, positional)
    for line, stop in script.stops:
        raise ShellLimitReached(f"a shell script it runs, line {line}: {stop}")
    for command in script.commands:
        if command.limits and launch_arguments(command) is not None:
            raise ShellLimitReached(
                f"a shell script it runs, line {command.line}: "
                f"{'; '.join(command.limits)}: this launch not evaluated"
            )
    return script


def evaluate_script(
    text: str,
    env: Mapping[str, str] | None = None,
    positional: list[str] | tuple[str, ...] | None = None,
) -> Script:
    """:func:`kvalign.shell.evaluate` with container launches split
    (:func:`container_image`): a ``docker run … IMAGE ARGS`` command's
    :attr:`~kvalign.shell.Command.image` is IMAGE and its words are ARGS; a part of the
    script a limit keeps from being read is a stop (:attr:`~kvalign.shell.Script.stops`)
    when it could launch vLLM (:func:`could_launch`)."""
    return evaluate_shell(text, env, positional, container_image, could_launch)


def could_launch(text: str) -> bool:
    """Whether ``text`` could launch vLLM, as far as its words tell without evaluating it
    (:func:`matches` with ``strict=False``: ``vllm serve``, a vLLM image, ``dynamo.vllm``)."""
    return matches(text, strict=False)


def matches(text: str, *, strict: bool = True) -> bool:
    """Whether ``text`` plainly launches vLLM (``vllm serve``, ``python -m
    vllm.entrypoints…`` / ``dynamo.vllm``). ``strict=False`` also accepts what only an
    evaluation can confirm (a launcher in a variable, a vLLM image in ``docker run``)."""
    if strict:
        return _STRICT.search(text) is not None
    return _LAUNCH.search(text) is not None and "vllm" in text.lower()


def launch_arguments(command: Command) -> list[str] | None:
    """The ``vllm serve`` arguments of one evaluated command (``None``: no vLLM launch).

    ``docker run IMAGE ARGS``: ARGS after ``vllm serve`` when they say so, else (a vLLM
    image, whose entrypoint is ``vllm serve``) ARGS themselves, unless an ``--entrypoint``
    shell replaced ``vllm serve`` (``--entrypoint /bin/sh IMAGE -c …``: no vLLM launch).
    """
    words = list(command.words)
    found = serve_arguments(words)
    if found is not None:
        return found
    if command.image is not None and is_vllm_image(command.image):
        return None if words and is_shell(words[0]) else words
    return None


def dynamo_mode(args: list[str]) -> str | None:
    """A Dynamo vLLM worker's role flag: ``--is-prefill-worker`` → ``prefill``,
    ``--is-decode-worker`` → ``decode``, ``--disaggregation-mode MODE`` → MODE; ``None``
    when it has none (in a file that also starts a prefill worker: the decode worker)."""
    for i, arg in enumerate(args):
        if arg == "--is-prefill-worker":
            return "prefill"
        if arg == "--is-decode-worker":
            return "decode"
        flag, eq, value = arg.partition("=")
        if flag == "--disaggregation-mode":
            return value if eq else (args[i + 1] if i + 1 < len(args) else "")
    return None


def _hint(command: Command, single: bool, file: str) -> str:
    """The text the role is read from when the arguments name none: the first of the
    command as written, its words, its hints and (``single``) the file name that names
    exactly one of prefill / decode."""
    candidates = [shown(command.written), shown(" ".join(command.words)), *command.hints]
    name = PurePath(file).name
    if single and "disagg" not in name.lower():
        candidates.append(name)
    for text in candidates:
        if role_from_text(text) is not None:
            return text
    return ""


#: the parsed arguments two alternatives are compared on: every field of
#: :class:`VllmArgs` its equality compares but the flags kvalign ignores.
_SIGNATURE_FIELDS = operator.attrgetter(
    *(
        f.name
        for f in dataclasses.fields(VllmArgs)
        if f.compare and f.name not in ("unknown", "unresolved", "unresolved_noted")
    )
)


def signature(pool: Pool) -> tuple[Any, ...]:
    """What makes two pools read from alternatives of one command different: role, model,
    sizes, settings and parsed arguments (not flags kvalign ignores): equal for two pools
    exactly when their ``args`` with those flags emptied (``dataclasses.replace``) are
    equal, without building them."""
    return (pool.role, pool.model, pool.tp, pool.dp, pool.settings, _SIGNATURE_FIELDS(pool.args))


def differences(commands: list[Command]) -> list[str]:
    """For each alternative: the variables (used by the command) that differ, else its
    branch conditions."""
    used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", " ".join(c.written for c in commands)))
    names = sorted(
        n
        for n in set().union(*(c.variables for c in commands))
        if len({c.variables.get(n) for c in commands}) > 1
    )
    shown_names = [n for n in names if n in used] or names
    out: list[str] = []
    for command in commands:
        parts = [f"{n}={shown(command.variables.get(n, '(unset)'))}" for n in shown_names[:4]]
        where = " and ".join(command.alternative) or "otherwise"
        out.append(f"{' '.join(parts)} [{where}]" if parts else f"[{where}]")
    return out


def read(
    text: str,
    file: str,
    load_config: Callable[[str], Mapping[str, Any] | None] | None = None,
) -> Deployment:
    """Read a command line or shell script.

    Args:
        text: the file's contents.
        file: its path (``-`` for stdin), for locations and the role fallback.
        load_config: resolves a ``--config`` path to its loaded YAML (``None`` = missing).
    """
    script = evaluate_script(text)
    problems = [Problem(Location(file, line), f"shell: {note}", blocking=False)
                for line, note in script.notes]  # fmt: skip
    # a part a limit kept from being read holds a launch: the file is not judged whole
    problems += [Problem(Location(file, line), f"shell: {stop}") for line, stop in script.stops]
    sites: dict[tuple[int, ...], list[tuple[Command, list[str]]]] = {}
    for command in script.commands:
        launched = launch_arguments(command)
        if launched is not None:
            sites.setdefault(command.site, []).append((command, launched))
    pools: list[Pool] = []
    versions: dict[str, str] = {}
    single = len(sites) == 1
    dynamo_prefill = any(
        dynamo_worker(c.words) and dynamo_mode(a) == "prefill"
        for alternatives in sites.values()
        for c, a in alternatives
    )
    for count, alternatives in enumerate(sites.values(), start=1):
        built: list[tuple[Command, Pool]] = []
        seen: set[tuple[Any, ...]] = set()
        site_problems: list[Problem] = []
        cuts: list[Problem] = []  # launches cut by a limit: blocking on any path
        for command, launched in alternatives:
            if command.limits:  # a word too long to read: this launch cannot be judged
                cut = Problem(
                    Location(file, command.line),
                    f"shell: {'; '.join(command.limits)}: this launch not evaluated",
                )
                if cut not in cuts:
                    cuts.append(cut)
                continue
            config_files: dict[str, Mapping[str, Any]] = {}
            if "--config" in launched and load_config is not None:
                index = launched.index("--config")
                if index + 1 < len(launched) and not UNRESOLVED.search(launched[index + 1]):
                    try:
                        loaded = load_config(launched[index + 1])
                    except InvalidSettings as exc:  # outside the folder: this launch only
                        refused = Problem(Location(file, command.line), str(exc))
                        if refused not in site_problems:
                            site_problems.append(refused)
                        continue
                    if loaded is not None:
                        config_files[launched[index + 1]] = loaded
            version = version_from_image(command.image) if command.image else None
            if version is not None and command.image is not None:
                versions.setdefault(version, command.image)
            # Dynamo's disaggregated pair: the worker without --is-prefill-worker decodes
            paired = dynamo_prefill and dynamo_worker(command.words)
            found = PoolInput(
                role="decode" if paired and dynamo_mode(launched) is None else None,
                role_source="dynamo pair" if paired else "args",
                name=f"command-{count}",
                args=launched,
                location=Location(file, command.line),
                env=dict(command.env),
                name_hint=_hint(command, single, file),
                vllm_version=version,
            )
            pool, found_problems = build_pool(found, config_files)
            for problem in found_problems:
                if problem not in site_problems:
                    site_problems.append(problem)
            if pool is None:
                continue
            key = signature(pool)
            if key not in seen:
                seen.add(key)
                built.append((command, pool))
        if built and len(alternatives) > 1:
            # another alternative of this command was evaluated: one that cannot be (an
            # unresolved $2 on the path where the script's default is not taken) is noted
            site_problems = off_path(site_problems)
        problems += site_problems + cuts
        if len(built) > 1:
            letters = "abcdefghijklmnopqrstuvwxyz"
            described = differences([c for c, _ in built])
            named = [
                dataclasses.replace(pool, name=f"command-{count}.{letters[i % 26]}")
                for i, (_, pool) in enumerate(built)
            ]
            listing = "; ".join(f"{p.name}: {d}" for p, d in zip(named, described, strict=True))
            problems.append(
                Problem(
                    built[0][1].location,
                    f"command-{count}: its if/case/loop alternatives give {len(named)} "
                    f"different pools, each evaluated: {listing}",
                    blocking=False,
                )
            )
            pools += named
        else:
            pools += [pool for _, pool in built]
    version = next(iter(versions), None)
    if len(versions) > 1:
        problems.append(
            Problem(
                Location(file),
                f"launches different vLLM images ({', '.join(versions.values())}); the "
                f"release profile is taken from the first ({version})",
                blocking=False,
            )
        )
    return Deployment(
        source=file,
        kind=KIND,
        pools=tuple(pools),
        problems=tuple(problems),
        vllm_version=version,
        version_source=f"image {versions[version]}" if version is not None else None,
        launches=len(sites),
    )


_SHELL_SUFFIXES = (".sh", ".bash")
#: a first line naming a POSIX shell (``#!/bin/sh``, ``#!/usr/bin/env bash``, ``zsh``, ...)
SHEBANG = re.compile(r"#![ \t]*+\S*/(?:env[ \t]++(?:-\S++[ \t]++)*+)?(?:ba|da|k|z)?sh\b")


def is_shell_script(text: str) -> bool:
    """Whether ``text`` opens with a shell shebang (an extensionless script is shell)."""
    return SHEBANG.match(text) is not None


class Reader:
    """Shell scripts and command lines as a :class:`~kvalign.deploy.interface.Reader`
    (:func:`matches`, :func:`read`)."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """A ``.sh`` / ``.bash`` file (any case) or one opening with a shell shebang, or text
        that launches vLLM (in a YAML file that holds a mapping or a list, only a plain
        ``vllm serve`` / ``python -m`` launch counts)."""
        if source.file.lower().endswith(_SHELL_SUFFIXES) or is_shell_script(source.text):
            return True
        structured = source.is_yaml and any(isinstance(d, (Mapping, list)) for d in source.values)
        return matches(source.text, strict=structured)

    def read(self, source: Source) -> Deployment:
        """:func:`read`, with ``--config`` files looked up beside the file."""
        return read(source.text, source.file, source.load_config)
