"""Deployment readers: files → :class:`~kvalign.deploy.model.Deployment` objects.

One module per input kind, each with a :class:`~kvalign.deploy.interface.Reader`
(:mod:`.templated` unrendered Helm templates, :mod:`.own` kvalign YAML, :mod:`.stack`
production-stack values, :mod:`.compose` Docker Compose files, :mod:`.k8s` Kubernetes
manifests and llm-d / KServe / Dynamo resources, :mod:`.cmdline` shell scripts and command
lines, evaluated by :mod:`kvalign.shell`);
:func:`read_paths` gives each file to the first reader of
:data:`~kvalign.deploy.registry.READERS` that takes it (docs/inputs.md lists what each
reads), then applies what is common to all (LMCache config files, ignore comments). The
only audit layer that reads user files.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvalign.deploy import cmdline, justfile, kustomize, lmcache, render
from kvalign.deploy.common import ignores_in
from kvalign.deploy.interface import Source
from kvalign.deploy.model import ComponentBlockSize, Deployment, Location, Pool, Problem
from kvalign.deploy.registry import reader_for
from kvalign.errors import InvalidConfig, InvalidSettings, KvalignError
from kvalign.safeio import (
    MAX_FILE_BYTES,
    decode_text,
    load_yaml_documents,
    read_head,
    read_stream,
)
from kvalign.safeio import read_text as read_file_text
from kvalign.shell.expand import ShellBudgetExceeded

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
    "production-stack Helm values (servingEngineSpec.modelSpec), Docker Compose files running "
    "a vLLM image, llm-d-benchmark scenarios (LLMDBENCH_* variables), Ray Serve LLM P/D "
    "configs (prefill_config/decode_config), AIBrix StormService; Helm chart folders and "
    "kustomize folders are rendered (helm / kubectl on PATH)"
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


def _read(
    text: str,
    file: str,
    base: Path | None,
    notes: list[Problem],
    references: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
    run_files: tuple[Path, ...] = (),
    parsed: tuple[tuple[int, Any], ...] | None = None,
) -> Deployment | None:
    """Read one file's text (``file`` is its display name, ``-`` for stdin).

    ``base`` is the file's folder: ``--config`` files and ``LMCACHE_CONFIG_FILE`` files
    are looked up there (:mod:`kvalign.deploy.lmcache`); ``None`` (stdin) looks up nothing.
    ``run_files``: every file of the run, where an ``LMCACHE_CONFIG_FILE`` that is not
    next to the file is looked up by its name. ``parsed``: the text's YAML documents when
    the references pass parsed them (:attr:`Source.parsed`).

    Returns:
        A :class:`Deployment`, or ``None`` when the text is no deployment kvalign knows
        (e.g. a vLLM ``--config`` YAML on its own, manifests without a vLLM container).
        A file that plainly launches vLLM but yields no pool is a deployment with one
        blocking problem giving the reasons (``launches`` > 0 or a vLLM image /
        ``vllm serve`` in its text): it is reported as not evaluated, never skipped.

    Raises:
        InvalidConfig: a YAML file that does not parse; a kvalign-schema field of the wrong type.
            A script over the shell budget is no error: it is a deployment with one blocking
            problem naming the budget (not evaluated, exit 3, whether named or scanned).
    """
    ignores, problems = ignores_in(text, file)
    source = Source(
        text, file, base, file == "-" and cmdline.matches(text, strict=False), references,
        parsed,
    )  # fmt: skip
    reader = reader_for(source)
    if reader is None:
        return None
    try:
        deployment = reader.read(source)
    except ShellBudgetExceeded as exc:  # read, but its evaluation stopped: not evaluated
        return Deployment(
            source=file,
            kind=reader.kind,
            problems=(*problems, Problem(Location(file), str(exc))),
            ignores=tuple(ignores),
        )
    if not deployment.pools and not any(p.blocking for p in deployment.problems):
        if _only_configs(source):
            return None  # read through the files that name them (baseRefs)
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
    pools, lmcache_problems = lmcache.apply(deployment.pools, base, run_files)
    return dataclasses.replace(
        deployment,
        pools=tuple(pools),
        components=(*deployment.components, *worker_block_sizes(pools)),
        problems=(*problems, *deployment.problems, *lmcache_problems),
        ignores=tuple(ignores),
    )


def _only_configs(source: Source) -> bool:
    """Whether every document is a KServe ``LLMInferenceServiceConfig`` (a base that
    another file's ``baseRefs`` names, read through it; not a launch of its own)."""
    try:
        values = [v for v in source.values if v is not None]
    except KvalignError:  # pragma: no cover - the reader parsed it already
        return False
    return bool(values) and all(
        isinstance(v, Mapping) and v.get("kind") == "LLMInferenceServiceConfig" for v in values
    )


def _references(
    paths: list[str], run: _Run | None = None
) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """KServe ``LLMInferenceServiceConfig`` specs of every file of the run, by name (the
    first file wins), so a ``baseRefs`` in one file finds a config in another; and the
    ``data`` of every ``ConfigMap`` of the run, keyed ``ConfigMap/NAME`` (first file wins),
    so an ``envFrom`` / ``configMapKeyRef`` finds a ConfigMap in another file.

    ``run`` (one :func:`read_paths` call) scans each folder once and keeps each file's
    text for the read that follows, so no file is listed or read twice."""
    run = run if run is not None else _Run()
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for file in _run_files(paths, run):
        try:
            text = run.keep(file)
            if "LLMInferenceServiceConfig" not in text and "ConfigMap" not in text:
                continue
            documents = load_yaml_documents(text, str(file))
        except KvalignError:
            continue  # reported when the file itself is read
        run.parsed(file, documents)
        for _, doc in documents:
            if not isinstance(doc, Mapping):
                continue
            meta = doc.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str):
                continue
            if doc.get("kind") == "LLMInferenceServiceConfig":
                spec = doc.get("spec")
                if isinstance(spec, Mapping):
                    found.setdefault(name, (str(file), spec))
            elif doc.get("kind") == "ConfigMap":
                data = doc.get("data")
                found.setdefault(
                    f"ConfigMap/{name}", (str(file), data if isinstance(data, Mapping) else {})
                )
    return found


