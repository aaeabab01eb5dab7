"""Bounded reading of user files and the one safe YAML loader every reader uses.

Every file kvalign reads (model ``config.json``, deployment files, ``--config`` YAML,
``.kvalign.yaml``, ``--baseline`` JSON, stdin) goes through :func:`read_bytes` /
:func:`read_text`, which refuse non-regular files (FIFOs, devices) and anything larger than
:data:`MAX_FILE_BYTES` without reading past the cap. YAML is parsed only here, by
:func:`load_yaml_documents` / :func:`load_yaml`: PyYAML's safe loader (no Python objects are
ever constructed), after checking the composed node graph for alias bombs ("billion
laughs"), recursive aliases and excessive nesting, so no reader can be made to hang or
exhaust memory by a small hostile file. Files are opened read-only (``O_NONBLOCK``, then
``fstat`` on the open descriptor, so a FIFO or device is refused without blocking).

Every file read is recorded by (device, inode) in :func:`run_inputs`; :func:`write_output`
(the only writer of ``--output`` / ``--plot``) refuses a path that is one of them (also
through a hard link), a symbolic link, a FIFO or a device, and a relative path leaving the
working tree; it writes atomically (a temporary file created ``O_EXCL | O_NOFOLLOW`` in the
same folder, then :func:`os.replace`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from kvalign.errors import ConfigNotFound, InvalidConfig

if TYPE_CHECKING:  # paths arrive as Path or str; the module itself needs no pathlib
    from pathlib import Path

#: largest file kvalign reads (real configs and manifests are well under 1 MiB).
MAX_FILE_BYTES = 8 * 1024 * 1024
#: deepest nesting accepted in a YAML document (real manifests nest < 20 levels).
MAX_YAML_DEPTH = 64
#: most YAML nodes a document may expand to once aliases are followed.
MAX_YAML_NODES = 1_000_000


#: deepest nesting accepted in JSON text (configs nest < 6 levels, flags < 4).
MAX_JSON_DEPTH = 64


class YamlRefused(InvalidConfig):
    """Text that is YAML but refused by :func:`check_yaml_node` (duplicate key, alias
    bomb, recursion, nesting): unlike a syntax error, never a shell script read as YAML."""


class JsonProblem(ValueError):
    """JSON text that :func:`parse_json` refuses; the message says why, without a prefix."""


#: longest integer literal accepted in JSON (Python's ``int()`` refuses > 4,300 digits;
#: real configs hold token ids and sizes of < 20 digits).
MAX_JSON_INT_DIGITS = 100


def _json_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise JsonProblem(
            f"an integer of {len(literal):,} digits (limit {MAX_JSON_INT_DIGITS} digits)"
        )
    return int(literal)


def nesting_depth(value: Any, limit: int) -> int:
    """Nesting depth of parsed JSON/YAML data, counting stops once it exceeds ``limit``."""
    stack = [(value, 1)]
    deepest = 0
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((child, level + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, level + 1) for child in node)
    return deepest


def parse_json(text: str, *, object_hook: Callable[[dict[str, Any]], Any] | None = None) -> Any:
    """``json.loads`` that never raises anything but :class:`JsonProblem`.

    Raises:
        JsonProblem: not JSON, nested deeper than :data:`MAX_JSON_DEPTH`, or an integer
            longer than :data:`MAX_JSON_INT_DIGITS` digits.
    """
    try:
        value = json.loads(text, object_hook=object_hook, parse_int=_json_int)
    except JsonProblem:
        raise
    except json.JSONDecodeError as exc:
        raise JsonProblem(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise JsonProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if nesting_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise JsonProblem(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def _too_large(path: Path | str) -> InvalidConfig:
    return InvalidConfig(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")


#: (st_dev, st_ino) of every file read in this process: what ``--output`` may not replace.
_INPUTS: set[tuple[int, int]] = set()


def run_inputs() -> frozenset[tuple[int, int]]:
    """(device, inode) of every file :func:`read_bytes` has opened in this process."""
    return frozenset(_INPUTS)


def forget_inputs() -> None:
    """Start a new run: clear :func:`run_inputs` (each CLI command calls this first)."""
    _INPUTS.clear()


def note_input(path: Path | str) -> None:
    """Record ``path`` (if it exists) as an input of this run without reading it."""
    with contextlib.suppress(OSError, ValueError):
        info = os.stat(path)
        _INPUTS.add((info.st_dev, info.st_ino))


def _os_reason(path: Path | str, exc: OSError) -> ConfigNotFound:
    if exc.errno == errno.ENOENT:
        return ConfigNotFound(f"{path}: no such file")
    return ConfigNotFound(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})")


_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def read_bytes(path: Path | str, *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file, read-only, at most ``limit`` bytes.

    The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open
    descriptor (no race between the check and the read): a FIFO, device or socket is
    refused without ever blocking. The file's (device, inode) joins :func:`run_inputs`.

    Raises:
        ConfigNotFound: the file does not exist, is a directory, is a symlink loop, has a
            name too long, or cannot be opened (the message names the file and the reason).
        InvalidConfig: not a regular file (FIFO, device, socket), or larger than ``limit``.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except IsADirectoryError:
        raise ConfigNotFound(f"{path}: is a directory without config.json") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError):  # an embedded NUL byte
            raise ConfigNotFound(f"{path}: not a valid file name") from None
        raise _os_reason(path, exc) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ConfigNotFound(f"{path}: is a directory without config.json")
        if not stat.S_ISREG(info.st_mode):
            raise InvalidConfig(f"{path}: not a regular file (FIFO, device or socket)")
        if info.st_size > limit:
            raise _too_large(path)
        _INPUTS.add((info.st_dev, info.st_ino))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _os_reason(path, exc) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # grew since fstat
        raise _too_large(path)
    return data


def confined(base: Path, raw: str) -> Path | None:
    """``raw`` (a path named inside an input file) as a file under ``base``, or ``None``
    when it is absolute, climbs out with ``..``, or resolves (through symlinks) outside
    ``base``: a path from a deployment file is never read from the rest of the host."""
    if not raw or "\x00" in raw or os.path.isabs(raw):
        return None
    try:
        path = base / raw
        root = base.resolve()
        path.resolve().relative_to(root)
    except (OSError, ValueError, RuntimeError):
        return None
    return path


def _shown(path: str) -> str:
    """``path`` as an error message may quote it: controls, bidi overrides, line breaks
    and lone surrogates (names that are not UTF-8) as escapes."""
    from kvalign.sanitize import clean

    return clean(path, newlines=False)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def refuse_output(path: str, *, option: str = "--output") -> tuple[str, os.stat_result | None]:
    """Check, before anything is computed or written, that ``path`` may receive output.

    The rules (``docs/security.md``): the file is a regular file or does not exist yet;
    its last component is not a symbolic link (a link planted in the audited tree would
    send the report elsewhere); it is none of this run's inputs (:func:`run_inputs`: the
    same (device, inode), so also a hard link to one); and a relative ``path`` stays in
    the working tree (the current directory): ``../x``, or a folder that is a symlink
    leading outside it, is refused. An absolute ``path`` is the user's explicit choice
    and may name any folder (still never through a symlink as its last component).

    Returns the path to write (its folder resolved, its last component as given) and its
    ``lstat`` (``None`` when it does not exist yet).

    Raises:
        InvalidSettings: refused (one line naming ``option`` and the path, escaped).
    """
    from kvalign.errors import InvalidSettings

    def refuse(reason: str) -> InvalidSettings:
        return InvalidSettings(f"{option} {_shown(path)}: {reason}")

    if not path or "\x00" in path:
        raise refuse("not a valid file name")
    folder, name = os.path.split(path)
    if not name or name in (".", ".."):
        raise refuse("names a directory, not a file; refusing to write there")
    try:
        real_folder = os.path.realpath(folder or ".")
        if not os.path.isabs(path):
            tree = os.path.realpath(".")
            if not _inside(real_folder, tree):
                raise refuse(
                    "leaves the working tree (a relative path may not climb out with `..` or "
                    "through a symlinked folder); give an absolute path to write outside it"
                )
        target = os.path.join(real_folder, name)
        info: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        info = None
    except InvalidSettings:
        raise
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "bad path"
        raise refuse(f"cannot write ({reason})") from None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise refuse("is a symbolic link; refusing to write through it")
        if not stat.S_ISREG(info.st_mode):
            raise refuse("not a regular file (directory, FIFO or device); refusing to write there")
        if (info.st_dev, info.st_ino) in _INPUTS:
            raise refuse("is one of this run's inputs; refusing to overwrite it")
    elif not os.path.isdir(real_folder):
        raise refuse("cannot write (its folder does not exist)")
    return target, info


_TEMP_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def write_output(path: str, text: str, *, option: str = "--output", replace: bool = True) -> None:
    """Write ``text`` to the file ``path`` asked for by ``option``, atomically.

    Refuses what :func:`refuse_output` refuses, checked again just before the write. The
    text (UTF-8; what UTF-8 cannot hold, e.g. a lone surrogate from a file name that is
    not UTF-8, as a backslash escape) goes to a new temporary file in the target's folder,
    created ``O_EXCL | O_NOFOLLOW`` (never an existing file or link), which then takes
    the target's place by :func:`os.replace` (a rename replaces a directory entry, never
    follows a link): a failed write never leaves a half-written or emptied file behind.
    An existing file keeps its mode; a new one gets ``0o666`` less the umask.
    ``replace=False`` never replaces an existing file (an error document): the temporary
    file is linked to the name, which fails when the name exists.

    Raises:
        InvalidSettings: refused, or the file cannot be written (the message names
            ``option`` and the path).
    """
    from kvalign.errors import InvalidSettings

    target, info = refuse_output(path, option=option)
    if info is not None and not replace:
        raise InvalidSettings(f"{option} {_shown(path)}: exists; an error never overwrites a file")
    folder, name = os.path.split(target)
    data = text.encode("utf-8", "backslashreplace")
    tmp_name = ""
    dir_fd = -1
    try:
        import secrets  # only when writing: not on every run's import path

        dir_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666
        for _ in range(100):
            candidate = f".kvalign-{secrets.token_hex(8)}.tmp"
            try:
                fd = os.open(candidate, _TEMP_FLAGS, mode, dir_fd=dir_fd)
            except FileExistsError:
                continue
            tmp_name = candidate
            break
        else:  # pragma: no cover - 100 collisions of 64 random bits
            raise FileExistsError(errno.EEXIST, "no free temporary name")
        with os.fdopen(fd, "wb") as handle:
            if info is not None:
                os.fchmod(handle.fileno(), mode)  # the umask applied to os.open's mode
            handle.write(data)
        # the name may have changed since refuse_output (a link planted meanwhile)
        try:
            now: os.stat_result | None = os.lstat(name, dir_fd=dir_fd)
        except FileNotFoundError:
            now = None
        if now is not None and (
            not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) in _INPUTS or not replace
        ):
            raise InvalidSettings(
                f"{option} {_shown(path)}: changed while writing (now a link, special file or "
                "input); refusing to write there"
            )
        if replace:
            os.replace(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            os.link(tmp_name, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
            os.unlink(tmp_name, dir_fd=dir_fd)
        tmp_name = ""
    except OSError as exc:
        raise InvalidSettings(
            f"{option} {_shown(path)}: cannot write ({exc.strerror or type(exc).__name__})"
        ) from None
    finally:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name, dir_fd=dir_fd)
        if dir_fd >= 0:
            os.close(dir_fd)


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (optionally with a BOM) → text.

    Raises:
        InvalidConfig: not UTF-8 (the message names the file and the byte offset).
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidConfig(f"{name}: not UTF-8 text (byte {exc.start})") from None


def read_head(path: Path | str, *, limit: int) -> bytes | None:
    """At most the first ``limit`` bytes of a regular file, for sniffing what it is (a
    larger file is not refused: only its head is read). Opened like :func:`read_bytes`
    (read-only, ``O_NONBLOCK``, ``fstat`` on the descriptor), so a FIFO, device or socket
    never blocks. ``None``: not a regular file, or it cannot be opened or read."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_text(path: Path | str, *, limit: int = MAX_FILE_BYTES) -> str:
    """:func:`read_bytes` then :func:`decode_text`. Raises what they raise."""
    return decode_text(read_bytes(path, limit=limit), str(path))


