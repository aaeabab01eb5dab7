"""Remote references in a kustomization: what ``kustomize build`` would fetch.

``kustomize build`` / ``kubectl kustomize`` fetch a ``resources`` / ``bases`` /
``components`` entry that is a URL or a Git reference (``https://…``, ``git@…``,
``github.com/org/repo//path?ref=…``) with git or HTTP. kvalign reaches no network, so a
kustomize root that names one, itself or through a local base, is not rendered: the audit
names the entry and the command to render it yourself and pipe it in.
"""

from __future__ import annotations

import re
from pathlib import Path

from kvalign.safeio import read_text

#: file names that make a folder a kustomize root.
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: most kustomization files followed through local bases.
MAX_FILES = 200

# a list entry: ``- path`` / ``- "path"`` (resources, bases, components, …)
_ENTRY = re.compile(r"^[ \t]*-[ \t]*['\"]?([^'\"#\s]+)", re.MULTILINE)
# a Helm chart repository of ``helmCharts`` (``repo: https://…``)
_REPO = re.compile(r"^[ \t]*(?:-[ \t]*)?repo:[ \t]*['\"]?([^'\"#\s]+)", re.MULTILINE)
# what kustomize takes for a remote target: a scheme, ``git@host:``, or ``host.tld/…``
_REMOTE = re.compile(r"\A(?:[A-Za-z][A-Za-z0-9+.-]*://|git@|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/)")


def kustomization(folder: Path) -> Path | None:
    """The folder's kustomization file, if it is a kustomize root."""
    return next((folder / n for n in KUSTOMIZATIONS if (folder / n).is_file()), None)


def entries(text: str) -> list[str]:
    """The list entries of a kustomization's text (``resources``, ``bases``,
    ``components``, …: ``- path`` / ``- "path"``), in order; linear in the text."""
    return _ENTRY.findall(text)


def remote_references(root: Path) -> list[str]:
    """The remote entries (URLs, Git references, Helm repositories) that rendering the
    kustomize root ``root`` would fetch, in the order found: its own and those of the
    local bases it names, followed at most :data:`MAX_FILES` files deep. An entry that is
    a path that exists locally is local (``github.com/x`` may be a folder of that name).

    Raises:
        InvalidConfig / ConfigNotFound: a kustomization file cannot be read (as
            :func:`kvalign.safeio.read_text`).
    """
    found: list[str] = []
    seen: set[Path] = set()
    queue = [root]
    while queue and len(seen) < MAX_FILES:
        folder = queue.pop(0)
        file = kustomization(folder)
        key = folder.resolve()
        if file is None or key in seen:
            continue
        seen.add(key)
        text = read_text(file)
        for entry in entries(text):
            local = folder / entry
            if local.exists():
                if local.is_dir():
                    queue.append(local)
            elif _REMOTE.match(entry) and entry not in found:
                found.append(entry)
        for repo in _REPO.findall(text):
            if repo not in found:
                found.append(repo)
    return found