def _run_files(paths: list[str], run: _Run | None = None) -> tuple[Path, ...]:
    """Every file of the run: the files given by name and those the folder scans read."""
    run = run if run is not None else _Run()
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if raw == "-":
            continue
        files += run.scan(path).files if path.is_dir() else [path] if path.is_file() else []
    return tuple(files)


@dataclasses.dataclass
class _Scan:
    """What one folder scan (:func:`_scanned`) found: the files it reads, and what it
    reported into its ``unread`` / ``notes`` / ``others`` lists, in order."""

    files: list[Path]
    unread: list[Problem]
    notes: list[Problem]
    others: list[Path]


class _Run:
    """One :func:`read_paths` call's folder scans and file texts, so that the references
    pass and the read itself list each folder once and read each file once.

    A text is kept from its first read (:meth:`keep`) until its second (:meth:`text`),
    which takes it out again: at most every file of the run is held at once, as the
    folder read holds them anyway (to tell which file names which)."""

    def __init__(self) -> None:
        self._scans: dict[Path, _Scan] = {}
        self._texts: dict[Path, str | KvalignError] = {}
        self._documents: dict[Path, tuple[tuple[int, Any], ...]] = {}

    def scan(self, path: Path) -> _Scan:
        """:func:`_scanned` of the folder ``path``, computed on first use."""
        found = self._scans.get(path)
        if found is None:
            unread: list[Problem] = []
            notes: list[Problem] = []
            others: list[Path] = []
            found = _Scan(_scanned(path, unread, notes, others), unread, notes, others)
            self._scans[path] = found
        return found

    def keep(self, path: Path) -> str:
        """The text of ``path`` (:func:`_read_file`), kept for :meth:`text`.

        Raises:
            KvalignError: what :func:`_read_file` raises (kept too, raised again by
                :meth:`text`).
        """
        try:
            text = _read_file(path)
        except KvalignError as exc:
            self._texts[path] = exc
            raise
        self._texts[path] = text
        return text

    def parsed(self, path: Path, documents: list[tuple[int, Any]]) -> None:
        """Keep the YAML documents the references pass parsed from ``path``'s text, for
        :meth:`documents` (the read that follows parses each file once)."""
        self._documents[path] = tuple(documents)

    def documents(self, path: Path) -> tuple[tuple[int, Any], ...] | None:
        """The documents :meth:`parsed` kept for ``path`` (then forgotten), else ``None``."""
        return self._documents.pop(path, None)

    def text(self, path: Path) -> str:
        """The text of ``path``: the one :meth:`keep` read (then forgotten), else read now.

        Raises:
            KvalignError: what :func:`_read_file` raises.
        """
        kept = self._texts.pop(path, None)
        if kept is None:
            return _read_file(path)
        if isinstance(kept, KvalignError):
            raise kept
        return kept


