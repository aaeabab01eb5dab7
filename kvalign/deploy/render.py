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

A repository under audit can neither run code, reach the network nor write through a
renderer (issue #31): every path is absolute and after ``--`` (a folder named
``--enable-alpha-plugins`` is a folder), the only options are :data:`OPTIONS`, a values
file is read through kvalign's private copy, the release name is one Helm takes; the
renderer starts with no variable of kvalign's environment but ``PATH`` (:func:`environment`:
a private temporary home, no kube config, no plugins), in its own session, and its whole
process group is killed at :data:`TIMEOUT` seconds or :data:`MAX_OUTPUT` bytes; output that
is not UTF-8 is not evaluated. A kustomize root that names a remote resource in any form
(:func:`kvalign.deploy.kustomize.walk`) and a chart that would look a host up or load a
schema from a URL (:func:`chart_network`) are refused before anything runs. Every file a
renderer reads is recorded as an input of the run, so ``--output`` never replaces one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from kvalign.deploy import kustomize
from kvalign.deploy.kustomize import kustomization
from kvalign.deploy.model import Deployment, Location, Problem
from kvalign.errors import KvalignError
from kvalign.safeio import confined, note_input, read_bytes, read_text

#: seconds a renderer may take (wall clock), its whole process group killed after.
TIMEOUT: float = 120
#: most bytes of rendered output read (8 MiB, the size of the largest input file
#: kvalign reads, :data:`kvalign.safeio.MAX_FILE_BYTES`); more: not evaluated.
MAX_OUTPUT = 8 * 1024 * 1024
#: most bytes of a renderer's stderr kept (the rest is read and dropped).
MAX_STDERR = 64 * 1024
#: every option kvalign passes to a renderer: ``helm template [--values FILE] --
#: RELEASE CHART``, ``kustomize build -- DIR``, ``kubectl kustomize -- DIR``. Paths are
#: absolute and come after ``--`` (a values file is kvalign's private copy), so nothing
#: taken from the audited tree can be read as an option.
OPTIONS = frozenset({"--values", "--"})
#: the subcommands run: ``helm template``, ``kustomize build``, ``kubectl kustomize``.
SUBCOMMANDS = {"helm": "template", "kustomize": "build", "kubectl": "kustomize"}
#: the variables a renderer is started with (and nothing else of kvalign's environment):
#: ``PATH`` (its absolute entries), ``LANG``, and homes, caches, configurations and
#: plugin folders pointing into a private temporary folder.
ENVIRONMENT = (
    "PATH", "LANG", "HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
    "HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME", "HELM_PLUGINS",
    "HELM_NO_PLUGINS", "KUBECONFIG", "KUBERC", "KUSTOMIZE_PLUGIN_HOME",
)  # fmt: skip
#: longest Helm release name (Helm refuses longer ones).
MAX_RELEASE = 53


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
    """Folders a kustomization names (bases, components, plugin folders: rendered
    through the overlay, not on their own); none when it cannot be read."""
    return {folder.resolve() for folder in kustomize.named_folders(root)}


def values_beside(root: Path) -> list[Path]:
    """Helm values files kept beside a chart folder (``deploy/values-prod.yaml`` next to
    ``deploy/falcon-pd/``: a name with ``values`` in it, ``.yaml`` / ``.yml``), when the
    chart is the only one in that folder (else which chart a file is for is unknown, and
    the files are read as they are). A values file that is a symbolic link out of that
    folder and the working tree is not one: helm would be handed a file from elsewhere on
    the host (the scan lists it as not read)."""
    if not is_chart(root) or root.parent == root:
        return []
    folder = root.parent
    charts = [p for p in folder.iterdir() if p.is_dir() and is_chart(p)]
    if charts != [root] and [c.resolve() for c in charts] != [root.resolve()]:
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and p.suffix in (".yaml", ".yml")
        and "values" in p.stem.lower()
        and (confined(folder, p.name) is not None or confined(Path.cwd(), os.path.relpath(p)))
    )


_NOT_RELEASE = re.compile(r"[^a-z0-9-]+")
_NOT_FILE = re.compile(r"[^A-Za-z0-9._-]")


