"""GPU-class conditions of the attention backends pinned at each class: SM80,
SM90, SM100, SM103, SM120, ROCm, XPU and CPU, with the answers read from vLLM 0.33.0's
source (cited per test), never from kvalign's output."""

from __future__ import annotations

import pytest

from kvalign.backends import (
    check_backend_choice,
    default_backend_name,
    get_gpu,
    gpu_from_product,
    platform_note,
    resolve_backend,
)
from kvalign.errors import InvalidSettings

LARGE = (16, 32, 64, 128, 256, 512, 1024)


@pytest.mark.parametrize(
    ("gpu", "large"),
    [
        ("A100", False),  # SM80
        ("H100", False),  # SM90
        ("B200", True),  # SM100 (10.0)
        ("B300", True),  # SM103 (10.3): same capability family 100
        ("RTX-PRO-6000", False),  # SM120: not family 100
        ("RTX-5090", False),  # SM120
    ],
)
def test_flashinfer_large_pages_only_on_the_sm100_family(gpu: str, large: bool) -> None:
    # vllm/v1/attention/backends/flashinfer.py get_supported_kernel_block_sizes: 128..1024
    # only when current_platform.is_device_capability_family(100) and TRT-LLM attention
    # can run (GQA); otherwise [16, 32, 64]
    backend = resolve_backend("FLASHINFER", use_mla=False, gqa=True, gpu=get_gpu(gpu))
    assert backend.sizes == (LARGE if large else (16, 32, 64))
    assert backend.min_block == 16


def test_flashinfer_large_pages_need_gqa_and_the_release() -> None:
    b200 = get_gpu("B200")
    # not GQA (can_use_trtllm_attention false): 16/32/64 even on SM100
    assert resolve_backend("FLASHINFER", use_mla=False, gqa=False, gpu=b200).sizes == (16, 32, 64)
    # releases before 0.24 (large_pages=False)
    assert resolve_backend(
        "FLASHINFER", use_mla=False, gqa=True, gpu=b200, large_pages=False
    ).sizes == (16, 32, 64)


@pytest.mark.parametrize(
    ("gpu", "mla", "expected"),
    [
        # vllm/platforms/cuda.py _get_backend_priorities (0.33.0): non-MLA, major 10 →
        # FLASHINFER first; every other CUDA major → FLASH_ATTN first
        ("A100", False, "FLASH_ATTN"),
        ("H100", False, "FLASH_ATTN"),
        ("B200", False, "FLASHINFER"),
        ("B300", False, "FLASHINFER"),
        ("RTX-PRO-6000", False, "FLASH_ATTN"),
        # MLA: major 10 → FLASHINFER_MLA first; major 12 → TRITON_MLA first; SM90 →
        # FLASH_ATTN_MLA first
        ("B200", True, "FLASHINFER_MLA"),
        ("H100", True, "FLASH_ATTN_MLA"),
        ("RTX-PRO-6000", True, "TRITON_MLA"),
        # platforms/rocm.py, cpu.py, xpu.py
        ("MI300X", False, "TRITON_ATTN"),
        ("MI300X", True, "TRITON_MLA"),
        ("CPU", False, "CPU_ATTN"),
        ("CPU", True, "CPU_MLA"),
        ("Max-1550", False, "FLASH_ATTN"),
        ("Max-1550", True, "FLASH_ATTN_MLA"),
    ],
)
def test_default_backend_per_gpu_class(gpu: str, mla: bool, expected: str) -> None:
    chosen = default_backend_name(get_gpu(gpu), use_mla=mla, mla_blackwell="FLASHINFER_MLA")
    assert chosen == expected


@pytest.mark.parametrize(
    ("name", "gpu", "sizes", "multiple_of", "preferred"),
    [
        # flash_attn.py is_xpu branch: MultipleOf(64), preferred 64
        ("FLASH_ATTN", "Max-1550", (), 64, 64),
        # CUDA FLASH_ATTN: MultipleOf(16), no preference (default 16)
        ("FLASH_ATTN", "H100", (), 16, 16),
        # rocm_aiter_fa.py: [16, 32]; rocm_aiter_unified_attn.py: MultipleOf(16), prefers 64
        ("ROCM_AITER_FA", "MI300X", (16, 32), None, 16),
        ("ROCM_AITER_UNIFIED_ATTN", "MI300X", (), 16, 64),
        # cpu_attn.py: MultipleOf(32); the CPU platform passes 128 as the default block
        ("CPU_ATTN", "CPU", (), 32, 128),
    ],
)
def test_kernel_block_rules_per_platform(
    name: str, gpu: str, sizes: tuple[int, ...], multiple_of: int | None, preferred: int
) -> None:
    backend = resolve_backend(name, use_mla=False, gqa=True, gpu=get_gpu(gpu))
    assert (backend.sizes, backend.multiple_of) == (sizes, multiple_of)
    assert backend.preferred_block_size() == preferred


