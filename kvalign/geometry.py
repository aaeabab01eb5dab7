"""Typed model of what a model's config says about KV-cache and state geometry.

``sources/`` builds a :class:`ModelGeometry` from a config; ``alignment`` does arithmetic
on it. Every quantity remembers the config key it came from (``provenance``) so the
output can explain itself. Nothing in this module reads files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

Family = Literal["mamba1", "mamba2", "gdn", "kda", "shortconv", "linear_attention"]

FAMILIES: tuple[Family, ...] = ("mamba1", "mamba2", "gdn", "kda", "shortconv", "linear_attention")

#: what one decoder layer holds: softmax ``attention``, recurrent ``state``, ``both``
#: (Falcon-H1's parallel layers, Zamba2's hybrid layers), or ``none`` (an MLP/MoE layer
#: of a Nemotron-H pattern).
LayerKind = Literal["attention", "state", "both", "none"]

LAYER_KINDS: tuple[LayerKind, ...] = ("attention", "state", "both", "none")


class AttentionGeometry(NamedTuple):
    """Unsharded attention geometry of the model's full-attention layers.

    Attributes:
        num_attention_heads: total query heads (vLLM checks ``heads % TP == 0``).
        total_kv_heads: total KV heads (``num_key_value_heads``), ignored for MLA.
        head_size: K head size in elements; for MLA ``kv_lora_rank + qk_rope_head_dim``.
        use_mla: multi-head latent attention: one latent vector per token, 1 KV head per rank.
    """

    num_attention_heads: int
    total_kv_heads: int
    head_size: int
    use_mla: bool = False

    @property
    def head_size_v(self) -> int:
        """V head size in elements: ``head_size`` for ordinary attention, 0 for MLA."""
        return 0 if self.use_mla else self.head_size


class StateGeometry(NamedTuple):
    """Unsharded recurrent-state geometry of the model's mamba-like layers.

    Attributes:
        family: state layout family (see ``kvalign.families``).
        params: the family's symbols (e.g. ``I``, ``G``, ``H``, ``P``, ``N``, ``K`` for
            mamba2) as integers, unsharded.
    """

    family: Family
    params: Mapping[str, int]


@dataclass(frozen=True)
class ModelGeometry:
    """Everything the block-size arithmetic needs to know about one model.

    Attributes:
        model_id: how the user named the model (hub id, path, catalog name).
        model_type: the config's ``model_type`` (of the text sub-config for VL wrappers).
        architecture: first entry of ``architectures`` (vLLM's model class), or ``""``.
        config_path: where the config was read from (for messages).
        source: ``catalog``, ``local`` or ``hub``.
        loader: ``transformers`` (config class) or ``raw-json`` (types only vLLM ships).
        model_dtype: the config's dtype (``bfloat16``, ``float16``, ``float32``).
        attention: attention geometry, or ``None`` for attention-free models.
        state: state geometry, or ``None`` for pure-attention models.
        ssm_dtype_default: what ``mamba_ssm_cache_dtype=auto`` becomes for this model
            before alignment (Nemotron-H: config value or float32; Qwen3.5: ``mamba_ssm_dtype``).
        provenance: symbol → config key it was read from (``text_config.`` prefix for VL).
        notes: human-readable remarks about how the config was read.
        mamba_chunk_size: ``mamba_chunk_size`` / ``chunk_size`` of the text config, or
            ``None`` (vLLM ``ModelConfig.get_mamba_chunk_size`` then uses 2048); only
            releases with chunk-aligned prefix caching read it.
        ssm_dtype_fallback: ``ssm_dtype_default`` is vLLM's fallback (the config names no
            ``mamba_ssm_cache_dtype``), so it depends on the release.
        checkpoint_kv_cache_dtype: the KV-cache dtype the checkpoint's
            ``quantization_config`` asks for (``fp8``, ``fp8_e4m3``, ``nvfp4``; ``auto`` for
            an unrecognised scheme), ``None`` when it names none. ``--kv-cache-dtype auto``
            resolves to it (:func:`kvalign.dtypes.checkpoint_kv_cache_dtype`).
        layer_kinds: what each decoder layer holds, in vLLM's layer order (one entry per
            ``num_hidden_layers``; :data:`LayerKind`), ``()`` when the config does not say.
            Pipeline parallelism splits these layers across stages
            (:func:`kvalign.alignment.pp_partition`).
        transformers5_spelling: the config spells a field only transformers 5's config
            class reads (Nemotron-H ``layers_block_type`` without
            ``hybrid_override_pattern``): releases that run transformers 4 cannot load it.
        auto_map: the config names remote code (``auto_map``), which kvalign never runs.
        hidden_size: the text config's ``hidden_size`` (elements), ``None`` when it names
            none (the ``extract_hidden_states`` speculative method caches hidden states of
            this width).
    """

    model_id: str
    model_type: str
    architecture: str
    config_path: str
    source: str
    loader: str
    model_dtype: str
    attention: AttentionGeometry | None
    state: StateGeometry | None
    ssm_dtype_default: str | None = None
    provenance: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    mamba_chunk_size: int | None = None
    ssm_dtype_fallback: bool = False
    checkpoint_kv_cache_dtype: str | None = None
    layer_kinds: tuple[LayerKind, ...] = ()
    transformers5_spelling: bool = False
    auto_map: bool = False
    hidden_size: int | None = None

    @property
    def attention_free(self) -> bool:
        """True for models with no attention layers (vLLM does no block alignment)."""
        return self.attention is None

    @property
    def is_hybrid(self) -> bool:
        """True when both attention and recurrent-state layers exist."""
        return self.attention is not None and self.state is not None