def release(root: Path, values: Path | None = None) -> str:
    """The release name a chart is rendered as: the chart folder's name, with the values
    file's stem for a values file beside it (``falcon-pd-values-prod``: releases of
    different values files are different deployments), made a name Helm takes (lower
    case letters, digits and ``-``; no ``-`` first or last; at most
    :data:`MAX_RELEASE` characters; ``release`` when nothing is left)."""
    name = Path(os.path.abspath(root)).name
    raw = name if values is None else f"{name}-{values.stem}"
    safe = _NOT_RELEASE.sub("-", raw.lower()).strip("-")[:MAX_RELEASE].rstrip("-")
    return safe or "release"


def _which(name: str) -> str | None:
    """``name`` on the absolute entries of ``PATH`` (never one relative to the folder
    kvalign runs in)."""
    return shutil.which(name, path=_search_path())


def _search_path() -> str:
    """``PATH`` less its empty and relative entries."""
    parts = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(p for p in parts if os.path.isabs(p))


def command(
    root: Path,
    which: Callable[[str], str | None] = _which,
    values: Path | None = None,
    copy: Path | None = None,
) -> list[str] | None:
    """The renderer command for ``root`` (``None``: no renderer on ``PATH``); ``values``:
    a values file beside the chart (``helm template --values VALUES …``, the release
    named after it); ``copy``: the file helm reads for it (kvalign's private copy).
    Every option is one of :data:`OPTIONS`; every path is absolute; the release and the
    chart come after ``--``."""
    if is_chart(root):
        helm = which("helm")
        if not helm:
            return None
        read = copy if copy is not None else values
        extra = ["--values", os.path.abspath(read)] if read is not None else []
        argv = [helm, "template", *extra, "--", release(root, values), os.path.abspath(root)]
    elif kustomizer := which("kustomize"):
        argv = [kustomizer, "build", "--", os.path.abspath(root)]
    elif kubectl := which("kubectl"):
        argv = [kubectl, "kustomize", "--", os.path.abspath(root)]
    else:
        return None
    options = argv[2 : argv.index("--") + 1]
    assert all(o in OPTIONS for o in options if o.startswith("-"))
    return argv


def _shown(path: Path) -> str:
    """``path`` as typed in a shell command (``./`` before a name that starts with
    ``-``, quoted when it holds a blank or a shell character)."""
    text = str(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)


def hint(root: Path, values: Path | None = None) -> str:
    """The command to render ``root`` by hand and pipe it into audit."""
    if is_chart(root):
        extra = f" -f {_shown(values)}" if values is not None else ""
        return f"helm template {release(root, values)} {_shown(root)}{extra} | kvalign audit -"
    return (
        f"kubectl kustomize {_shown(root)} | kvalign audit -   (or: kustomize build "
        f"{_shown(root)} | …)"
    )


def environment(home: Path) -> dict[str, str]:
    """The whole environment a renderer runs with (:data:`ENVIRONMENT`): ``PATH``'s
    absolute entries, ``LANG=C.UTF-8``, and every home, cache, configuration and plugin
    folder in ``home`` (a private temporary folder): no proxy, no kube config or
    context, no Helm repository or plugin, no kubectl preferences of the user."""
    env = {
        "PATH": _search_path(),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_DATA_HOME": str(home / "data"),
        "HELM_CONFIG_HOME": str(home / "helm-config"),
        "HELM_CACHE_HOME": str(home / "helm-cache"),
        "HELM_DATA_HOME": str(home / "helm-data"),
        "HELM_PLUGINS": str(home / "helm-plugins"),
        "HELM_NO_PLUGINS": "1",
        "KUBECONFIG": str(home / "kubeconfig"),
        "KUBERC": "off",
        "KUSTOMIZE_PLUGIN_HOME": str(home / "kustomize-plugins"),
    }
    assert tuple(env) == ENVIRONMENT
    return env


@dataclasses.dataclass
class _Ran:
    """What a renderer did: exit status, output, stderr; ``stopped``: why kvalign
    stopped it (``None``: it ran to its end)."""

    returncode: int
    stdout: bytes
    stderr: bytes
    stopped: str | None = None


