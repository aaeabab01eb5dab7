"""Helm chart folders and kustomize bases/overlays: rendered, then read as manifests.

A folder with ``Chart.yaml`` and ``templates/`` is a Helm chart; a folder with a
``kustomization.yaml`` is a kustomize base or overlay. Their files are not deployments on
their own (templates hold ``{{ }}``, overlays hold patches), so a folder scan renders
each root with the renderer on ``PATH`` (``helm template``; ``kustomize build``, else
``kubectl kustomize``) and reads the output. Each pool keeps its source file and line:
Helm marks every rendered document with ``# Source: CHART/templates/FILE``; a kustomize
object is found again by its name in the folder's own files. With no renderer on
``PATH`` the root is not evaluated (exit 3), and the message names the command to render
and pipe (``helm template RELEASE CHART | kvalign audit -``). Helm values files kept
beside a chart (``values-prod.yaml`` next to the chart's folder) are references of the
chart: the chart is rendered once more with each (``-f``), as its own release, and the
files are not read on their own. Nothing but those renderers
is ever run, only on the user's folders, with no shell.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from kvalign.deploy.kustomize import entries, kustomization, remote_references
from kvalign.deploy.model import Deployment, Location, Problem
from kvalign.safeio import read_text

#: seconds a renderer may take.
TIMEOUT = 120


def is_chart(folder: Path) -> bool:
    """A Helm chart folder: ``Chart.yaml`` and a ``templates/`` folder."""
    return (folder / "Chart.yaml").is_file() and (folder / "templates").is_dir()


def roots(path: Path) -> list[Path]:
    """Chart and kustomize folders at or below ``path`` (no hidden folders), outermost
    first; a folder inside a chart is part of it."""
    found: list[Path] = []
    for folder in [path, *sorted(_folders(path))]:
        if any(part.startswith(".") for part in folder.relative_to(path).parts):
            continue
        if any(root in folder.parents for root in found if is_chart(root)):
            continue
        if is_chart(folder) or kustomization(folder) is not None:
            found.append(folder)
    return found


def _folders(path: Path) -> list[Path]:
    """Every folder below ``path``, as ``path.rglob("*")`` filtered by ``is_dir()`` finds
    them (a symbolic link to a folder is one, but is not entered), without a ``stat``
    of every file: ``os.walk`` tells folders from the directory entries."""
    return [Path(root, name) for root, names, _ in os.walk(path) for name in names]


def referenced(root: Path) -> set[Path]:
    """Folders a kustomization names in ``resources`` / ``bases`` (an overlay's bases:
    rendered through the overlay, not on their own)."""
    file = kustomization(root)
    if file is None:
        return set()
    names = entries(read_text(file))
    return {(root / n).resolve() for n in names if (root / n).is_dir()}


def values_beside(root: Path) -> list[Path]:
    """Helm values files kept beside a chart folder (``deploy/values-prod.yaml`` next to
    ``deploy/falcon-pd/``: a name with ``values`` in it, ``.yaml`` / ``.yml``), when the
    chart is the only one in that folder (else which chart a file is for is unknown, and
    the files are read as they are)."""
    if not is_chart(root) or root.parent == root:
        return []
    folder = root.parent
    charts = [p for p in folder.iterdir() if p.is_dir() and is_chart(p)]
    if charts != [root] and [c.resolve() for c in charts] != [root.resolve()]:
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.suffix in (".yaml", ".yml") and "values" in p.stem.lower()
    )


def release(root: Path, values: Path | None = None) -> str:
    """The release name a chart is rendered as: the chart folder's name, with the values
    file's stem for a values file beside it (``falcon-pd-values-prod``: releases of
    different values files are different deployments)."""
    return root.name if values is None else f"{root.name}-{values.stem}"


def command(
    root: Path,
    which: Callable[[str], str | None] = shutil.which,
    values: Path | None = None,
) -> list[str] | None:
    """The renderer command for ``root`` (``None``: no renderer on ``PATH``); ``values``:
    a values file beside the chart (``helm template … -f VALUES``)."""
    if is_chart(root):
        helm = which("helm")
        extra = ["-f", str(values)] if values is not None else []
        return [helm, "template", release(root, values), str(root), *extra] if helm else None
    kustomize = which("kustomize")
    if kustomize:
        return [kustomize, "build", str(root)]
    kubectl = which("kubectl")
    return [kubectl, "kustomize", str(root)] if kubectl else None


def hint(root: Path, values: Path | None = None) -> str:
    """The command to render ``root`` by hand and pipe it into audit."""
    if is_chart(root):
        extra = f" -f {values}" if values is not None else ""
        return f"helm template {release(root, values)} {root}{extra} | kvalign audit -"
    return f"kubectl kustomize {root} | kvalign audit -   (or: kustomize build {root} | …)"


def render(root: Path, values: Path | None = None) -> tuple[str | None, Problem | None]:
    """``(rendered text, None)``, or ``(None, blocking problem)`` naming what to run;
    ``values``: a values file beside the chart, rendered with it."""
    where = Location(str(root / "Chart.yaml") if is_chart(root) else str(kustomization(root)))
    if values is not None:
        where = Location(str(values))
    what = "a Helm chart" if is_chart(root) else "a kustomize folder"
    if values is not None:
        what += f" with {values.name}"
    if not is_chart(root):
        remote = remote_references(root)
        if remote:
            more = f" (and {len(remote) - 1} more)" if len(remote) > 1 else ""
            return None, Problem(
                where, f"{what}: not rendered: it names the remote resource {remote[0]}"
                f"{more}, which kustomize would fetch (kvalign reaches no network): render it "
                f"and pipe the output: `{hint(root, values)}`",
            )  # fmt: skip
    argv = command(root, values=values)
    if argv is None:
        tool = "helm" if is_chart(root) else "kustomize or kubectl"
        return None, Problem(
            where, f"{what}: not rendered ({tool} is not on PATH): render it and pipe the "
            f"output: `{hint(root, values)}`",
        )  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, Problem(
            where, f"{what}: `{' '.join(argv)}` failed ({exc}); try `{hint(root, values)}`"
        )
    if done.returncode != 0:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        # kubectl's klog lines (``E1202 01:12:03 … err=<``) bury the cause: prefer "Error:"
        first = next((ln for ln in lines if ln.startswith("Error:")), lines[0] if lines else "")
        first = first or "no message"
        return None, Problem(
            where,
            f"{what}: `{Path(argv[0]).name} {' '.join(argv[1:])}` exited "
            f"{done.returncode}: {first}",
        )
    return done.stdout, None


_SOURCE = re.compile(r"^# Source: (\S+)", re.MULTILINE)


def relocate(deployment: Deployment, root: Path, text: str) -> Deployment:
    """Point each pool back at its source file and line: the Helm ``# Source:`` template
    (line within it), or the kustomize folder's file that names the object."""
    starts = [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _SOURCE.finditer(text)]
    files = [
        p
        for folder in (root, *(_as_given(root, base) for base in sorted(referenced(root))))
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix in (".yaml", ".yml")
    ]
    pools = []
    for pool in deployment.pools:
        line = pool.location.line or 1
        where = pool.location
        before = [(n, s) for n, s in starts if n <= line]
        if before:
            number, source = before[-1]
            parts = Path(source).parts
            target = root.joinpath(*parts[1:]) if parts and parts[0] == root.name else root / source
            where = Location(str(target), max(1, line - number))
        else:
            where = _named(files, pool.name) or where
        pools.append(dataclasses.replace(pool, location=where))
    return dataclasses.replace(deployment, pools=tuple(pools))


def _as_given(root: Path, base: Path) -> Path:
    """A base folder (resolved) written as the run names ``root`` (relative stays
    relative: ``deploy/overlays/prod`` + ``../../base`` → ``deploy/base``)."""
    return Path(os.path.normpath(root / os.path.relpath(base, root.resolve())))


def _named(files: list[Path], name: str) -> Location | None:
    """The first ``name: NAME`` line of the kustomize folder's files, for the object's
    rendered name or that name less a ``namePrefix`` (``prod-vllm`` → ``vllm``)."""
    parts = name.split("-")
    for candidate in ["-".join(parts[i:]) for i in range(len(parts))]:
        pattern = re.compile(rf"^\s*name:\s*['\"]?{re.escape(candidate)}['\"]?\s*$")
        for file in files:
            for number, line in enumerate(read_text(file).splitlines(), 1):
                if pattern.match(line):
                    return Location(str(file), number)
    return None
