"""Deployment readers: files → :class:`~kvalign.deploy.model.Deployment` objects.

One module per input kind, each with a :class:`~kvalign.deploy.interface.Reader`
(:mod:`.templated` unrendered Helm templates, :mod:`.own` kvalign YAML, :mod:`.stack`
production-stack values, :mod:`.k8s` Kubernetes manifests and llm-d / KServe / Dynamo
resources, :mod:`.cmdline` shell scripts and command lines, evaluated by :mod:`kvalign.shell`);
:func:`read_paths` gives each file to the first reader of
:data:`~kvalign.deploy.registry.READERS` that takes it (docs/inputs.md lists what each
reads), then applies what is common to all (LMCache config files, ignore comments). The
only audit layer that reads user files.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path

from kvalign.deploy import cmdline, justfile, lmcache
from kvalign.deploy.common import ignores_in
from kvalign.deploy.interface import Source
from kvalign.deploy.model import ComponentBlockSize, Deployment, Location, Pool, Problem
from kvalign.deploy.registry import reader_for
from kvalign.errors import InvalidConfig, InvalidSettings, KvalignError
from kvalign.safeio import read_stream
from kvalign.safeio import read_text as read_file_text

__all__ = ["INPUT_KINDS", "read_paths", "read_text", "refuse_output_over_input"]

#: file suffixes read when scanning a directory.
SUFFIXES = frozenset({".yaml", ".yml", ".sh", ".bash", ".txt", ".cmd"})


def worker_block_sizes(pools: tuple[Pool, ...] | list[Pool]) -> list[ComponentBlockSize]:
    """``--kv-cache-block-size`` given to a worker (e.g. ``python -m dynamo.vllm``).

    vLLM has no such flag; Dynamo's vLLM worker hands engine flags to vLLM, where the
    engine's block size is ``--block-size``. The value is therefore checked like the
    Dynamo frontend's: as a router-side block size that must equal the engines' (KVA006),
    never as the engine's block size.
    """
    return [
        ComponentBlockSize(
            f"{pool.label} --kv-cache-block-size (router-side)",
            pool.args.kv_cache_block_size,
            pool.location,
        )
        for pool in pools
        if pool.args.kv_cache_block_size is not None
    ]


def read_text(text: str, file: str, base: Path | None = None) -> Deployment | None:
    """Read one file's text: :func:`_read` without collecting notes."""
    return _read(text, file, base, [])


#: every input kind kvalign reads (docs/inputs.md), for "nothing found" messages.
INPUT_KINDS = (
    "kvalign YAML (model + prefill/decode), shell scripts and command lines launching vLLM "
    "(vllm serve, python -m vllm.entrypoints.openai.api_server, python -m dynamo.vllm, "
    "docker run vllm/vllm-openai, ssh HOST CMD, srun), Justfile recipes, Kubernetes "
    "Deployment/StatefulSet/Pod/Job, LeaderWorkerSet, llm-d ModelService values and "
    "DisaggregatedSet, KServe LLMInferenceService, NVIDIA Dynamo DynamoGraphDeployment, "
    "production-stack Helm values (servingEngineSpec.modelSpec)"
)
# linear: one possessive token per `image:`, then a check inside the token
_IMAGE_TOKEN = re.compile(r"image:\s*+['\"]?([^\s'\"]*+)")
_VLLM_IN_IMAGE = re.compile(r"\bvllm(?:-openai)?(?:[:@]|\Z)")


def _names_vllm_image(text: str) -> bool:
    """Whether ``text`` holds an ``image:`` naming a vLLM image (``…vllm:TAG``,
    ``…vllm-openai@sha``) or mentions ``vllm/vllm-openai``; linear in the text."""
    if "vllm/vllm-openai" in text:
        return True
    return any(_VLLM_IN_IMAGE.search(m.group(1)) for m in _IMAGE_TOKEN.finditer(text))


def _read(text: str, file: str, base: Path | None, notes: list[Problem]) -> Deployment | None:
    """:func:`_read_one`, a script over the shell budget named with its file.

    Raises:
        InvalidConfig: as :func:`_read_one`, or ``FILE: shell budget exceeded: …``.
    """
    from kvalign.shell.expand import ShellBudgetExceeded

    try:
        return _read_one(text, file, base, notes)
    except ShellBudgetExceeded as exc:
        raise InvalidConfig(f"{file}: {exc}") from None