def _kill_group(pid: int) -> None:
    """SIGKILL every process of the group ``pid`` leads (gone already: nothing)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _exited(pid: int) -> bool:
    """Whether the child ``pid`` has exited, without reaping it (its process group
    stays, so :func:`_kill_group` cannot hit a reused number)."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:  # pragma: no cover - not Linux
        return False
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    return waitid(os.P_PID, pid, flags) is not None


def run(argv: list[str], home: Path) -> _Ran:
    """Run ``argv`` in ``home`` (its working folder) with :func:`environment`, no stdin,
    in a new session, for at most :data:`TIMEOUT` seconds of wall clock and
    :data:`MAX_OUTPUT` bytes of output; then its whole process group is killed (a
    grandchild that holds the output pipe open never makes kvalign wait).

    Raises:
        OSError: the renderer cannot be started.
    """
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        cwd=home, env=environment(home), start_new_session=True, close_fds=True,
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT
    out, err = bytearray(), bytearray()
    stopped: str | None = None
    assert proc.stdout is not None and proc.stderr is not None
    try:
        with selectors.DefaultSelector() as chosen:
            chosen.register(proc.stdout, selectors.EVENT_READ, out)
            chosen.register(proc.stderr, selectors.EVENT_READ, err)
            ended = False
            while chosen.get_map() and stopped is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    stopped = "timeout"
                    break
                # once the renderer has exited, what it wrote is in the pipes already:
                # a pipe still open after that is held by a child it left behind
                ready = chosen.select(min(left, 0.2) if ended else min(left, 1.0))
                if not ready and ended:
                    break
                ended = ended or _exited(proc.pid)
                for key, _ in ready:
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        chosen.unregister(key.fileobj)
                    elif key.data is out:
                        out += chunk
                        if len(out) > MAX_OUTPUT:
                            stopped = "size"
                    elif len(err) < MAX_STDERR:
                        err += chunk[: MAX_STDERR - len(err)]
        while stopped is None and not _exited(proc.pid):
            if time.monotonic() >= deadline:
                stopped = "timeout"
            else:
                time.sleep(0.01)
    finally:
        _kill_group(proc.pid)
        proc.stdout.close()
        proc.stderr.close()
        returncode = proc.wait()
    return _Ran(returncode, bytes(out), bytes(err), stopped)


def _refused(where: Location, what: str, reason: str, root: Path, values: Path | None) -> Problem:
    """The blocking problem of a root kvalign does not render."""
    return Problem(
        where, f"{what}: not rendered: {reason}: render it and pipe the output: "
        f"`{hint(root, values)}`",
    )  # fmt: skip


#: the Helm template function that looks a host name up (DNS) while rendering
_DNS = b"getHostByName"
#: a URL (a scheme): what a JSON schema reference loads from the network
_SCHEME = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*:")
#: the JSON schema meta-schemas a validator knows without loading them
_META = re.compile(r"\Ahttps?://json-schema\.org/")
#: most bytes read out of a chart's packaged subcharts (``charts/*.tgz``), uncompressed
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024
#: deepest packaged subchart (an archive in an archive …) checked
MAX_ARCHIVE_DEPTH = 4


def _schema_network(data: bytes, name: str) -> str | None:
    """Why validating values against the JSON schema ``data`` would load something
    (a ``$ref`` with a scheme, a ``$ref`` under an ``$id`` with one, a meta-schema of
    another site); ``None``: it would not (or it is no JSON: helm then fails itself)."""
    from kvalign.safeio import JsonProblem, parse_json

    try:
        schema = parse_json(data.decode("utf-8-sig"))
    except (JsonProblem, UnicodeDecodeError):
        return None
    refs: list[str] = []
    ids: list[str] = []
    metas: list[str] = []
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, str) and key in ("$ref", "$dynamicRef", "$recursiveRef"):
                    refs.append(value)
                elif isinstance(value, str) and key in ("$id", "id"):
                    ids.append(value)
                elif isinstance(value, str) and key == "$schema":
                    metas.append(value)
                else:
                    stack.append(value)
    for ref in refs:
        if _SCHEME.match(ref):
            return f"its values schema {name} refers to {ref}, which helm would load"
    if any(_SCHEME.match(i) for i in ids) and any(not r.startswith("#") for r in refs):
        return f"its values schema {name} refers to files under a URL ($id), which helm would load"
    for meta in metas:
        if not _META.match(meta):
            return f"its values schema {name} names the meta-schema {meta}, which helm would load"
    return None