def read_stream(stream: IO[str], name: str = "-", *, limit: int = MAX_FILE_BYTES) -> str:
    """At most ``limit`` characters of a text stream (stdin).

    Raises:
        InvalidConfig: the stream holds more than ``limit`` characters, or is not text.
    """
    try:
        text = stream.read(limit + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidConfig(f"{name}: cannot read ({type(exc).__name__})") from None
    if len(text) > limit:
        raise _too_large(name)
    return text


# ---- YAML --------------------------------------------------------------------------------
def _yaml_module() -> Any:
    import yaml

    return yaml


#: most (node kind, value, implicit) → tag answers :func:`_loader_class`'s loader keeps
#: (the least recently used go first: a hostile file of distinct scalars cannot grow it
#: further).
_MAX_TAGS = 65_536
_LOADER: Any = None


def _loader_class() -> Any:
    """PyYAML's safe loader (the libyaml-backed one when available), whose tag resolution
    is kept per (node kind, value, implicit): the composer asks it for every node, and a
    folder of manifests repeats its keys and values. The answer is PyYAML's own
    (``BaseResolver.resolve``), a function of those three alone while no path resolver
    is registered (the safe loader has none; with one, the loader is PyYAML's as is).

    Without path resolvers PyYAML's ``descend_resolver`` / ``ascend_resolver``, which
    the composer calls around every node, return at once; they are replaced by C
    callables that do nothing either (``{}.get`` of the two arguments, ``tuple()``), and
    the kept answers are looked up by ``functools.lru_cache`` in C: no Python frame per
    node."""
    global _LOADER
    if _LOADER is None:
        import functools

        yaml = _yaml_module()
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        if base.yaml_path_resolvers:  # pragma: no cover - the safe loader has none
            _LOADER = base
            return _LOADER
        probe = yaml.resolver.Resolver()  # resolve() reads only the class's resolvers
        # the loader's own resolvers (a subclass may add implicit ones to its copy)
        probe.yaml_implicit_resolvers = base.yaml_implicit_resolvers
        resolve = functools.lru_cache(maxsize=_MAX_TAGS)(probe.resolve)
        _LOADER = type(
            "KvalignSafeLoader",
            (base,),
            {
                "resolve": staticmethod(resolve),
                # (parent, index) -> index; () -> (): what PyYAML's do without path resolvers
                "descend_resolver": staticmethod({}.get),
                "ascend_resolver": staticmethod(tuple),
            },
        )
    return _LOADER


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):
        if value and isinstance(value[0], tuple):  # mapping: (key, value) node pairs
            return [part for pair in value for part in pair]
        return list(value)
    return []


