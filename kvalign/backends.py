"""Attention backends (kernel block sizes) and GPU capability facts, as of vLLM 0.33.

The one place that decides which kernel block sizes a backend accepts. Mirrors each
backend's ``get_supported_kernel_block_sizes`` / ``get_preferred_block_size`` in
``vllm/v1/attention/backends/*.py`` and ``vllm/v1/attention/backend.py``.
"""

from __future__ import annotations

from typing import NamedTuple

from kvalign.errors import InvalidSettings

Platform = str  # "cuda", "rocm", "cpu" or "xpu" (vLLM ``current_platform`` kinds)

#: platform kinds, in the order messages list them, with their user-facing names.
PLATFORM_NAMES: dict[str, str] = {"cuda": "CUDA", "rocm": "ROCm", "cpu": "CPU", "xpu": "XPU"}


class Backend(NamedTuple):
    """One attention backend's kernel block-size rules on one platform.

    Attributes:
        name: vLLM's backend name: the ``AttentionBackendEnum`` member that
            ``--attention-backend`` takes (equal to the class's ``get_name()`` except
            ``ROCM_AITER_FA``, whose class calls itself ``FLASH_ATTN``, and
            ``ROCM_AITER_TRITON_MLA``, ``AITER_TRITON_MLA``).
        sizes: explicit supported kernel block sizes (tokens).
        multiple_of: when set, any multiple of this is also supported (``MultipleOf``).
        mla: the backend serves MLA layers.
        preferred: block size the backend asks for when ``--block-size`` is unset
            (``get_preferred_block_size``); ``None`` → the default rule.
        platforms: platforms that run the backend for decoder attention.
        default_block: the default the platform passes to ``get_preferred_block_size``
            (``CacheConfig.DEFAULT_BLOCK_SIZE`` 16; 128 on the CPU platform).
        exact_only: ``supports_block_size`` accepts only the listed sizes, not their
            multiples (``CPU_MLA``), so vLLM rejects any larger aligned hybrid block.
    """

    name: str
    sizes: tuple[int, ...] = ()
    multiple_of: int | None = None
    mla: bool = False
    preferred: int | None = None
    platforms: tuple[Platform, ...] = ("cuda",)
    default_block: int = 16
    exact_only: bool = False

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

    def supports_block_size(self, block: int) -> bool:
        """vLLM ``AttentionBackend.supports_block_size``: a multiple of any supported
        size (``exact_only``: one of the listed sizes)."""
        if self.exact_only:
            return block in self.sizes
        bases = [*self.sizes, *([self.multiple_of] if self.multiple_of else [])]
        return any(block % base == 0 for base in bases)

    def preferred_block_size(self, default: int | None = None) -> int:
        """Block size chosen when ``--block-size`` is unset (``get_preferred_block_size``
        called with the platform's default, ``default_block`` unless given)."""
        if self.preferred is not None:
            return self.preferred
        start = self.default_block if default is None else default
        return start if self.supports_block_size(start) else self.min_block


class Gpu(NamedTuple):
    """A device model: vendor and CUDA compute capability (``None`` off CUDA).

    ``vendor`` is ``nvidia`` (CUDA), ``amd`` (ROCm), ``intel`` (XPU) or ``cpu``.
    """

    name: str
    vendor: str
    capability: tuple[int, int] | None

    @property
    def blackwell(self) -> bool:
        """SM100 family (B200/GB200/B300/GB300): FlashInfer TRT-LLM large pages."""
        return self.capability is not None and self.capability[0] == 10

    @property
    def platform(self) -> Platform:
        """The vLLM platform this device runs on."""
        return {"nvidia": "cuda", "amd": "rocm", "intel": "xpu", "cpu": "cpu"}[self.vendor]


_FLASHINFER_LARGE = (16, 32, 64, 128, 256, 512, 1024)
_CUDA, _ROCM, _CPU, _XPU = ("cuda",), ("rocm",), ("cpu",), ("xpu",)