def _only_references(path: Path, references: Mapping[str, tuple[str, Mapping[str, Any]]]) -> bool:
    """Whether ``path`` (a file given by name that is no deployment) defines something other
    files of the run refer to (a ``ConfigMap``, an ``LLMInferenceServiceConfig``)."""
    return any(Path(where) == path for where, _ in references.values())


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


#: most paths one run names (folders are scanned for their files).
MAX_FILES = 10_000
#: most pools one run reads. A deployment file holds a P/D pair, so the files budget
#: (:data:`MAX_FILES`) means about 20,000 pools (the 10,000-file audit benchmark reads
#: 20,590); 30,000 leaves room for files of a few more pools and keeps a run within
#: seconds (each pool is loaded, resolved and reported). Past it the run stops with one
#: line naming the file that passed it (exit 2).
MAX_POOLS = 30_000


class _PoolBudget:
    """The pools a :func:`read_paths` call has read, checked against :data:`MAX_POOLS`
    after every file (each deployment counted once)."""

    def __init__(self) -> None:
        self.pools = 0
        self.counted = 0

    def check(self, deployments: list[Deployment]) -> None:
        """Count the deployments appended since the last call.

        Raises:
            InvalidSettings: the run holds more than :data:`MAX_POOLS` pools (the
                message names the file that passed the budget).
        """
        for deployment in deployments[self.counted :]:
            self.pools += len(deployment.pools)
            if self.pools > MAX_POOLS:
                raise InvalidSettings(
                    f"{deployment.source}: the run holds more than {MAX_POOLS:,} pools with "
                    "this file (budget: pools per run): audit fewer files at once"
                )
        self.counted = len(deployments)


#: folders a scan never enters: version-control metadata and Python virtual environments
#: (installed packages, never a deployment), told by name / by their ``pyvenv.cfg``.
_NOT_SCANNED = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules"})


def _walk(path: Path, notes: list[Problem] | None) -> list[Path]:
    """Every entry below ``path`` a scan looks at, sorted: hidden files and folders
    included, symbolic links to folders followed (each real folder once: a link to a
    folder already scanned, or one that loops back, is noted and not read twice), but not
    :data:`_NOT_SCANNED` folders nor virtual environments."""
    return [child for child, _, _ in _walk_typed(path, notes)]


def _within(real: str, bounds: tuple[str, ...]) -> bool:
    """Whether the real path ``real`` is one of ``bounds`` or below one."""
    return any(real == b or real.startswith(b.rstrip(os.sep) + os.sep) for b in bounds)


def _bounds(path: Path) -> tuple[str, ...]:
    """Where a symbolic link met in a scan of ``path`` may lead: the scanned folder and
    the working tree (the current folder), as real paths. A link elsewhere (``/etc``,
    another checkout on the CI machine) is not followed: a hostile tree must not make
    kvalign read, and quote, a file outside it."""
    return (os.path.realpath(path), os.path.realpath(os.curdir))


