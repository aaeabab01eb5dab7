"""Turn a parsed ``config.json`` into a :class:`~kvalign.geometry.ModelGeometry`.

Model types transformers ships are parsed through their transformers config class (the
same defaults and derived fields vLLM sees, e.g. ``layers_block_type`` from a Nemotron-H
pattern). Types vLLM parses with config classes of its own (``kimi_linear``, ``kimi_k3``,
...) are read as raw JSON fields instead of running remote code; the geometry says so.
"""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any

from kvalign.dtypes import checkpoint_kv_cache_dtype, normalize_model_dtype
from kvalign.errors import InvalidConfig, KvalignError, UnsupportedModel
from kvalign.families import MODEL_TYPES, WRAPPER_TYPES, IndivisibleTP, ModelSpec
from kvalign.geometry import AttentionGeometry, LayerKind, ModelGeometry, StateGeometry
from kvalign.sources.fields import ConfigFields, check_config_sizes

#: model types vLLM 0.33 parses with its own config classes
#: (``vllm/transformers_utils/config.py`` ``_CONFIG_REGISTRY``): read as raw JSON.
VLLM_OWN_CONFIG_TYPES = frozenset({"kimi_linear", "kimi_k3", "bailing_moe_v3_vl"})

#: standard attention-only model types (transformers ships their config classes): no
#: recurrent state, so vLLM does no hybrid block alignment and there is nothing to align.
#: Read through the transformers class like any other type; any state field refuses.
ATTENTION_ONLY_TYPES = frozenset(
    {
        "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
        "gemma2", "gemma3_text", "phi3", "olmo2", "granite", "granitemoe", "cohere",
        "starcoder2", "deepseek_v3", "gpt_oss", "glm4", "ernie4_5", "exaone",
    }
)  # fmt: skip
#: config keys that would mean recurrent state (never present in the types above).
_STATE_KEYS = ("ssm_state_size", "mamba_d_state", "linear_num_value_heads", "conv_kernel",
               "layers_block_type", "mamba_num_heads", "linear_attn_config")  # fmt: skip

#: layer-type names (``layer_types`` / ``layers_block_type``) that hold softmax attention.
_ATTENTION_KINDS = frozenset(
    {"attention", "full_attention", "sliding_attention", "hybrid", "*", "global", "local"}
)
#: layer-type names that hold recurrent state.
_STATE_KINDS = frozenset(
    {"mamba", "mamba2", "linear_attention", "conv", "hybrid", "m", "gdn", "kda", "deltanet"}
)


def _quiet_transformers() -> None:
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)


def transformers_config_class(model_type: str) -> Any | None:
    """The transformers config class for ``model_type``, or ``None`` when not shipped."""
    _quiet_transformers()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    try:
        return CONFIG_MAPPING[model_type]
    except KeyError:
        return None


