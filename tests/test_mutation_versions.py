"""Every release boundary of the profile table pinned on both sides.

Each row is a fact of docs/versions.md "Boundaries, with the releases on each side" (read
in the published wheels, cited there): the release profile in force for the last release
without the fact, and for the first release with it. A table row moved by one release, a
field left out of a row, or a value flipped fails here.
"""

from __future__ import annotations

import pytest

from kvalign.errors import InvalidSettings
from kvalign.versions import PROFILES, profile_named, resolve

#: (field, last release without → value, first release with → value)
BOUNDARIES = [
    ("hybrid_prefix_caching_default", "0.11.0", True, "0.11.1", False),
    ("hybrid_prefix_caching_default", "0.27.1", False, "0.28.0", True),
    ("kv_cache_dtype_from_checkpoint", "0.13.0", False, "0.14.0", True),
    ("blackwell_hd256_exact", "0.12.0", True, "0.13.0", False),
    ("blackwell_hd256_alignment", "0.17.0", 32, "0.18.0", None),
    ("nixl_hybrid", "0.17.0", False, "0.18.0", True),
    ("kv_transfer_disables_hma", "0.21.0", True, "0.22.0", False),
    ("nixl_hetero_tp_mamba", "0.19.1", False, "0.20.0", True),
    ("mamba_cache_modes", "0.14.0", (), "0.15.0", ("none", "align", "all")),
    ("mamba_cache_mode_default_all", "0.14.0", False, "0.15.0", True),
    ("mamba_cache_mode_default_all", "0.27.1", True, "0.28.0", False),
    ("chunk_alignment", "0.31.0", True, "0.32.0", False),
    ("mamba_cache_modes", "0.31.0", ("none", "align", "all"), "0.32.0", ("none", "align")),
    ("mamba_cache_mode_noop", "0.32.0", False, "0.33.0", True),
    ("spec_decode_align", "0.18.1", False, "0.20.0", True),
    ("spec_decode_align", "0.21.0", True, "0.22.0", False),
    ("gdn_ssm_dtype_flag", "0.14.0", False, "0.17.0", True),
    ("kda_ssm_dtype_flag", "0.29.0", False, "0.30.0", True),
    ("flash_attn_kernel_sizes", "0.11.0", "none", "0.11.1", "all"),
    ("flash_attn_kernel_sizes", "0.11.1", "all", "0.12.0", "hybrid-float32"),
    ("flash_attn_kernel_sizes", "0.24.0", "hybrid-float32", "0.25.0", "none"),
    ("flashinfer_large_pages", "0.22.0", False, "0.24.0", True),
    ("cpu_hybrid_alignment", "0.20.0", False, "0.21.0", True),
    ("mla_blackwell_backend", "0.14.0", "CUTLASS_MLA", "0.15.0", "FLASHINFER_MLA"),
    ("fa4_hd256_pages", "0.28.0", False, "0.29.0", True),
    ("mamba_dtypes", "0.12.0", ("auto", "float32"), "0.13.0", ("auto", "float32", "float16")),
    ("mamba_dtypes", "0.21.0", ("auto", "float32", "float16"), "0.22.0",
     ("auto", "float32", "float16", "bfloat16")),
    ("attention_free_kv_heads_error", "0.13.0", False, "0.14.0", True),
    ("attention_free_kv_heads_error", "0.17.0", True, "0.18.0", False),
    # profiles table of docs/versions.md: 0.20 moved the alignment to the platform,
    # 0.27 set the MLA floor 128 and dropped NIXL's equal-block assertion for hybrids,
    # 0.32 added the backend-lcm rounding, 0.33 the gcd split of at most 128 units and
    # the GDN checkpoint alignment
    ("alignment_site", "0.19.1", "model-config", "0.20.0", "platform"),
    ("mla_floor", "0.26.0", 0, "0.27.0", 128),
    ("nixl_hetero_hybrid", "0.26.0", False, "0.27.0", True),
    ("backend_lcm_rounding", "0.31.0", False, "0.32.0", True),
    ("nixl_gcd_split", "0.32.0", False, "0.33.0", True),
    ("nixl_split_limit", "0.32.0", 0, "0.33.0", 128),
    ("gdn_checkpoint_alignment", "0.32.0", False, "0.33.0", True),
    ("replayssm", "0.26.0", 0, "0.27.0", 1),
    ("replayssm", "0.29.0", 1, "0.30.0", 2),
    ("replayssm", "0.31.0", 2, "0.32.0", 3),
    ("replayssm", "0.32.0", 3, "0.33.0", 4),
]  # fmt: skip


