"""State-layout families pinned at their branches, from the per-rank formulas of
vLLM 0.33's ``MambaStateShapeCalculator`` and a worked
check (Nemotron-3-Nano: I = 4096, G = 8, H = 64, P = 64, N = 128, K = 4). Shapes are in
vLLM's default conv orientation (state length first)."""

from __future__ import annotations

import pytest

from kvalign.errors import InvalidSettings
from kvalign.families import (
    IndivisibleTP,
    divide,
    family_module,
    gdn,
    kda,
    linear_attention,
    mamba1,
    mamba2,
    shortconv,
)

NANO = {"I": 4096, "G": 8, "H": 64, "P": 64, "N": 128, "K": 4}


@pytest.mark.parametrize(
    ("tp", "spec", "conv", "ssm"),
    [
        # conv dim I + 2·G'·N = 4096 + 2·8·128 = 6144; K − 1 = 3 rows
        (1, 0, (3, 6144), (64, 64, 128)),
        (4, 0, (3, 1536), (16, 64, 128)),
        (8, 0, (3, 768), (8, 64, 128)),
        # speculative tokens add conv rows: K − 1 + num_spec
        (1, 2, (5, 6144), (64, 64, 128)),
        # G % TP != 0: G' = G + (TP − G) = 16 → (4096 + 2·16·128) / 16 = 512
        (16, 0, (3, 512), (4, 64, 128)),
    ],
)
def test_mamba2_shapes_with_shard_padding(
    tp: int, spec: int, conv: tuple[int, ...], ssm: tuple[int, ...]
) -> None:
    assert mamba2.shapes(NANO, tp, spec) == (conv, ssm)


@pytest.mark.parametrize(("groups", "tp", "padded"), [(8, 8, 8), (8, 4, 8), (8, 16, 16),
                                                      (1, 2, 2), (1, 1, 1), (2, 4, 4)])  # fmt: skip
def test_padded_groups(groups: int, tp: int, padded: int) -> None:
    assert mamba2.padded_groups(groups, tp) == padded


def test_mamba2_load_problem_only_for_unshardable_groups() -> None:
    # MambaMixer2 asserts n_groups % TP == 0 or n_groups == 1
    assert mamba2.load_problem(NANO, 8) == ""
    assert mamba2.load_problem({**NANO, "G": 1}, 16) == ""
    assert mamba2.load_problem(NANO, 16).startswith(
        "n_groups G = 8 is neither divisible by tensor parallel size 16 nor 1"
    )


def test_replay_ring_groups_padded_from_0_33_only() -> None:
    # x (H/TP, ring, P), dt (H/TP, ring), B (G'/TP, ring, N)
    assert mamba2.replay_ring_shapes(NANO, 16, 17, padded=True) == (
        (4, 17, 64), (4, 17), (1, 17, 128),
    )  # fmt: skip
    assert mamba2.replay_ring_shapes(NANO, 4, 16, padded=False) == (
        (16, 16, 64), (16, 16), (2, 16, 128),
    )  # fmt: skip
    with pytest.raises(IndivisibleTP, match="n_groups G = 8 is not divisible by tensor"):
        mamba2.replay_ring_shapes(NANO, 16, 16, padded=False)


def test_divide_is_exact() -> None:
    assert divide(6144, 4, "x") == 1536
    with pytest.raises(IndivisibleTP, match=r"^x = 6 is not divisible by tensor parallel size 4$"):
        divide(6, 4, "x")


def test_mamba1_ignores_speculative_tokens() -> None:
    p = {"I": 8192, "N": 16, "K": 4}
    assert mamba1.shapes(p, 2, 3) == ((3, 4096), (4096, 16))


def test_gdn_shapes_and_key_head_sharding() -> None:
    # Qwen3-Next: Hk 16, Hv 32, Dk = Dv = 128, K 4: conv 2·16·128 + 32·128 = 8192
    p = {"Hk": 16, "Hv": 32, "Dk": 128, "Dv": 128, "K": 4}
    assert gdn.shapes(p, 2, 1) == ((4, 4096), (16, 128, 128))
    assert gdn.load_problem(p, 16) == ""
    assert "Hk = 16 is not divisible by tensor parallel size 32" in gdn.load_problem(p, 32)


def test_kda_shapes_and_recurrent_dtype() -> None:
    # conv (H·D + 2·Hk·Dk) = 32·128 + 2·32·128 = 12,288; recurrent (H/TP, D, D)
    p = {"H": 32, "D": 128, "Hk": 32, "Dk": 128, "K": 4}
    assert kda.shapes(p, 4, 0) == ((3, 3072), (8, 128, 128))
    assert [kda.ssm_dtype(f) for f in ("auto", "float32", "bfloat16")] == [
        "float32", "float32", "bfloat16",
    ]  # fmt: skip
    with pytest.raises(InvalidSettings, match=r"^--mamba-ssm-cache-dtype float16: KDA"):
        kda.ssm_dtype("float16")


def test_short_conv_and_linear_attention() -> None:
    # LFM2-1.2B: C 2048, L 3 → (2, 2048) at TP 1 (golden vector vllm-0.33.0.jsonl)
    assert shortconv.shapes({"C": 2048, "L": 3}, 1, 4) == ((2, 2048),)
    # heads // TP, floor division with no divisibility check
    assert linear_attention.shapes({"heads": 64, "d": 96}, 3, 0) == ((21, 96, 96),)


@pytest.mark.parametrize(
    ("family", "states"),
    [("mamba1", ("c", "s")), ("mamba2", ("c", "s")), ("gdn", ("c", "s")), ("kda", ("c", "s")),
     ("shortconv", ("c",)), ("linear_attention", ("c",))],
)  # fmt: skip
def test_state_dtypes_per_family(family: str, states: tuple[str, ...]) -> None:
    # conv state takes mamba_cache_dtype; the ssm/recurrent state (when there is one)
    # mamba_ssm_cache_dtype
    assert family_module(family).dtypes("c", "s") == states  # type: ignore[arg-type]
