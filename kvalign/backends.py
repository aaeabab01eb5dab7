"""Attention backends (kernel block sizes) and GPU capability facts, as of vLLM 0.33.

The one place that decides which kernel block sizes a backend accepts. Mirrors each
backend's ``get_supported_kernel_block_sizes`` / ``get_preferred_block_size`` in
``vllm/v1/attention/backends/*.py`` and ``vllm/v1/attention/backend.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvalign.errors import InvalidSettings


@dataclass(frozen=True)
class Backend:
    """One attention backend's kernel block-size rules.

    Attributes:
        name: vLLM's backend name (``--attention-backend`` value).
        sizes: explicit supported kernel block sizes (tokens).
        multiple_of: when set, any multiple of this is also supported (``MultipleOf``).
        mla: the backend serves MLA layers.
        preferred: block size the backend asks for when ``--block-size`` is unset
            (``get_preferred_block_size``); ``None`` → the default rule.
    """

    name: str
    sizes: tuple[int, ...] = ()
    multiple_of: int | None = None
    mla: bool = False
    preferred: int | None = None

    def accepts(self, block: int) -> bool:
        """Whether a kernel block of ``block`` tokens is supported."""
        if block in self.sizes:
            return True
        return self.multiple_of is not None and block % self.multiple_of == 0

    @property
    def min_block(self) -> int:
        """Smallest supported kernel block (``MultipleOf(n)`` counts as ``n``)."""
        candidates = list(self.sizes)
        if self.multiple_of is not None:
            candidates.append(self.multiple_of)
        return min(candidates)

    def preferred_block_size(self, default: int = 16) -> int:
        """Block size chosen when ``--block-size`` is unset (``get_preferred_block_size``)."""
        if self.preferred is not None:
            return self.preferred
        return default if self.accepts(default) else self.min_block


@dataclass(frozen=True)
class Gpu:
    """A GPU model: vendor and CUDA compute capability (``None`` on ROCm)."""

    name: str
    vendor: str
    capability: tuple[int, int] | None

    @property
    def blackwell(self) -> bool:
        """SM100 family (B200/GB200/B300/GB300): FlashInfer TRT-LLM large pages."""
        return self.capability is not None and self.capability[0] == 10


_FLASHINFER_LARGE = (16, 32, 64, 128, 256, 512, 1024)

BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("FLASH_ATTN", multiple_of=16),
        Backend("FLASHINFER", sizes=(16, 32, 64)),
        Backend("TRITON_ATTN", multiple_of=16),
        Backend("FLEX_ATTENTION", multiple_of=16),
        Backend("CPU_ATTN", multiple_of=32),
        Backend("ROCM_AITER_FA", sizes=(16, 32)),
        Backend("ROCM_ATTN", multiple_of=16),
        Backend("ROCM_AITER_UNIFIED_ATTN", multiple_of=16, preferred=64),
        Backend("FLASH_ATTN_MLA", multiple_of=16, mla=True),
        Backend("FLASHMLA", sizes=(64,), mla=True),
        Backend("CUTLASS_MLA", sizes=(128,), mla=True),
        Backend("FLASHINFER_MLA", sizes=(32, 64), mla=True),
        Backend("TRITON_MLA", multiple_of=16, mla=True),
    )
}

#: non-MLA backend name → the MLA backend vLLM runs MLA layers on for it.
MLA_COUNTERPART: dict[str, str] = {
    "FLASH_ATTN": "FLASH_ATTN_MLA",
    "FLASHINFER": "FLASHINFER_MLA",
    "TRITON_ATTN": "TRITON_MLA",
}

DEFAULT_BACKEND = "FLASH_ATTN"

GPUS: dict[str, Gpu] = {
    g.name: g
    for g in (
        Gpu("A100", "nvidia", (8, 0)),
        Gpu("A10", "nvidia", (8, 6)),
        Gpu("L4", "nvidia", (8, 9)),
        Gpu("L40S", "nvidia", (8, 9)),
        Gpu("H100", "nvidia", (9, 0)),
        Gpu("H200", "nvidia", (9, 0)),
        Gpu("H20", "nvidia", (9, 0)),
        Gpu("GH200", "nvidia", (9, 0)),
        Gpu("B200", "nvidia", (10, 0)),
        Gpu("GB200", "nvidia", (10, 0)),
        Gpu("B300", "nvidia", (10, 3)),
        Gpu("GB300", "nvidia", (10, 3)),
        Gpu("RTX-PRO-6000", "nvidia", (12, 0)),
        Gpu("RTX-5090", "nvidia", (12, 0)),
        Gpu("MI300X", "amd", None),
        Gpu("MI325X", "amd", None),
        Gpu("MI355X", "amd", None),
    )
}


def get_gpu(name: str | None) -> Gpu | None:
    """The GPU named ``name`` (case-insensitive), ``None`` when unspecified.

    Raises:
        InvalidSettings: an unknown GPU name.
    """
    if name is None:
        return None
    for gpu in GPUS.values():
        if gpu.name.lower() == name.strip().lower():
            return gpu
    raise InvalidSettings(f"--gpu: unknown GPU {name!r} (known: {', '.join(GPUS)})")


def resolve_backend(name: str, *, use_mla: bool, gqa: bool, gpu: Gpu | None) -> Backend:
    """The backend that serves the model's attention layers for ``--attention-backend name``.

    MLA models run on the MLA counterpart of a non-MLA name (``FLASHINFER`` →
    ``FLASHINFER_MLA``). FlashInfer advertises 128..1024-token pages only on Blackwell
    (SM100 family) for GQA models (``flashinfer.py`` ``get_supported_kernel_block_sizes``).

    Raises:
        InvalidSettings: unknown backend, or an MLA-only backend for a non-MLA model.
    """
    key = name.strip().upper()
    if key not in BACKENDS:
        raise InvalidSettings(
            f"--attention-backend: unknown backend {name!r} (known: {', '.join(BACKENDS)})"
        )
    if use_mla and not BACKENDS[key].mla:
        if key not in MLA_COUNTERPART:
            raise InvalidSettings(f"--attention-backend {key} cannot serve MLA attention layers")
        key = MLA_COUNTERPART[key]
    elif not use_mla and BACKENDS[key].mla:
        raise InvalidSettings(f"--attention-backend {key} serves MLA models only")
    backend = BACKENDS[key]
    if key == "FLASHINFER" and gqa and gpu is not None and gpu.blackwell:
        return Backend("FLASHINFER", sizes=_FLASHINFER_LARGE)
    return backend
