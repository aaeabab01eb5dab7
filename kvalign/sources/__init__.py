"""Where model configs come from. The only layer that touches files or the network.

Resolution order for the ``MODEL`` argument (:func:`load_model`):

1. a bundled catalog entry, by hub id (works offline);
2. a local directory containing ``config.json``, or a path to a ``config.json``;
3. any other ``org/name`` through the Hugging Face Hub (cache and ``HF_HUB_OFFLINE``
   honoured).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvalign.errors import ConfigNotFound, UnsupportedModel
from kvalign.geometry import ModelGeometry
from kvalign.sources import bundled, cache, catalog
from kvalign.sources.config_file import parse_config_bytes, read_config_bytes

if TYPE_CHECKING:
    from pathlib import Path

# ``hub`` (a Hub download) and ``overrides`` (``--hf-overrides`` applied to a parsed
# config) are imported where they are used: a bundled or cached model needs neither.

__all__ = ["catalog", "load_model"]


def _local_config(path: Path) -> Path:
    if path.is_dir():
        candidate = path / "config.json"
        if not candidate.is_file():
            if candidate.exists() or candidate.is_symlink():
                kind = "a directory" if candidate.is_dir() else "not a regular file"
                raise ConfigNotFound(f"{candidate}: {kind} (expected the model's config.json)")
            raise ConfigNotFound(f"{path}: directory has no config.json")
        return candidate
    return path


def _geometry(
    config_path: Path | str,
    *,
    model_id: str,
    source: str,
    use_cache: bool,
    params: Mapping[str, Any],
    hf_overrides: Mapping[str, object] | None = None,
) -> ModelGeometry:
    """Read ``config_path`` (size-capped) and build its geometry, through the cache.

    The cache key covers the file's bytes, the kvalign version and ``params`` (every other
    load parameter that changes the geometry); a hit never imports transformers. A bundled
    config whose bytes match its precomputed geometry (:mod:`kvalign.sources.bundled`) is
    answered from that, cache or not (and seeds the cache when it is on).
    """
    data = read_config_bytes(config_path)
    key = cache.cache_key(data, params) if use_cache else ""
    if source == "catalog" and not hf_overrides:
        found = bundled.lookup(model_id, data)
        if found is not None:
            geometry = dataclasses.replace(
                found, model_id=model_id, config_path=str(config_path), source=source
            )
            if key and cache.load(key) is None:  # seed the cache: a local copy is warm too
                cache.store(key, geometry)
            return geometry
    if key:
        hit = cache.load(key)
        if hit is not None:
            return dataclasses.replace(
                hit, model_id=model_id, config_path=str(config_path), source=source
            )
    from kvalign.sources.build import geometry_from_dict
    from kvalign.sources.overrides import apply_hf_overrides

    raw = apply_hf_overrides(parse_config_bytes(data, config_path), hf_overrides)
    geometry = geometry_from_dict(
        raw, model_id=model_id, config_path=str(config_path), source=source
    )
    if key:
        cache.store(key, geometry)
    return geometry


def load_model(
    name: str,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    hf_overrides: Mapping[str, object] | None = None,
    use_cache: bool = False,
) -> ModelGeometry:
    """Load and model one config, resolving ``name`` as described in the module docstring.

    Args:
        name: catalog hub id, local path, or hub repo id.
        revision: hub revision (branch, tag or commit) for hub ids.
        trust_remote_code: allow transformers to run the repo's config code for hub
            models whose type neither transformers nor kvalign knows. Off by default.
        hf_overrides: vLLM's ``--hf-overrides`` (a dict), applied to the raw config dict
            before the geometry is built (:func:`kvalign.sources.overrides.apply_hf_overrides`).
        use_cache: read/write the geometry cache (:mod:`kvalign.sources.cache`); the CLI
            turns it on unless ``--no-cache``.

    Raises:
        ConfigNotFound, InvalidConfig, UnsupportedModel: see :mod:`kvalign.errors`.
    """
    # every load parameter (besides the config bytes) that changes the geometry: part of
    # the cache key.
    params: dict[str, Any] = {"hf_overrides": hf_overrides or {}}
    name = name.strip()
    if not name:
        raise ConfigNotFound("MODEL is empty: give a bundled model id, a path or a hub id")
    entry = catalog.lookup(name) if revision is None else None
    if entry is not None:
        if os.path.exists(os.path.expanduser(name)):
            bundled = _geometry(
                entry.config_path, model_id=entry.model_id, source="catalog",
                use_cache=use_cache, params=params, hf_overrides=hf_overrides,
            )  # fmt: skip
            shadow = (
                f"a local path '{name}' also exists; the bundled config was used "
                f"(pass ./{name} to read the local one)"
            )
            return dataclasses.replace(bundled, notes=(*bundled.notes, shadow))
        return _geometry(
            entry.config_path, model_id=entry.model_id, source="catalog",
            use_cache=use_cache, params=params, hf_overrides=hf_overrides,
        )  # fmt: skip
    from pathlib import Path  # a bundled model needs none

    path = Path(name).expanduser()
    if (
        path.exists()
        or path.is_symlink()
        or name.endswith(".json")
        or name.startswith((".", "/", "~"))
    ):
        return _geometry(
            _local_config(path), model_id=name, source="local", use_cache=use_cache,
            params=params, hf_overrides=hf_overrides,
        )  # fmt: skip
    from kvalign.sources import hub

    if not hub.looks_like_repo_id(name):
        raise ConfigNotFound(
            f"{name}: not a bundled model, an existing path, or a Hub id of the form org/name "
            "(see `kvalign models`)"
        )
    config_path = hub.fetch_config(name, revision)
    try:
        return _geometry(
            config_path, model_id=name, source="hub", use_cache=use_cache, params=params,
            hf_overrides=hf_overrides,
        )  # fmt: skip
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
    from kvalign.sources.build import geometry_from_dict
    from kvalign.sources.overrides import apply_hf_overrides

    try:
        cfg = AutoConfig.from_pretrained(name, revision=revision, trust_remote_code=True)
    except Exception as exc:
        raise InvalidConfig(f"{name}: remote config code failed: {exc}") from None
    raw = apply_hf_overrides(cfg.to_dict(), hf_overrides)
    return geometry_from_dict(raw, model_id=name, config_path=config_path, source="hub")
