"""Where model configs come from. The only layer that touches files or the network.

Resolution order for the ``MODEL`` argument (:func:`load_model`):

1. a bundled catalog entry, by hub id (works offline);
2. a local directory containing ``config.json``, or a path to a ``config.json``;
3. any other ``org/name`` through the Hugging Face Hub (cache and ``HF_HUB_OFFLINE``
   honoured).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kvalign.errors import ConfigNotFound, UnsupportedModel
from kvalign.geometry import ModelGeometry
from kvalign.sources import catalog, hub
from kvalign.sources.build import geometry_from_dict
from kvalign.sources.config_file import read_config_json
from kvalign.sources.overrides import apply_hf_overrides

__all__ = ["catalog", "load_model"]


def _local_config(path: Path) -> Path:
    if path.is_dir():
        candidate = path / "config.json"
        if not candidate.is_file():
            raise ConfigNotFound(f"{path}: directory has no config.json")
        return candidate
    return path


def load_model(
    name: str,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    hf_overrides: Mapping[str, object] | None = None,
) -> ModelGeometry:
    """Load and model one config, resolving ``name`` as described in the module docstring.

    Args:
        name: catalog hub id, local path, or hub repo id.
        revision: hub revision (branch, tag or commit) for hub ids.
        trust_remote_code: allow transformers to run the repo's config code for hub
            models whose type neither transformers nor kvalign knows. Off by default.
        hf_overrides: vLLM's ``--hf-overrides`` (a dict), applied to the raw config dict
            before the geometry is built (:func:`kvalign.sources.overrides.apply_hf_overrides`).

    Raises:
        ConfigNotFound, InvalidConfig, UnsupportedModel: see :mod:`kvalign.errors`.
    """
    name = name.strip()
    if not name:
        raise ConfigNotFound("MODEL is empty: give a bundled model id, a path or a hub id")
    entry = catalog.lookup(name) if revision is None else None
    if entry is not None:
        raw = apply_hf_overrides(read_config_json(entry.config_path), hf_overrides)
        return geometry_from_dict(
            raw, model_id=entry.model_id, config_path=str(entry.config_path), source="catalog"
        )
    path = Path(name).expanduser()
    if path.exists() or name.endswith(".json") or name.startswith((".", "/", "~")):
        config_path = _local_config(path)
        raw = apply_hf_overrides(read_config_json(config_path), hf_overrides)
        return geometry_from_dict(raw, model_id=name, config_path=str(config_path), source="local")
    if not hub.looks_like_repo_id(name):
        raise ConfigNotFound(
            f"{name}: not a bundled model, an existing path, or a Hub id of the form org/name "
            "(see `kvalign models`)"
        )
    config_path = hub.fetch_config(name, revision)
    raw = apply_hf_overrides(read_config_json(config_path), hf_overrides)
    try:
        return geometry_from_dict(raw, model_id=name, config_path=str(config_path), source="hub")
    except UnsupportedModel:
        if not trust_remote_code:
            raise
        return _remote_code_geometry(name, revision, str(config_path), hf_overrides)


def _remote_code_geometry(
    name: str,
    revision: str | None,
    config_path: str,
    hf_overrides: Mapping[str, object] | None = None,
) -> ModelGeometry:
    """Last resort behind ``--trust-remote-code``: let transformers run the repo's config code."""
    from transformers import AutoConfig

    from kvalign.errors import InvalidConfig

    try:
        cfg = AutoConfig.from_pretrained(name, revision=revision, trust_remote_code=True)
    except Exception as exc:
        raise InvalidConfig(f"{name}: remote config code failed: {exc}") from None
    raw = apply_hf_overrides(cfg.to_dict(), hf_overrides)
    return geometry_from_dict(raw, model_id=name, config_path=config_path, source="hub")
