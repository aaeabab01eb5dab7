"""State-layout families and the registry of model types kvalign knows.

Each family module (``mamba1``, ``mamba2``, ``gdn``, ``kda``, ``shortconv``,
``linear_attention``) turns unsharded symbols into per-rank state tensor shapes. The
:data:`MODEL_TYPES` registry says, for each HF ``model_type``, which family it uses and
which config fields hold the symbols (spec section 3, "Field names per model"), following
each model's ``get_mamba_state_shape_from_config`` in vLLM 0.33
``vllm/model_executor/models/<model>.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import NamedTuple

from kvalign.families import gdn, kda, linear_attention, mamba1, mamba2, shortconv
from kvalign.families.base import FieldReader, IndivisibleTP, Shape, divide
from kvalign.geometry import Family

__all__ = [
    "FAMILY_MODULES",
    "MODEL_TYPES",
    "FieldReader",
    "IndivisibleTP",
    "ModelSpec",
    "Shape",
    "divide",
    "family_module",
]

FAMILY_MODULES: dict[Family, ModuleType] = {
    "mamba1": mamba1,
    "mamba2": mamba2,
    "gdn": gdn,
    "kda": kda,
    "shortconv": shortconv,
    "linear_attention": linear_attention,
}


def family_module(family: Family) -> ModuleType:
    """The module implementing ``family`` (``shapes``, ``dtypes``)."""
    return FAMILY_MODULES[family]


Extractor = Callable[[FieldReader], dict[str, int]]


class ModelSpec(NamedTuple):
    """How one ``model_type`` maps onto kvalign's model.

    Attributes:
        family: state layout family.
        extract: reads the family's symbols from the (text) config.
        attention_free: the architecture has no attention layers at all.
        ssm_default: ``nemotron_h`` (config ``mamba_ssm_cache_dtype`` or float32),
            ``qwen3_5`` (config ``mamba_ssm_dtype`` when present) or ``None``.
        head_size_key: a model-specific head-size key tried before ``head_dim``.
    """

    family: Family
    extract: Extractor
    attention_free: bool = False
    ssm_default: str | None = None
    head_size_key: str | None = None


def _nemotron_h(r: FieldReader) -> dict[str, int]:
    heads = r.int("H", "mamba_num_heads")
    head_dim = r.int("P", "mamba_head_dim")
    return {
        "I": heads * head_dim,
        "G": r.int("G", "n_groups"),
        "H": heads,
        "P": head_dim,
        "N": r.int("N", "ssm_state_size"),
        "K": r.int("K", "conv_kernel"),
    }


def _falcon_h1(r: FieldReader) -> dict[str, int]:
    if r.has("mamba_d_ssm"):
        inner = r.int("I", "mamba_d_ssm")
    else:
        inner = int(r.number("I", "mamba_expand") * r.int("hidden_size", "hidden_size"))
    return {
        "I": inner,
        "G": r.int("G", "mamba_n_groups"),
        "H": r.int("H", "mamba_n_heads"),
        "P": r.int("P", "mamba_d_head"),
        "N": r.int("N", "mamba_d_state"),
        "K": r.int("K", "mamba_d_conv"),
    }


def _granite_bamba(r: FieldReader) -> dict[str, int]:
    return {
        "I": int(r.number("I", "mamba_expand") * r.int("hidden_size", "hidden_size")),
        "G": r.int("G", "mamba_n_groups"),
        "H": r.int("H", "mamba_n_heads"),
        "P": r.int("P", "mamba_d_head"),
        "N": r.int("N", "mamba_d_state"),
        "K": r.int("K", "mamba_d_conv"),
    }


def _zamba2(r: FieldReader) -> dict[str, int]:
    return {
        "I": int(r.number("I", "mamba_expand") * r.int("hidden_size", "hidden_size")),
        "G": r.int("G", "mamba_ngroups"),
        "H": r.int("H", "n_mamba_heads"),
        "P": r.int("P", "mamba_headdim"),
        "N": r.int("N", "mamba_d_state"),
        "K": r.int("K", "mamba_d_conv"),
    }


def _mamba2(r: FieldReader) -> dict[str, int]:
    return {
        "I": int(r.number("I", "expand") * r.int("hidden_size", "hidden_size")),
        "G": r.int("G", "n_groups"),
        "H": r.int("H", "num_heads"),
        "P": r.int("P", "head_dim"),
        "N": r.int("N", "state_size"),
        "K": r.int("K", "conv_kernel"),
    }


def _jamba(r: FieldReader) -> dict[str, int]:
    return {
        "I": int(r.number("I", "mamba_expand") * r.int("hidden_size", "hidden_size")),
        "N": r.int("N", "mamba_d_state"),
        "K": r.int("K", "mamba_d_conv"),
    }


def _mamba1(r: FieldReader) -> dict[str, int]:
    return {
        "I": r.int("I", "intermediate_size"),
        "N": r.int("N", "state_size"),
        "K": r.int("K", "conv_kernel"),
    }


def _gdn(r: FieldReader) -> dict[str, int]:
    return {
        "Hk": r.int("Hk", "linear_num_key_heads"),
        "Hv": r.int("Hv", "linear_num_value_heads"),
        "Dk": r.int("Dk", "linear_key_head_dim"),
        "Dv": r.int("Dv", "linear_value_head_dim"),
        "K": r.int("K", "linear_conv_kernel_dim"),
    }


def _kda(r: FieldReader) -> dict[str, int]:
    if not (r.has("linear_num_value_heads") or r.has("linear_num_heads")):
        heads = r.int("H", "linear_attn_config.num_heads")
        head_dim = r.int("D", "linear_attn_config.head_dim")
        kernel = r.int("K", "linear_attn_config.short_conv_kernel_size")
    else:  # AliceAI-style flat keys
        heads = r.int("H", "linear_num_value_heads", "linear_num_heads")
        head_dim = r.int("D", "linear_value_head_dim", "linear_head_dim")
        kernel = r.int("K", "linear_conv_kernel_dim", default=4)
    return {
        "H": heads,
        "D": head_dim,
        "Hk": r.int("Hk", "linear_num_key_heads", default=heads),
        "Dk": r.int("Dk", "linear_key_head_dim", default=head_dim),
        "K": kernel,
    }


def _lfm2(r: FieldReader) -> dict[str, int]:
    return {"C": r.int("C", "conv_dim"), "L": r.int("L", "conv_L_cache")}


def _lfm2_moe(r: FieldReader) -> dict[str, int]:
    return {"C": r.int("C", "hidden_size"), "L": r.int("L", "conv_L_cache")}


def _linear_attention(r: FieldReader) -> dict[str, int]:
    heads = r.int("heads", "num_attention_heads")
    if r.has("head_dim"):
        d = r.int("d", "head_dim")
    else:
        d = r.int("hidden_size", "hidden_size") // heads
    return {"heads": heads, "d": d}


#: HF ``model_type`` (of the text config) → how kvalign reads it.
MODEL_TYPES: dict[str, ModelSpec] = {
    # mamba2
    "nemotron_h": ModelSpec("mamba2", _nemotron_h, ssm_default="nemotron_h"),
    "falcon_h1": ModelSpec("mamba2", _falcon_h1),
    "granitemoehybrid": ModelSpec("mamba2", _granite_bamba),
    "bamba": ModelSpec("mamba2", _granite_bamba),
    "zamba2": ModelSpec("mamba2", _zamba2, head_size_key="attention_head_dim"),
    "mamba2": ModelSpec("mamba2", _mamba2, attention_free=True),
    # mamba1
    "jamba": ModelSpec("mamba1", _jamba),
    "mamba": ModelSpec("mamba1", _mamba1, attention_free=True),
    "falcon_mamba": ModelSpec("mamba1", _mamba1, attention_free=True),
    # gated delta net
    "qwen3_next": ModelSpec("gdn", _gdn),
    "qwen3_5_text": ModelSpec("gdn", _gdn, ssm_default="qwen3_5"),
    "qwen3_5_moe_text": ModelSpec("gdn", _gdn, ssm_default="qwen3_5"),
    "olmo_hybrid": ModelSpec("gdn", _gdn),
    # kimi delta attention
    "kimi_linear": ModelSpec("kda", _kda),
    "bailing_moe_v3": ModelSpec("kda", _kda),
    "alice_ai": ModelSpec("kda", _kda),
    # short conv
    "lfm2": ModelSpec("shortconv", _lfm2),
    "lfm2_moe": ModelSpec("shortconv", _lfm2_moe),
    # linear attention
    "bailing_moe_linear": ModelSpec("linear_attention", _linear_attention),
}

#: wrapper ``model_type`` → the text sub-config's expected type (VL / multimodal wrappers).
WRAPPER_TYPES: dict[str, str] = {
    "qwen3_5": "qwen3_5_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
    "kimi_k3": "kimi_linear",
    "lfm2_vl": "lfm2",
    "nemotron_h_vl": "nemotron_h",
}
