"""What ``kustomize build`` would read: local files and folders, and remote references.

``kustomize build`` / ``kubectl kustomize`` fetch, with git or HTTP, any entry of a
kustomization that names a URL or a Git reference (``https://…``, ``git@…``,
``git::…``, ``github.com/org/repo//path?ref=…``) instead of a local path: in
``resources`` / ``bases`` / ``components``, a patch's ``path``, a generator's
``files`` / ``envs``, a Helm chart's ``repo``, a plugin configuration, …. kvalign reaches
no network, so a kustomize root that names one, itself or through any local base,
component or plugin configuration it names, is not rendered: the audit names the entry
and the command to render it yourself and pipe it in.

The kustomization is *parsed* (:func:`kvalign.safeio.load_yaml`: YAML, so JSON too, in
any style: block or flow lists, tagged, quoted or folded scalars), and every string of
every field that names a file, folder or URL is checked; local folders are followed, at
most :data:`MAX_FILES` files read in all. A walk that reaches that bound stops and says
so (:attr:`Walk.truncated`): the root is then refused, never rendered unchecked.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kvalign.safeio import load_yaml, load_yaml_documents, read_text

#: file names that make a folder a kustomize root.
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: most files (kustomizations and plugin configurations) read through local folders.
MAX_FILES = 200

#: fields whose every string (at any depth) is a path, a folder or a URL.
PATH_FIELDS = (
    "resources", "bases", "components", "crds", "configurations", "patchesStrategicMerge",
    "generators", "transformers", "validators",
)  # fmt: skip
#: fields holding a list of mappings whose ``path`` is a file (or a URL).
PATH_ITEM_FIELDS = ("patches", "patchesJson6902", "replacements")
#: generator fields: each item's ``files`` (``KEY=PATH`` or ``PATH``), ``envs`` and ``env``.
GENERATOR_FIELDS = ("configMapGenerator", "secretGenerator")
#: Helm fields: each chart's ``repo`` (always remote unless a local folder), its values
#: files, and the chart home.
HELM_FIELDS = ("helmCharts", "helmChartInflationGenerator", "helmGlobals")
_HELM_KEYS = (
    "repo", "chartRepoUrl", "valuesFile", "additionalValuesFiles", "values", "chartHome",
    "configHome",
)  # fmt: skip
#: plugin fields: an entry is a configuration file or an inline configuration, whose own
#: strings may name what a built-in plugin loads (a ``PatchTransformer``'s ``path``).
PLUGIN_FIELDS = ("generators", "transformers", "validators")

# what kustomize may take for a remote target (even when a local folder of that name exists):
# a scheme (``https://``, ``git::``, ``ssh:``), a ``user@host:`` Git reference, a
# ``host.tld/…`` path, a ``//`` subfolder separator or a ``?ref=`` query
_REMOTE = re.compile(
    r"\A\s*(?:[A-Za-z][A-Za-z0-9+.-]*:|[^/\s]*@|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?/)"
    r"|//|\?"
)


def kustomization(folder: Path) -> Path | None:
    """The folder's kustomization file, if it is a kustomize root."""
    return next((folder / n for n in KUSTOMIZATIONS if (folder / n).is_file()), None)


def looks_remote(entry: str) -> bool:
    """Whether kustomize could take ``entry`` (not a local path) for a remote target."""
    return _REMOTE.search(entry) is not None


@dataclasses.dataclass
class Walk:
    """What rendering a kustomize root reads (:func:`walk`).

    Attributes:
        remote: remote entries (URLs, Git references, Helm repositories), in order found.
        files: kustomizations read, and the local files they name (patches, generator
            files, plugin configurations, resources).
        folders: the kustomize folders followed, the root first.
        truncated: the walk stopped at :data:`MAX_FILES` with more to read.
    """

    remote: list[str] = dataclasses.field(default_factory=list)
    files: list[Path] = dataclasses.field(default_factory=list)
    folders: list[Path] = dataclasses.field(default_factory=list)
    truncated: bool = False


