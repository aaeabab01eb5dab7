"""Every release boundary of the profile table pinned on both sides.

Each row is a fact of docs/versions.md "Boundaries, with the releases on each side" (read
in the published wheels, cited there): the release profile in force for the last release
without the fact, and for the first release with it. A table row moved by one release, a
field left out of a row, or a value flipped fails here.
"""

from __future__ import annotations

import pytest

from kvalign.errors import InvalidSettings
from kvalign.versions import (
    PROFILES,
    _at_least,
    _build,
    _plain_release,
    _profile_name,
    architecture_problem,
    architecture_stand_in,
    first_nixl_release,
    hidden_state_rule,
    newest,
    profile_named,
    resolve,
    skip_layer_rules,
    speculative_methods,
)

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


def _in_force(profiles: tuple[object, ...], release: str) -> object:
    """The last profile of ``profiles`` (oldest first) whose first release is not after
    ``release``: the profile a release runs under, chosen here without kvalign's resolve."""
    from packaging.version import Version

    chosen = [p for p in profiles if Version(p.first) <= Version(release)]  # type: ignore[attr-defined]
    return chosen[-1]


@pytest.mark.parametrize(("field", "before", "old", "first", "new"), BOUNDARIES)
def test_release_boundary_of_a_table_built_afresh(
    field: str, before: str, old: object, first: str, new: object
) -> None:
    # PROFILES is built once, at import; building it again inside the test is what lets a
    # wrong step of _build (a change row applied to the wrong release, a field dropped)
    # fail here and not only in the import-time table
    fresh = _build()
    assert getattr(_in_force(fresh, before), field) == old
    assert getattr(_in_force(fresh, first), field) == new


def test_profile_names_of_a_table_built_afresh() -> None:
    # a .0 first release is named by its minor line; a patch first release keeps its patch
    assert _profile_name("0.14.0") == "0.14"
    assert _profile_name("0.11.1") == "0.11.1"
    assert _profile_name("1.2.0") == "1.2"
    fresh = _build()
    assert [p.name for p in fresh][:3] == ["0.10", "0.11.1", "0.12"]
    assert [p.first for p in fresh][:3] == ["0.10.0", "0.11.1", "0.12.0"]
    # the table built afresh is the module's, its last row the newest profile (the default)
    assert fresh == PROFILES and fresh[-1] == newest()
    assert profile_named("0.33").first == "0.33.0"  # docs/versions.md profiles table
    # every profile after the oldest is a release row of its own, in release order
    firsts = [p.first for p in fresh]
    assert len(set(firsts)) == len(firsts)


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
    assert profile_named(newest().name) is PROFILES[-1]
    with pytest.raises(KeyError, match=r"0\.11"):
        profile_named("0.11")


#: the newest profile's release line, read from the table (not written: adding a profile
#: moves the "newer than every profile" boundary with it)
_NEWEST_MAJOR, _NEWEST_MINOR = (int(part) for part in newest().first.split(".")[:2])


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
        # newer than every profile: the newest, with a warning
        (f"{_NEWEST_MAJOR}.{_NEWEST_MINOR + 1}.0", newest().name, True),
        (f"{_NEWEST_MAJOR + 1}.0.0", newest().name, True),
        (f"{_NEWEST_MAJOR}.{_NEWEST_MINOR}.7", newest().name, False),  # a patch of the newest
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


# ---- the release helpers (issue 19): each fact from docs/versions.md, which cites the
# vLLM files read on both sides of every boundary ---------------------------------------
@pytest.mark.parametrize(
    ("release", "rules"),
    [
        # flag absent in 0.18.1, present in 0.19.0 (vllm/engine/arg_utils.py); the block
        # step absent in 0.24.0, present in 0.25.0 (platforms/interface.py); the Mamba
        # padding absent in 0.25.0, present in 0.26.0 (v1/core/kv_cache_utils.py)
        ("0.18.1", (False, False, False)),
        ("0.19.0", (True, False, False)),
        ("0.24.0", (True, False, False)),
        ("0.25.0", (True, True, False)),
        ("0.26.0", (True, True, True)),
        ("0.33.0", (True, True, True)),
    ],
)
def test_skip_layer_rules_per_release(release: str, rules: tuple[bool, bool, bool]) -> None:
    found = skip_layer_rules(release)
    assert (found.flag, found.aligns_block, found.pads_mamba) == rules


@pytest.mark.parametrize(
    ("release", "rule"),
    # docs/versions.md, the hidden-state group: 0.20 groups the layer like any other (not
    # modelled: 0), rule 1 from 0.22, rule 2 in 0.28-0.29, rule 3 from 0.30
    [("0.20.0", 0), ("0.21.0", 0), ("0.22.0", 1), ("0.27.1", 1), ("0.28.0", 2), ("0.29.0", 2),
     ("0.30.0", 3), ("0.33.0", 3)],
)  # fmt: skip
def test_hidden_state_rule_per_release(release: str, rule: int) -> None:
    assert hidden_state_rule(release) == rule