def _outside(child: Path) -> Problem:
    """A scanned symbolic link that leads out of the scanned folder and the working
    tree, as a path not read."""
    return Problem(
        Location(str(child)),
        "a symbolic link out of the scanned folder and the working tree: not read (a pull "
        "request must not make kvalign read files elsewhere); --skip-unrelated accepts it",
    )


def _walk_typed(
    path: Path, notes: list[Problem] | None, outside: list[Path] | None = None
) -> list[tuple[Path, bool, bool]]:
    """:func:`_walk`'s entries, each with whether it is a symbolic link and (for one that
    is not) whether it is a regular file, as the folder listing tells (``os.scandir``:
    no ``stat`` per file). Lists the folders as ``os.walk`` does (top-down, a folder that
    cannot be listed is left out, links to folders not entered but followed afterwards);
    a folder that is not a link is at its parent's real path joined with its name, so
    no ``realpath`` per folder either. A link to a folder out of :func:`_bounds` is not
    followed: it goes to ``outside`` (when given)."""
    entries: list[tuple[str, bool, bool]] = []
    bounds = _bounds(path)
    seen: set[str] = set()
    pending = [path]
    while pending:
        folder = pending.pop()
        real = os.path.realpath(folder)
        if real in seen:
            if notes is not None:
                notes.append(
                    Problem(
                        Location(str(folder)),
                        "a symbolic link to a folder this scan reads already (or a loop): "
                        "its files are read once, through the real folder",
                        blocking=False,
                    )
                )
            continue
        seen.add(real)
        links: list[Path] = []
        folders = [(str(folder), real)]
        while folders:
            top, real_top = folders.pop()
            try:
                with os.scandir(top) as listing:
                    found = list(listing)
            except OSError:
                continue  # as os.walk without onerror
            for entry in found:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                name = entry.name
                child = os.path.join(top, name)
                if not is_dir:
                    link = entry.is_symlink()
                    entries.append((child, link, not link and entry.is_file()))
                    continue
                if name in _NOT_SCANNED or Path(child, "pyvenv.cfg").is_file():
                    continue
                if entry.is_symlink():
                    if _within(os.path.realpath(child), bounds):
                        links.append(Path(child))
                    elif outside is not None:
                        outside.append(Path(child))
                else:
                    real_child = os.path.join(real_top, name)
                    seen.add(real_child)
                    folders.append((child, real_child))
        pending += sorted(links, reverse=True)
    # sorted as the paths sort (part by part): every entry starts with the scanned
    # folder's text, so splitting at "/" orders them as their parts do
    entries.sort(key=lambda entry: entry[0].split("/"))
    return [(Path(child), link, regular) for child, link, regular in entries]


#: documentation (a README with ``vllm serve`` in a code block): never sniffed as a launch.
DOCUMENTATION = frozenset({".md", ".markdown", ".rst", ".adoc", ".html", ".htm"})


def _scanned(
    path: Path,
    unread: list[Problem] | None = None,
    notes: list[Problem] | None = None,
    others: list[Path] | None = None,
) -> list[Path]:
    """The files a directory scan reads, sorted: those of :data:`SUFFIXES` (any case) and
    Justfiles (:func:`_walk` says which folders are looked in).

    ``others`` receives every other regular file but documentation (:data:`DOCUMENTATION`),
    to be sniffed (:func:`_sniff`): one with a shell shebang is read as shell, one that
    mentions vLLM is listed as not read.
    ``unread`` receives, with the reason, the entries that cannot be read as files: a
    symbolic link that loops (whatever its name: a loop names no file to judge by), one
    with those suffixes that dangles, a FIFO, socket or device of any name but
    documentation's (a ``serve.sh``, a ``Justfile`` or a ``*.json`` alike: never skipped
    silently), and a symbolic link (to a file or a folder) that leads out of the scanned
    folder and the working tree (:func:`_bounds`). ``notes`` receives one
    note per symbolic link to a folder read already."""
    files: list[Path] = []
    outside: list[Path] = []
    bounds = _bounds(path)
    for child, link, regular in _walk_typed(path, notes, outside):
        loop = link and _loops(child)
        if link and not loop and child.exists() and not _within(os.path.realpath(child), bounds):
            outside.append(child)
            continue
        suffix = child.suffix.lower()
        wanted = suffix in SUFFIXES or justfile.is_justfile(child.name)
        if not wanted and not loop:
            if suffix in DOCUMENTATION:
                continue
            if child.is_file() if link else regular:
                if others is not None:
                    others.append(child)
            elif unread is not None and _special(child, link):
                # a name that is sniffed (a script, *.json, a Dockerfile): not skipped
                unread.append(_not_regular(child))
            continue
        if child.is_file() if link else regular:
            files.append(child)
        elif link and not child.exists():
            if unread is not None:
                unread.append(
                    Problem(
                        Location(str(child)),
                        "a symbolic link that loops or points "
                        "nowhere: not read; --skip-unrelated accepts it",
                    )
                )
        elif not child.is_dir() and unread is not None:
            unread.append(_not_regular(child))
    if unread is not None:
        unread.extend(_outside(child) for child in sorted(outside))
    return files