#: decoder attention backends vLLM 0.33 selects on CUDA, ROCm, CPU and XPU (the
#: platform files' backend priority lists), with each class's
#: ``get_supported_kernel_block_sizes`` / ``get_preferred_block_size`` /
#: ``supports_block_size`` (``vllm/v1/attention/backends/**``). Sparse (DSA/NSA), ViT-only,
#: multimodal-prefix and packed-KV backends (TURBOQUANT, ULTRAQUANT, ROCM_OCTAVE) are not
#: listed: kvalign does not model their models or KV layouts.
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        # CUDA (platforms/cuda.py _get_backend_priorities)
        Backend("FLASH_ATTN", multiple_of=16, platforms=("cuda", "xpu")),
        Backend("FLASHINFER", sizes=(16, 32, 64)),
        Backend("TRITON_ATTN", multiple_of=16, platforms=("cuda", "rocm", "xpu")),
        Backend("FLEX_ATTENTION", multiple_of=16),
        Backend("HPC_ATTN", sizes=(64,)),
        # ROCm (platforms/rocm.py _get_backend_priorities)
        Backend("ROCM_ATTN", multiple_of=16, platforms=_ROCM),
        Backend("ROCM_AITER_FA", sizes=(16, 32), platforms=_ROCM),
        Backend("ROCM_AITER_UNIFIED_ATTN", multiple_of=16, preferred=64, platforms=_ROCM),
        # CPU (platforms/cpu.py: default block 128 for get_preferred_block_size)
        Backend("CPU_ATTN", multiple_of=32, platforms=_CPU, default_block=128),
        # MLA
        Backend("FLASH_ATTN_MLA", multiple_of=16, mla=True, platforms=("cuda", "xpu")),
        Backend("FLASHMLA", sizes=(64,), mla=True),
        Backend("CUTLASS_MLA", sizes=(128,), mla=True),
        Backend("FLASHINFER_MLA", sizes=(32, 64), mla=True),
        Backend("TOKENSPEED_MLA", sizes=(32, 64), mla=True),
        Backend("TRITON_MLA", multiple_of=16, mla=True, platforms=("cuda", "rocm", "xpu")),
        Backend("ROCM_AITER_MLA", multiple_of=1, mla=True, platforms=_ROCM),
        Backend("ROCM_AITER_TRITON_MLA", multiple_of=1, mla=True, platforms=_ROCM),
        Backend(
            "CPU_MLA", sizes=(16,), mla=True, platforms=_CPU, default_block=128, exact_only=True
        ),
        Backend("AMX_MLA", multiple_of=32, mla=True, platforms=_CPU, default_block=128),
    )
}

#: XPU builds of FLASH_ATTN / FLASH_ATTN_MLA: ``MultipleOf(64)``, preferring 64
#: (``flash_attn.py`` ``is_xpu`` branches; ``flashattn_mla.py`` ``XPUFlashAttnMLABackend``).
_XPU_VARIANTS: dict[str, Backend] = {
    "FLASH_ATTN": Backend("FLASH_ATTN", multiple_of=64, preferred=64, platforms=_XPU),
    "FLASH_ATTN_MLA": Backend("FLASH_ATTN_MLA", multiple_of=64, mla=True, platforms=_XPU),
}

#: (platform, non-MLA backend name) → the MLA backend vLLM runs MLA layers on for it.
MLA_COUNTERPART: dict[tuple[Platform, str], str] = {
    ("cuda", "FLASH_ATTN"): "FLASH_ATTN_MLA",
    ("cuda", "FLASHINFER"): "FLASHINFER_MLA",
    ("cuda", "TRITON_ATTN"): "TRITON_MLA",
    ("rocm", "TRITON_ATTN"): "TRITON_MLA",
    ("rocm", "ROCM_ATTN"): "TRITON_MLA",
    ("rocm", "ROCM_AITER_UNIFIED_ATTN"): "TRITON_MLA",
    ("rocm", "ROCM_AITER_FA"): "ROCM_AITER_MLA",
    ("cpu", "CPU_ATTN"): "CPU_MLA",
    ("xpu", "FLASH_ATTN"): "FLASH_ATTN_MLA",
    ("xpu", "TRITON_ATTN"): "TRITON_MLA",
}

DEFAULT_BACKEND = "FLASH_ATTN"

#: ``--attention-backend`` value meaning "not given: what vLLM chooses for the platform".
AUTO_BACKEND = "auto"