def _content_network(data: bytes, name: str, budget: list[int], depth: int) -> str | None:
    """Why the chart file ``name`` (its bytes ``data``) makes ``helm template`` reach the
    network: a ``getHostByName`` call, a values schema that loads a URL, or the same in a
    packaged subchart (read up to ``budget[0]`` bytes in all); ``None``: nothing."""
    if _DNS in data:
        return f"{name} calls getHostByName, a DNS lookup while rendering"
    base = name.rsplit("/", 1)[-1]
    if base == "values.schema.json":
        return _schema_network(data, name)
    parent = name.rsplit("/", 2)[-2] if name.count("/") >= 1 else ""
    if parent == "charts" and base.endswith((".tgz", ".tar.gz")):
        return _archive_network(data, name, budget, depth + 1)
    return None


def _archive_network(data: bytes, name: str, budget: list[int], depth: int) -> str | None:
    """:func:`_content_network` for every file of the packaged subchart ``name``."""
    import io
    import tarfile
    import zlib

    if depth > MAX_ARCHIVE_DEPTH:
        return f"{name}: packaged subcharts nested deeper than {MAX_ARCHIVE_DEPTH}, unchecked"
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive:
                if not member.isfile():
                    continue
                if member.size > budget[0]:
                    return f"{name}: packaged subcharts larger than kvalign checks"
                handle = archive.extractfile(member)
                content = handle.read(member.size) if handle is not None else b""
                budget[0] -= len(content)
                why = _content_network(content, f"{name}:{member.name}", budget, depth)
                if why is not None:
                    return why
    except (tarfile.TarError, EOFError, OSError, zlib.error):
        return f"{name} is not a packaged subchart kvalign can read"
    return None


def chart_network(root: Path) -> str | None:
    """Why ``helm template`` of the chart ``root`` would reach the network, or read what
    kvalign cannot check (``None``: it would not): a file calling ``getHostByName`` (a
    DNS lookup), a ``values.schema.json`` whose references load URLs, the same in a
    packaged subchart (``charts/*.tgz``, at most :data:`MAX_ARCHIVE_BYTES` read), or a
    file that cannot be read (larger than a file kvalign reads, a FIFO, …). Every file
    of the chart is recorded as an input of the run."""
    budget = [MAX_ARCHIVE_BYTES]
    for top, _, names in os.walk(root):
        for file in sorted(names):
            path = Path(top, file)
            note_input(path)
            try:
                data = read_bytes(path)
            except KvalignError as exc:
                return f"it holds a file kvalign cannot check ({exc})"
            rel = path.relative_to(root).as_posix()
            why = _content_network(data, rel, budget, 0)
            if why is not None:
                return why
    return None


def _note_folder(folder: Path) -> None:
    """Record every regular file below ``folder`` as an input of this run (what the
    renderer reads: templates, helpers, schema, patches, …), so ``--output`` never
    replaces one. Symbolic links to folders are not entered."""
    for top, _, names in os.walk(folder):
        for name in names:
            note_input(os.path.join(top, name))