def _check_duplicate_keys(node: Any, name: str, scalar: Any) -> None:
    """Reject a mapping node with the same scalar key (``scalar``: PyYAML's ScalarNode)
    twice (PyYAML keeps the last one silently, so a second ``decode:`` would hide the
    first). Merge keys (``<<``) may repeat."""
    seen: dict[tuple[str, str], int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, scalar) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        marker = (key_node.tag, key_node.value)
        line = key_node.start_mark.line + 1
        if marker in seen:
            raise YamlRefused(
                f"{name}:{line}: duplicate YAML key {key_node.value!r} (first at line "
                f"{seen[marker]}); YAML would keep only the last one (missing `---` "
                "between documents?)"
            )
        seen[marker] = line


def check_yaml_node(root: Any, name: str) -> None:
    """Reject a composed YAML node graph that is recursive, too deep or too large.

    Aliases are shared in the graph; the expanded size (what a reader that walks the
    document would visit) is computed with memoisation, so a billion-laughs document is
    rejected in time linear in the file.

    Raises:
        InvalidConfig: a recursive alias, nesting deeper than :data:`MAX_YAML_DEPTH`,
            more than :data:`MAX_YAML_NODES` nodes after alias expansion, or a mapping
            with a duplicate key.
    """
    yaml = _yaml_module()
    mapping, scalar = yaml.MappingNode, yaml.ScalarNode
    sizes: dict[int, int] = {}
    heights: dict[int, int] = {}
    on_path: set[int] = set()
    # (node, depth, its children once visited, or None on the first visit)
    stack: list[tuple[Any, int, list[Any] | None]] = [(root, 1, None)]
    while stack:
        node, depth, kids = stack.pop()
        key = id(node)
        if kids is not None:
            on_path.discard(key)
            size = 1
            height = 0
            for kid in kids:
                size += sizes[id(kid)]
                height = max(height, heights[id(kid)])
            sizes[key] = size
            heights[key] = height + 1
            if size > MAX_YAML_NODES:
                raise YamlRefused(
                    f"{name}: YAML expands to more than {MAX_YAML_NODES:,} nodes "
                    "(alias/anchor bomb?)"
                )
            continue
        if key in sizes:
            if depth + heights[key] - 1 > MAX_YAML_DEPTH:
                raise YamlRefused(f"{name}: YAML nested deeper than {MAX_YAML_DEPTH} levels")
            continue
        if key in on_path:
            raise YamlRefused(f"{name}: recursive YAML alias")
        if depth > MAX_YAML_DEPTH:
            raise YamlRefused(f"{name}: YAML nested deeper than {MAX_YAML_DEPTH} levels")
        on_path.add(key)
        if isinstance(node, mapping):
            _check_duplicate_keys(node, name, scalar)
        children = _children(node)
        stack.append((node, depth, children))
        stack.extend((child, depth + 1, None) for child in children)