def _parse_with_transformers(cls: Any, raw: dict[str, Any], path: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return cls.from_dict(dict(raw))
        except Exception as exc:  # transformers raises many types for bad fields
            raise InvalidConfig(_rejection(cls, raw, path, exc)) from None


def _rejection(cls: Any, raw: dict[str, Any], path: str, exc: Exception) -> str:
    """The one-line refusal for a config transformers' ``cls`` rejected: its message, and
    for a ``KeyError`` (an unknown value looked up in a table, e.g. a layer letter of
    ``hybrid_override_pattern``) the field that holds that value."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = " ".join(lines[:3]) if lines else type(exc).__name__
    if isinstance(exc, KeyError) and exc.args:
        value = str(exc.args[0])
        fields = [
            k
            for k, v in raw.items()
            if (isinstance(v, str) and value and value in v)
            or (isinstance(v, list) and value in [str(x) for x in v[:10_000]])
        ]
        where = f"{fields[0]}: " if len(fields) == 1 else ""
        return (
            f"{path}: {where}transformers {cls.__name__} does not know the value {value!r} "
            f"(KeyError)"
        )
    return f"{path}: transformers {cls.__name__} rejected the config: {detail}"


def _text_config(cfg: Any, top_type: str, path: str) -> tuple[Any, str, str]:
    """(text config, its model_type, user-facing key prefix)."""
    if top_type in MODEL_TYPES:
        return cfg, top_type, ""
    nested = cfg.get("text_config") if isinstance(cfg, dict) else getattr(cfg, "text_config", None)
    if nested is None:
        raise UnsupportedModel(
            f"{path}: model_type '{top_type}' is not a hybrid attention/state-space model "
            f"kvalign knows (known: {', '.join(sorted(MODEL_TYPES))})"
        )
    if not isinstance(nested, dict) and not hasattr(nested, "model_type"):
        raise InvalidConfig(f"{path}: field 'text_config' must be an object")
    text_type = nested.get("model_type") if isinstance(nested, dict) else nested.model_type
    if not isinstance(text_type, str) or not text_type:
        text_type = WRAPPER_TYPES.get(top_type, "")
    if text_type not in MODEL_TYPES:
        raise UnsupportedModel(
            f"{path}: text_config.model_type '{text_type}' (inside '{top_type}') is not a "
            f"hybrid model type kvalign knows (known: {', '.join(sorted(MODEL_TYPES))})"
        )
    return nested, text_type, "text_config."


def _model_dtype(text: ConfigFields, top: ConfigFields) -> str:
    for fields in (text, top):
        for key in ("dtype", "torch_dtype"):
            value = fields.raw(key)
            if value is None:
                continue
            name = str(value)
            return normalize_model_dtype(name, field=f"{fields.where(key)} in the config")
    return "float32"  # transformers' default when a config names no dtype


def _layer_kinds(text: ConfigFields) -> tuple[bool, bool] | None:
    """(has attention layers, has state layers) from explicit layer lists, if any."""
    if text.has("linear_attn_config.full_attn_layers"):
        full = text.raw("linear_attn_config.full_attn_layers")
        kda = text.raw("linear_attn_config.kda_layers")
        return bool(full), bool(kda) if kda is not None else True
    for key in ("layers_block_type", "layer_types"):
        kinds = text.raw(key)
        if isinstance(kinds, (list, tuple)) and kinds:
            names = {str(kind).lower() for kind in kinds}
            return bool(names & _ATTENTION_KINDS), bool(names & _STATE_KINDS)
    return None


#: layer-type names of layers with neither attention nor state (Nemotron-H ``-``/``E``).
_PLAIN_KINDS = frozenset({"mlp", "moe", "-", "e"})


def _kind_of(name: str) -> LayerKind | None:
    """One ``layer_types`` / ``layers_block_type`` entry as a :data:`LayerKind`."""
    lowered = name.lower()
    if lowered == "hybrid":  # Zamba2: a Mamba layer with the shared attention block
        return "both"
    if lowered in _ATTENTION_KINDS:
        return "attention"
    if lowered in _STATE_KINDS:
        return "state"
    return "none" if lowered in _PLAIN_KINDS else None


def _layer_pattern(text: ConfigFields, spec: ModelSpec, model_type: str) -> tuple[LayerKind, ...]:
    """What each of the ``num_hidden_layers`` decoder layers holds, in vLLM's order.

    Read from ``linear_attn_config.full_attn_layers`` / ``kda_layers`` (Kimi-Linear;
    1-based, as ``KimiLinearConfig.is_kda_layer`` reads them), ``layers_block_type`` or
    ``layer_types`` (the transformers config classes derive them from e.g. Nemotron-H's
    ``hybrid_override_pattern`` or Jamba's attention period); Falcon-H1 runs attention and
    Mamba side by side in every layer (``FalconH1ParallelHybrid``). ``()`` when the
    config does not say, or the list does not have one entry per layer.
    """
    layers = text.raw("num_hidden_layers")
    if isinstance(layers, bool) or not isinstance(layers, int) or layers <= 0:
        return ()
    if spec.attention_free or model_type == "falcon_h1":
        every: LayerKind = "state" if spec.attention_free else "both"
        return (every,) * layers
    if text.has("linear_attn_config.full_attn_layers"):
        full = text.raw("linear_attn_config.full_attn_layers")
        kda = text.raw("linear_attn_config.kda_layers")
        if not isinstance(full, list) or not (kda is None or isinstance(kda, list)):
            return ()
        full_set = {i for i in full if isinstance(i, int)}
        kda_set = (
            {i for i in kda if isinstance(i, int)}
            if kda is not None
            else set(range(1, layers + 1)) - full_set
        )
        kinds: list[LayerKind] = []
        for number in range(1, layers + 1):
            attn, state = number in full_set, number in kda_set
            kinds.append("both" if attn and state else "attention" if attn else
                         "state" if state else "none")  # fmt: skip
        return tuple(kinds)
    for key in ("layers_block_type", "layer_types"):
        names = text.raw(key)
        if isinstance(names, (list, tuple)) and len(names) == layers:
            found = [_kind_of(str(name)) for name in names]
            if all(kind is not None for kind in found):
                return tuple(kind for kind in found if kind is not None)
    return ()


def _attention_only(
    raw: dict[str, Any], model_type: str, *, model_id: str, config_path: str, source: str
) -> ModelGeometry:
    """Geometry of a standard attention-only model (:data:`ATTENTION_ONLY_TYPES`): the
    attention fields only, through the transformers config class.

    Raises:
        InvalidConfig: a malformed field, or a state field in an attention-only type.
        UnsupportedModel: transformers does not ship the type's config class.
    """
    cls = transformers_config_class(model_type)
    if cls is None:  # pragma: no cover - every listed type ships with transformers
        raise UnsupportedModel(f"{config_path}: model_type '{model_type}' is unknown here")
    present = [key for key in _STATE_KEYS if key in raw]
    if present:
        raise InvalidConfig(
            f"{config_path}: model_type '{model_type}' is attention-only but the config has "
            f"state field(s) {', '.join(present)}"
        )
    try:
        model_dtype = _model_dtype(
            ConfigFields({}, path=config_path), ConfigFields(raw, path=config_path)
        )
    except KvalignError as exc:
        raise InvalidConfig(f"{config_path}: {exc}") from None
    text = ConfigFields(_parse_with_transformers(cls, raw, config_path), path=config_path)
    attention = _attention(text, None)
    archs = raw.get("architectures")
    architecture = (
        archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    )
    return ModelGeometry(
        model_id=model_id,
        model_type=model_type,
        architecture=architecture,
        config_path=config_path,
        source=source,
        loader="transformers",
        model_dtype=model_dtype,
        attention=attention,
        state=None,
        provenance=dict(text.provenance),
        notes=(f"model_type '{model_type}' is attention-only: nothing to align",),
        checkpoint_kv_cache_dtype=checkpoint_kv_cache_dtype(raw.get("quantization_config")),
    )


def _hidden_size(text: ConfigFields) -> int | None:
    """The text config's ``hidden_size`` when it is a positive integer, else ``None``."""
    value = text.raw("hidden_size")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _attention(text: ConfigFields, spec: ModelSpec | None) -> AttentionGeometry:
    heads = text.int("num_attention_heads", "num_attention_heads", "n_head", "n_heads")
    if text.has("kv_lora_rank"):
        head_size = text.int("kv_lora_rank", "kv_lora_rank") + text.int(
            "qk_rope_head_dim", "qk_rope_head_dim"
        )
        text.provenance["head_size"] = "kv_lora_rank + qk_rope_head_dim"
        return AttentionGeometry(heads, 1, head_size, use_mla=True)
    kv_heads = text.int(
        "total_kv_heads",
        "num_key_value_heads",
        "num_kv_heads",
        "n_head_kv",
        "multi_query_group_num",
        default=heads,
    )
    own_key = spec.head_size_key if spec is not None else None
    head_keys = tuple(k for k in (own_key, "head_dim") if k)
    head_size = 0
    for key in head_keys:
        value = text.raw(key)
        if value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            continue  # vLLM: head_dim <= 0 means "derive it from hidden_size"
        head_size = text.int("head_size", key)  # validates type, finiteness, range
        break
    if not head_size:
        hidden = text.int("hidden_size", "hidden_size")
        if hidden % heads:
            raise text.fail("hidden_size", f"= {hidden} is not divisible by {heads} heads")
        head_size = hidden // heads
        text.provenance["head_size"] = "hidden_size // num_attention_heads"
    return AttentionGeometry(heads, kv_heads, head_size)


_SSM_DTYPES = ("float32", "bfloat16", "float16")


def _ssm_default(text: ConfigFields, spec: ModelSpec) -> str | None:
    """The model's own default for ``mamba_ssm_cache_dtype=auto`` (validated)."""
    if spec.ssm_default == "nemotron_h":
        key, fallback = "mamba_ssm_cache_dtype", "float32"
    elif spec.ssm_default == "qwen3_5":
        key, fallback = "mamba_ssm_dtype", None
    else:
        return None
    value = text.raw(key)
    if value is None:
        return fallback
    if not isinstance(value, str) or value.removeprefix("torch.") not in _SSM_DTYPES:
        raise text.fail(key, f"must be one of {', '.join(_SSM_DTYPES)}, got {value!r}")
    return value.removeprefix("torch.")


def geometry_from_dict(
    raw: dict[str, Any],
    *,
    model_id: str,
    config_path: str,
    source: str,
) -> ModelGeometry:
    """Build the geometry of one model from its parsed ``config.json``.

    Raises:
        InvalidConfig: a field is missing or malformed (the message names file and field).
        UnsupportedModel: the ``model_type`` is not a model kvalign knows.
    """
    top_type = raw.get("model_type")
    if not isinstance(top_type, str) or not top_type:
        raise InvalidConfig(f"{config_path}: field 'model_type' is missing or not a string")
    check_config_sizes(raw, config_path)
    if top_type in ATTENTION_ONLY_TYPES and top_type not in MODEL_TYPES:
        return _attention_only(raw, top_type, model_id=model_id, config_path=config_path,
                               source=source)  # fmt: skip
    if top_type not in MODEL_TYPES and top_type not in WRAPPER_TYPES and "text_config" not in raw:
        raise UnsupportedModel(
            f"{config_path}: model_type '{top_type}' is not a hybrid attention/state-space "
            f"model kvalign knows (known: {', '.join(sorted(MODEL_TYPES))}; attention-only: "
            f"{', '.join(sorted(ATTENTION_ONLY_TYPES))})"
        )
    if top_type in WRAPPER_TYPES:
        nested = raw.get("text_config")
        if not isinstance(nested, dict) or not nested:
            raise InvalidConfig(
                f"{config_path}: field 'text_config' must be a non-empty object: the "
                f"'{top_type}' wrapper keeps the attention and state fields there"
            )
    archs = raw.get("architectures")
    architecture = (
        archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    )

    # the dtype is validated on the raw JSON first: transformers fails obscurely on junk
    raw_text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else {}
    try:
        model_dtype = _model_dtype(
            ConfigFields(raw_text, path=config_path, prefix="text_config."),
            ConfigFields(raw, path=config_path),
        )
    except KvalignError as exc:
        raise InvalidConfig(f"{config_path}: {exc}") from None

    notes: list[str] = []
    cfg: Any
    cls = None if top_type in VLLM_OWN_CONFIG_TYPES else transformers_config_class(top_type)
    if cls is None:
        cfg = raw
        loader = "raw-json"
        notes.append(
            f"model_type '{top_type}' is parsed by vLLM's own config class; kvalign read the "
            "raw JSON fields instead of running remote code"
        )
    else:
        cfg = _parse_with_transformers(cls, raw, config_path)
        loader = "transformers"

    text_cfg, text_type, prefix = _text_config(cfg, top_type, config_path)
    if isinstance(text_cfg, dict) and loader == "transformers":
        loader = "raw-json"
    spec = MODEL_TYPES[text_type]
    text = ConfigFields(text_cfg, path=config_path, prefix=prefix)

    kinds = _layer_kinds(text)
    has_attention = not spec.attention_free and (kinds is None or kinds[0])
    has_state = kinds is None or kinds[1] or spec.attention_free
    if not spec.attention_free and kinds is not None and not kinds[1]:
        notes.append("every layer is attention: treated as a pure attention model")

    state = StateGeometry(spec.family, spec.extract(text)) if has_state else None
    attention = _attention(text, spec) if has_attention else None
    if state is not None:
        # fail early on configs whose state cannot even be laid out unsharded
        from kvalign.families import family_module

        try:
            family_module(spec.family).shapes(state.params, 1, 0)
        except IndivisibleTP as exc:  # pragma: no cover - TP 1 always divides
            raise InvalidConfig(f"{config_path}: {exc}") from None

    defaulted = _defaulted_fields(raw, text.provenance.values())
    if defaulted:
        notes.append(
            "not in config.json, taken from the transformers config class defaults: "
            + ", ".join(defaulted)
        )
    chunk = _chunk_size(text) if state is not None else None
    # the SSM dtype the config itself names: a class default (transformers 5 gives
    # Nemotron-H float32) must not hide the release-dependent vLLM fallback
    as_written = ConfigFields(raw_text if prefix else raw, path=config_path, prefix=prefix)
    return ModelGeometry(
        model_id=model_id,
        model_type=text_type,
        architecture=architecture,
        config_path=config_path,
        source=source,
        loader=loader,
        model_dtype=model_dtype,
        attention=attention,
        state=state,
        ssm_dtype_default=_ssm_default(as_written, spec) if state is not None else None,
        provenance=dict(text.provenance),
        notes=tuple(notes),
        mamba_chunk_size=chunk,
        ssm_dtype_fallback=(
            spec.ssm_default == "nemotron_h" and as_written.raw("mamba_ssm_cache_dtype") is None
        ),
        checkpoint_kv_cache_dtype=checkpoint_kv_cache_dtype(raw.get("quantization_config")),
        layer_kinds=_layer_pattern(text, spec, text_type),
        transformers5_spelling=(
            text_type == "nemotron_h"
            and as_written.raw("layers_block_type") is not None
            and as_written.raw("hybrid_override_pattern") is None
        ),
        auto_map="auto_map" in raw,
        hidden_size=_hidden_size(text),
    )


#: older spellings transformers config classes map onto the key kvalign reads.
_KEY_ALIASES = {"head_dim": ("attention_head_dim",)}


def _defaulted_fields(raw: dict[str, Any], keys: Any) -> list[str]:
    """Config keys a formula read that the raw JSON does not contain (class defaults)."""

    def present(dotted: str) -> bool:
        node: Any = raw
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        return node is not None

    missing = []
    for key in sorted(set(keys)):
        if not isinstance(key, str) or " " in key:
            continue  # derived provenance such as "hidden_size // num_attention_heads"
        parent, _, leaf = key.rpartition(".")
        spellings = (leaf, *_KEY_ALIASES.get(leaf, ()))
        if not any(present(f"{parent}.{name}" if parent else name) for name in spellings):
            missing.append(key)
    return missing


def _chunk_size(text: ConfigFields) -> int | None:
    """Mamba chunk size (``mamba_chunk_size``, else ``chunk_size``), ``None`` when absent.

    Mirrors ``vllm/config/model.py`` ``ModelConfig.get_mamba_chunk_size`` (which falls
    back to 2048). A malformed value is ignored: only old release profiles read it.
    """
    for key in ("mamba_chunk_size", "chunk_size"):
        value = text.raw(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            text.provenance.setdefault("chunk_size", text.where(key))
            return value
    return None
