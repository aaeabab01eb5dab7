"""vLLM release profiles: which block-size and NIXL rules are in force for a release.

The one place that decides release-dependent behaviour. Each profile records facts read
from the published source of the releases named in ``verified`` (``pip download
vllm==X --no-deps``, unpacked, read; no code copied) and, for 0.14.0 → 0.33.0, checked
against vectors measured with the releases' own functions (``tests/golden/vllm-X.Y.Z.jsonl``).
A profile applies from ``first`` up to the next profile's ``first``. :data:`PROFILES` is a
chain: the oldest profile spells out every field, each later one lists only what changed
(:data:`_CHANGES`), so a boundary is one line. ``docs/versions.md`` names the releases
read on each side of every boundary.

Where the block-size alignment lives:

* up to 0.19: ``vllm/model_executor/models/config.py``
  ``HybridAttentionMambaModelConfig.verify_and_update_config`` (a fixed alignment unit);
* from 0.20: ``vllm/platforms/interface.py`` ``Platform.update_block_size_for_backend``
  → ``_align_hybrid_block_size`` (the backend's smallest kernel block and ``--block-size``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal, NamedTuple

from kvalign.errors import InvalidSettings

AlignmentSite = Literal["model-config", "platform"]

#: model types whose vLLM class implements ``SupportsMambaPrefixCaching`` (cache mode
#: "all": block aligned to the Mamba chunk size); Bamba dropped it by 0.25.
_MAMBA_PREFIX_CACHING = frozenset(
    {"falcon_h1", "granitemoehybrid", "jamba", "mamba", "mamba2", "nemotron_h", "zamba2"}
)
_MAMBA_PREFIX_CACHING_WITH_BAMBA = _MAMBA_PREFIX_CACHING | {"bamba"}
#: Mamba2-family model types whose conv state takes speculative rows from 0.32.
_MAMBA2_SPEC_ALL = frozenset(
    {"nemotron_h", "mamba2", "falcon_h1", "granitemoehybrid", "zamba2", "bamba"}
)


FlashAttnKernelRule = Literal["none", "all", "hybrid-float32"]
#: which models with state layers get prefix caching turned off whatever the flag says.
PrefixCachingForcedOff = Literal["none", "all", "unsupported"]


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
        verified: releases whose source was read (or run) for this profile.
        alignment_site: ``model-config`` (fixed alignment unit in
            ``HybridAttentionMambaModelConfig``) or ``platform``
            (``Platform._align_hybrid_block_size``).
        fixed_alignment: model-config era: alignment unit for non-MLA attention (16).
        mla_alignment: model-config era: unit for MLA (64; ``CUTLASS_MLA`` 128); ``None``
            when the release has no MLA branch (MLA hybrids unsupported).
        mla_floor: platform era: MLA alignment floor (128 from 0.27; 0 before).
        chunk_alignment: the release has Mamba cache mode "all": with prefix caching,
            models in ``mamba_prefix_caching_types`` align the block to
            ``lcm(mamba chunk size or --mamba-block-size, alignment)``.
        mamba_prefix_caching_types: model types with Mamba prefix-caching support.
        backend_lcm_rounding: round the block up to the lcm of all backends' smallest
            kernel blocks (from 0.32).
        gdn_checkpoint_alignment: FlashInfer GDN prefill checkpoints every 64 tokens
            enter the alignment with prefix caching (0.33).
        kernel_block_split: logical blocks may be split into kernel blocks
            (``select_common_block_size``, from 0.11.1); before, kernel = logical.
        backend_preferred_block: hybrids start from the backend's preferred block size
            when ``--block-size`` is unset (platform era).
        blackwell_hd256_alignment: model-config era: FlashInfer (named, or no backend
            named) on SM100 with head size 256 uses this unit instead of 16 (flashinfer
            issue 1993), ``None`` if absent (from 0.18).
        blackwell_hd256_exact: that rule tests ``is_device_capability(100)`` (10.0 only:
            B200/GB200, not B300) rather than the 10.x family.
        nemotron_ssm_fallback: Nemotron-H ``mamba_ssm_cache_dtype=auto`` fallback when
            the config names none (``float32`` from 0.20, ``float16`` 0.14-0.19);
            ``None``: no Nemotron-H override at all (auto → conv dtype).
        nixl_hybrid: the NIXL connector serves hybrid models at all (``SupportsHMA``).
        nixl_hetero_tp_mamba: NIXL pairs Mamba hybrids at different TP sizes.
        nixl_equal_blocks_all: NIXL requires equal block sizes for every model.
        hybrid_prefix_caching_default: prefix caching is on for hybrid models when
            neither ``--enable-prefix-caching`` nor ``--no-enable-prefix-caching`` is given.
        kv_cache_dtype_from_checkpoint: ``--kv-cache-dtype auto`` takes the checkpoint's
            ``quantization_config`` KV scheme (``resolve_kv_cache_dtype_string`` called
            from ``EngineArgs.create_engine_config``).
        mamba_cache_modes: values ``--mamba-cache-mode`` accepts (``()``: no such flag).
        mamba_cache_mode_default_all: with prefix caching and no ``--mamba-cache-mode``
            (or ``none``), models supporting Mamba prefix caching get ``all`` (0.15-0.27);
            from 0.28 every model gets ``align`` (``all`` only when asked for).
        mamba_cache_mode_noop: the flag is accepted but deprecated and ignored (0.33: the
            mode follows ``--enable-prefix-caching``).
        spec_decode_align: with speculative decoding, models supporting Mamba prefix
            caching default to cache mode "align" instead of "all" (0.20-0.21).
        gdn_ssm_dtype_flag: gated-delta-net layers honour ``--mamba-ssm-cache-dtype``
            (before 0.17 both states take ``--mamba-cache-dtype``).
        kda_ssm_dtype_flag: KDA layers honour ``--mamba-ssm-cache-dtype`` (from 0.30;
            before, the recurrent state is always float32 and any value is accepted).
        mamba2_spec_types: model types whose Mamba2 conv state has one row per speculative
            token (the model passes ``num_spec`` to ``mamba2_state_shape``: Nemotron-H and
            Mamba2 from 0.17, Falcon-H1 / Granite-4.0-H / Zamba2 from 0.32); others keep
            ``K - 1`` rows.
        mamba_dtypes: values ``--mamba-cache-dtype`` / ``--mamba-ssm-cache-dtype`` accept
            (``CacheConfig`` ``MambaDType``: float16 from 0.13, bfloat16 from 0.22).
        fa4_hd256_pages: FLASH_ATTN on capability 10.x/11.x with head size 256 (K and V)
            runs FlashAttention 4's head-256 kernel (shipped in the wheel as
            ``vllm_flash_attn/cute``) and offers only 128-token kernel blocks, preferring
            128 (from 0.29; not with a quantized KV cache).
        attention_free_kv_heads_error: ``ModelArchConfigConvertorBase.get_total_num_kv_heads``
            falls back to ``hf_text_config.num_attention_heads`` for attention-free models
            without a convertor entry (Mamba2: only ``mamba``/``falcon_mamba`` have one), so
            the config fails with ``AttributeError`` (0.14-0.17; 0.13 returned 0 for
            attention-free models, 0.18 falls back to ``get_total_num_attention_heads``).
        replayssm: ``--use-replayssm`` ring-buffer rules (Nemotron-H): 0 no such flag (<
            0.27); 1 ring ``B`` tokens, Triton only, no speculative decoding (0.27-0.29);
            2 ``--mamba-backend flashinfer`` adds 1 (0.30-0.31); 3 … adds ``1 + spec``
            (0.32); 4 the ring's groups are shard-padded like the conv state's (0.33).
        flash_attn_kernel_sizes: when FLASH_ATTN offers only 16/32/64-token kernel blocks
            (flash-attention issue 1974): ``all`` models, ``hybrid-float32`` (hybrids
            with a float32 ``mamba_cache_dtype``/``mamba_ssm_cache_dtype`` in the cache
            config), or ``none`` (``MultipleOf(16)``).
        flashinfer_large_pages: FlashInfer advertises 128..1024-token kernel blocks for
            GQA models on Blackwell (from 0.24).
        nixl_state_families: state families whose states NIXL P/D transfer can split
            (``kv_connector/v1/ssm_conv_transfer_utils.py`` ``derive_mamba_conv_split``
            raises ``NotImplementedError`` for any other ``mamba_type`` when a NIXL worker
            starts): Mamba2 only in 0.20.0 and 0.21.0, Mamba1/Mamba2/GDN in 0.25.0–0.33.0
            (0.22–0.24 not read; GDN came with vLLM PR 41869); ``None``: no such check
            (0.18–0.19).
        cpu_attn_kernel_multiple: ``CPU_ATTN`` kernel blocks are multiples of this
            (``vllm/v1/attention/backends/cpu_attn.py``
            ``get_supported_kernel_block_sizes``: ``MultipleOf(16)`` read in 0.21.0, 0.25.0,
            0.26.0, 0.27.1; ``MultipleOf(32)`` in 0.33.0; 0.28–0.32 not read, 0.29 taken as
            the first with 32).
        cpu_hybrid_alignment: the CPU platform aligns hybrid block sizes (0.20.0's
            ``CpuPlatform.update_block_size_for_backend`` is a no-op).
        mla_blackwell_backend: the MLA backend chosen first on SM100 when none is named.
        kv_transfer_disables_hma: ``--kv-transfer-config`` turns the hybrid KV-cache
            manager off unless ``--no-disable-hybrid-kv-cache-manager`` is given.
        config_hooks_normalise_arch: the model-default hooks (``MODELS_CONFIG_MAP`` in
            ``vllm/config/vllm.py`` ``VllmConfig.try_verify_and_update_config``) are looked
            up under the registry's normalised name too, so a text-only checkpoint served
            by its multimodal stand-in gets the stand-in's defaults (Qwen3.5's
            ``mamba_ssm_dtype``): from 0.25 (absent in 0.24.0, present in 0.25.0).
        prefix_caching_forced_off: models with state layers whose prefix caching vLLM
            turns off even with ``--enable-prefix-caching``: ``all`` (0.10.x:
            ``MambaModelConfig.verify_and_update_config`` sets
            ``enable_prefix_caching = False`` for every hybrid and Mamba model),
            ``unsupported`` (0.11.1-0.14: models without ``SupportsMambaPrefixCaching``,
            such as LFM2 and Qwen3-Next; "Hybrid or mamba-based model detected without
            support for prefix caching: disabling"), ``none`` (0.15 on: cache mode
            ``align`` serves the others).
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
    blackwell_hd256_exact: bool = False
    nemotron_ssm_fallback: str | None = "float32"
    nixl_hybrid: bool = True
    nixl_hetero_tp_mamba: bool = True
    nixl_equal_blocks_all: bool = False
    hybrid_prefix_caching_default: bool = True
    kv_cache_dtype_from_checkpoint: bool = True
    mamba_cache_modes: tuple[str, ...] = ("none", "align")
    mamba_cache_mode_noop: bool = False
    mamba_cache_mode_default_all: bool = False
    spec_decode_align: bool = False
    gdn_ssm_dtype_flag: bool = True
    kda_ssm_dtype_flag: bool = True
    mamba2_spec_types: frozenset[str] = _MAMBA2_SPEC_ALL
    mamba_dtypes: tuple[str, ...] = ("auto", "float32", "float16", "bfloat16")
    fa4_hd256_pages: bool = True
    attention_free_kv_heads_error: bool = False
    replayssm: int = 4
    flash_attn_kernel_sizes: FlashAttnKernelRule = "none"
    flashinfer_large_pages: bool = True
    cpu_hybrid_alignment: bool = True
    cpu_attn_kernel_multiple: int = 32
    nixl_state_families: frozenset[str] | None = None
    mla_blackwell_backend: str = "FLASHINFER_MLA"
    kv_transfer_disables_hma: bool = False
    prefix_caching_forced_off: PrefixCachingForcedOff = "none"
    config_hooks_normalise_arch: bool = True

    def prefix_caching_refusal(self, model_type: str, has_state: bool) -> str:
        """Why this release turns prefix caching off for the model whatever the flag
        says (``""`` when it does not). Read in 0.10.2 and 0.11.0 / 0.11.1 and 0.14.0
        ``vllm/model_executor/models/config.py`` ``MambaModelConfig``."""
        if not has_state or self.prefix_caching_forced_off == "none":
            return ""
        if self.prefix_caching_forced_off == "all":
            return (
                f"vLLM {self.name} turns prefix caching off for every hybrid or Mamba model "
                '("disabling prefix caching since it is not yet supported")'
            )
        if model_type in self.mamba_prefix_caching_types:
            return ""
        return (
            f"vLLM {self.name} turns prefix caching off for {model_type}: it has no Mamba "
            'prefix-caching support ("Hybrid or mamba-based model detected without support '
            'for prefix caching: disabling")'
        )

    def prefix_caching_default(self, hybrid: bool) -> bool:
        """Whether prefix caching is on when no flag names it (non-hybrids: always on)."""
        return self.hybrid_prefix_caching_default if hybrid else True


#: the oldest profile, every field spelled out (vLLM 0.10.x, read in 0.10.2 and 0.11.0).
_OLDEST = Profile(
    name="0.10",
    first="0.10.0",
    verified=("0.10.2", "0.11.0"),
    nixl_hetero_hybrid=False,
    nixl_gcd_split=False,
    nixl_split_limit=0,
    alignment_site="model-config",
    mla_alignment=None,
    mla_floor=0,
    chunk_alignment=False,
    mamba_prefix_caching_types=_MAMBA_PREFIX_CACHING_WITH_BAMBA,
    backend_lcm_rounding=False,
    gdn_checkpoint_alignment=False,
    kernel_block_split=False,
    backend_preferred_block=False,
    nemotron_ssm_fallback=None,
    nixl_hybrid=False,
    nixl_hetero_tp_mamba=False,
    nixl_equal_blocks_all=True,
    kv_cache_dtype_from_checkpoint=False,
    mamba_cache_modes=(),
    gdn_ssm_dtype_flag=False,
    kda_ssm_dtype_flag=False,
    mamba2_spec_types=frozenset(),
    mamba_dtypes=("auto", "float32"),
    fa4_hd256_pages=False,
    replayssm=0,
    flashinfer_large_pages=False,
    mla_blackwell_backend="CUTLASS_MLA",
    kv_transfer_disables_hma=True,
    prefix_caching_forced_off="all",
    config_hooks_normalise_arch=False,
)

#: each later release line as (first release, releases read or run, what changed from the
#: line before). Keep in step with docs/versions.md.
_CHANGES: tuple[tuple[str, tuple[str, ...], dict[str, object]], ...] = (
    (
        "0.11.1",
        ("0.11.1",),
        {
            "mla_alignment": 64,
            "chunk_alignment": True,
            "kernel_block_split": True,
            "blackwell_hd256_alignment": 32,
            "blackwell_hd256_exact": True,
            "nixl_equal_blocks_all": False,
            "hybrid_prefix_caching_default": False,
            "flash_attn_kernel_sizes": "all",
            "prefix_caching_forced_off": "unsupported",
        },
    ),
    ("0.12.0", ("0.12.0",), {"flash_attn_kernel_sizes": "hybrid-float32"}),
    (
        "0.13.0",
        ("0.13.0",),
        {"blackwell_hd256_exact": False, "mamba_dtypes": ("auto", "float32", "float16")},
    ),
    (
        "0.14.0",
        ("0.14.0",),
        {
            "nemotron_ssm_fallback": "float16",
            "kv_cache_dtype_from_checkpoint": True,
            "attention_free_kv_heads_error": True,
        },
    ),
    (
        "0.15.0",
        ("0.15.0", "0.16.0"),
        {
            "mamba_cache_modes": ("none", "align", "all"),
            "mamba_cache_mode_default_all": True,
            "mla_blackwell_backend": "FLASHINFER_MLA",
            "prefix_caching_forced_off": "none",
        },
    ),
    (
        "0.17.0",
        ("0.17.0",),
        {"gdn_ssm_dtype_flag": True, "mamba2_spec_types": frozenset({"nemotron_h", "mamba2"})},
    ),
    (
        "0.18.0",
        ("0.18.0", "0.18.1", "0.19.1"),
        {
            "blackwell_hd256_alignment": None,
            "nixl_hybrid": True,
            "attention_free_kv_heads_error": False,
        },
    ),
    (
        "0.20.0",
        ("0.20.0",),
        {
            "alignment_site": "platform",
            "backend_preferred_block": True,
            "nemotron_ssm_fallback": "float32",
            "nixl_hetero_tp_mamba": True,
            "nixl_state_families": frozenset({"mamba2"}),
            "spec_decode_align": True,
            "cpu_hybrid_alignment": False,
        },
    ),
    ("0.21.0", ("0.21.0",), {"cpu_hybrid_alignment": True, "cpu_attn_kernel_multiple": 16}),
    (
        "0.22.0",
        ("0.22.0", "0.23.0"),
        {
            "spec_decode_align": False,
            "kv_transfer_disables_hma": False,
            "mamba_dtypes": ("auto", "float32", "float16", "bfloat16"),
        },
    ),
    (
        "0.24.0",
        ("0.24.0",),
        {"flashinfer_large_pages": True, "mamba_prefix_caching_types": _MAMBA_PREFIX_CACHING},
    ),
    (
        "0.25.0",
        ("0.25.0", "0.26.0"),
        {
            "flash_attn_kernel_sizes": "none",
            "config_hooks_normalise_arch": True,
            "nixl_state_families": frozenset({"mamba1", "mamba2", "gdn"}),
        },
    ),
    (
        "0.27.0",
        ("0.27.0", "0.27.1"),
        {"mla_floor": 128, "nixl_hetero_hybrid": True, "replayssm": 1},
    ),
    (
        "0.28.0",
        ("0.28.0",),
        {"hybrid_prefix_caching_default": True, "mamba_cache_mode_default_all": False},
    ),
    ("0.29.0", ("0.29.0",), {"fa4_hd256_pages": True, "cpu_attn_kernel_multiple": 32}),
    ("0.30.0", ("0.30.0", "0.31.0"), {"kda_ssm_dtype_flag": True, "replayssm": 2}),
    (
        "0.32.0",
        ("0.32.0",),
        {
            "chunk_alignment": False,
            "backend_lcm_rounding": True,
            "mamba_cache_modes": ("none", "align"),
            "mamba2_spec_types": _MAMBA2_SPEC_ALL,
            "replayssm": 3,
        },
    ),
    (
        "0.33.0",
        ("0.33.0",),
        {
            "gdn_checkpoint_alignment": True,
            "nixl_gcd_split": True,
            "nixl_split_limit": 128,
            "mamba_cache_mode_noop": True,
            "replayssm": 4,
        },
    ),
)


def _profile_name(first: str) -> str:
    """``0.14.0`` → ``0.14``; a first release that is a patch release keeps its patch."""
    major, minor, patch = first.split(".")
    return f"{major}.{minor}" if patch == "0" else first


def _build() -> tuple[Profile, ...]:
    profiles = [_OLDEST]
    for first, verified, changes in _CHANGES:
        # one replace per release (each builds a whole Profile); the row's changes win
        named = {"name": _profile_name(first), "first": first, "verified": verified}
        profiles.append(replace(profiles[-1], **{**named, **changes}))  # type: ignore[arg-type]
    return tuple(profiles)


#: known profiles, oldest first. The newest is the default.
PROFILES: tuple[Profile, ...] = _build()


def first_nixl_release(family: str) -> str | None:
    """The first release from which every profile's NIXL connector transfers ``family``
    state (:attr:`Profile.nixl_state_families`), ``None`` when the newest cannot."""
    found: str | None = None
    for profile in PROFILES:
        families = profile.nixl_state_families
        ok = profile.nixl_hybrid and (families is None or family in families)
        found = (found or profile.first) if ok else None
    return found


DEFAULT_PROFILE = PROFILES[-1]


def newest() -> Profile:
    """The newest profile (the last of :data:`PROFILES`), which applies when no
    ``--vllm-version`` is given.

    Read from the table at call time, so code and tests that mean "the newest release"
    name it through this function instead of writing a release like ``"0.33"``: adding a
    profile to :data:`_CHANGES` changes the answer and nothing else has to change.
    """
    return PROFILES[-1]


#: architectures (``architectures[0]``) whose registration in vLLM's model registry began or
#: ended inside the profiled range: name → (first release that registers it, first release
#: that no longer does). ``None``: before every profile / still registered. Read from each
#: release's ``vllm/model_executor/models/registry.py`` (0.11.1 → 0.33.0; see
#: docs/versions.md for the releases on each side of a boundary).
ARCHITECTURE_RELEASES: dict[str, tuple[str | None, str | None]] = {
    "Lfm2VlForConditionalGeneration": ("0.14.0", None),
    "Qwen3_5ForConditionalGeneration": ("0.17.0", None),
    "Qwen3_5MoeForConditionalGeneration": ("0.17.0", None),
    "OlmoHybridForCausalLM": ("0.18.0", None),
    "BambaForCausalLM": (None, "0.24.0"),
    "KimiK3ForConditionalGeneration": ("0.27.0", None),
    "Qwen3_5ForCausalLM": ("0.27.0", None),
    "Qwen3_5MoeForCausalLM": ("0.27.0", None),
    "BailingMoeV3ForCausalLM": ("0.28.0", None),
    "AliceAIForCausalLM": ("0.33.0", None),
}


class SkipLayerRules(NamedTuple):
    """How a release treats ``--kv-cache-dtype-skip-layers`` (the attention layers it names
    keep the model dtype while the others take ``--kv-cache-dtype``).

    Attributes:
        flag: the release has the flag (``CacheConfig.kv_cache_dtype_skip_layers``; the
            layers read it in ``Attention.__init__``,
            ``vllm/model_executor/layers/attention/attention.py``).
        aligns_block: the platform raises the block so the quantized page covers the skip
            layers' page at the smallest kernel block
            (``Platform._align_heterogeneous_kv_block_size``, ``vllm/platforms/interface.py``).
        pads_mamba: ``unify_kv_cache_spec_page_size`` pads a Mamba page up to the larger
            page of the skipped layers; before, it scales the Mamba spec's block size,
            which leaves its page as it was, and its own assertion fails at start-up.
    """

    flag: bool
    aligns_block: bool
    pads_mamba: bool


#: first release of each :class:`SkipLayerRules` field. Read in each release's
#: ``vllm/engine/arg_utils.py``, ``vllm/platforms/interface.py`` and
#: ``vllm/v1/core/kv_cache_utils.py`` (``kv_cache_planning.py`` in 0.33): the flag absent
#: in 0.18.1 and present in 0.19.0; the block alignment absent in 0.24.0, present in
#: 0.25.0; the Mamba padding absent in 0.25.0, present in 0.26.0; all three unchanged
#: through 0.33.0.
SKIP_LAYER_RELEASES: dict[str, str] = {
    "flag": "0.19.0",
    "aligns_block": "0.25.0",
    "pads_mamba": "0.26.0",
}


def skip_layer_rules(release: str) -> SkipLayerRules:
    """The :class:`SkipLayerRules` of vLLM ``release`` (a version such as ``0.27.1``)."""
    on = {name: _at_least(release, first) for name, first in SKIP_LAYER_RELEASES.items()}
    return SkipLayerRules(**on)


#: how the ``extract_hidden_states`` speculative method's hidden-state KV-cache group
#: (``HiddenStateCacheSpec``, one layer of ``len(eagle_aux_hidden_state_layer_ids)`` heads
#: of ``hidden_size``) gets its block, by first release (``get_kv_cache_groups`` in
#: ``vllm/v1/core/kv_cache_utils.py``; ``kv_cache_planning.py`` in 0.33): 1 its own group
#: of ``max(common page // per-token bytes, 1)`` tokens, the page padded to the common page
#: (read in 0.22.0, 0.24.0 → 0.27.1; 0.20.0 has the method but no such grouping; 0.21 not
#: read); 2 the largest divisor of the other groups' gcd block within that (0.28.0,
#: 0.29.0); 3 the other groups' blocks are first multiplied until the common page holds one
#: token of hidden states (``_ensure_min_page_size``; 0.30.0 → 0.33.0).
HIDDEN_STATE_RULES: tuple[tuple[str, int], ...] = (("0.22.0", 1), ("0.28.0", 2), ("0.30.0", 3))


def hidden_state_rule(release: str) -> int:
    """The :data:`HIDDEN_STATE_RULES` rule of vLLM ``release`` (0: not modelled, < 0.22)."""
    rule = 0
    for first, number in HIDDEN_STATE_RULES:
        if _at_least(release, first):
            rule = number
    return rule


#: the names ``SpeculativeConfig.method`` accepts (the ``SpeculativeMethod`` Literal and
#: the ``MTPModelTypes`` / ``EagleModelTypes`` ... Literals it unites,
#: ``vllm/config/speculative.py``), as a chain: (first release read with the change, names
#: added, names removed). The config is a pydantic dataclass: the Literal is checked when
#: ``EngineArgs.create_speculative_config`` builds it, before ``__post_init__`` renames the
#: ``*_mtp`` model types to ``mtp`` or infers a method from the draft model, so every
#: accepted name is in the Literal. Read in 0.11.1, 0.14.0, 0.17.0, 0.18.0, 0.18.1, 0.19.0,
#: 0.19.1, 0.20.0, 0.22.0 and 0.24.0 → 0.33.0 (:data:`SPECULATIVE_METHODS_READ`). A release
#: not read takes the newest row at or below it (the nearest read release below it: a name
#: added in a gap between two read releases counts from the later one); 0.10.x was not
#: read and takes the 0.11.1 list.
SPECULATIVE_METHOD_CHANGES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "0.11.1",
        ("ngram", "medusa", "mlp_speculator", "draft_model", "suffix", "eagle", "eagle3",
         "mtp", "deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "ernie_mtp", "qwen3_next_mtp",
         "longcat_flash_mtp", "pangu_ultra_moe_mtp"),
        (),
    ),
    ("0.14.0", ("exaone_moe_mtp",), ()),
    (
        "0.17.0",
        ("extract_hidden_states", "glm4_moe_lite_mtp", "glm_ocr_mtp", "nemotron_h_mtp",
         "qwen3_5_mtp", "step3p5_mtp"),
        (),
    ),
    ("0.18.0", ("ngram_gpu",), ()),
    ("0.20.0", ("exaone4_5_mtp", "hy_v3_mtp", "dflash"), ()),
    ("0.22.0", ("custom_class", "mimo_v2_mtp", "gemma4_mtp"), ()),
    ("0.24.0", ("minimax_m3_mtp",), ()),
    ("0.25.0", ("bailing_hybrid_mtp", "dspark"), ()),
    ("0.26.0", ("inkling_mtp",), ()),
    ("0.27.1", ("kimi_k3_mtp",), ()),
    ("0.28.0", ("dots3_note_mtp", "bailing_hybrid_v3_mtp"), ()),
    ("0.29.0", ("qwen4_exp_mtp", "hy_v4_mtp"), ()),
    ("0.30.0", ("glm5_next_mtp",), ()),
    ("0.33.0", ("step5_mtp",), ("medusa", "mlp_speculator")),
)  # fmt: skip

#: the releases whose ``SpeculativeMethod`` Literal was read for
#: :data:`SPECULATIVE_METHOD_CHANGES`.
SPECULATIVE_METHODS_READ: tuple[str, ...] = (
    "0.11.1", "0.14.0", "0.17.0", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.22.0",
    "0.24.0", "0.25.0", "0.26.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0",
    "0.33.0",
)  # fmt: skip


class SpeculativeMethods(NamedTuple):
    """The method names one release accepts (:data:`SPECULATIVE_METHOD_CHANGES`).

    Attributes:
        names: the accepted ``method`` values.
        basis: the read release whose list applies (the release itself when it was read).
    """

    names: frozenset[str]
    basis: str


def speculative_methods(release: str) -> SpeculativeMethods:
    """The ``SpeculativeConfig.method`` names vLLM ``release`` accepts, and the read
    release they come from (:data:`SPECULATIVE_METHOD_CHANGES`)."""
    names: set[str] = set()
    for first, added, removed in SPECULATIVE_METHOD_CHANGES:
        if first != SPECULATIVE_METHOD_CHANGES[0][0] and not _at_least(release, first):
            break
        names = (names | set(added)) - set(removed)
    basis = SPECULATIVE_METHODS_READ[0]
    for read in SPECULATIVE_METHODS_READ:
        if _at_least(release, read):
            basis = read
    return SpeculativeMethods(frozenset(names), basis)


#: the methods that give ``num_speculative_tokens`` themselves when it is not given and no
#: draft ``model`` is named: ``suffix`` takes ``suffix_decoding_max_tree_depth`` (default 24,
#: ``SpeculativeConfig._validate_suffix_decoding``). Every other method needs the count
#: (``_verify_args``: "num_speculative_tokens must be provided"); a draft model's
#: ``n_predict`` is read only when ``model`` is named, and without ``model`` ``__post_init__``
#: fills it in only when the count is given. Read in every release of
#: :data:`SPECULATIVE_METHODS_READ`.
SPECULATIVE_DEFAULT_TOKENS: dict[str, int] = {"suffix": 24}

#: the transformers range each vLLM release declares (``Requires-Dist: transformers`` in its
#: wheel's METADATA), as a chain: (first release, specifier, releases read). A release takes
#: the row of the newest ``first`` at or below it. Read in the published wheels.
TRANSFORMERS_PINS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("0.10.0", ">=4.55.2", ("0.10.2", "0.11.0")),
    ("0.11.1", ">=4.56.0,<5", ("0.11.1", "0.14.0", "0.17.0")),
    ("0.19.0", ">=4.56.0,!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0", ("0.19.1",)),
    ("0.25.0", ">=5.5.3", ("0.25.0", "0.26.0", "0.27.1")),
)

#: the newest transformers release of each line at the time of reading (what ``pip install
#: vllm==X`` resolves today within X's range): 4.57.6 is the last 4.x, 5.20.2 the newest.
TRANSFORMERS_NEWEST: tuple[str, ...] = ("4.57.6", "5.20.2")


#: what :func:`transformers_for` resolves for each specifier of
#: :data:`TRANSFORMERS_PINS` when no version is asked for: the newest of
#: :data:`TRANSFORMERS_NEWEST` inside it (precomputed, so that a check parses no version
#: range; tests/arithmetic/test_versions_fast.py recomputes it with packaging).
TRANSFORMERS_RESOLVED: dict[str, str] = {
    ">=4.55.2": "5.20.2",
    ">=4.56.0,<5": "4.57.6",
    ">=4.56.0,!=5.0.*,!=5.1.*,!=5.2.*,!=5.3.*,!=5.4.*,!=5.5.0": "5.20.2",
    ">=5.5.3": "5.20.2",
}


def _plain_release(text: str) -> tuple[int, ...] | None:
    """``0.14.0`` → ``(0, 14)``: a release of dot-separated whole numbers (ASCII digits),
    trailing zeros dropped, as PEP 440 compares releases; ``None`` for anything else (a
    pre-release, a local tag, ...), which :mod:`packaging` then judges."""
    parts = text.split(".")
    if not all(part.isascii() and part.isdigit() for part in parts):
        return None
    numbers = [int(part) for part in parts]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _at_least(release: str, first: str) -> bool:
    """``Version(release) >= Version(first)`` (PEP 440), without importing packaging when
    both are plain releases (:func:`_plain_release`)."""
    mine, theirs = _plain_release(release), _plain_release(first)
    if mine is not None and theirs is not None:
        return mine >= theirs
    from packaging.version import Version

    return Version(release) >= Version(first)


class TransformersChoice(NamedTuple):
    """The transformers version a pool runs with.

    Attributes:
        version: the version (``--transformers-version``, else the default).
        pinned: the range the vLLM release declares.
        note: how it was chosen (for ``explain``).
    """

    version: str
    pinned: str
    note: str

    @property
    def major(self) -> int:
        """The major version (4 or 5)."""
        release = _plain_release(self.version)
        if release is not None:
            return release[0]
        from packaging.version import Version

        return Version(self.version).major


@lru_cache(maxsize=64)
def transformers_for(release: str, requested: str | None) -> TransformersChoice:
    """The transformers version vLLM ``release`` runs with: ``requested``
    (``--transformers-version``) when it is inside the release's declared range, else the
    newest known release inside it (:data:`TRANSFORMERS_NEWEST`).

    Raises:
        InvalidSettings: ``requested`` is not a version, or outside the release's range.
    """
    pinned = TRANSFORMERS_PINS[0][1]
    for first, spec, _ in TRANSFORMERS_PINS:
        if _at_least(release, first):
            pinned = spec
    if requested is None and pinned in TRANSFORMERS_RESOLVED:
        newest_text = TRANSFORMERS_RESOLVED[pinned]
        return TransformersChoice(
            newest_text,
            pinned,
            f"what installing vLLM {release} resolves (transformers{pinned}): {newest_text}",
        )
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    allowed = SpecifierSet(pinned)
    if requested is not None:
        try:
            version = Version(requested.strip().lstrip("v"))
        except InvalidVersion:
            raise InvalidSettings(
                f"--transformers-version: {requested!r} is not a version like 4.57.6"
            ) from None
        if not allowed.contains(version, prereleases=True):
            raise InvalidSettings(
                f"--transformers-version {requested}: vLLM {release} declares transformers"
                f"{pinned} (its wheel's Requires-Dist)"
            )
        return TransformersChoice(str(version), pinned, f"--transformers-version {version}")
    newest = max(Version(v) for v in TRANSFORMERS_NEWEST if Version(v) in allowed)
    return TransformersChoice(
        str(newest),
        pinned,
        f"what installing vLLM {release} resolves (transformers{pinned}): {newest}",
    )


#: unregistered text-only architectures vLLM serves with a registered class instead
#: (``ModelRegistry._normalize_arch``: ``…ForCausalLM`` → ``…ForConditionalGeneration``,
#: read in 0.17.0): name → the stand-in. The stand-in's own span in
#: :data:`ARCHITECTURE_RELEASES` says from when.
STAND_INS: dict[str, str] = {
    "Qwen3_5ForCausalLM": "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForCausalLM": "Qwen3_5MoeForConditionalGeneration",
}


def architecture_stand_in(architecture: str, release: str) -> str:
    """The class vLLM ``release`` serves ``architecture`` with when it does not register it
    itself (``""``: registered, or no stand-in either)."""
    stand_in = STAND_INS.get(architecture, "")
    if not stand_in or not _registration_problem(architecture, release):
        return ""
    return "" if _registration_problem(stand_in, release) else stand_in


def architecture_problem(architecture: str, release: str) -> str:
    """Why vLLM ``release`` cannot serve ``architecture`` at all (``""`` when it can).

    ``release`` is a version (``0.14.0``, ``0.14``); architectures not in
    :data:`ARCHITECTURE_RELEASES` are taken as known to every profiled release. An
    architecture with a registered stand-in (:func:`architecture_stand_in`) passes: the
    configuration builds, and :mod:`kvalign.startup` names the start-up failure.
    """
    if architecture_stand_in(architecture, release):
        return ""
    return _registration_problem(architecture, release)


def _registration_problem(architecture: str, release: str) -> str:
    span = ARCHITECTURE_RELEASES.get(architecture)
    if span is None:
        return ""
    first, gone = span
    if first is not None and not _at_least(release, first):
        return (
            f"vLLM {release} does not know this architecture ({architecture} is first "
            f"registered in vLLM {first})"
        )
    if gone is not None and _at_least(release, gone):
        return (
            f"vLLM {release} does not know this architecture ({architecture} was removed "
            f"in vLLM {gone})"
        )
    return ""


class Resolved(NamedTuple):
    """A profile chosen for a requested version, with a note on how it was chosen.

    ``release`` is the version asked for (``--vllm-version`` without a leading ``v``),
    or the profile's first release when none was asked for.
    """

    profile: Profile
    note: str
    release: str = ""
    beyond_newest: bool = False

    @property
    def warning(self) -> str:
        """What the CLI writes to stderr for a version newer than every profile (``""``
        otherwise)."""
        if not self.beyond_newest:
            return ""
        return (
            f"vLLM {self.release} is newer than every profile; using the {self.profile.name} "
            "rules (the newest)"
        )


def profile_named(name: str) -> Profile:
    """The profile called ``name`` (e.g. ``"0.10"``).

    Raises:
        KeyError: no such profile.
    """
    for profile in PROFILES:
        if profile.name == name:
            return profile
    raise KeyError(name)


#: longest ``--vllm-version`` accepted (``0.33.0rc1.dev1234`` is 17 characters).
MAX_VERSION_CHARS = 64


@lru_cache(maxsize=64)
def resolve(version: str | None) -> Resolved:
    """The profile for ``--vllm-version`` (``None`` → the newest profile).

    Cached: a pure function of the string, called once per pool per what-if (an audit of
    hundreds of pools in one group called it tens of thousands of times).

    Versions newer than every profile use the newest (``beyond_newest``; the CLI warns on
    stderr); versions older than every profile are refused.

    Raises:
        InvalidSettings: an unparsable version (or longer than :data:`MAX_VERSION_CHARS`),
            a PEP 440 epoch (``1!0.10``), a local tag (``0.33.0+cu128``), or a version
            older than every profile.
    """
    if version is None:
        return Resolved(
            DEFAULT_PROFILE,
            f"vLLM {DEFAULT_PROFILE.name} rules (default profile)",
            DEFAULT_PROFILE.first,
        )
    text = version.strip().lstrip("v")
    shown = repr(version if len(version) <= 40 else version[:40] + "…")
    if len(text) > MAX_VERSION_CHARS or not text.isascii():
        raise InvalidSettings(f"--vllm-version: {shown} is not a version like 0.33.0")
    from packaging.version import InvalidVersion, Version

    try:
        wanted = Version(text)
    except (InvalidVersion, ValueError):
        raise InvalidSettings(f"--vllm-version: {shown} is not a version like 0.33.0") from None
    if wanted.epoch != 0:
        raise InvalidSettings(
            f"--vllm-version: {shown} has a PEP 440 epoch ({wanted.epoch}!); vLLM releases "
            "have none: give the release, e.g. 0.33.0"
        )
    if wanted.local is not None:
        raise InvalidSettings(
            f"--vllm-version: {shown} has a local tag (+{wanted.local}): kvalign cannot "
            "know what a local build changed; give the release it is built from, e.g. "
            f"{wanted.public}"
        )
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
            f"vLLM {chosen.name} rules, the newest profile (for --vllm-version {version}, "
            "newer than every profile)",
            str(wanted),
            beyond_newest=True,
        )
    return Resolved(chosen, f"vLLM {chosen.name} rules (for --vllm-version {version})", str(wanted))
