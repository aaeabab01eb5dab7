"""Hugging Face Hub access (only when the user names a hub id that is not bundled).

Uses ``huggingface_hub.hf_hub_download`` for ``config.json`` alone, which honours the HF
cache, ``HF_HOME`` and ``HF_HUB_OFFLINE=1``. Never downloads or runs model code.
"""

from __future__ import annotations

import re
from pathlib import Path

from kvalign.errors import ConfigNotFound

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def looks_like_repo_id(name: str) -> bool:
    """Whether ``name`` has the ``org/name`` shape of a hub repo id."""
    return bool(_REPO_ID.match(name)) and ".." not in name


def fetch_config(repo_id: str, revision: str | None = None) -> Path:
    """Local path of ``config.json`` for ``repo_id`` (downloaded or from the HF cache).

    Raises:
        ConfigNotFound: the repo/file does not exist, is gated, or cannot be reached
            (network down, or not cached with ``HF_HUB_OFFLINE=1``).
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    # LocalEntryNotFoundError subclasses EntryNotFoundError: keep it first.
    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision))
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
        raise ConfigNotFound(
            f"{repo_id}: not bundled and not in the Hugging Face cache, and the Hub "
            "cannot be reached (offline or HF_HUB_OFFLINE=1); pass a local config.json "
            "or see `kvalign models`"
        ) from None
    except EntryNotFoundError:
        raise ConfigNotFound(f"{repo_id}: the repository has no config.json") from None
    except (OSError, ValueError) as exc:
        raise ConfigNotFound(f"{repo_id}: could not fetch config.json ({exc})") from None
