"""A :class:`~kvalign.geometry.ModelGeometry` as a JSON-ready dict, and back, with every
value re-validated on the way in (numbers within the config field bounds, families and
layer kinds known). The geometry cache (:mod:`kvalign.sources.cache`) and the bundled
models' precomputed table (:mod:`kvalign.sources.bundled`) both store this form; neither
hashes nor touches files here.
"""

from __future__ import annotations

from typing import Any

from kvalign.geometry import (
    FAMILIES,
    LAYER_KINDS,
    AttentionGeometry,
    LayerKind,
    ModelGeometry,
    StateGeometry,
)

#: largest number a cached geometry may hold (the config field bound).
_MAX_VALUE = 1 << 24
#: longest string a cached geometry may hold.
_MAX_STR = 4096


def geometry_to_dict(geometry: ModelGeometry) -> dict[str, Any]:
    """A JSON-ready dict of every field of ``geometry`` (inverse: :func:`geometry_from_json`)."""
    attention = geometry.attention
    state = geometry.state
    return {
        "model_id": geometry.model_id,
        "model_type": geometry.model_type,
        "architecture": geometry.architecture,
        "config_path": geometry.config_path,
        "source": geometry.source,
        "loader": geometry.loader,
        "model_dtype": geometry.model_dtype,
        "attention": None
        if attention is None
        else {
            "num_attention_heads": attention.num_attention_heads,
            "total_kv_heads": attention.total_kv_heads,
            "head_size": attention.head_size,
            "use_mla": attention.use_mla,
        },
        "state": None if state is None else {"family": state.family, "params": dict(state.params)},
        "ssm_dtype_default": geometry.ssm_dtype_default,
        "provenance": dict(geometry.provenance),
        "notes": list(geometry.notes),
        "mamba_chunk_size": geometry.mamba_chunk_size,
        "ssm_dtype_fallback": geometry.ssm_dtype_fallback,
        "checkpoint_kv_cache_dtype": geometry.checkpoint_kv_cache_dtype,
        "layer_kinds": list(geometry.layer_kinds),
        "transformers5_spelling": geometry.transformers5_spelling,
        "auto_map": geometry.auto_map,
        "hidden_size": geometry.hidden_size,
    }


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _MAX_VALUE:
        raise ValueError("not a positive integer within the field bounds")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str) or len(value) > _MAX_STR:
        raise ValueError("not a string")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def geometry_from_json(data: Any) -> ModelGeometry:
    """Rebuild a :class:`ModelGeometry` from :func:`geometry_to_dict` output.

    Raises:
        ValueError: any field is missing or of the wrong type (a corrupt entry).
    """
    if not isinstance(data, dict):
        raise ValueError("not an object")
    try:
        att = data["attention"]
        attention = (
            None
            if att is None
            else AttentionGeometry(
                _int(att["num_attention_heads"]),
                _int(att["total_kv_heads"]),
                _int(att["head_size"]),
                bool(att["use_mla"]),
            )
        )
        st = data["state"]
        state = None
        if st is not None:
            family = _str(st["family"])
            if family not in FAMILIES or not isinstance(st["params"], dict):
                raise ValueError("bad state")
            params = {_str(k): _int(v) for k, v in st["params"].items()}
            state = StateGeometry(family, params)
        provenance = data["provenance"]
        notes = data["notes"]
        chunk = data["mamba_chunk_size"]
        if not isinstance(provenance, dict) or not isinstance(notes, list):
            raise ValueError("bad provenance/notes")
        kinds = data.get("layer_kinds", [])
        if not isinstance(kinds, list) or not all(kind in LAYER_KINDS for kind in kinds):
            raise ValueError("bad layer_kinds")
        layer_kinds: tuple[LayerKind, ...] = tuple(kinds)
        return ModelGeometry(
            model_id=_str(data["model_id"]),
            model_type=_str(data["model_type"]),
            architecture=_str(data["architecture"]),
            config_path=_str(data["config_path"]),
            source=_str(data["source"]),
            loader=_str(data["loader"]),
            model_dtype=_str(data["model_dtype"]),
            attention=attention,
            state=state,
            ssm_dtype_default=_opt_str(data["ssm_dtype_default"]),
            provenance={_str(k): _str(v) for k, v in provenance.items()},
            notes=tuple(_str(n) for n in notes),
            mamba_chunk_size=None if chunk is None else _int(chunk),
            ssm_dtype_fallback=bool(data["ssm_dtype_fallback"]),
            checkpoint_kv_cache_dtype=_opt_str(data["checkpoint_kv_cache_dtype"]),
            layer_kinds=layer_kinds,
            transformers5_spelling=bool(data.get("transformers5_spelling", False)),
            auto_map=bool(data.get("auto_map", False)),
            hidden_size=None if data.get("hidden_size") is None else _int(data["hidden_size"]),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"corrupt entry ({type(exc).__name__})") from None
