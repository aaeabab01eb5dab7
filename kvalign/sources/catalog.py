"""The bundled catalog: real ``config.json`` files under ``configs/models/<org>/<name>/``.

Addressable by hub id (``nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16``) so that these work
offline. In a wheel the folder ships as ``kvalign/catalog``; in a source checkout it is
``configs/models`` at the repository root.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class CatalogEntry:
    """One bundled model: its hub id and the path of its ``config.json``."""

    model_id: str
    config_path: Path


def catalog_root() -> Path:
    """Folder holding the bundled configs (wheel layout first, then the source checkout)."""
    installed = _PACKAGE_DIR / "catalog"
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / "configs" / "models"


def entries() -> list[CatalogEntry]:
    """Every bundled model, sorted by hub id (case-insensitive)."""
    root = catalog_root()
    found = [
        CatalogEntry(f"{cfg.parent.parent.name}/{cfg.parent.name}", cfg)
        for cfg in root.glob("*/*/config.json")
    ]
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
