"""On-disk geometry cache: ``$XDG_CACHE_HOME/kvalign/`` (default ``~/.cache/kvalign/``).

A warm ``kvalign check`` skips transformers entirely: the :class:`ModelGeometry` built from a
config is stored as JSON (never pickle) under a key that is the sha256 of

* the config file's bytes,
* the kvalign version and :data:`FORMAT` (the cache layout),
* a canonical JSON (sorted keys, no whitespace) of every other load parameter that can
  change the geometry (e.g. ``hf_overrides``).

Writes are atomic (a temporary file in the cache folder, then :func:`os.replace`), so
concurrent runs never see a half-written entry. Each entry carries an HMAC-SHA256 keyed
with a per-user secret (:data:`SECRET_NAME` next to the cache folder: 32 random bytes, mode
0600, owned by the user; a secret that is readable by others, not owned, or not a
regular file is never trusted, and then the cache is off). So an entry edited with a
recomputed plain digest is a miss, never a verdict. Entries are also re-validated: every
number within the config field bounds, every family known. An entry that cannot be read,
fails its HMAC or does not decode to a valid geometry is ignored (and rewritten by the
caller). Every cache failure
is silent: the cache can only make kvalign faster, never make it fail. Only files inside
the cache folder are ever written.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvalign import __version__
from kvalign.geometry import ModelGeometry
from kvalign.sources.geometry_json import geometry_from_json, geometry_to_dict

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "FORMAT",
    "SECRET_NAME",
    "cache_dir",
    "cache_key",
    "canonical_params",
    "geometry_from_json",
    "geometry_to_dict",
    "load",
    "secret",
    "store",
]


def _tempfile() -> Any:
    """The ``tempfile`` module, imported only when the cache is written (a warm run only
    reads it)."""
    import tempfile

    return tempfile


#: cache layout version; bump when the JSON shape of an entry changes.
FORMAT = 5
#: largest cache entry read back (entries are ~2 KiB).
_MAX_ENTRY_BYTES = 256 * 1024
#: file next to the cache folder (``~/.cache/kvalign.key``) holding the per-user HMAC key.
SECRET_NAME = "kvalign.key"
_SECRET_BYTES = 32


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = base if base and os.path.isabs(base) else os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "kvalign")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/kvalign`` when ``XDG_CACHE_HOME`` is an absolute path, else
    ``~/.cache/kvalign`` (XDG Base Directory specification)."""
    from pathlib import Path

    return Path(_cache_dir())


def canonical_params(params: Mapping[str, Any] | None) -> str:
    """Canonical JSON of extra load parameters (sorted keys, compact; ``{}`` when none).

    Values that are not JSON types are written with ``str`` so that any parameter can be
    part of the key.
    """
    return json.dumps(
        dict(params or {}), sort_keys=True, separators=(",", ":"), default=str, allow_nan=True
    )


def cache_key(config_bytes: bytes, params: Mapping[str, Any] | None = None) -> str:
    """sha256 hex of (config bytes, kvalign version, :data:`FORMAT`, canonical params)."""
    digest = hashlib.sha256()
    digest.update(hashlib.sha256(config_bytes).digest())
    digest.update(f"\0kvalign {__version__}\0format {FORMAT}\0".encode())
    digest.update(canonical_params(params).encode())
    return digest.hexdigest()


# paths are strings here (os.path), not pathlib: a warm check never imports pathlib
def _entry_path(key: str) -> str:
    return os.path.join(_cache_dir(), f"geometry-{key}.json")


def _read_secret(path: str) -> bytes | None:
    """The key in ``path`` when it is trustworthy: a regular file (not a symlink) owned
    by this user, unreadable by others, exactly :data:`_SECRET_BYTES` long."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_mode & 0o077
            or (hasattr(os, "getuid") and info.st_uid != os.getuid())
        ):
            return None
        data = os.read(fd, _SECRET_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == _SECRET_BYTES else None


def secret(*, create: bool = False) -> bytes | None:
    """The per-user HMAC key (``None``: missing, untrustworthy, or cannot be created).

    ``create`` writes a new random key with mode 0600 when none exists. The key is written
    whole to a private temporary file and hard-linked into place (``link`` never replaces an
    existing name), so two runs racing keep one key and no reader sees a half-written one.
    """
    parent = os.path.dirname(_cache_dir())
    path = os.path.join(parent, SECRET_NAME)
    key = _read_secret(path)
    if key is not None or not create:
        return key
    tmp_name = ""
    try:
        os.makedirs(parent, exist_ok=True)
        fd, tmp_name = _tempfile().mkstemp(prefix=".secret-", suffix=".tmp", dir=parent)
        try:
            os.fchmod(fd, 0o600)
            import secrets  # only when the key is created

            os.write(fd, secrets.token_bytes(_SECRET_BYTES))
        finally:
            os.close(fd)
        with contextlib.suppress(FileExistsError):
            os.link(tmp_name, path)
    except OSError:
        return None
    finally:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
    return _read_secret(path)


def _digest(key: str, geometry: dict[str, Any], secret_key: bytes) -> str:
    """HMAC-SHA256 (per-user key) of the entry key and the canonical JSON of a geometry."""
    message = json.dumps({"key": key, "geometry": geometry}, sort_keys=True).encode("utf-8")
    return hmac.new(secret_key, message, hashlib.sha256).hexdigest()


def load(key: str) -> ModelGeometry | None:
    """The cached geometry for ``key``, or ``None`` (missing, unreadable, not a regular
    file, a bad HMAC, out of bounds or corrupt: a miss, never a verdict)."""
    from kvalign.errors import KvalignError
    from kvalign.safeio import read_bytes

    secret_key = secret()
    if secret_key is None:
        return None
    try:
        data = read_bytes(_entry_path(key), limit=_MAX_ENTRY_BYTES)
        entry = json.loads(data.decode("utf-8"))
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        stored = entry.get("geometry")
        mac = entry.get("hmac")
        # compare_digest refuses non-ASCII text (TypeError): a forged or corrupt entry
        if not isinstance(stored, dict) or not isinstance(mac, str) or not mac.isascii():
            return None
        if not hmac.compare_digest(mac, _digest(key, stored, secret_key)):
            return None
        return geometry_from_json(stored)
    except (KvalignError, OSError, ValueError, RecursionError):
        return None


def store(key: str, geometry: ModelGeometry) -> bool:
    """Write ``geometry`` under ``key`` atomically; ``False`` when the cache is unwritable.

    The entry is written to a temporary file in the cache folder and moved into place with
    :func:`os.replace`, so a concurrent reader sees either no entry or a whole one, and
    concurrent writers of the same key leave one whole entry.
    """
    secret_key = secret(create=True)
    if secret_key is None:
        return False
    stored = geometry_to_dict(geometry)
    payload = {
        "key": key,
        "kvalign": __version__,
        "geometry": stored,
        "hmac": _digest(key, stored, secret_key),
    }
    try:
        text = json.dumps(payload, sort_keys=True, allow_nan=False)
    except ValueError:  # pragma: no cover - geometries hold finite ints only
        return False
    folder = _cache_dir()
    tmp_name = ""
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp_name = _tempfile().mkstemp(prefix=".geometry-", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp_name, _entry_path(key))
        return True
    except OSError:
        if tmp_name:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
        return False