def test_speculative_methods_per_release() -> None:
    # SpeculativeConfig.method's Literal (vllm/config/speculative.py) as read: 0.11.1 has
    # 15 names; extract_hidden_states from 0.17.0; 0.33.0 drops medusa and mlp_speculator
    # and adds step5_mtp. A release not read takes the nearest read one below it; 0.10.x
    # (not read) takes 0.11.1's list
    oldest = speculative_methods("0.10.2")
    assert (len(oldest.names), oldest.basis) == (15, "0.11.1")
    assert "extract_hidden_states" not in speculative_methods("0.14.0").names
    assert "extract_hidden_states" in speculative_methods("0.17.0").names
    assert speculative_methods("0.21.0").basis == "0.20.0"
    assert speculative_methods("0.33.0").basis == "0.33.0"
    newest = speculative_methods("0.33.0").names
    assert {"medusa", "mlp_speculator"} & newest == set() and "step5_mtp" in newest
    assert {"medusa", "mlp_speculator"} <= speculative_methods("0.32.0").names
    # a name added in a release counts from it, not before
    assert "ngram_gpu" not in speculative_methods("0.17.0").names
    assert "ngram_gpu" in speculative_methods("0.18.0").names


@pytest.mark.parametrize(
    ("text", "release"),
    # PEP 440 release comparison: trailing zeros do not count; anything but dot-separated
    # ASCII digits is left to packaging (None)
    [("0.14.0", (0, 14)), ("1.0.0", (1,)), ("0", (0,)), ("0.0", (0,)), ("10", (10,)),
     ("0.33.0rc1", None), ("0.33.0+cu128", None), ("0.\u0663\u0663.0", None), ("0..1", None)],
)  # fmt: skip
def test_plain_release(text: str, release: tuple[int, ...] | None) -> None:
    assert _plain_release(text) == release


@pytest.mark.parametrize(
    ("release", "first", "at_least"),
    [
        ("0.33.0", "0.33", True),  # 0.33.0 == 0.33 under PEP 440
        ("0.9.0", "0.10.0", False),  # numbers, not strings
        ("0.10.0", "0.9.0", True),
        ("0.33.0rc1", "0.33.0", False),  # a pre-release comes before its release (packaging)
        ("0.33.1.dev0", "0.33.0", True),
        ("0.33.0", "0.33.0rc1", True),
        ("0.33.0rc1", "0.33.0rc1", True),  # equal, through packaging
    ],
)
def test_at_least(release: str, first: str, at_least: bool) -> None:
    assert _at_least(release, first) is at_least


def test_first_nixl_release_per_state_family() -> None:
    # docs/versions.md, NIXL and state families: Mamba2 from 0.18 (the first release whose
    # NIXL connector takes hybrids); GDN and Mamba1 refused in 0.20-0.24, from 0.25.0;
    # KDA and short conv: no release read transfers them
    assert first_nixl_release("mamba2") == "0.18.0"
    assert first_nixl_release("gdn") == "0.25.0"
    assert first_nixl_release("mamba1") == "0.25.0"
    assert first_nixl_release("kda") is None


def test_architecture_registration_and_stand_ins() -> None:
    # docs/versions.md (models/registry.py of each release): Qwen3_5ForCausalLM registered
    # from 0.27.0; 0.17-0.26 serve it with Qwen3_5ForConditionalGeneration (first 0.17.0)
    causal = "Qwen3_5ForCausalLM"
    assert architecture_stand_in(causal, "0.26.0") == "Qwen3_5ForConditionalGeneration"
    assert architecture_stand_in(causal, "0.17.0") == "Qwen3_5ForConditionalGeneration"
    assert architecture_stand_in(causal, "0.27.0") == ""  # registered itself
    assert architecture_stand_in(causal, "0.14.0") == ""  # the stand-in is unknown too
    assert architecture_stand_in("NemotronHForCausalLM", "0.14.0") == ""  # no stand-in
    assert architecture_problem(causal, "0.26.0") == ""
    assert architecture_problem(causal, "0.14.0") == (
        "vLLM 0.14.0 does not know this architecture (Qwen3_5ForCausalLM is first "
        "registered in vLLM 0.27.0)"
    )
    # BambaForCausalLM: last registered in 0.23.0
    assert architecture_problem("BambaForCausalLM", "0.23.0") == ""
    assert architecture_problem("BambaForCausalLM", "0.24.0") == (
        "vLLM 0.24.0 does not know this architecture (BambaForCausalLM was removed in vLLM 0.24.0)"
    )
    # AliceAIForCausalLM: first registered in 0.33.0
    assert architecture_problem("AliceAIForCausalLM", "0.33.0") == ""
    assert architecture_problem("AliceAIForCausalLM", "0.32.0").endswith(
        "(AliceAIForCausalLM is first registered in vLLM 0.33.0)"
    )
    assert architecture_problem("SomethingElseForCausalLM", "0.10.0") == ""


def test_prefix_caching_refusal_texts() -> None:
    # MambaModelConfig (vllm/model_executor/models/config.py): 0.10.x disables prefix caching
    # for every hybrid or Mamba model; 0.11.1-0.14 only for types without Mamba prefix
    # caching (Nemotron-H has it, Qwen3-Next does not); 0.15 on: none
    old, mid, new = resolve("0.10.2").profile, resolve("0.14.0").profile, resolve("0.15.0").profile
    assert old.prefix_caching_refusal("nemotron_h", True) == (
        "vLLM 0.10 turns prefix caching off for every hybrid or Mamba model "
        '("disabling prefix caching since it is not yet supported")'
    )
    assert old.prefix_caching_refusal("llama", False) == ""
    assert mid.prefix_caching_refusal("nemotron_h", True) == ""
    assert mid.prefix_caching_refusal("qwen3_next", True) == (
        "vLLM 0.14 turns prefix caching off for qwen3_next: it has no Mamba prefix-caching "
        'support ("Hybrid or mamba-based model detected without support for prefix caching: '
        'disabling")'
    )
    assert mid.prefix_caching_refusal("qwen3_next", False) == ""
    assert new.prefix_caching_refusal("qwen3_next", True) == ""