def _strings(value: Any) -> Iterator[str]:
    """Every string in ``value`` (lists and mapping values, at any depth)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


#: kinds of entry :func:`_named` yields
_PATH, _PLUGIN, _REPO = "path", "plugin", "repo"


def _items(value: Any) -> list[dict[str, Any]]:
    """The mappings of a field that holds a list of mappings (or one mapping)."""
    items = value if isinstance(value, list) else [value]
    return [item for item in items if isinstance(item, dict)]


def _named(data: Any) -> Iterator[tuple[str, str]]:
    """``(entry, kind)`` for every string of ``data`` (a parsed kustomization) that names
    a file, folder or URL, field by field; ``kind``: a path, a plugin entry (a
    configuration file, folder or inline configuration) or a Helm repository."""
    if not isinstance(data, dict):
        return
    for field in PATH_FIELDS:
        kind = _PLUGIN if field in PLUGIN_FIELDS else _PATH
        yield from ((s, kind) for s in _strings(data.get(field)))
    for field in PATH_ITEM_FIELDS:
        for item in _items(data.get(field)):
            yield from ((s, _PATH) for s in _strings(item.get("path")))
    for field in GENERATOR_FIELDS:
        for item in _items(data.get(field)):
            for entry in _strings(item.get("files")):
                yield entry.split("=", 1)[-1], _PATH  # KEY=PATH
            for key in ("envs", "env"):
                yield from ((s, _PATH) for s in _strings(item.get(key)))
    for field in HELM_FIELDS:
        for item in _items(data.get(field)):
            for key in _HELM_KEYS:
                kind = _REPO if key in ("repo", "chartRepoUrl") else _PATH
                yield from ((s, kind) for s in _strings(item.get(key)))
    for item in _items(data.get("openapi")):
        yield from ((s, _PATH) for s in _strings(item.get("path")))


def _local(folder: Path, entry: str) -> Path | None:
    """``entry`` as an existing path below ``folder`` (``None``: no such path)."""
    if not entry.strip() or "\x00" in entry:
        return None
    try:
        path = folder / entry.strip()
        return path if path.exists() else None
    except (OSError, ValueError):
        return None


def _fetched(entry: str, local: Path | None) -> bool:
    """Whether kustomize would fetch ``entry`` even though ``local`` (the path of that
    spelling below the kustomization, ``None``: none) exists: it loads an ``http(s)://``
    entry over HTTP before it looks on disk, and tries a folder entry as a Git
    repository first. So a remote-looking entry counts as local only when it is an
    existing file without ``://`` (a file is read from disk first); a planted folder
    ``github.com/org/repo`` or ``http:/host/x`` never clears it."""
    if not looks_remote(entry):
        return False
    return local is None or "://" in entry or not local.is_file()


def _urls_in(text: str, name: str) -> list[str]:
    """URL-like strings of a plugin configuration (inline or a file's text)."""
    docs = load_yaml_documents(text, name)
    return [s for _, doc in docs for s in _strings(doc) if _is_url(s)]


def _is_url(text: str) -> bool:
    """What is a URL for sure (``x://``, ``git::``, ``git@``): in a plugin configuration
    only these count (image names there look like ``host.tld/…`` paths)."""
    return "://" in text or text.lstrip().startswith(("git::", "git@"))


def walk(root: Path) -> Walk:
    """What rendering the kustomize root ``root`` reads: its kustomization, the local
    folders (bases, components, plugin folders) it names and theirs, the files they all
    name, and the remote entries among them. A folder is read once; at most
    :data:`MAX_FILES` files are read, then the walk stops with ``truncated`` set.

    Raises:
        InvalidConfig / ConfigNotFound: a kustomization or plugin configuration cannot
            be read or is not valid YAML (as :func:`kvalign.safeio.read_text` /
            :func:`kvalign.safeio.load_yaml`).
    """
    found = Walk()
    seen: set[Path] = set()
    queue = [root]
    reads = 0

    def remote(entry: str) -> None:
        if entry not in found.remote:
            found.remote.append(entry)

    while queue:
        folder = queue.pop(0)
        file = kustomization(folder)
        key = folder.resolve()
        if file is None or key in seen:
            continue
        if reads >= MAX_FILES:
            found.truncated = True
            break
        seen.add(key)
        reads += 1
        found.folders.append(folder)
        found.files.append(file)
        data = load_yaml(read_text(file), str(file))
        for entry, kind in _named(data):
            if "\n" in entry:  # inline content (a patch, a plugin configuration), no path
                for url in _urls_in(entry, str(file)) if kind == _PLUGIN else []:
                    remote(url)
                continue
            local = _local(folder, entry)
            if _fetched(entry, local):
                remote(entry)
            elif local is None:
                if kind == _REPO:
                    remote(entry)
            elif local.is_dir():
                queue.append(local)
            else:
                found.files.append(local)
                if kind == _PLUGIN:
                    if reads >= MAX_FILES:
                        found.truncated = True
                        return found
                    reads += 1
                    for url in _urls_in(read_text(local), str(local)):
                        remote(url)
    return found


def remote_references(root: Path) -> list[str]:
    """The remote entries (URLs, Git references, Helm repositories) that rendering the
    kustomize root ``root`` would fetch, in the order found (:func:`walk`). A
    remote-looking entry is local only when it names an existing file and holds no
    ``://`` (:func:`_fetched`: kustomize tries a folder as a Git repository first).

    Raises:
        InvalidConfig / ConfigNotFound: as :func:`walk`.
    """
    return walk(root).remote


def named_folders(root: Path) -> list[Path]:
    """The local folders ``root``'s own kustomization names (bases, components, plugin
    folders), in order; none when it has no kustomization or it cannot be read."""
    from kvalign.errors import KvalignError

    file = kustomization(root)
    if file is None:
        return []
    try:
        data = load_yaml(read_text(file), str(file))
    except KvalignError:
        return []
    out: list[Path] = []
    for entry, _ in _named(data):
        local = _local(root, entry)
        if local is not None and local.is_dir() and local not in out:
            out.append(local)
    return out