def _read_one(text: str, file: str, base: Path | None, notes: list[Problem]) -> Deployment | None:
    """Read one file's text (``file`` is its display name, ``-`` for stdin).

    ``base`` is the file's folder: ``--config`` files and ``LMCACHE_CONFIG_FILE`` files
    are looked up there (:mod:`kvalign.deploy.lmcache`); ``None`` (stdin) looks up nothing.

    Returns:
        A :class:`Deployment`, or ``None`` when the text is no deployment kvalign knows
        (e.g. a vLLM ``--config`` YAML on its own, manifests without a vLLM container).
        A file that plainly launches vLLM but yields no pool is a deployment with one
        blocking problem giving the reasons (``launches`` > 0 or a vLLM image /
        ``vllm serve`` in its text): it is reported as not evaluated, never skipped.

    Raises:
        InvalidConfig: a YAML file that does not parse; a kvalign-schema field of the wrong type.
    """
    ignores, problems = ignores_in(text, file)
    source = Source(text, file, base, file == "-" and cmdline.matches(text, strict=False))
    reader = reader_for(source)
    if reader is None:
        return None
    deployment = reader.read(source)
    if not deployment.pools and not any(p.blocking for p in deployment.problems):
        plainly = (
            deployment.launches > 0
            or cmdline.matches(text)
            or (source.is_yaml and _names_vllm_image(text))
        )
        if not plainly:
            notes.extend(p for p in deployment.problems if p.verbose_only)
            return None  # e.g. manifests without a vLLM container
        reasons = "; ".join(dict.fromkeys(p.message for p in deployment.problems))
        where = next((p.location for p in deployment.problems), Location(file))
        message = "launches vLLM but no prefill/decode pool was read: " + (
            reasons or "no vLLM launch kvalign could follow (see docs/inputs.md)"
        )
        return dataclasses.replace(
            deployment,
            problems=(*problems, Problem(where, message)),
            ignores=tuple(ignores),
            launches=max(deployment.launches, 1),
        )
    pools, lmcache_problems = lmcache.apply(deployment.pools, base)
    return dataclasses.replace(
        deployment,
        pools=tuple(pools),
        components=(*deployment.components, *worker_block_sizes(pools)),
        problems=(*problems, *deployment.problems, *lmcache_problems),
        ignores=tuple(ignores),
    )


def _read_file(path: Path) -> str:
    """A deployment file's text (size-capped, UTF-8; see :mod:`kvalign.safeio`)."""
    return read_file_text(path)


def _unreadable(path: Path, exc: KvalignError) -> Deployment:
    """A scanned file that cannot be read, as a deployment with one blocking problem."""
    message = str(exc)
    line: int | None = None
    prefix = f"{path}:"
    if message.startswith(prefix):
        message = message[len(prefix) :]
        head, sep, rest = message.partition(":")
        if sep and head.isdigit():
            line, message = int(head), rest
        message = message.strip()
    return Deployment(
        source=str(path), kind="unreadable", problems=(Problem(Location(str(path), line), message),)
    )


#: most files one run reads (named and found by directory scans).
MAX_FILES = 10_000


def _scanned(path: Path) -> list[Path]:
    """The files a directory scan reads, sorted (:data:`SUFFIXES` and Justfiles, no hidden
    paths).

    Symlinked folders are not followed. Every other entry with a listed suffix is
    returned, also one that is no regular file (a FIFO, a symlink loop, a broken link), so
    that reading it reports it instead of skipping it silently.

    Raises:
        InvalidSettings: more than :data:`MAX_FILES` files (the files-per-run budget).
    """
    found: list[Path] = []
    for root, dirs, files in os.walk(path):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        for name in files:
            if name.startswith(".") or not (
                Path(name).suffix in SUFFIXES or justfile.is_justfile(name)
            ):
                continue
            found.append(Path(root) / name)
            if len(found) > MAX_FILES:
                raise InvalidSettings(
                    f"{path}: more than {MAX_FILES:,} files to read (budget: files per run)"
                )
    return sorted(found)