def default_backend_name(gpu: Gpu | None, *, use_mla: bool, mla_blackwell: str) -> str:
    """The attention backend vLLM selects when ``--attention-backend`` is not given.

    The first entry of the platform's priority list that runs on the device
    (``vllm/platforms/cuda.py`` ``_get_backend_priorities``; ``rocm.py``, ``cpu.py``,
    ``xpu.py``): CUDA SM100 (10.x) → ``FLASHINFER`` (MLA: ``mla_blackwell``, the
    release's first SM100 MLA backend); SM90 → ``FLASH_ATTN`` / ``FLASH_ATTN_MLA``; other
    CUDA GPUs → ``FLASH_ATTN`` / ``TRITON_MLA`` (FlashAttention-MLA and FlashMLA need SM90
    or SM100); an unspecified CUDA GPU → ``FLASH_ATTN`` (``FLASH_ATTN_MLA`` for MLA); ROCm
    with a KV connector and no AITER → ``TRITON_ATTN`` / ``TRITON_MLA``; CPU →
    ``CPU_ATTN`` / ``CPU_MLA``; XPU → ``FLASH_ATTN`` / ``FLASH_ATTN_MLA``. Validation
    failures deeper in the list (head sizes, dtypes) are not modelled.
    """
    if gpu is None:
        return "FLASH_ATTN_MLA" if use_mla else "FLASH_ATTN"
    platform = gpu.platform
    if platform == "cpu":
        return "CPU_MLA" if use_mla else "CPU_ATTN"
    if platform == "rocm":
        return "TRITON_MLA" if use_mla else "TRITON_ATTN"
    if platform == "xpu":
        return "FLASH_ATTN_MLA" if use_mla else "FLASH_ATTN"
    major = gpu.capability[0] if gpu.capability is not None else 9
    if major == 10:
        return mla_blackwell if use_mla else "FLASHINFER"
    if use_mla:
        return "FLASH_ATTN_MLA" if major == 9 else "TRITON_MLA"
    return "FLASH_ATTN"


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
        Gpu("GB10", "nvidia", (12, 1)),
        Gpu("RTX-3090", "nvidia", (8, 6)),
        Gpu("H800", "nvidia", (9, 0)),
        Gpu("MI300X", "amd", None),
        Gpu("MI325X", "amd", None),
        Gpu("MI355X", "amd", None),
        Gpu("MI50", "amd", None),
        Gpu("R9700", "amd", None),
        Gpu("Max-1550", "intel", None),
        Gpu("Arc-B580", "intel", None),
        Gpu("Arc-Pro-B60", "intel", None),
        Gpu("CPU", "cpu", None),
    )
}


def get_gpu(name: str | None) -> Gpu | None:
    """The GPU named ``name`` (case-insensitive), ``None`` when unspecified.

    Besides kvalign's names, the forms users copy from ``nvidia-smi`` and node labels
    name a GPU when one known name is a whole ``-``/space-separated part of them
    (``NVIDIA-H100-80GB-HBM3``, ``H100-SXM``, ``NVIDIA H800``; :func:`gpu_from_product`).

    Raises:
        InvalidSettings: an unknown GPU name.
    """
    if name is None:
        return None
    for gpu in GPUS.values():
        if gpu.name.lower() == name.strip().lower():
            return gpu
    labelled = gpu_from_product(name.strip())
    if labelled is not None:
        return GPUS[labelled]
    raise InvalidSettings(f"--gpu: unknown GPU {name!r} (known: {', '.join(GPUS)})")


def gpu_from_product(product: str) -> str | None:
    """The kvalign GPU name in a Kubernetes ``nvidia.com/gpu.product`` node label value
    (GPU feature discovery, e.g. ``NVIDIA-H100-80GB-HBM3`` → ``H100``,
    ``NVIDIA-GH200-480GB`` → ``GH200``), ``None`` when no known GPU is named.

    A name matches as whole ``-``-separated parts (``H20`` does not match ``H200``); the
    longest match wins, and of equally long ones the first in :data:`GPUS`.
    """
    parts = [p.lower() for p in product.replace("_", "-").replace(" ", "-").split("-") if p]
    best: str | None = None
    for name in GPUS:
        wanted = name.lower().split("-")
        for start in range(len(parts) - len(wanted) + 1):
            if parts[start : start + len(wanted)] == wanted:
                if best is None or len(name) > len(best):
                    best = name
                break
    return best


def platform_for(name: str, gpu: Gpu | None) -> Platform:
    """The platform ``--attention-backend name`` runs on: the GPU's, else the backend's
    only platform, else CUDA (an unspecified CUDA GPU)."""
    if gpu is not None:
        return gpu.platform
    backend = BACKENDS.get(name.strip().upper())
    if backend is not None and len(backend.platforms) == 1:
        return backend.platforms[0]
    return "cuda"


def _names_on(platform: Platform) -> str:
    return ", ".join(n for n, b in BACKENDS.items() if platform in b.platforms)