def render(root: Path, values: Path | None = None) -> tuple[str | None, Problem | None]:
    """``(rendered text, None)``, or ``(None, blocking problem)`` naming what to run;
    ``values``: a values file beside the chart, rendered with it.

    A kustomize root is first walked (:func:`kvalign.deploy.kustomize.walk`): one that
    names a remote resource, cannot be read, or names more files than the walk reads is
    refused. Every file the renderer reads is recorded as an input of the run
    (:func:`kvalign.safeio.note_input`). The renderer runs as :func:`run` does; output
    that is larger than :data:`MAX_OUTPUT` or not UTF-8 is refused."""
    chart = is_chart(root)
    where = Location(str(root / "Chart.yaml") if chart else str(kustomization(root)))
    if values is not None:
        where = Location(str(values))
    what = "a Helm chart" if chart else "a kustomize folder"
    if values is not None:
        what += f" with {values.name}"
    if chart:
        why = chart_network(root)
        if why is not None:
            return None, _refused(where, what, why, root, values)
    else:
        try:
            walked = kustomize.walk(root)
        except KvalignError as exc:
            return None, _refused(where, what, str(exc), root, values)
        for folder in walked.folders:
            _note_folder(folder)
        for file in walked.files:
            note_input(file)
        if walked.remote:
            remote = walked.remote
            more = f" (and {len(remote) - 1} more)" if len(remote) > 1 else ""
            return None, Problem(
                where, f"{what}: not rendered: it names the remote resource {remote[0]}"
                f"{more}, which kustomize would fetch (kvalign reaches no network): render it "
                f"and pipe the output: `{hint(root, values)}`",
            )  # fmt: skip
        if walked.truncated:
            reason = (
                f"it names more than {kustomize.MAX_FILES} files through its bases, more than "
                "kvalign checks for remote resources"
            )
            return None, _refused(where, what, reason, root, values)
    if command(root, values=values) is None:
        tool = "helm" if chart else "kustomize or kubectl"
        return None, Problem(
            where, f"{what}: not rendered ({tool} is not on PATH): render it and pipe the "
            f"output: `{hint(root, values)}`",
        )  # fmt: skip
    made = tempfile.TemporaryDirectory(prefix="kvalign-render-", ignore_cleanup_errors=True)
    with made as private:
        home = Path(private)
        copy = None
        if values is not None:  # helm reads kvalign's copy: no input-derived path
            try:
                data = read_bytes(values)
            except KvalignError as exc:
                return None, _refused(where, what, str(exc), root, values)
            if _DNS in data:  # a value the chart renders with `tpl`
                reason = f"{values.name} calls getHostByName, a DNS lookup while rendering"
                return None, _refused(where, what, reason, root, values)
            # named as the file is (helm's messages name it), less any character that
            # is not a letter, digit, ".", "_" or "-" (helm splits its list at ",")
            copy = home / "values" / (_NOT_FILE.sub("-", values.name) or "values.yaml")
            copy.parent.mkdir()
            copy.write_bytes(data)
        argv = command(root, values=values, copy=copy)
        assert argv is not None
        shown = f"{Path(argv[0]).name} {' '.join(argv[1:])}"
        try:
            done = run(argv, home)
        except OSError as exc:
            return None, Problem(
                where, f"{what}: `{' '.join(argv)}` failed ({exc}); try `{hint(root, values)}`"
            )
    if done.stopped == "timeout":
        return None, Problem(
            where, f"{what}: `{shown}` timed out after {TIMEOUT} seconds (stopped); try "
            f"`{hint(root, values)}`",
        )  # fmt: skip
    if done.stopped == "size":
        return None, Problem(
            where, f"{what}: `{shown}` printed more than {MAX_OUTPUT // (1024 * 1024)} MiB "
            f"(stopped; kvalign reads at most that): try `{hint(root, values)}`",
        )  # fmt: skip
    if done.returncode != 0:
        text = done.stderr.decode("utf-8", errors="replace")
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        # kubectl's klog lines (``E1202 01:12:03 … err=<``) bury the cause: prefer "Error:"
        first = next((ln for ln in lines if ln.startswith("Error:")), lines[0] if lines else "")
        first = first or "no message"
        return None, Problem(where, f"{what}: `{shown}` exited {done.returncode}: {first}")
    try:
        return done.stdout.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, Problem(
            where, f"{what}: `{shown}` printed output that is not UTF-8 text (byte "
            f"{exc.start}): try `{hint(root, values)}`",
        )  # fmt: skip


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
            inside = str(Path(*parts[1:])) if parts[:1] == (root.name,) and parts[1:] else source
            target = confined(root, inside)  # a path out of the chart is never named
            if target is not None:
                where = Location(str(target), max(1, line - number))
            else:
                where = _named(files, pool.name) or where
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