def _special(child: Path, link: bool) -> bool:
    """Whether a scanned entry that is no regular file is a FIFO, socket or device (for a
    symbolic link: what it points to; a link that dangles or loops is not)."""
    if not link:
        return True  # the listing said: neither a folder nor a regular file
    return child.exists() and not child.is_dir()


def _not_regular(child: Path) -> Problem:
    """A scanned FIFO, socket or device, as a path not read."""
    return Problem(
        Location(str(child)),
        "not a regular file (a FIFO, socket or device): not read; --skip-unrelated accepts it",
    )


#: bytes of a file of another name that are sniffed (:func:`_sniff`): the first
#: :data:`_BINARY_BYTES` tell binary from text, at most :data:`_SNIFF_BYTES` are searched.
_BINARY_BYTES = 8192
_SNIFF_BYTES = 1024 * 1024


def _sniff(child: Path) -> str | None:
    """The text of a scanned file of no known suffix, as far as a scan looks at it (at
    most :data:`_SNIFF_BYTES`, decoded leniently); ``None`` for a binary file (a NUL byte
    in its head) or one that cannot be read."""
    data = read_head(child, limit=_SNIFF_BYTES)
    if data is None or b"\0" in data[:_BINARY_BYTES]:
        return None
    return data.decode("utf-8", errors="replace")


def _loops(link: Path) -> bool:
    """Whether resolving the symbolic link ``link`` runs into a loop (``ELOOP``)."""
    try:
        os.stat(link)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


#: text that says a file is about vLLM or its KV transfer (:func:`_mention`).
_MENTION = re.compile(
    r"\bvllm\b|kv[_-](?:transfer[_-]config|connector)|\b(?:Nixl|LMCache|P2pNccl|Mooncake|SharedStorage|"
    r"Multi|Offloading)Connector(?:V1)?\b",
    re.IGNORECASE,
)


def _mention(text: str) -> tuple[int, str] | None:
    """The first line (number, words) that mentions vLLM or a KV connector, if any."""
    match = _MENTION.search(text)
    if match is None:
        return None
    return text.count("\n", 0, match.start()) + 1, match.group(0)


