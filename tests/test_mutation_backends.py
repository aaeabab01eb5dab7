"""GPU-class conditions of the attention backends pinned at each class (issue 19): SM80,
SM90, SM100, SM103, SM120, ROCm, XPU and CPU, with the answers read from vLLM 0.33.0's
source (cited per test), never from kvalign's output."""

from __future__ import annotations

import pytest

from kvalign.backends import default_backend_name, get_gpu, resolve_backend

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
