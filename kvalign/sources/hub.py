"""Hugging Face Hub access (only when the user names a hub id that is not bundled).

Uses ``huggingface_hub.hf_hub_download`` for ``config.json`` alone, which honours the HF
cache, ``HF_HOME`` and ``HF_HUB_OFFLINE=1``. Never downloads or runs model code.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from kvalign.errors import ConfigNotFound

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def looks_like_repo_id(name: str) -> bool:
    """Whether ``name`` has the ``org/name`` shape of a hub repo id."""
    return bool(_REPO_ID.match(name)) and ".." not in name


#: seconds the reachability probe waits for the Hub (``HF_HUB_ETAG_TIMEOUT`` wins if set).
PROBE_TIMEOUT = 5.0


def _probe_timeout() -> float:
    value = os.environ.get("HF_HUB_ETAG_TIMEOUT", "")
    try:
        return float(value) if value else PROBE_TIMEOUT
    except ValueError:
        return PROBE_TIMEOUT


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")


@contextlib.contextmanager
def _quiet_hub_logs() -> Iterator[None]:
    """Silence huggingface_hub's logger (retry warnings, tracebacks) for one call."""
    import logging  # only when the hub is asked: not on a bundled model's path

    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _hub_reachable(repo_id: str, revision: str | None) -> bool:
    """One HEAD request for ``config.json`` without retries (``get_hf_file_metadata``).

    ``False`` when the Hub cannot be reached at all (DNS, connection refused, timeout,
    5xx/429): the caller then reads the HF cache only instead of letting
    ``hf_hub_download`` retry with backoff for ~20 s. HTTP answers that mean something
    (repository/revision/file not found, gated) are raised for the caller to map.
    """
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    url = hf_hub_url(repo_id, "config.json", revision=revision)
    try:
        get_hf_file_metadata(url, timeout=_probe_timeout())
    except (GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError):
        raise
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(status, int) and (status >= 500 or status in (408, 429)):
            return False
        raise
    except Exception:  # network errors of the HTTP client (types vary by release)
        return False
    return True


_COMMIT = re.compile(r"[0-9a-f]{40}")
_REF_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
#: longest ``--revision`` accepted.
MAX_REVISION_CHARS = 256


def check_revision(revision: str) -> None:
    """Refuse a ``--revision`` that is neither a commit hash (40 hex digits) nor a ref
    name (``main``, ``v1.0``, ``refs/pr/1``: parts of letters, digits, ``._-``, no part
    starting with a dot or dash, no ``..``, no ``.lock`` ending, as ``git
    check-ref-format`` demands): ``../X`` never reads a file outside the cache's ``refs/``.

    Raises:
        InvalidSettings: the revision is refused (the message names it).
    """
    from kvalign.errors import InvalidSettings

    if _COMMIT.fullmatch(revision):
        return
    parts = revision.split("/")
    if (
        len(revision) > MAX_REVISION_CHARS
        or ".." in revision
        or revision.endswith(".lock")
        or not all(_REF_PART.fullmatch(part) for part in parts)
    ):
        shown = revision if len(revision) <= 60 else revision[:60] + "…"
        raise InvalidSettings(
            f"--revision: {shown!r} is neither a branch/tag name nor a 40-digit commit hash"
        )


def fetch_config(repo_id: str, revision: str | None = None) -> Path:
    """Local path of ``config.json`` for ``repo_id`` (downloaded or from the HF cache).

    Reads only ``config.json`` through ``huggingface_hub`` (HF cache, ``HF_HOME``,
    ``HF_TOKEN`` and ``HF_HUB_OFFLINE=1`` honoured). Online, one quick probe without
    retries decides whether the Hub is reachable; when it is not, only the HF cache is read,
    so an offline machine fails in about a second instead of retrying for ~20 s. The
    library's logger is silenced for the call: the one-line error below is all the user sees.
    Tokens are never part of a message.

    Raises:
        ConfigNotFound: the repo/file does not exist, is gated, or cannot be reached
            (network down, or not cached with ``HF_HUB_OFFLINE=1``).
        InvalidSettings: ``revision`` is not a ref name or commit hash
            (:func:`check_revision`).
    """
    if revision is not None:
        check_revision(revision)
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    # LocalEntryNotFoundError subclasses EntryNotFoundError: keep it first.
    try:
        with _quiet_hub_logs():
            # huggingface_hub reads HF_HUB_OFFLINE once, at import; honour a later setting too
            offline = (
                constants.HF_HUB_OFFLINE
                or _env_true("HF_HUB_OFFLINE")
                or not _hub_reachable(repo_id, revision)
            )
            return Path(
                hf_hub_download(repo_id, "config.json", revision=revision, local_files_only=offline)
            )
    except GatedRepoError:
        raise ConfigNotFound(
            f"{repo_id}: gated repository; log in (hf auth login) or pass a local config.json"
        ) from None
    except RepositoryNotFoundError:
        raise ConfigNotFound(
            f"{repo_id}: not a bundled model, a local path, or a Hub repository "
            "(see `kvalign models`)"
        ) from None
    except RevisionNotFoundError:
        raise ConfigNotFound(f"{repo_id}: revision {revision!r} not found on the Hub") from None
    except LocalEntryNotFoundError:
        what = f"revision {revision!r} of {repo_id}" if revision else repo_id
        bundled = "" if revision else "not bundled and "
        raise ConfigNotFound(
            f"{what}: {bundled}not in the Hugging Face cache, and the Hub cannot be reached "
            "(offline or HF_HUB_OFFLINE=1); pass a local config.json or see `kvalign models`"
        ) from None
    except EntryNotFoundError:
        raise ConfigNotFound(f"{repo_id}: the repository has no config.json") from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise ConfigNotFound(f"{repo_id}: the Hub answered HTTP {status}") from None
    except (OSError, ValueError) as exc:
        raise ConfigNotFound(
            f"{repo_id}: could not fetch config.json ({type(exc).__name__})"
        ) from None