#: tags of the plain data a tree document is built from by :func:`_build_tree` (the
#: scalar ones are constructed by PyYAML's own safe constructor for that tag).
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{kind}" for kind in ("null", "bool", "int", "float", "binary", "timestamp")
)


class _NotPlain(Exception):
    """A document :func:`_build_tree` leaves to the checked path (:func:`check_yaml_node`
    then PyYAML's constructor)."""


def _build_tree(root: Any, loader: Any) -> Any:
    """The data of a composed document whose node graph is a tree (no alias), built and
    checked in one walk.

    Gives what :func:`check_yaml_node` followed by PyYAML's ``construct_document`` gives
    for such a document, for plain mappings, sequences and the scalars of
    :data:`_SCALAR_TAGS` (and strings), while the document is within the limits.
    Anything else (a duplicate key, nesting deeper than :data:`MAX_YAML_DEPTH`, more
    than :data:`MAX_YAML_NODES` nodes, a merge key, another tag, a key that is not a
    scalar, any error) raises :class:`_NotPlain`, and the caller takes the checked path,
    which raises the error (or builds the data) exactly as before.
    """
    yaml = _yaml_module()
    scalar_node, mapping_node, sequence_node = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
    constructors = loader.yaml_constructors
    str_tag, scalar_tags = _STR_TAG, _SCALAR_TAGS
    nodes = [1]

    def scalar(node: Any) -> Any:
        tag = node.tag
        if tag == str_tag:
            return node.value
        if tag in scalar_tags:
            return constructors[tag](loader, node)
        raise _NotPlain

    def build(node: Any, depth: int) -> Any:
        kind = node.__class__
        if kind is mapping_node:
            if node.tag != _MAP_TAG:
                raise _NotPlain
            pairs = node.value
            if not pairs:
                return {}
            if depth >= MAX_YAML_DEPTH:  # its keys and values would be too deep
                raise _NotPlain
            nodes[0] += 2 * len(pairs)
            data: dict[Any, Any] = {}
            for key_node, value_node in pairs:
                if key_node.__class__ is not scalar_node:
                    raise _NotPlain
                key = key_node.value if key_node.tag == str_tag else scalar(key_node)
                if value_node.__class__ is not scalar_node:
                    data[key] = build(value_node, depth + 1)
                elif value_node.tag == str_tag:
                    data[key] = value_node.value
                else:
                    data[key] = scalar(value_node)
            if len(data) != len(pairs):
                # two keys built alike (the same tag and text, a duplicate; or e.g. 1 and
                # 0x1): the checked path tells which, and raises or builds as PyYAML does
                raise _NotPlain
            return data
        if kind is sequence_node:
            if node.tag != _SEQ_TAG:
                raise _NotPlain
            items = node.value
            if not items:
                return []
            if depth >= MAX_YAML_DEPTH:
                raise _NotPlain
            nodes[0] += len(items)
            return [
                (item.value if item.tag == str_tag else scalar(item))
                if item.__class__ is scalar_node
                else build(item, depth + 1)
                for item in items
            ]
        if kind is scalar_node:
            return scalar(node)
        raise _NotPlain

    try:
        data = build(root, 1)
    except _NotPlain:
        raise
    except Exception:  # e.g. a timestamp that is no date: raised by the checked path
        raise _NotPlain from None
    finally:
        # ``build`` calls itself through its closure cell: a reference cycle that would
        # keep the loader (and its text) alive until the garbage collector runs; an
        # audit of 10,000 files left ~190 MB of such cycles. Emptying the cells breaks it.
        build = scalar = None  # type: ignore[assignment]
    if nodes[0] > MAX_YAML_NODES:
        raise _NotPlain
    return data