def test_mla_kernel_blocks() -> None:
    # cutlass_mla.py [128]; flashmla.py [64]; flashinfer_mla.py [32, 64]
    b200 = get_gpu("B200")
    assert resolve_backend("CUTLASS_MLA", use_mla=True, gqa=False, gpu=b200).sizes == (128,)
    assert resolve_backend("FLASHMLA", use_mla=True, gqa=False, gpu=b200).sizes == (64,)
    assert resolve_backend("FLASHINFER", use_mla=True, gqa=False, gpu=b200).sizes == (32, 64)
    # smallest supported kernel block counts an explicit list by its minimum
    assert resolve_backend("FLASHINFER", use_mla=True, gqa=False, gpu=b200).min_block == 32


def test_accepts_and_supports_block_size() -> None:
    flashinfer = resolve_backend("FLASHINFER", use_mla=False, gqa=True, gpu=get_gpu("H100"))
    # an explicit list accepts its members only; supports_block_size takes their multiples
    assert [flashinfer.accepts(b) for b in (16, 32, 64, 48, 128)] == [
        True, True, True, False, False,
    ]  # fmt: skip
    assert flashinfer.supports_block_size(2096) and not flashinfer.supports_block_size(40)
    flash = resolve_backend("FLASH_ATTN", use_mla=False, gqa=True, gpu=get_gpu("H100"))
    assert flash.accepts(2096) and not flash.accepts(2088)
    # CPU_MLA accepts exactly 16 (cpu_mla supports_block_size: no multiples)
    cpu_mla = resolve_backend("CPU_MLA", use_mla=True, gqa=False, gpu=get_gpu("CPU"))
    assert cpu_mla.supports_block_size(16) and not cpu_mla.supports_block_size(32)


def test_preferred_block_size_takes_the_platform_default_given() -> None:
    flash = resolve_backend("FLASH_ATTN", use_mla=False, gqa=True, gpu=get_gpu("H100"))
    assert flash.preferred_block_size(128) == 128
    # FLASHINFER does not support 40 (not a multiple of 16/32/64): its smallest, 16
    flashinfer = resolve_backend("FLASHINFER", use_mla=False, gqa=True, gpu=get_gpu("H100"))
    assert flashinfer.preferred_block_size(40) == 16


@pytest.mark.parametrize(("gpu", "platform"), [(None, "cuda"), ("MI300X", "rocm"), ("CPU", "cpu")])
def test_auto_backend_keeps_the_gpu_platform(gpu: str | None, platform: str) -> None:
    assert check_backend_choice("auto", get_gpu(gpu)) == ("AUTO", platform)
    assert check_backend_choice(" Auto ", get_gpu(gpu)) == ("AUTO", platform)


def test_auto_mla_on_sm100_is_the_release_first_sm100_mla_backend() -> None:
    b200 = get_gpu("B200")
    assert resolve_backend("auto", use_mla=True, gqa=False, gpu=b200).name == "FLASHINFER_MLA"
    # 0.14 and older pick CUTLASS_MLA first on SM100 (versions.py mla_blackwell_backend)
    cutlass = resolve_backend(
        "auto", use_mla=True, gqa=False, gpu=b200, mla_blackwell="CUTLASS_MLA"
    )
    assert cutlass.sizes == (128,)
    assert resolve_backend("auto", use_mla=False, gqa=True, gpu=b200).name == "FLASHINFER"


def test_unknown_names_list_what_is_known() -> None:
    with pytest.raises(InvalidSettings, match=r"unknown GPU 'H999' \(known: A100, A10, L4, "):
        get_gpu("H999")
    with pytest.raises(InvalidSettings, match=r"\(known: FLASH_ATTN, FLASHINFER, TRITON_ATTN, "):
        check_backend_choice("FOO", None)
    with pytest.raises(
        InvalidSettings, match=r"^--attention-backend FLEX_ATTENTION cannot serve MLA attention "
        r"layers on CUDA$",
    ):  # fmt: skip
        resolve_backend("FLEX_ATTENTION", use_mla=True, gqa=False, gpu=None)
    with pytest.raises(InvalidSettings, match=r"^--attention-backend CUTLASS_MLA serves MLA"):
        resolve_backend("CUTLASS_MLA", use_mla=False, gqa=True, gpu=None)


