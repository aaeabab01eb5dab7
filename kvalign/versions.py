"""vLLM release profiles: which block-size and NIXL rules are in force for a release.

The one place that decides release-dependent behaviour. Each profile records facts read
from the published source of the releases named in ``verified`` (``pip download
vllm==X --no-deps``, unpacked, read; no code copied). A profile applies from ``first``
up to the next profile's ``first``. Boundaries between two verified releases are as
precise as the releases read (see ``docs/versions.md``).

Where the block-size alignment lives:

* up to 0.19: ``vllm/model_executor/models/config.py``
  ``HybridAttentionMambaModelConfig.verify_and_update_config`` (a fixed alignment unit);
* from 0.20: ``vllm/platforms/interface.py`` ``Platform.update_block_size_for_backend``
  → ``_align_hybrid_block_size`` (the backend's smallest kernel block and ``--block-size``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from packaging.version import InvalidVersion, Version

from kvalign.errors import InvalidSettings

AlignmentSite = Literal["model-config", "platform"]

#: model types whose vLLM class implements ``SupportsMambaPrefixCaching`` (cache mode
#: "all": block aligned to the Mamba chunk size); Bamba dropped it by 0.25.
_MAMBA_PREFIX_CACHING = frozenset(
    {"falcon_h1", "granitemoehybrid", "jamba", "mamba", "mamba2", "nemotron_h", "zamba2"}
)
_MAMBA_PREFIX_CACHING_WITH_BAMBA = _MAMBA_PREFIX_CACHING | {"bamba"}


@dataclass(frozen=True)
class Profile:
    """Rules of one vLLM release line.

    Attributes:
        name: profile name shown to users (e.g. ``"0.33"``).
        first: first release the profile applies to.
        nixl_hetero_hybrid: NIXL accepts different P/D block sizes for hybrid models
            (before: ``assert block_size_ratio == 1`` under the hybrid KV-cache manager).
        nixl_gcd_split: NIXL splits non-multiple block sizes into gcd-sized units
            (``nixl/base_worker.py`` ``_split_remote_blocks``).
        nixl_split_limit: most units one block may be split into (``_MAX_HYBRID_BLOCK_SPLIT``).
        verified: releases whose source was read for this profile.
        alignment_site: ``model-config`` (fixed alignment unit in
            ``HybridAttentionMambaModelConfig``) or ``platform``
            (``Platform._align_hybrid_block_size``).
        fixed_alignment: model-config era: alignment unit for non-MLA attention (16).
        mla_alignment: model-config era: unit for MLA (64; ``CUTLASS_MLA`` 128); ``None``
            when the release has no MLA branch (MLA hybrids unsupported).
        mla_floor: platform era: MLA alignment floor (128 from 0.27; 0 before).
        chunk_alignment: with prefix caching, models in ``mamba_prefix_caching_types``
            align the block to ``lcm(mamba chunk size, alignment)`` (cache mode "all").
        mamba_prefix_caching_types: model types with Mamba prefix-caching support.
        backend_lcm_rounding: round the block up to the lcm of all backends' smallest
            kernel blocks (from 0.32).
        gdn_checkpoint_alignment: FlashInfer GDN prefill checkpoints every 64 tokens
            enter the alignment with prefix caching (0.33).
        kernel_block_split: logical blocks may be split into kernel blocks
            (``select_common_block_size``, from 0.11.1); before, kernel = logical.
        backend_preferred_block: hybrids start from the backend's preferred block size
            when ``--block-size`` is unset (platform era).
        blackwell_hd256_alignment: model-config era: FlashInfer on SM100 with head size
            256 uses this unit instead of 16 (flashinfer issue 1993), ``None`` if absent.
        nemotron_ssm_fallback: Nemotron-H ``mamba_ssm_cache_dtype=auto`` fallback when
            the config names none (``float32`` from 0.20, ``float16`` 0.14-0.19);
            ``None``: no Nemotron-H override at all (auto → conv dtype).
        nixl_hybrid: the NIXL connector serves hybrid models at all (``SupportsHMA``).
        nixl_hetero_tp_mamba: NIXL pairs Mamba hybrids at different TP sizes.
        nixl_equal_blocks_all: NIXL requires equal block sizes for every model.
        hybrid_prefix_caching_default: prefix caching is on for hybrid models when
            neither ``--enable-prefix-caching`` nor ``--no-enable-prefix-caching`` is given.
        kv_cache_dtype_from_checkpoint: ``--kv-cache-dtype auto`` takes the checkpoint's
            ``quantization_config`` KV scheme (``resolve_kv_cache_dtype_string``).
    """

    name: str
    first: str
    nixl_hetero_hybrid: bool
    nixl_gcd_split: bool
    nixl_split_limit: int
    verified: tuple[str, ...] = ()
    alignment_site: AlignmentSite = "platform"
    fixed_alignment: int = 16
    mla_alignment: int | None = 64
    mla_floor: int = 128
    chunk_alignment: bool = False
    mamba_prefix_caching_types: frozenset[str] = _MAMBA_PREFIX_CACHING
    backend_lcm_rounding: bool = True
    gdn_checkpoint_alignment: bool = True
    kernel_block_split: bool = True
    backend_preferred_block: bool = True
    blackwell_hd256_alignment: int | None = None
    nemotron_ssm_fallback: str | None = "float32"
    nixl_hybrid: bool = True
    nixl_hetero_tp_mamba: bool = True
    nixl_equal_blocks_all: bool = False
    hybrid_prefix_caching_default: bool = True
    kv_cache_dtype_from_checkpoint: bool = True

    def prefix_caching_default(self, hybrid: bool) -> bool:
        """Whether prefix caching is on when no flag names it (non-hybrids: always on)."""
        return self.hybrid_prefix_caching_default if hybrid else True

    @property
    def chunk_aligned_types(self) -> frozenset[str]:
        """Model types whose block is chunk-aligned with prefix caching (empty if none)."""
        return self.mamba_prefix_caching_types if self.chunk_alignment else frozenset()


def _platform_era(name: str, first: str, verified: tuple[str, ...], **changes: object) -> Profile:
    """A platform-era profile (``Platform._align_hybrid_block_size``), before 0.27."""
    base = Profile(
        name=name,
        first=first,
        verified=verified,
        nixl_hetero_hybrid=False,
        nixl_gcd_split=False,
        nixl_split_limit=0,
        mla_floor=0,
        chunk_alignment=True,
        backend_lcm_rounding=False,
        gdn_checkpoint_alignment=False,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _hook_era(name: str, first: str, verified: tuple[str, ...], **changes: object) -> Profile:
    """A model-config-era profile (alignment in ``HybridAttentionMambaModelConfig``): the
    platform-era base with the older hook, Mamba set and NIXL limits."""
    hook: dict[str, object] = {
        "alignment_site": "model-config",
        "mamba_prefix_caching_types": _MAMBA_PREFIX_CACHING_WITH_BAMBA,
        "backend_preferred_block": False,
        "nixl_hybrid": False,
        "nixl_hetero_tp_mamba": False,
    }
    return _platform_era(name, first, verified, **{**hook, **changes})


#: known profiles, oldest first. The newest is the default.
PROFILES: tuple[Profile, ...] = (
    _hook_era(
        "0.10",
        "0.10.0",
        ("0.10.2", "0.11.0"),
        mla_alignment=None,
        chunk_alignment=False,
        kernel_block_split=False,
        nemotron_ssm_fallback=None,
        nixl_equal_blocks_all=True,
    ),
    _hook_era(
        "0.11.1",
        "0.11.1",
        ("0.11.1", "0.12.0"),
        blackwell_hd256_alignment=32,
        nemotron_ssm_fallback=None,
    ),
    _hook_era(
        "0.14",
        "0.14.0",
        ("0.14.0", "0.16.0", "0.17.0"),
        blackwell_hd256_alignment=32,
        nemotron_ssm_fallback="float16",
    ),
    _hook_era("0.19", "0.19.0", ("0.19.1",), nemotron_ssm_fallback="float16", nixl_hybrid=True),
    _platform_era(
        "0.20",
        "0.20.0",
        ("0.20.0", "0.21.0", "0.23.0"),
        mamba_prefix_caching_types=_MAMBA_PREFIX_CACHING_WITH_BAMBA,
    ),
    _platform_era("0.25", "0.25.0", ("0.25.0", "0.26.0")),
    Profile(
        name="0.27",
        first="0.27.0",
        verified=("0.27.0", "0.28.0", "0.30.0", "0.31.0"),
        nixl_hetero_hybrid=True,
        nixl_gcd_split=False,
        nixl_split_limit=0,
        chunk_alignment=True,
        backend_lcm_rounding=False,
        gdn_checkpoint_alignment=False,
    ),
    Profile(
        name="0.32",
        first="0.32.0",
        verified=("0.32.0",),
        nixl_hetero_hybrid=True,
        nixl_gcd_split=False,
        nixl_split_limit=0,
        gdn_checkpoint_alignment=False,
    ),
    Profile(
        name="0.33",
        first="0.33.0",
        verified=("0.33.0",),
        nixl_hetero_hybrid=True,
        nixl_gcd_split=True,
        nixl_split_limit=128,
    ),
)

DEFAULT_PROFILE = PROFILES[-1]


@dataclass(frozen=True)
class Resolved:
    """A profile chosen for a requested version, with a note on how it was chosen."""

    profile: Profile
    note: str


def profile_named(name: str) -> Profile:
    """The profile called ``name`` (e.g. ``"0.10"``).

    Raises:
        KeyError: no such profile.
    """
    for profile in PROFILES:
        if profile.name == name:
            return profile
    raise KeyError(name)


def resolve(version: str | None) -> Resolved:
    """The profile for ``--vllm-version`` (``None`` → the newest profile).

    Versions newer than every profile use the newest with a warning note; versions older
    than every profile are refused.

    Raises:
        InvalidSettings: an unparsable version, or one older than every profile.
    """
    if version is None:
        return Resolved(DEFAULT_PROFILE, f"vLLM {DEFAULT_PROFILE.name} rules (default profile)")
    try:
        wanted = Version(version.strip().lstrip("v"))
    except InvalidVersion:
        raise InvalidSettings(f"--vllm-version: {version!r} is not a version like 0.33.0") from None
    chosen: Profile | None = None
    for profile in PROFILES:
        if wanted >= Version(profile.first):
            chosen = profile
    if chosen is None:
        raise InvalidSettings(
            f"--vllm-version {version}: older than every profile kvalign knows "
            f"(oldest: {PROFILES[0].first})"
        )
    newest = Version(DEFAULT_PROFILE.first)
    if chosen is DEFAULT_PROFILE and wanted.release[:2] > newest.release[:2]:
        return Resolved(
            chosen,
            f"warning: vLLM {version} is newer than every profile; using the {chosen.name} rules",
        )
    return Resolved(chosen, f"vLLM {chosen.name} rules (for --vllm-version {version})")
