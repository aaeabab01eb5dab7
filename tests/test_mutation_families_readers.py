"""The per-model field readers (kvalign.families ``MODEL_TYPES[...].extract``) run on every
bundled config and on one config per model type no bundled model covers.

A bundled ``check`` reads the precomputed geometry (kvalign/sources/bundled_geometry.json),
so without this file the readers run in no test of the families module. Expected values:

- every bundled model: the state shapes vLLM 0.33.0 itself computed from the same
  ``config.json`` at each TP (tests/golden/vllm-0.33.0.jsonl, default settings), and the
  symbols and the config key each came from as stored in the bundled geometry (which
  ``make geometry`` computes through transformers; tests/sources/test_bundled_geometry.py
  keeps it current);
- the other model types: the field names of the spec's "Field names per model" list
  (GraniteMoeHybrid/Bamba, Zamba2, Mamba2, Jamba, Mamba, LFM2-MoE, KDA's flat AliceAI keys)
  and vLLM 0.33 ``bailing_moe_linear.py`` ``get_mamba_state_shape_from_config``
  (``head_dim``, else ``hidden_size // num_attention_heads``), with values chosen so that a
  wrong key or a wrong formula gives a different number.

The raw JSON is read directly (no transformers), as kvalign does for vLLM-owned config
classes.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kvalign.families import MODEL_TYPES, WRAPPER_TYPES, family_module
from kvalign.sources.fields import ConfigFields

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "configs" / "models"
GOLDEN = ROOT / "tests" / "golden" / "vllm-0.33.0.jsonl"


@cache
def _bundled() -> dict[str, Any]:
    data = json.loads((ROOT / "kvalign" / "sources" / "bundled_geometry.json").read_text())
    return {k: v["geometry"] for k, v in data["models"].items() if v["geometry"]["state"]}


@cache
def _golden_shapes() -> dict[str, dict[int, list[list[int]]]]:
    """(model → TP → state shapes) of the default-settings vectors vLLM 0.33.0 computed."""
    found: dict[str, dict[int, list[list[int]]]] = {}
    for line in GOLDEN.read_text().splitlines():
        vector = json.loads(line)
        settings, expected = vector["settings"], vector["expected"]
        defaults = (
            settings["mamba_cache_dtype"] == settings["mamba_ssm_cache_dtype"] == "auto"
            and not settings["num_speculative_tokens"]
        )
        if defaults and expected.get("valid") and "mamba_state_shapes" in expected:
            found.setdefault(vector["model"], {})[vector["tp"]] = expected["mamba_state_shapes"]
    return found


def _read(raw: dict[str, Any]) -> tuple[str, dict[str, int], dict[str, str]]:
    """(model type, symbols, provenance) of a raw config, through the text config."""
    top = raw["model_type"]
    if top in MODEL_TYPES:
        text, model_type, prefix = raw, top, ""
    else:
        text = raw["text_config"]
        model_type = text.get("model_type") or WRAPPER_TYPES[top]
        prefix = "text_config."
    fields = ConfigFields(text, path="config.json", prefix=prefix)
    params = MODEL_TYPES[model_type].extract(fields)
    return model_type, params, dict(fields.provenance)


BUNDLED = sorted(_bundled())


def test_every_bundled_state_model_is_read() -> None:
    # 24 bundled configs with a state (the other bundled models are attention-only)
    assert len(BUNDLED) == 24
    assert set(_golden_shapes()) == set(BUNDLED)


@pytest.mark.parametrize("model", BUNDLED)
def test_reader_matches_the_bundled_geometry(model: str) -> None:
    raw = json.loads((MODELS / model / "config.json").read_text())
    model_type, params, provenance = _read(raw)
    stored = _bundled()[model]
    assert model_type == stored["model_type"]
    assert params == stored["state"]["params"]
    for symbol, key in provenance.items():
        assert stored["provenance"][symbol] == key, symbol
    # every symbol the stored geometry says was read from a key is recorded again
    assert {s for s in stored["provenance"] if s in params} <= set(provenance)


@pytest.mark.parametrize("model", BUNDLED)
def test_reader_gives_the_shapes_vllm_computed(model: str) -> None:
    raw = json.loads((MODELS / model / "config.json").read_text())
    _, params, _ = _read(raw)
    family = family_module(MODEL_TYPES[_bundled()[model]["model_type"]].family)
    measured = _golden_shapes()[model]
    assert measured  # at least TP 1
    for tp, shapes in measured.items():
        assert [list(s) for s in family.shapes(params, tp, 0)] == shapes, tp


# ---- model types without a bundled config: one synthetic config each ----


MAMBA2_FIELDS = {"hidden_size": 1536, "mamba_expand": 2, "mamba_n_groups": 4,
                 "mamba_n_heads": 40, "mamba_d_head": 64, "mamba_d_state": 128,
                 "mamba_d_conv": 4}  # fmt: skip
# I = mamba_expand · hidden_size = 3072, which is not H · P = 40 · 64 = 2560 (Nemotron-H's rule)


@pytest.mark.parametrize(
    ("raw", "expected", "keys"),
    [
        # GraniteMoeHybrid / Bamba: I = mamba_expand · hidden_size = 2 · 1536 = 3072
        ({"model_type": "granitemoehybrid", **MAMBA2_FIELDS},
         {"I": 3072, "G": 4, "H": 40, "P": 64, "N": 128, "K": 4},
         {"I": "mamba_expand", "G": "mamba_n_groups", "H": "mamba_n_heads",
          "P": "mamba_d_head", "N": "mamba_d_state", "K": "mamba_d_conv",
          "hidden_size": "hidden_size"}),
        ({"model_type": "bamba", **MAMBA2_FIELDS},
         {"I": 3072, "G": 4, "H": 40, "P": 64, "N": 128, "K": 4}, {"G": "mamba_n_groups"}),
        # Zamba2: mamba_ngroups, n_mamba_heads, mamba_headdim
        ({"model_type": "zamba2", "hidden_size": 2560, "mamba_expand": 2, "mamba_ngroups": 2,
          "n_mamba_heads": 80, "mamba_headdim": 64, "mamba_d_state": 64, "mamba_d_conv": 4},
         {"I": 5120, "G": 2, "H": 80, "P": 64, "N": 64, "K": 4},
         {"I": "mamba_expand", "hidden_size": "hidden_size", "G": "mamba_ngroups",
          "H": "n_mamba_heads", "P": "mamba_headdim", "N": "mamba_d_state",
          "K": "mamba_d_conv"}),
        # Mamba2 (attention-free): expand, n_groups, num_heads, head_dim, state_size
        ({"model_type": "mamba2", "hidden_size": 4096, "expand": 2, "n_groups": 8,
          "num_heads": 128, "head_dim": 64, "state_size": 128, "conv_kernel": 4},
         {"I": 8192, "G": 8, "H": 128, "P": 64, "N": 128, "K": 4},
         {"I": "expand", "G": "n_groups", "H": "num_heads", "P": "head_dim",
          "N": "state_size", "K": "conv_kernel"}),
        # Falcon-H1 with mamba_d_ssm null: I = int(mamba_expand · hidden_size) = 1.5 · 1024
        ({"model_type": "falcon_h1", "hidden_size": 1024, "mamba_d_ssm": None,
          "mamba_expand": 1.5, "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_d_head": 64,
          "mamba_d_state": 128, "mamba_d_conv": 4},
         {"I": 1536, "G": 1, "H": 24, "P": 64, "N": 128, "K": 4},
         {"I": "mamba_expand", "hidden_size": "hidden_size"}),
        # Jamba: I = mamba_expand · hidden_size, mamba_d_state, mamba_d_conv
        ({"model_type": "jamba", "hidden_size": 4096, "mamba_expand": 2, "mamba_d_state": 16,
          "mamba_d_conv": 4},
         {"I": 8192, "N": 16, "K": 4},
         {"I": "mamba_expand", "N": "mamba_d_state", "K": "mamba_d_conv",
          "hidden_size": "hidden_size"}),
        # Mamba: intermediate_size, state_size, conv_kernel
        ({"model_type": "mamba", "intermediate_size": 5120, "state_size": 16,
          "conv_kernel": 4, "hidden_size": 2560},
         {"I": 5120, "N": 16, "K": 4},
         {"I": "intermediate_size", "N": "state_size", "K": "conv_kernel"}),
        # LFM2-MoE: C = hidden_size (not conv_dim), L = conv_L_cache
        ({"model_type": "lfm2_moe", "hidden_size": 2048, "conv_dim": 999, "conv_L_cache": 3},
         {"C": 2048, "L": 3}, {"C": "hidden_size", "L": "conv_L_cache"}),
        # OLMo-hybrid: the GDN fields
        ({"model_type": "olmo_hybrid", "linear_num_key_heads": 16,
          "linear_num_value_heads": 32, "linear_key_head_dim": 128,
          "linear_value_head_dim": 96, "linear_conv_kernel_dim": 4},
         {"Hk": 16, "Hv": 32, "Dk": 128, "Dv": 96, "K": 4},
         {"Hk": "linear_num_key_heads", "Hv": "linear_num_value_heads",
          "Dk": "linear_key_head_dim", "Dv": "linear_value_head_dim",
          "K": "linear_conv_kernel_dim"}),
        # KDA, AliceAI-style flat keys; key heads/dims and the kernel as written
        ({"model_type": "alice_ai", "linear_num_value_heads": 32, "linear_value_head_dim": 128,
          "linear_num_key_heads": 16, "linear_key_head_dim": 64, "linear_conv_kernel_dim": 3},
         {"H": 32, "D": 128, "Hk": 16, "Dk": 64, "K": 3},
         {"H": "linear_num_value_heads", "D": "linear_value_head_dim",
          "Hk": "linear_num_key_heads", "Dk": "linear_key_head_dim",
          "K": "linear_conv_kernel_dim"}),
        # the second spelling (linear_num_heads / linear_head_dim); Hk = H, Dk = D and the
        # kernel 4 when the config names none
        ({"model_type": "bailing_moe_v3", "linear_num_heads": 16, "linear_head_dim": 192},
         {"H": 16, "D": 192, "Hk": 16, "Dk": 192, "K": 4},
         {"H": "linear_num_heads", "D": "linear_head_dim"}),
        # Kimi-Linear: linear_attn_config; Hk = H and Dk = D unless the config says otherwise
        ({"model_type": "kimi_linear", "linear_attn_config": {"num_heads": 32, "head_dim": 128,
          "short_conv_kernel_size": 4}},
         {"H": 32, "D": 128, "Hk": 32, "Dk": 128, "K": 4},
         {"H": "linear_attn_config.num_heads", "D": "linear_attn_config.head_dim",
          "K": "linear_attn_config.short_conv_kernel_size"}),
        # Bailing linear: head_dim when given
        ({"model_type": "bailing_moe_linear", "num_attention_heads": 16, "head_dim": 128,
          "hidden_size": 4096},
         {"heads": 16, "d": 128}, {"heads": "num_attention_heads", "d": "head_dim"}),
        # ... else hidden_size // num_attention_heads = 4104 // 32 = 128 (floor division)
        ({"model_type": "bailing_moe_linear", "num_attention_heads": 32, "hidden_size": 4104},
         {"heads": 32, "d": 128}, {"heads": "num_attention_heads", "hidden_size": "hidden_size"}),
    ],
)  # fmt: skip
def test_reader_of_each_model_type(
    raw: dict[str, Any], expected: dict[str, int], keys: dict[str, str]
) -> None:
    model_type, params, provenance = _read(raw)
    assert model_type == raw["model_type"]
    assert params == expected
    assert all(type(v) is int for v in params.values())
    for symbol, key in keys.items():
        assert provenance[symbol] == key, symbol


def test_kda_flat_keys_are_chosen_by_either_spelling() -> None:
    # a config with linear_num_heads only (no linear_num_value_heads) still takes the flat
    # branch: reading linear_attn_config instead would fail (it is absent)
    _, params, _ = _read({"model_type": "alice_ai", "linear_num_heads": 8, "linear_head_dim": 64})
    assert params == {"H": 8, "D": 64, "Hk": 8, "Dk": 64, "K": 4}


# ---- the TP-divisibility messages a refused TP prints (each family's divided dimension) ----


@pytest.mark.parametrize(
    ("family", "params", "tp", "message"),
    [
        ("shortconv", {"C": 2048, "L": 3}, 3,
         "conv dim C = 2048 is not divisible by tensor parallel size 3"),
        # KDA conv dim H·D + 2·Hk·Dk = 6·64 + 2·6·64 = 1152; 1152 % 5 != 0
        ("kda", {"H": 6, "D": 64, "Hk": 6, "Dk": 64, "K": 4}, 5,
         "conv dim H*D + 2*Hk*Dk = 1152 is not divisible by tensor parallel size 5"),
        # Mamba2, G = 8 at TP 3: G' = TP = 3, conv dim 4096 + 2·3·128 = 4864 = 3·1621 + 1
        ("mamba2", {"I": 4096, "G": 8, "H": 64, "P": 64, "N": 128, "K": 4}, 3,
         "conv dim I + 2*G'*N = 4864 is not divisible by tensor parallel size 3"),
        # G = 1 at TP 2: G' = 2, conv dim 4096 + 2·2·128 = 4608 divides; H = 5 does not
        ("mamba2", {"I": 4096, "G": 1, "H": 5, "P": 64, "N": 128, "K": 4}, 2,
         "mamba heads H = 5 is not divisible by tensor parallel size 2"),
        ("mamba1", {"I": 8192, "N": 16, "K": 4}, 3,
         "intermediate size I = 8192 is not divisible by tensor parallel size 3"),
        # GDN conv dim 2·16·128 + 32·128 = 8192
        ("gdn", {"Hk": 16, "Dk": 128, "Hv": 32, "Dv": 128, "K": 4}, 3,
         "conv dim 2*Hk*Dk + Hv*Dv = 8192 is not divisible by tensor parallel size 3"),
        # conv dim 2·2·128 + 6·128 = 1280 divides by 4; Hv = 6 does not
        ("gdn", {"Hk": 2, "Dk": 128, "Hv": 6, "Dv": 128, "K": 4}, 4,
         "value heads Hv = 6 is not divisible by tensor parallel size 4"),
        # 1152 divides by 4 but H = 6 does not
        ("kda", {"H": 6, "D": 64, "Hk": 6, "Dk": 64, "K": 4}, 4,
         "KDA heads H = 6 is not divisible by tensor parallel size 4"),
    ],
)  # fmt: skip
def test_indivisible_tp_names_the_dimension(
    family: str, params: dict[str, int], tp: int, message: str
) -> None:
    from kvalign.families import IndivisibleTP

    with pytest.raises(IndivisibleTP) as info:
        family_module(family).shapes(params, tp, 0)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_replay_ring_messages() -> None:
    from kvalign.families import IndivisibleTP, mamba2

    nano = {"I": 4096, "G": 8, "H": 64, "P": 64, "N": 128, "K": 4}
    with pytest.raises(IndivisibleTP) as info:
        mamba2.replay_ring_shapes({**nano, "H": 6}, 4, 16, padded=True)
    assert str(info.value) == "mamba heads H = 6 is not divisible by tensor parallel size 4"
    with pytest.raises(IndivisibleTP) as info:
        mamba2.replay_ring_shapes(nano, 16, 16, padded=False)
    assert str(info.value) == "n_groups G = 8 is not divisible by tensor parallel size 16"


def test_kda_speculative_rows_and_dtype_message() -> None:
    from kvalign.errors import InvalidSettings
    from kvalign.families import kda

    # conv rows K - 1 + num_spec = 4 - 1 + 2 = 5; conv dim (32·128 + 2·32·128) / 4 = 3072
    p = {"H": 32, "D": 128, "Hk": 32, "Dk": 128, "K": 4}
    assert kda.shapes(p, 4, 2) == ((5, 3072), (8, 128, 128))
    with pytest.raises(InvalidSettings) as info:
        kda.ssm_dtype("float16")
    assert str(info.value) == (
        "--mamba-ssm-cache-dtype float16: KDA recurrent state accepts only auto, float32 "
        "or bfloat16 (vLLM rejects this configuration)"
    )


def test_divide_gives_whole_elements_and_load_problem_text() -> None:
    from kvalign.families import divide, mamba2

    quotient = divide(6144, 4, "x")
    assert quotient == 1536 and type(quotient) is int
    nano = {"I": 4096, "G": 8, "H": 64, "P": 64, "N": 128, "K": 4}
    # MambaMixer2 asserts n_groups % TP == 0 or n_groups == 1
    assert mamba2.load_problem(nano, 16) == (
        "n_groups G = 8 is neither divisible by tensor parallel size 16 nor 1: vLLM's "
        "MambaMixer2 refuses to load"
    )
