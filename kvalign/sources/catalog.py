"""The bundled catalog: real ``config.json`` files under ``configs/models/<org>/<name>/``.

Addressable by hub id (``nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16``) so that these work
offline. In a wheel the folder ships as ``kvalign/catalog``; in a source checkout it is
``configs/models`` at the repository root.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

# paths are strings here (os.path): a check of a bundled model never imports pathlib
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


class CatalogEntry(NamedTuple):
    """One bundled model: its hub id and the path of its ``config.json`` (a string)."""

    model_id: str
    config_path: str


def _root() -> str:
    installed = os.path.join(_PACKAGE_DIR, "catalog")
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(_PACKAGE_DIR), "configs", "models")


def catalog_root() -> Path:
    """Folder holding the bundled configs (wheel layout first, then the source checkout)."""
    from pathlib import Path

    return Path(_root())


def _folders(path: str) -> list[str]:
    """Names of the folders in ``path`` (symlinks to folders included; none when unreadable)."""
    try:
        with os.scandir(path) as found:
            return [item.name for item in found if item.is_dir()]
    except OSError:
        return []


def entries() -> list[CatalogEntry]:
    """Every bundled model (``<org>/<name>/config.json`` under the catalog folder), sorted
    by hub id (case-insensitive)."""
    root = _root()
    found = []
    for org in _folders(root):
        for name in _folders(os.path.join(root, org)):
            config = os.path.join(root, org, name, "config.json")
            if os.path.exists(config):
                found.append(CatalogEntry(f"{org}/{name}", config))
    return sorted(found, key=lambda e: e.model_id.lower())


def lookup(name: str) -> CatalogEntry | None:
    """The entry whose hub id equals ``name`` (case-insensitive), else ``None``."""
    wanted = name.strip().lower()
    for entry in entries():
        if entry.model_id.lower() == wanted:
            return entry
    return None


def shown_model_type(raw: dict[str, object]) -> str:
    """The ``model_type`` kvalign names a config by, as ``check`` does: the text
    sub-config's for a vision-language wrapper (``qwen3_5_moe`` → ``qwen3_5_moe_text``,
    as ``kvalign.sources.build`` sizes it), else the top-level one (``""`` when none)."""
    from kvalign.families import MODEL_TYPES, WRAPPER_TYPES

    top = raw.get("model_type")
    top_type = top if isinstance(top, str) else ""
    nested = raw.get("text_config")
    if top_type in MODEL_TYPES or not isinstance(nested, dict):
        return top_type
    inner = nested.get("model_type")
    return inner if isinstance(inner, str) and inner else WRAPPER_TYPES.get(top_type, top_type)


def with_model_types() -> list[tuple[CatalogEntry, str]]:
    """Every bundled model with the ``model_type`` ``check`` shows for it
    (:func:`shown_model_type`; ``""`` when it has none, ``"(unreadable)"`` when the config
    cannot be read), for ``kvalign models``."""
    from kvalign.errors import KvalignError
    from kvalign.sources.config_file import read_config_json

    found: list[tuple[CatalogEntry, str]] = []
    for entry in entries():
        try:
            model_type = shown_model_type(read_config_json(entry.config_path))
        except KvalignError:
            model_type = "(unreadable)"
        found.append((entry, model_type))
    return found