def _not_taken(
    child: Path, text: str, others: Mapping[Path, list[tuple[Path, str]]], sniffed: bool = False
) -> Problem | None:
    """A scanned file no reader takes although it mentions vLLM or a KV connector, as a
    path not read (with the reason); ``None`` when it mentions neither, or another file
    of its folder names it (a ``--config`` or ``LMCACHE_CONFIG_FILE`` file, looked up in
    the manifest's folder, is read through that file). ``others``: the scanned files and
    their texts by folder; ``sniffed``: a file of a name or type no reader reads (a
    Dockerfile, ``*.py``, ``*.json``, ...), never given to one."""
    found = _mention(text)
    if found is None:
        return None
    folder = [other for path, other in others.get(child.parent, ()) if path != child]
    if any(child.name in other for other in folder):
        return None
    line, words = found
    layout = (
        f"kvalign reads no file of this name or type ({child.suffix or child.name})"
        if sniffed
        else "no kvalign reader takes this layout"
    )
    return Problem(
        Location(str(child), line),
        f"mentions {words!r} but {layout} (docs/inputs.md lists the layouts read): not read; "
        "--skip-unrelated accepts it",
    )


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
    unread: list[Problem] | None = None,
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
        A file given by name inside a Helm chart folder renders that chart (once per
        run; :mod:`kvalign.deploy.render`).
        unread: receives the paths of a directory scan that no reader took although they
            may hold a launch (a file that mentions vLLM or a KV connector, a symbolic link
            loop, a FIFO), each with its reason (exit 3 unless ``--skip-unrelated``).

    Returns:
        ``(deployments, skipped)``: files that are deployments, and scanned files that are not.

    Raises:
        InvalidConfig: a missing path, a named file or stdin that cannot be read or is
            malformed (stdin that is not UTF-8 too), or a file given by name that is no
            deployment kvalign knows.
        InvalidSettings: more than :data:`MAX_FILES` paths, or the files read hold more
            than :data:`MAX_POOLS` pools (named at the file that passes it).
    """
    deployments: list[Deployment] = []
    skipped: list[str] = []
    sink: list[Problem] = notes if notes is not None else []
    if len(paths) > MAX_FILES:
        raise InvalidSettings(f"more than {MAX_FILES:,} paths (budget: files per run)")
    run = _Run()
    budget = _PoolBudget()
    references = _references(paths, run)
    run_files = _run_files(paths, run)
    charts: set[Path] = set()
    #: scanned files no reader took, judged once every file of the run is read
    #: (a file of no known name or type, only sniffed: True)
    pending: list[tuple[Path, str, dict[Path, list[tuple[Path, str]]], bool]] = []
    for raw in paths:
        if raw == "-":
            text = stdin_text if stdin_text is not None else _read_stdin()
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
            texts: list[tuple[Path, str]] = []
            untaken: list[tuple[Path, str]] = []
            covered = _rendered(path, deployments, skipped, sink, references)
            others: list[Path] = []
            scripts: list[Path] = []
            mentions: list[tuple[Path, str]] = []
            scan = run.scan(path)
            if unread is not None:
                unread += scan.unread
            sink += scan.notes
            others += scan.others
            for child in scan.files:
                if any(child.is_relative_to(folder) for folder in covered):
                    continue
                scripts.append(child)
            for child in others:
                if any(child.is_relative_to(folder) for folder in covered):
                    continue
                sniffed = _sniff(child)
                if sniffed is not None and cmdline.is_shell_script(sniffed):
                    scripts.append(child)  # an extensionless script: read as shell
                elif sniffed is not None and _mention(sniffed) is not None:
                    mentions.append((child, sniffed))
            for child in sorted(scripts):
                try:
                    text = run.text(child)
                    texts.append((child, text))
                    found = _read(
                        text, str(child), child.parent, sink, references, run_files,
                        run.documents(child),
                    )  # fmt: skip
                except KvalignError as exc:
                    deployments.append(_unreadable(child, exc))
                    continue
                if found is None:
                    untaken.append((child, text))
                else:
                    deployments.append(found)
                    budget.check(deployments)
            by_folder: dict[Path, list[tuple[Path, str]]] = {}
            for child, text in texts:  # grouped once: a scan of 10,000 files has many folders
                by_folder.setdefault(child.parent, []).append((child, text))
            pending += [(child, text, by_folder, False) for child, text in untaken]
            pending += [(child, text, by_folder, True) for child, text in mentions]
            continue
        chart = next((c for c in path.parents if render.is_chart(c)), None)
        if chart is not None:  # a chart's file given by name: the chart is rendered, once
            if chart not in charts:
                charts.add(chart)
                _render_one(chart, deployments, skipped, sink, references)
            continue
        if not path.exists() and not path.is_symlink():  # a symlink loop is read (and refused)
            raise InvalidConfig(f"{raw}: no such file or directory")
        found = _read(
            run.text(path), raw, path.parent, sink, references, run_files, run.documents(path)
        )
        if found is None and skip_unrelated:
            skipped.append(raw)
            sink.append(
                Problem(Location(raw), "no vLLM pool found: skipped (--skip-unrelated)", False)
            )
            continue
        if found is None and _only_references(path, references):
            skipped.append(raw)  # ConfigMaps / configs: read through the files naming them
            continue
        if found is None:
            reasons = [n.message for n in sink if n.location.file == raw]
            why = f" ({'; '.join(reasons)})" if reasons else ""
            raise InvalidConfig(
                f"{raw}: no prefill/decode deployment found{why}; kvalign reads: {INPUT_KINDS}"
            )
        deployments.append(found)
        budget.check(deployments)
    budget.check(deployments)  # rendered charts and stdin
    read_through = _lmcache_files(deployments)  # once every file of the run is read
    for child, text, by_folder, other_name in pending:
        if str(child) in read_through:  # an LMCACHE_CONFIG_FILE another file names
            skipped.append(str(child))
            continue
        no_reader = other_name or _no_reader(child, text)
        problem = _not_taken(child, text, by_folder, other_name) if no_reader else None
        if problem is not None and unread is not None:
            unread.append(problem)
        else:
            skipped.append(str(child))
    # a launch found but not understood (role unknown, ...) stays not evaluated even with
    # skip_unrelated: that flag skips only files with no vLLM launch or connector
    return _partnered_servers(deployments), skipped


def _read_stdin() -> str:
    """Standard input's text: its bytes (at most :data:`kvalign.safeio.MAX_FILE_BYTES`)
    decoded as UTF-8, so bytes that are not UTF-8 are refused by name (``-: not UTF-8
    text (byte N)``) rather than passed on as the lone surrogates a text stream with
    ``surrogateescape`` (the C / POSIX locale) would make of them.

    Raises:
        InvalidConfig: more than the size cap, not UTF-8, or no standard input at all
            (closed: ``kvalign audit - <&-``).
    """
    if sys.stdin is None:  # Python sets it to None when descriptor 0 is closed
        raise InvalidConfig("-: no standard input (it is closed)")
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream put in its place (tests): read as it is
        return read_stream(sys.stdin)
    try:
        data = buffer.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InvalidConfig(f"-: cannot read ({type(exc).__name__})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidConfig(f"-: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return decode_text(data, "-")


def _lmcache_files(deployments: list[Deployment]) -> set[str]:
    """The ``LMCACHE_CONFIG_FILE`` files the pools read so far (as found: the path the
    scan lists), which are read through those pools, not on their own."""
    return {
        pool.args.lmcache_chunk_source
        for deployment in deployments
        for pool in deployment.pools
        if pool.args.lmcache_chunk_source is not None
    }


#: truthy spellings of an LMCache boolean variable (``LMCACHE_ENABLE_PD``)
_TRUE = frozenset({"1", "true", "yes", "on"})


def _transfers_kv(pool: Pool) -> bool:
    """Whether ``pool``'s ``--kv-transfer-config`` connector can move KV caches between a
    prefill and a decode instance. vLLM's ``OffloadingConnector``
    (``vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py``) offloads
    this instance's blocks to CPU memory: never. ``LMCacheConnectorV1`` does P/D only in
    LMCache's disaggregated mode (``enable_pd`` with a ``pd_role``): not when neither
    ``LMCACHE_ENABLE_PD`` / ``LMCACHE_PD_ROLE`` nor an ``LMCACHE_CONFIG_FILE`` (which may
    set ``enable_pd``) is given. Any other connector (NIXL, P2P NCCL, Mooncake, ...) can."""
    connector = pool.args.kv_connector or ""
    if connector == "OffloadingConnector":
        return False
    if connector.startswith("LMCacheConnector"):
        enabled = (pool.env_value("LMCACHE_ENABLE_PD") or "").strip().lower() in _TRUE
        return (
            enabled
            or pool.env_value("LMCACHE_PD_ROLE") is not None
            or pool.env_value(lmcache.VAR) is not None
        )
    return True


def _partnered_servers(deployments: list[Deployment]) -> list[Deployment]:
    """A ``kv_both`` launch with no role is a standalone server only when no other launch of
    its model in the run could be its partner; otherwise its role is unknown (blocking:
    two ``kv_both`` NIXL servers of one model are a P/D pair whose roles are not named).
    A launch whose connector cannot transfer between instances (:func:`_transfers_kv`:
    CPU offloading) is a standalone server and nobody's partner."""
    launches: dict[str, int] = {}
    for deployment in deployments:
        for pool in deployment.pools:
            if pool.role != "server" or (pool.args.kv_transfer_config and _transfers_kv(pool)):
                launches[pool.model] = launches.get(pool.model, 0) + 1
    out: list[Deployment] = []
    for deployment in deployments:
        ambiguous = [
            p
            for p in deployment.pools
            if p.role == "server"
            and p.args.kv_transfer_config
            and _transfers_kv(p)
            and launches[p.model] > 1
        ]
        if not ambiguous:
            out.append(deployment)
            continue
        pools = tuple(p for p in deployment.pools if all(p is not a for a in ambiguous))
        lead = "" if pools else "launches vLLM but no prefill/decode pool was read: "
        problems = [
            Problem(
                p.location,
                f"{lead}{p.name}: role unknown (kv_role kv_both, and another launch of {p.model} "
                "in this run could be its partner): set kv_role kv_producer/kv_consumer in "
                "--kv-transfer-config or name the pools prefill/decode",
            )
            for p in ambiguous
        ]
        out.append(
            dataclasses.replace(deployment, pools=pools, problems=(*deployment.problems, *problems))
        )
    return out