def load_yaml_documents(text: str, name: str) -> list[tuple[int, Any]]:
    """Every document of a YAML stream as ``(1-based start line, data)`` pairs.

    Safe loading only (PyYAML ``SafeLoader``, the libyaml-backed one when available):
    plain scalars, lists and mappings. Each document's node graph is checked by
    :func:`check_yaml_node` before it is constructed; a text with no alias (no ``*``)
    is built and checked in one walk instead (:func:`_build_tree`), with the same
    result and the same errors.

    Raises:
        InvalidConfig: not valid YAML (the message names ``name`` and the line), or a
            document rejected by :func:`check_yaml_node`.
    """
    yaml = _yaml_module()
    loader = _loader_class()(text)
    # no `*`: no alias, so every document's node graph is a tree, built and checked in
    # one walk (:func:`_build_tree`); a document it leaves, or any with an alias, is
    # checked first (:func:`check_yaml_node`), then constructed
    tree = "*" not in text
    docs: list[tuple[int, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node() guarantees a node
                break
            if tree:
                try:
                    docs.append((node.start_mark.line + 1, _build_tree(node, loader)))
                    continue
                except _NotPlain:
                    pass
            check_yaml_node(node, name)
            docs.append((node.start_mark.line + 1, loader.construct_document(node)))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InvalidConfig(f"{where}: not valid YAML ({problem})") from None
    except RecursionError:
        raise YamlRefused(f"{name}: YAML nested deeper than {MAX_YAML_DEPTH} levels") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an unhashable mapping key
        raise InvalidConfig(f"{name}: not valid YAML ({type(exc).__name__})") from None
    finally:
        loader.dispose()
    return docs


def load_yaml(text: str, name: str) -> Any:
    """The single document of a YAML text (``None`` for an empty text).

    Raises:
        InvalidConfig: as :func:`load_yaml_documents`, or the text holds several documents.
    """
    docs = load_yaml_documents(text, name)
    if len(docs) > 1:
        raise InvalidConfig(f"{name}: expected one YAML document, found {len(docs)}")
    return docs[0][1] if docs else None


def dump_yaml(value: Any) -> str:
    """``value`` (plain mappings, lists, strings, numbers, booleans) as block-style YAML,
    keys in insertion order, with PyYAML's safe dumper (no Python tags)."""
    yaml = _yaml_module()
    return str(yaml.safe_dump(value, sort_keys=False, default_flow_style=False, width=1000))