def refuse_output_over_input(output: str, paths: list[str], *others: str | None) -> None:
    """Refuse an ``--output`` path that is one of the inputs: a named file, a file a
    directory scan reads, or another input file (``--baseline``, ``--config``).

    Raises:
        InvalidSettings: the output would overwrite an input.
    """
    target = Path(output)
    if not target.exists():
        return
    target = target.resolve()
    inputs: list[Path] = [Path(p) for p in (*paths, *others) if p is not None and p != "-"]
    for path in inputs:
        candidates = _scanned(path) if path.is_dir() else [path]
        for candidate in candidates:
            if candidate.exists() and candidate.resolve() == target:
                raise InvalidSettings(
                    f"--output {output}: is one of the inputs ({candidate}); refusing to "
                    "overwrite it"
                )


def read_paths(
    paths: list[str],
    stdin_text: str | None = None,
    *,
    notes: list[Problem] | None = None,
    skip_unrelated: bool = False,
) -> tuple[list[Deployment], list[str]]:
    """Read every PATH (files, directories scanned recursively, ``-`` = stdin).

    A file found by a directory scan that cannot be read (malformed or hostile YAML, not
    UTF-8, too large, duplicate keys) does not stop the scan: it becomes a deployment
    with one blocking problem (reported as not evaluated, exit 3).

    Args:
        notes: receives non-blocking notes: files skipped by ``skip_unrelated``, containers
            not read as vLLM pools in files that have no pool (``verbose_only``).
        skip_unrelated: a file given by name that is no deployment is skipped with a note
            instead of raising (``--skip-unrelated``, for the pre-commit hook).

    Returns:
        ``(deployments, skipped)``: files that are deployments, and scanned files that are not.

    Raises:
        InvalidConfig: a missing path, a named file or stdin that cannot be read or is
            malformed, or a file given by name that is no deployment kvalign knows.
    """
    deployments: list[Deployment] = []
    skipped: list[str] = []
    sink: list[Problem] = notes if notes is not None else []
    if len(paths) > MAX_FILES:
        raise InvalidSettings(f"more than {MAX_FILES:,} paths (budget: files per run)")
    for raw in paths:
        if raw == "-":
            text = stdin_text if stdin_text is not None else read_stream(sys.stdin)
            found = _read(text, "-", None, sink)
            if found is None:
                reasons = [n.message for n in sink if n.location.file == "-"]
                why = f" ({'; '.join(reasons)})" if reasons else ""
                raise InvalidConfig(
                    f"-: stdin holds no deployment kvalign can read{why}; kvalign reads: "
                    f"{INPUT_KINDS}"
                )
            deployments.append(found)
            continue
        path = Path(raw)
        if path.is_dir():
            for child in _scanned(path):
                try:
                    found = _read(_read_file(child), str(child), child.parent, sink)
                except KvalignError as exc:
                    deployments.append(_unreadable(child, exc))
                    continue
                if found is None:
                    skipped.append(str(child))
                elif skip_unrelated and _launch_without_pool(found):
                    skipped.append(str(child))
                    sink.append(_skipped_launch(found))
                else:
                    deployments.append(found)
            continue
        if not path.exists() and not path.is_symlink():  # a symlink loop is read (and refused)
            raise InvalidConfig(f"{raw}: no such file or directory")
        found = _read(_read_file(path), raw, path.parent, sink)
        if found is not None and skip_unrelated and _launch_without_pool(found):
            skipped.append(raw)
            sink.append(_skipped_launch(found))
            continue
        if found is None and skip_unrelated:
            skipped.append(raw)
            sink.append(
                Problem(Location(raw), "no vLLM pool found: skipped (--skip-unrelated)", False)
            )
            continue
        if found is None:
            reasons = [n.message for n in sink if n.location.file == raw]
            why = f" ({'; '.join(reasons)})" if reasons else ""
            raise InvalidConfig(
                f"{raw}: no prefill/decode deployment found{why}; kvalign reads: {INPUT_KINDS}"
            )
        deployments.append(found)
    return deployments, skipped


def _launch_without_pool(deployment: Deployment) -> bool:
    """A file that launches vLLM but yields no pool only because no role could be
    decided (an aggregated server): ``--skip-unrelated`` skips it with a warning."""
    return (
        not deployment.pools
        and deployment.launches > 0
        and all("role unknown" in p.message or not p.blocking for p in deployment.problems)
    )


def _skipped_launch(deployment: Deployment) -> Problem:
    reason = next((p for p in deployment.problems if p.blocking), None)
    where = reason.location if reason is not None else Location(deployment.source)
    return Problem(
        where,
        f"{reason.message if reason else 'no pool'}: skipped (--skip-unrelated)",
        blocking=False,
    )