def _rendered(
    path: Path,
    deployments: list[Deployment],
    skipped: list[str],
    sink: list[Problem],
    references: Mapping[str, tuple[str, Mapping[str, Any]]],
) -> list[Path]:
    """Render every Helm chart and kustomize root below ``path``
    (:mod:`kvalign.deploy.render`) and read the output; a root that cannot be rendered is
    not evaluated, naming the command to run. Returns the folders whose files the
    renders cover (not read again one by one)."""
    roots = render.roots(path)
    bases = {base for root in roots for base in render.referenced(root)}
    covered: list[Path] = []
    for root in roots:
        values = render.values_beside(root)
        covered += [root, *render.referenced(root), *values]
        if root.resolve() in bases:
            continue  # a base of an overlay of this run: read through the overlay
        _render_one(root, deployments, skipped, sink, references)
        for file in values:  # Helm values beside the chart: one more release each
            _render_one(root, deployments, skipped, sink, references, file)
    return covered


def _render_one(
    root: Path,
    deployments: list[Deployment],
    skipped: list[str],
    sink: list[Problem],
    references: Mapping[str, tuple[str, Mapping[str, Any]]],
    values: Path | None = None,
) -> None:
    """Render one chart or kustomize root (a chart with ``values``: a values file beside
    it) and read the output (or say what to run)."""
    text, problem = render.render(root, values)
    kind = "helm-chart" if render.is_chart(root) else "kustomize"
    if problem is not None:
        deployments.append(
            Deployment(source=problem.location.file, kind=kind, problems=(problem,), launches=1)
        )
        return
    file = str(root / "Chart.yaml") if render.is_chart(root) else str(kustomize.kustomization(root))
    if values is not None:
        file = str(values)
    try:
        found = _read(text or "", file, root, sink, references)
    except KvalignError as exc:
        deployments.append(_unreadable(Path(file), exc))
        return
    if found is None:
        skipped.append(file)
    else:
        deployments.append(render.relocate(dataclasses.replace(found, kind=kind), root, text or ""))


def _no_reader(child: Path, text: str) -> bool:
    """Whether no reader takes the file at all (a reader that takes it and finds no vLLM
    launch, e.g. a ``Service`` manifest, has read it)."""
    try:
        return reader_for(Source(text, str(child), child.parent)) is None
    except KvalignError:  # pragma: no cover - the file was read once already
        return False
