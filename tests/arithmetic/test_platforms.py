"""Backends per platform (CUDA, ROCm, CPU, XPU), ``--gpu`` platform checks and
``--hf-overrides``, with hand-derived numbers.

Nemotron-3-Nano-30B-A3B at TP 1 (see tests/fidelity/test_verify.py): a = 1,024 B/token,
m = 2,134,016 B. Kimi-K3 (MLA + KDA) at TP 1: a = (512 + 64) · 2 = 1,152 B/token,
m = 3·36,864·2 + 96·128·128·4 = 221,184 + 6,291,456 = 6,512,640 B; MLA floor 128 →
128 · ceil(6,512,640 / (128 · 1,152) = 44.2) = 128 · 45 = 5,760.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvalign.alignment import kernel_block_size
from kvalign.backends import BACKENDS, get_gpu, platform_for, resolve_backend
from kvalign.errors import InvalidSettings
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.sources.overrides import apply_hf_overrides, parse_hf_overrides
from tests.resolve import rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
KIMI = "moonshotai/Kimi-K3"
runner = CliRunner()


def _rank(model: str, tp: int = 1, **settings: object):  # type: ignore[no-untyped-def]
    return rank_of(load_model(model), Settings(**settings), tp)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("settings", "backend", "block", "kernel"),
    [
        # ROCM_AITER_FA {16, 32}: unit 16 → 16·ceil(2,134,016/16,384 = 130.25) = 2,096;
        # 2,096 is neither 16 nor 32, 32 does not divide it (65.5), 16 does → kernel 16
        ({"gpu": "MI300X", "attention_backend": "ROCM_AITER_FA"}, "ROCM_AITER_FA", 2096, 16),
        # ROCM_ATTN MultipleOf(16): same block, kernel = logical
        ({"gpu": "MI300X", "attention_backend": "ROCM_ATTN"}, "ROCM_ATTN", 2096, 2096),
        # CPU_ATTN MultipleOf(32), CPU platform default block 128: unit max(32, 128) = 128
        # → 128·ceil(2,134,016/131,072 = 16.3) = 128·17 = 2,176 (a multiple of 32)
        ({"attention_backend": "CPU_ATTN"}, "CPU_ATTN", 2176, 2176),
        # HPC_ATTN [64]: preferred 64 (16 is not a multiple of 64) → unit 64
        # → 64·ceil(2,134,016/65,536 = 32.6) = 64·33 = 2,112; kernel: largest listed divisor 64
        ({"attention_backend": "HPC_ATTN"}, "HPC_ATTN", 2112, 64),
        # XPU FLASH_ATTN: MultipleOf(64), prefers 64 → 2,112, kernel = logical
        ({"gpu": "Max-1550"}, "FLASH_ATTN", 2112, 2112),
        # XPU TRITON_ATTN: MultipleOf(16) → 2,096
        ({"gpu": "Max-1550", "attention_backend": "TRITON_ATTN"}, "TRITON_ATTN", 2096, 2096),
        # FLASHINFER on B200 (GQA: 32 query / 2 KV heads) advertises up to 1,024:
        # 2,096 = 16·131 is not a multiple of 32 → largest listed divisor 16
        ({"gpu": "B200", "attention_backend": "FLASHINFER"}, "FLASHINFER", 2096, 16),
    ],
)
def test_backend_block_sizes(
    settings: dict[str, object], backend: str, block: int, kernel: int
) -> None:
    rank = _rank(NANO, **settings)
    assert (rank.backend, rank.block_size, rank.kernel_block_size) == (backend, block, kernel)


def test_kernel_block_sizes_by_hand() -> None:
    # 4,192 = 32·131: ROCM_AITER_FA → 32; 2,112 = 64·33: HPC_ATTN → 64, TOKENSPEED_MLA → 64
    assert kernel_block_size(4192, BACKENDS["ROCM_AITER_FA"]) == 32
    assert kernel_block_size(2112, BACKENDS["HPC_ATTN"]) == 64
    assert kernel_block_size(2112, BACKENDS["TOKENSPEED_MLA"]) == 64
    assert kernel_block_size(4192, BACKENDS["TOKENSPEED_MLA"]) == 32
    # MultipleOf(1) / MultipleOf(32) accept any multiple
    assert kernel_block_size(5760, BACKENDS["ROCM_AITER_MLA"]) == 5760
    assert kernel_block_size(5760, BACKENDS["AMX_MLA"]) == 5760  # 32·180
    assert kernel_block_size(2096, BACKENDS["CPU_ATTN"]) is None  # 2,096/32 = 65.5


def test_preferred_block_sizes() -> None:
    assert BACKENDS["CPU_ATTN"].preferred_block_size() == 128  # CPU platform default 128
    assert BACKENDS["CPU_MLA"].preferred_block_size() == 16  # accepts exactly 16 only
    assert BACKENDS["HPC_ATTN"].preferred_block_size() == 64
    assert BACKENDS["FLASHINFER_MLA"].preferred_block_size() == 32
    assert BACKENDS["ROCM_AITER_UNIFIED_ATTN"].preferred_block_size() == 64
    assert BACKENDS["FLASH_ATTN"].preferred_block_size() == 16


@pytest.mark.parametrize(
    ("name", "gpu", "expected"),
    [
        ("ROCM_AITER_FA", "MI300X", "ROCM_AITER_MLA"),
        ("ROCM_ATTN", "MI300X", "TRITON_MLA"),
        ("FLASH_ATTN", None, "FLASH_ATTN_MLA"),
        ("FLASHINFER", "B200", "FLASHINFER_MLA"),
        ("CPU_ATTN", None, "CPU_MLA"),
        ("TRITON_ATTN", "Arc-B580", "TRITON_MLA"),
    ],
)
def test_mla_counterparts(name: str, gpu: str | None, expected: str) -> None:
    backend = resolve_backend(name, use_mla=True, gqa=False, gpu=get_gpu(gpu))
    assert backend.name == expected and backend.mla


def test_mla_on_rocm_and_xpu_keeps_the_128_floor() -> None:
    for settings in (
        {"gpu": "MI300X", "attention_backend": "ROCM_AITER_FA"},
        {"gpu": "Max-1550"},
        {},
    ):
        rank = _rank(KIMI, **settings)
        assert (rank.block_size, rank.kernel_block_size) == (5760, 5760)
    # the XPU FLASH_ATTN_MLA build prefers 64-token blocks
    assert _rank(KIMI, gpu="Max-1550").base_block_size == 64


def test_cpu_mla_rejects_aligned_block() -> None:
    # CPU_MLA supports exactly 16 tokens; the aligned hybrid block 5,760 is refused
    with pytest.raises(InvalidSettings, match="5760 is not supported by attention backend CPU_MLA"):
        _rank(KIMI, attention_backend="CPU_ATTN")


def test_platform_inference() -> None:
    assert platform_for("CPU_ATTN", None) == "cpu"
    assert platform_for("ROCM_ATTN", None) == "rocm"
    assert platform_for("TRITON_ATTN", None) == "cuda"
    assert platform_for("TRITON_ATTN", get_gpu("mi300x")) == "rocm"
    assert platform_for("FLASH_ATTN", get_gpu("Max-1550")) == "xpu"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--gpu", "MI300X", "--attention-backend", "FLASH_ATTN"),
            "FLASH_ATTN is a CUDA/XPU backend but --gpu MI300X is "
            "a ROCm GPU: pass --attention-backend with one of TRITON_ATTN, ROCM_ATTN",
        ),
        (
            ("--gpu", "H100", "--attention-backend", "ROCM_AITER_FA"),
            "ROCM_AITER_FA is a ROCm backend but --gpu H100 is a CUDA GPU: pass",
        ),
        (
            ("--gpu", "CPU", "--attention-backend", "FLASHINFER"),
            "FLASHINFER is a CUDA backend but --gpu CPU is a CPU device",
        ),
        (("--gpu", "Arc-B580", "--attention-backend", "FLASHINFER"), "is an XPU GPU"),
    ],
)
def test_platform_mismatch_exit_2(args: tuple[str, ...], message: str) -> None:
    from kvalign.cli import app

    result = runner.invoke(app, ["check", NANO, *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_default_backend_stated_in_notes() -> None:
    from kvalign.cli import app

    result = runner.invoke(app, ["check", NANO, "--format", "json"])
    notes = json.loads(result.stdout)["notes"]
    assert any(
        "attention backend not given: FLASH_ATTN, what vLLM chooses on an unspecified CUDA GPU" in n
        for n in notes
    )
    result = runner.invoke(app, ["check", NANO, "--gpu", "h200", "--format", "json"])
    notes = json.loads(result.stdout)["notes"]
    assert "attention backend not given: FLASH_ATTN, what vLLM chooses on H200" in notes
    # Blackwell: vLLM lists FlashInfer first (vllm/platforms/cuda.py _get_backend_priorities)
    result = runner.invoke(app, ["check", NANO, "--gpu", "B200", "--format", "json"])
    notes = json.loads(result.stdout)["notes"]
    assert "attention backend not given: FLASHINFER, what vLLM chooses on B200" in notes
    named = runner.invoke(app, ["check", NANO, "--gpu", "h200", "--attention-backend",
                                "FLASH_ATTN", "--format", "json"])  # fmt: skip
    assert "attention backend FLASH_ATTN on H200 (CUDA)" in json.loads(named.stdout)["notes"]


# ---- --hf-overrides -------------------------------------------------------------------------
def test_apply_hf_overrides_semantics() -> None:
    raw = {
        "n_groups": 8,
        "text_config": {"model_type": "x", "mamba_ssm_dtype": "float32", "rope": {"a": 1}},
        "linear_attn_config": {"num_heads": 32, "head_dim": 128},
    }
    out = apply_hf_overrides(
        raw,
        {
            "n_groups": 4,
            "text_config": {"mamba_ssm_dtype": "bfloat16", "rope": {"b": 2}},
            "linear_attn_config": {"num_heads": 16},
        },
    )
    assert out["n_groups"] == 4
    # nested config: merged recursively
    assert out["text_config"] == {
        "model_type": "x", "mamba_ssm_dtype": "bfloat16", "rope": {"a": 1, "b": 2}
    }  # fmt: skip
    # plain dict-valued field: replaced, as vLLM's setattr does
    assert out["linear_attn_config"] == {"num_heads": 16}
    assert raw["n_groups"] == 8 and raw["text_config"]["mamba_ssm_dtype"] == "float32"


@pytest.mark.parametrize("text", ["{bad", "[1, 2]", '"x"', "3"])
def test_parse_hf_overrides_rejects(text: str) -> None:
    with pytest.raises(InvalidSettings, match="--hf-overrides"):
        parse_hf_overrides(text)


def test_hf_overrides_change_conv_state() -> None:
    # Nemotron-3-Nano with n_groups 4 at TP 1: conv 3 × (4096 + 2·4·128 = 5,120) · 2 B =
    # 30,720, ssm unchanged 2,097,152 → m = 2,127,872; block 16·ceil(2,127,872/16,384 =
    # 129.9) = 2,080. At TP 8, G = 4 pads to 8: conv (4096 + 2·8·128)/8 = 768 wide, as without
    # the override → m = 3·768·2 + 8·64·128·4 = 4,608 + 262,144 = 266,752.
    geometry = load_model(NANO, hf_overrides={"n_groups": 4})
    tp1 = rank_of(geometry, Settings(), 1)
    assert tp1.mamba_state_shapes[0] == (3, 5120)
    assert (tp1.mamba_page_bytes, tp1.block_size) == (2_127_872, 2080)
    assert rank_of(geometry, Settings(), 8).mamba_page_bytes == 266_752


def test_hf_overrides_cli() -> None:
    from kvalign.cli import app

    ok = runner.invoke(
        app, ["check", NANO, "--hf-overrides", '{"n_groups": 4}', "--format", "json"]
    )
    assert ok.exit_code == 0
    assert json.loads(ok.stdout)["deployments"][0]["block_size"] == 2080
    assert "--hf-overrides applied to: n_groups" in ok.stderr
    for command in (["matrix", NANO], ["explain", NANO], ["survey", NANO]):
        bad = runner.invoke(app, [*command, "--hf-overrides", "[1]"])
        assert bad.exit_code == 2, command
        assert "--hf-overrides: expected a JSON object, got list" in bad.stderr
    explain = runner.invoke(
        app, ["explain", NANO, "--hf-overrides", '{"n_groups": 4}', "--format", "json"]
    )
    assert json.loads(explain.stdout)["block_size"] == 2080