def check_backend_choice(name: str, gpu: Gpu | None) -> tuple[str, str]:
    """``(backend key, platform)`` for ``--attention-backend name`` on ``gpu``.

    Raises:
        InvalidSettings: unknown backend, or one the GPU's platform does not run.
    """
    key = name.strip().upper()
    if key == AUTO_BACKEND.upper():
        return key, gpu.platform if gpu is not None else "cuda"
    if key not in BACKENDS:
        raise InvalidSettings(
            f"--attention-backend: unknown backend {name!r} (known: {', '.join(BACKENDS)})"
        )
    platform = platform_for(key, gpu)
    if platform not in BACKENDS[key].platforms:
        # only reachable with --gpu: without one the platform is always the backend's
        assert gpu is not None
        runs_on = "/".join(PLATFORM_NAMES[p] for p in BACKENDS[key].platforms)
        kind = PLATFORM_NAMES[platform] + (" device" if platform == "cpu" else " GPU")
        article = "an" if platform == "xpu" else "a"
        raise InvalidSettings(
            f"--attention-backend {key} is a {runs_on} backend but --gpu {gpu.name} "
            f"is {article} {kind}: pass --attention-backend with one of "
            f"{_names_on(platform)}"
        )
    return key, platform


def resolve_backend(
    name: str,
    *,
    use_mla: bool,
    gqa: bool,
    gpu: Gpu | None,
    large_pages: bool = True,
    mla_blackwell: str = "FLASHINFER_MLA",
) -> Backend:
    """The backend that serves the model's attention layers for ``--attention-backend name``.

    The platform is the GPU's (``--gpu``), else the backend's only platform, else CUDA.
    MLA models run on the MLA counterpart of a non-MLA name on that platform
    (``FLASHINFER`` → ``FLASHINFER_MLA``; ROCm ``ROCM_AITER_FA`` → ``ROCM_AITER_MLA``).
    FlashInfer advertises 128..1024-token pages only on Blackwell (SM100 family) for GQA
    models (``flashinfer.py`` ``get_supported_kernel_block_sizes``); FLASH_ATTN and
    FLASH_ATTN_MLA use 64-token multiples on XPU. ``auto`` is the backend vLLM would pick
    (:func:`default_backend_name`; ``mla_blackwell`` is the release's first SM100 MLA
    backend). ``large_pages=False``: a release whose
    FlashInfer offers 16/32/64 only (before 0.24).

    Raises:
        InvalidSettings: unknown backend, a backend the platform does not run (e.g. a
            CUDA-only backend on a ROCm GPU), or an MLA-only backend for a non-MLA model.
    """
    if name.strip().lower() == AUTO_BACKEND:
        name = default_backend_name(gpu, use_mla=use_mla, mla_blackwell=mla_blackwell)
    key, platform = check_backend_choice(name, gpu)
    if use_mla and not BACKENDS[key].mla:
        counterpart = MLA_COUNTERPART.get((platform, key))
        if counterpart is None:
            raise InvalidSettings(
                f"--attention-backend {key} cannot serve MLA attention layers on "
                f"{PLATFORM_NAMES[platform]}"
            )
        key = counterpart
    elif not use_mla and BACKENDS[key].mla:
        raise InvalidSettings(f"--attention-backend {key} serves MLA models only")
    if platform == "xpu" and key in _XPU_VARIANTS:
        return _XPU_VARIANTS[key]
    backend = BACKENDS[key]
    if key == "FLASHINFER" and gqa and large_pages and gpu is not None and gpu.blackwell:
        return Backend("FLASHINFER", sizes=_FLASHINFER_LARGE)
    return backend


def platform_note(name: str, gpu_name: str | None, resolved: str | None = None) -> str:
    """One line saying which backend/platform assumption the numbers use (``resolved``:
    the backend ``auto`` became, when known).

    Raises:
        InvalidSettings: an unknown GPU name.
    """
    gpu = get_gpu(gpu_name)
    key = name.strip().upper()
    if key == AUTO_BACKEND.upper():
        where = gpu.name if gpu is not None else "an unspecified CUDA GPU"
        chosen = f"{resolved}, " if resolved else ""
        tail = "" if gpu is not None else " (pass --gpu to match your deployment)"
        return f"attention backend not given: {chosen}what vLLM chooses on {where}{tail}"
    platform = platform_for(key, gpu)
    if gpu is not None:
        return f"attention backend {key} on {gpu.name} ({PLATFORM_NAMES[platform]})"
    if platform != "cuda":
        return f"attention backend {key} on {PLATFORM_NAMES[platform]} (no --gpu given)"
    default = " (vLLM's default)" if key == DEFAULT_BACKEND else ""
    return (
        f"attention backend {key}{default} on an unspecified CUDA GPU "
        "(pass --gpu and --attention-backend to match your deployment)"
    )