@pytest.mark.parametrize(("field", "before", "old", "first", "new"), BOUNDARIES)
def test_release_boundary(field: str, before: str, old: object, first: str, new: object) -> None:
    assert getattr(resolve(before).profile, field) == old
    assert getattr(resolve(first).profile, field) == new


def test_bamba_supports_mamba_prefix_caching_until_it_left_the_registry() -> None:
    # Bamba removed from the registry in 0.24.0 (last 0.23.0)
    assert "bamba" in resolve("0.23.0").profile.mamba_prefix_caching_types
    assert "bamba" not in resolve("0.24.0").profile.mamba_prefix_caching_types
    # Mamba2 conv state: Falcon-H1 takes speculative rows from 0.32.0, not in 0.31.0
    assert "falcon_h1" not in resolve("0.31.0").profile.mamba2_spec_types
    assert "falcon_h1" in resolve("0.32.0").profile.mamba2_spec_types
    assert resolve("0.16.0").profile.mamba2_spec_types == frozenset()
    assert resolve("0.17.0").profile.mamba2_spec_types == {"nemotron_h", "mamba2"}


def test_chunk_aligned_types_only_where_the_release_chunk_aligns() -> None:
    old, new = resolve("0.27.1").profile, resolve("0.32.0").profile
    assert old.chunk_alignment and "nemotron_h" in old.mamba_prefix_caching_types
    assert not new.chunk_alignment


def test_prefix_caching_default_hybrid_and_not() -> None:
    before, after = resolve("0.27.1").profile, resolve("0.28.0").profile
    assert (before.prefix_caching_default(True), before.prefix_caching_default(False)) == (
        False,
        True,
    )
    assert (after.prefix_caching_default(True), after.prefix_caching_default(False)) == (
        True,
        True,
    )


def test_profile_names_and_first_releases() -> None:
    # a first release that is a .0 is named by its minor line; a patch release keeps its patch
    assert [p.name for p in PROFILES][:3] == ["0.10", "0.11.1", "0.12"]
    assert [p.first for p in PROFILES][:3] == ["0.10.0", "0.11.1", "0.12.0"]
    assert profile_named("0.11.1").first == "0.11.1"
    assert profile_named("0.33") is PROFILES[-1]
    with pytest.raises(KeyError, match=r"0\.11"):
        profile_named("0.11")


@pytest.mark.parametrize(
    ("asked", "profile", "warns"),
    [
        ("0.10.0", "0.10", False),  # the first release of the oldest profile
        ("0.11.0", "0.10", False),
        ("0.11.1", "0.11.1", False),  # a profile's first release is in it
        ("v0.27.0", "0.27", False),
        (" 0.26.9 ", "0.25", False),
        ("0.33.0", "0.33", False),
        ("0.33.7", "0.33", False),  # a patch of the newest line: no warning
        ("0.34.0", "0.33", True),  # newer than every profile: the newest, with a warning
        ("1.0.0", "0.33", True),
    ],
)
def test_resolve_boundaries(asked: str, profile: str, warns: bool) -> None:
    resolved = resolve(asked)
    assert resolved.profile.name == profile
    # the warning is Resolved.warning (the CLI's stderr line), not a note
    assert bool(resolved.warning) is warns and resolved.beyond_newest is warns
    assert not resolved.note.startswith("warning:")
    assert resolved.release == asked.strip().lstrip("v")


@pytest.mark.parametrize("asked", ["0.9.9", "0.1", "banana"])
def test_resolve_refuses_older_or_unparsable(asked: str) -> None:
    with pytest.raises(InvalidSettings, match="--vllm-version"):
        resolve(asked)