@pytest.mark.parametrize(
    ("label", "gpu"),
    [
        # GPU feature discovery nvidia.com/gpu.product values
        ("NVIDIA-H100-80GB-HBM3", "H100"),
        ("NVIDIA-H200", "H200"),
        ("NVIDIA-H20", "H20"),  # whole parts: H20 is not H200
        ("NVIDIA-GH200-480GB", "GH200"),  # longest match: GH200, not H200
        ("NVIDIA-B200", "B200"),
        ("NVIDIA GB300", "GB300"),
        ("NVIDIA_A10", "A10"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX-PRO-6000"),
        ("Tesla-V100-SXM2-16GB", None),
        ("", None),
    ],
)
def test_gpu_from_node_label(label: str, gpu: str | None) -> None:
    assert gpu_from_product(label) == gpu


@pytest.mark.parametrize(
    ("backend", "gpu", "resolved", "note"),
    [
        ("auto", None, None, "attention backend not given: what vLLM chooses on an unspecified "
         "CUDA GPU (pass --gpu to match your deployment)"),
        ("auto", "B200", "FLASHINFER", "attention backend not given: FLASHINFER, what vLLM "
         "chooses on B200"),
        ("FLASHINFER", "H100", None, "attention backend FLASHINFER on H100 (CUDA)"),
        ("CPU_ATTN", None, None, "attention backend CPU_ATTN on CPU (no --gpu given)"),
        ("FLASH_ATTN", None, None, "attention backend FLASH_ATTN (vLLM's default) on an "
         "unspecified CUDA GPU (pass --gpu and --attention-backend to match your deployment)"),
        ("TRITON_ATTN", None, None, "attention backend TRITON_ATTN on an unspecified CUDA GPU "
         "(pass --gpu and --attention-backend to match your deployment)"),
    ],
)  # fmt: skip
def test_platform_note(backend: str, gpu: str | None, resolved: str | None, note: str) -> None:
    # the assumption line every check prints (docs/why.md, docs/json.md "notes")
    assert platform_note(backend, gpu, resolved) == note


# ---- survivors of the mutmut run (second pass) ----


def test_default_backend_without_a_gpu() -> None:
    # an unspecified CUDA GPU: vLLM's default FLASH_ATTN, and for MLA models its MLA
    # counterpart FLASH_ATTN_MLA (vllm/platforms/cuda.py _get_backend_priorities, SM90
    # lists, the default device class)
    assert default_backend_name(None, use_mla=False, mla_blackwell="CUTLASS_MLA") == "FLASH_ATTN"
    assert default_backend_name(None, use_mla=True, mla_blackwell="CUTLASS_MLA") == (
        "FLASH_ATTN_MLA"
    )


def test_gpu_label_ties_go_to_the_first_known_name() -> None:
    # two known names of the same length as whole parts: the first in the GPU table
    assert gpu_from_product("NVIDIA-H100-H200") == "H100"
    assert gpu_from_product("NVIDIA-H200-H100") == "H100"
    # a longer one later in the label still wins
    assert gpu_from_product("H100-GH200") == "GH200"


def test_platform_note_names_the_gpu_platform_not_the_backend_default() -> None:
    # TRITON_ATTN runs on CUDA, ROCm and XPU: with --gpu MI300X the note says ROCm
    assert (
        platform_note("TRITON_ATTN", "MI300X") == "attention backend TRITON_ATTN on MI300X (ROCm)"
    )
    assert (
        platform_note("FLASH_ATTN", "Max-1550") == "attention backend FLASH_ATTN on Max-1550 (XPU)"
    )


def test_get_gpu_takes_node_label_forms() -> None:
    # nvidia-smi / GPU feature discovery spellings name the GPU they contain
    from kvalign.backends import get_gpu

    for label, name in (("NVIDIA-H100-80GB-HBM3", "H100"), (" NVIDIA GB200 ", "GB200"),
                        ("h800", "H800")):  # fmt: skip
        gpu = get_gpu(label)
        assert gpu is not None and gpu.name == name, label
