"""NIXL pairing rules pinned at their boundaries, with the limits read from vLLM
0.33.0 ``vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py``:
``_split_remote_blocks`` returns early when the local (decode) block is a multiple of the
remote (prefill) one; otherwise ``unit = gcd``, and it refuses to pair only when
``max(remote // unit, local // unit) > _MAX_HYBRID_BLOCK_SPLIT`` (128): 128 units still pair.

The pools are Nemotron-3-Nano at TP 8 (bf16: one replicated KV head, a = 512 B/token, the
state needs 528 tokens) with a user ``--block-size`` above that, so on FLASH_ATTN
(any multiple of 16) both the logical and the kernel block equal the ``--block-size``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvalign.policy import (
    EXIT_FAIL,
    EXIT_PASS,
    VERDICTS,
    analyze_pair,
    blocking_limit,
    drift_level,
    exit_code,
    fails,
    first_release,
    release_limit,
    verdict_level,
)
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import resolve
from tests.resolve import rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
ROOT = Path(__file__).resolve().parent.parent


def _pair(prefill_block: int, decode_block: int, version: str | None = None):  # type: ignore[no-untyped-def]
    geometry = load_model(NANO)
    ranks = [
        rank_of(geometry, Settings(block_size=b, attention_backend="FLASH_ATTN",
                                        vllm_version=version), 8)
        for b in (prefill_block, decode_block)
    ]  # fmt: skip
    assert [r.kernel_block_size for r in ranks] == [prefill_block, decode_block]
    return analyze_pair(ranks[0], ranks[1], profile=resolve(version).profile)


@pytest.mark.parametrize(
    ("prefill", "decode", "verdict", "unit"),
    [
        # gcd(2048, 2032) = 16: 128 and 127 units → at the limit, pairs (split)
        (2048, 2032, "split", 16),
        (2032, 2048, "split", 16),
        # gcd(2064, 2048) = 16: 129 units → refused
        (2064, 2048, "incompatible", 16),
        (2048, 2064, "incompatible", 16),
        # gcd(2048, 1040) = 16: 128 and 65 units → pairs
        (1040, 2048, "split", 16),
    ],
)
def test_split_limit_boundary(prefill: int, decode: int, verdict: str, unit: int) -> None:
    pair = _pair(prefill, decode)
    assert (pair.verdict, pair.split_unit) == (verdict, unit)
    assert pair.divisible is False and pair.block_size_ratio is None


def test_decode_multiple_of_prefill_is_a_ratio_not_the_other_way() -> None:
    # utils.py block_size_ratio = decode // prefill, asserting decode % prefill == 0
    ratio = _pair(1024, 2048)
    assert (ratio.verdict, ratio.block_size_ratio, ratio.divisible) == ("ratio", 2, True)
    # prefill 2048, decode 1024: 1024 % 2048 != 0 → the split path (gcd 1024, 2 units)
    reverse = _pair(2048, 1024)
    assert (reverse.verdict, reverse.split_unit, reverse.block_size_ratio) == ("split", 1024, None)


def test_releases_before_the_split_path_refuse_non_multiples() -> None:
    # 0.31: no _split_remote_blocks, so 128 units do not pair either
    pair = _pair(2048, 2032, version="0.31.0")
    assert pair.verdict == "incompatible"
    assert "no gcd split path" in pair.reason


# ---- the gate's severity table (docs/policy.md) at every branch ----


def test_drift_level_by_prefix_caching() -> None:
    assert drift_level(True, True) == "error"
    assert drift_level(True, False) == "warning"
    assert drift_level(False, True) == "warning"
    assert drift_level(False, False) == "info"


def test_verdict_levels() -> None:
    assert [verdict_level(v, True, True) for v in VERDICTS] == [
        None, "error", "error", "error", "error", "error", None,
    ]  # fmt: skip
    assert verdict_level("drift", False, False) == "info"
    with pytest.raises(KeyError):
        verdict_level("banana", True, True)


@pytest.mark.parametrize(
    ("level", "fail_on", "expected"),
    [
        ("error", "error", True), ("warning", "error", False), ("info", "error", False),
        ("warning", "warning", True), ("error", "warning", True), ("info", "warning", False),
        ("info", "info", True), (None, "info", False),
    ],
)  # fmt: skip
def test_fails_at_or_above_the_gate(level: str | None, fail_on: str, expected: bool) -> None:
    assert fails(level, fail_on) is expected


def test_exit_code() -> None:
    assert exit_code([None, "warning"]) == EXIT_PASS == 0
    assert exit_code([None, "warning", "error"]) == EXIT_FAIL == 1
    assert exit_code(["warning"], "warning") == 1
    assert exit_code([]) == 0
    with pytest.raises(KeyError):
        exit_code([], "fatal")


def test_first_release_of_a_feature() -> None:
    # docs/versions.md: NIXL serves hybrids from 0.18.0, at different TP from 0.20.0;
    # the gcd split path from 0.33.0
    assert first_release("nixl_hybrid") == "0.18.0"
    assert first_release("nixl_hybrid", "nixl_hetero_tp_mamba") == "0.20.0"
    assert first_release("nixl_gcd_split") == "0.33.0"
    # on from 0.11.1 but off again in 0.32.0: never "on in every later profile"
    assert first_release("chunk_alignment") is None


def _ranks(version: str, prefill_tp: int, decode_tp: int):  # type: ignore[no-untyped-def]
    geometry = load_model(NANO)
    settings = Settings(vllm_version=version, attention_backend="FLASH_ATTN")
    return [rank_of(geometry, settings, tp) for tp in (prefill_tp, decode_tp)]


def test_release_limits_of_old_nixl_connectors() -> None:
    # 0.17: no SupportsHMA → no hybrid P/D at all
    p, d = _ranks("0.17.0", 1, 1)
    pair = analyze_pair(p, d, profile=resolve("0.17.0").profile)
    assert pair.verdict == "incompatible" and "does not serve hybrid models" in pair.reason
    assert "upgrade to vLLM 0.18.0 or later" in blocking_limit(resolve("0.17.0").profile, p, d)
    # 0.18/0.19: hybrids at equal TP only
    p, d = _ranks("0.19.1", 8, 1)
    profile = resolve("0.19.1").profile
    pair = analyze_pair(p, d, profile=profile)
    assert pair.verdict == "incompatible" and "requires equal prefill/decode TP" in pair.reason
    assert "or upgrade to vLLM 0.20.0 or later" in blocking_limit(profile, p, d)
    # 0.20-0.26: equal block sizes for hybrids (the HMA block_size_ratio == 1 assertion)
    p, d = _ranks("0.26.0", 8, 1)
    pair = analyze_pair(p, d, profile=resolve("0.26.0").profile)
    assert pair.verdict == "incompatible"
    assert "requires equal block sizes for hybrid models" in pair.reason
    assert blocking_limit(resolve("0.26.0").profile, p, d) == ""  # a --block-size fixes it
    # 0.27: different block sizes pair (ratio or split path permitting)
    p, d = _ranks("0.27.0", 8, 1)
    assert release_limit(resolve("0.27.0").profile, p, d, 528, 2096) == ""


def test_same_blocks_pass_on_every_release_that_serves_hybrids() -> None:
    for version in ("0.18.0", "0.20.0", "0.27.0", "0.33.0"):
        p, d = _ranks(version, 8, 8)
        pair = analyze_pair(p, d, profile=resolve(version).profile)
        assert pair.verdict == "ok", version
        assert pair.level is None and not pair.flagged


def test_every_field_of_a_pair_result() -> None:
    # the split pair of test_split_limit_boundary, field by field (JSON and SARIF read them)
    pair = _pair(2048, 2032)
    assert (pair.prefill_tp, pair.decode_tp) == (8, 8)
    assert (pair.prefill_block_size, pair.decode_block_size) == (2048, 2032)
    assert (pair.prefill_kernel_block_size, pair.decode_kernel_block_size) == (2048, 2032)
    assert (pair.block_size_ratio, pair.divisible, pair.prefix_cache_drift) == (None, False, True)
    assert (pair.split_unit, pair.verdict, pair.level) == (16, "split", "error")
    assert (pair.prefill_prefix_caching, pair.decode_prefix_caching) == (True, True)
    # the unit and the count per block: gcd 16, max(2048, 2032) / 16 = 128
    assert "2032 is not a multiple of 2048" in pair.reason
    assert "NIXL splits into 16-token units (128 per block)" in pair.reason
    ratio = _pair(1024, 2048)
    assert (ratio.split_unit, ratio.prefix_cache_drift, ratio.level) == (None, True, "error")
    assert ratio.reason == (
        "block_size_ratio 2: decode kernel block 2048 = 2 x prefill 1024; "
        "heterogeneous-block handling on the decode path"
    )
    same = _pair(2048, 2048)
    assert (same.verdict, same.prefix_cache_drift, same.block_size_ratio) == ("ok", False, 1)
    assert same.reason == "same block size 2048 on both sides"


def test_invalid_side_is_named() -> None:
    # Nemotron-Nano at TP 16: n_groups 8 neither divides by 16 nor is 1 → MambaMixer2
    # refuses to load (mamba_mixer2.py); the verdict names the side that is invalid
    geometry = load_model(NANO)
    bad, good = (rank_of(geometry, Settings(), tp) for tp in (16, 1))
    why = (
        "n_groups G = 8 is neither divisible by tensor parallel size 16 nor 1: vLLM's "
        "MambaMixer2 refuses to load"
    )
    prefill_bad = analyze_pair(bad, good)
    assert (prefill_bad.verdict, prefill_bad.reason) == (
        "invalid",
        f"prefill TP 16 is invalid: {why}",
    )
    decode_bad = analyze_pair(good, bad)
    assert (decode_bad.verdict, decode_bad.reason) == ("invalid", f"decode TP 16 is invalid: {why}")
    assert decode_bad.prefill_block_size is None and decode_bad.split_unit is None


def test_attention_only_and_attention_free_models() -> None:
    llama = load_model(str(ROOT / "tests" / "data" / "llama-pd" / "model"))
    p, d = (rank_of(llama, Settings(), tp) for tp in (8, 1))
    pair = analyze_pair(p, d)
    # no Mamba state: vLLM keeps the default 16-token block on every TP
    assert (pair.verdict, pair.level) == ("nothing-to-align", None)
    assert pair.reason == "attention-only model: no hybrid alignment; block size 16 on both"
    # different user block sizes still pair by NIXL's ratio rule
    p32 = rank_of(llama, Settings(block_size=32), 1)
    assert analyze_pair(p, p32).verdict == "ratio"
    mamba = load_model("tiiuae/falcon-mamba-7b")
    p, d = (rank_of(mamba, Settings(), tp) for tp in (2, 1))
    free = analyze_pair(p, d)
    assert (free.verdict, free.reason) == (
        "nothing-to-align", "attention-free model: no KV blocks, nothing to align",
    )  # fmt: skip


def test_equal_block_requirement_covers_hybrids_only_after_0_10() -> None:
    # docs/versions.md: 0.10 requires equal block sizes for every model; 0.11.1-0.26 only
    # for hybrids (the HMA block_size_ratio == 1 assertion); attention-only pairs keep the
    # ratio path
    llama = load_model(str(ROOT / "tests" / "data" / "llama-pd" / "model"))
    for version, verdict in (("0.26.0", "ratio"), ("0.20.0", "ratio"), ("0.10.2", "incompatible")):
        ranks = [rank_of(llama, Settings(block_size=b, vllm_version=version), 1) for b in (16, 32)]
        pair = analyze_pair(ranks[0], ranks[1], profile=resolve(version).profile)
        assert pair.verdict == verdict, version
    assert "requires equal block sizes for every model" in pair.reason


@pytest.mark.parametrize(
    ("prefill_caching", "decode_caching", "level", "tail"),
    [
        (True, True, "error", "prefix-cache hashes never match across pools"),
        (False, False, "info", "prefix caching is off on both pools, so this costs nothing"),
        (True, False, "warning", "prefix caching is on for one pool only"),
        (False, True, "warning", "prefix caching is on for one pool only"),
    ],
)
def test_drift_reason_and_level_follow_prefix_caching(
    prefill_caching: bool, decode_caching: bool, level: str, tail: str
) -> None:
    # FLASHINFER {16, 32, 64}: logical 528 (TP 8) and 2,096 (TP 1) both split into 16-token
    # kernel blocks (the largest listed size dividing both): kernels match, logical differ
    geometry = load_model(NANO)
    p, d = (
        rank_of(geometry, Settings(attention_backend="FLASHINFER", enable_prefix_caching=c), tp)
        for tp, c in ((8, prefill_caching), (1, decode_caching))
    )
    pair = analyze_pair(p, d)
    assert (pair.verdict, pair.level, pair.prefix_cache_drift) == ("drift", level, True)
    assert pair.reason == (
        f"kernel blocks match (16) but logical blocks differ (528 vs 2096): {tail}"
    )


# ---- survivors of the mutmut run (second pass): each test is at the input where the
# ---- mutated line changes the answer ----


def _hybrid(tp: int, block: int, kernel: int | None, **fields: object):  # type: ignore[no-untyped-def]
    """A usable hybrid rank (Mamba page set) with the given logical and kernel blocks."""
    from kvalign.alignment import RankResult

    values: dict[str, object] = {
        "tp": tp, "valid": True, "block_size": block, "kernel_block_size": kernel,
        "tp_stable_block_size": block, "tp_stable_kernel_block_size": kernel,
        "mamba_page_bytes": 1, "attn_page_bytes_per_token": 1, "state_family": "mamba2",
    }  # fmt: skip
    values.update(fields)
    return RankResult(**values)  # type: ignore[arg-type]


def test_split_count_is_a_whole_number_when_decode_is_the_larger() -> None:
    # prefill 2032, decode 2048: gcd 16, units max(2032 / 16, 2048 / 16) = max(127, 128)
    # = 128, the count _split_remote_blocks compares with _MAX_HYBRID_BLOCK_SPLIT
    pair = _pair(2032, 2048)
    assert pair.reason == (
        "NIXL needs the decode kernel block to be a multiple of the prefill one: 2048 is "
        "not a multiple of 2032; NIXL splits into 16-token units (128 per block); hard "
        "failure on releases without the split path"
    )


def test_refused_split_names_the_unit_count_and_the_limit() -> None:
    # 2064 vs 2048: gcd 16, 2064 / 16 = 129 units > _MAX_HYBRID_BLOCK_SPLIT 128
    pair = _pair(2064, 2048)
    assert pair.reason == (
        "NIXL needs the decode kernel block to be a multiple of the prefill one: 2048 is "
        "not a multiple of 2064 (here prefill's is the larger), and a 16-token split needs "
        "129 > 128 units: NIXL transfer fails"
    )


def test_tp_stable_alignment_is_read_on_both_sides() -> None:
    # logical/kernel under 'vllm' are 528 and 2096 (TP 8 and TP 1 of Nano, split 16 x 131:
    # refused); under 'tp-stable' both sides use the TP-1 block 2096, so the pair is ok
    prefill = _hybrid(8, 528, 528, tp_stable_block_size=2096, tp_stable_kernel_block_size=2096)
    decode = _hybrid(1, 2096, 2096)
    vllm = analyze_pair(prefill, decode)
    assert (vllm.verdict, vllm.split_unit) == ("incompatible", 16)
    stable = analyze_pair(prefill, decode, alignment="tp-stable")
    assert (stable.verdict, stable.prefill_block_size, stable.decode_block_size) == (
        "ok", 2096, 2096,
    )  # fmt: skip
    assert (stable.prefill_kernel_block_size, stable.decode_kernel_block_size) == (2096, 2096)
    # the other way round: only decode's tp-stable block differs from its vllm block
    stable = analyze_pair(decode, prefill, alignment="tp-stable")
    assert (stable.verdict, stable.decode_block_size, stable.decode_kernel_block_size) == (
        "ok", 2096, 2096,
    )  # fmt: skip


@pytest.mark.parametrize("none_side", ["prefill", "decode"])
def test_no_kernel_block_on_one_side_is_incompatible(none_side: str) -> None:
    # HPC_ATTN lists only 64-token kernel blocks (no MultipleOf): a 2,096-token logical
    # block (2096 % 64 = 48) has no kernel block (select_common_block_size finds none),
    # while 2,112 (33 x 64) runs 64-token kernels. One side without a kernel block is
    # enough to refuse the pair.
    with_kernel, without = _hybrid(8, 2112, 64), _hybrid(1, 2096, None)
    prefill, decode = (without, with_kernel) if none_side == "prefill" else (with_kernel, without)
    pair = analyze_pair(prefill, decode)
    assert pair.verdict == "incompatible" and pair.level == "error"
    assert pair.reason == (
        "no kernel block size the backend supports divides the logical block size"
    )
    assert (pair.prefill_tp, pair.decode_tp) == (prefill.tp, decode.tp)
    assert (pair.prefill_block_size, pair.decode_block_size) == (
        prefill.block_size, decode.block_size,
    )  # fmt: skip
    assert (pair.prefill_kernel_block_size, pair.decode_kernel_block_size) == (
        prefill.kernel_block_size, decode.kernel_block_size,
    )  # fmt: skip
    assert (pair.block_size_ratio, pair.divisible, pair.prefix_cache_drift) == (None, False, True)
    assert pair.split_unit is None


def test_no_kernel_block_on_either_side_keeps_the_drift_fact() -> None:
    same = analyze_pair(_hybrid(1, 2096, None), _hybrid(1, 2096, None))
    assert (same.verdict, same.prefix_cache_drift, same.divisible) == ("incompatible", False, False)


def test_blocking_limit_is_empty_when_one_side_is_invalid() -> None:
    # an invalid TP is reported per pool (kvalign.fixes), even on a release (0.17) whose
    # NIXL connector does not serve hybrids: no upgrade advice for the pair
    geometry = load_model(NANO)
    settings = Settings(vllm_version="0.17.0")
    bad, good = (rank_of(geometry, settings, tp) for tp in (16, 1))
    assert not bad.usable and good.usable
    profile = resolve("0.17.0").profile
    assert blocking_limit(profile, bad, good) == ""
    assert blocking_limit(profile, good, bad) == ""


def test_blocking_limit_names_the_first_release_for_equal_and_different_tp() -> None:
    # docs/versions.md: hybrids over NIXL from 0.18.0, at different TP from 0.20.0
    profile = resolve("0.17.0").profile
    p, d = _ranks("0.17.0", 1, 1)
    assert blocking_limit(profile, p, d) == (
        "vLLM 0.17's NIXL connector does not serve hybrid models: upgrade to vLLM 0.18.0 or "
        "later (the first release with hybrid P/D over NIXL), then check again with "
        "--vllm-version 0.18.0: a common block size may still be needed there"
    )
    p, d = _ranks("0.17.0", 8, 1)
    assert blocking_limit(profile, p, d) == (
        "vLLM 0.17's NIXL connector does not serve hybrid models: upgrade to vLLM 0.20.0 or "
        "later (the first release with hybrid P/D over NIXL at different prefill/decode TP), "
        "then check again with --vllm-version 0.20.0: a common block size may still be "
        "needed there"
    )


def test_blocking_limit_leaves_attention_only_models_alone() -> None:
    # no Mamba state: 0.17's missing SupportsHMA does not matter, nothing to upgrade for
    llama = load_model(str(ROOT / "tests" / "data" / "llama-pd" / "model"))
    settings = Settings(vllm_version="0.17.0")
    p, d = (rank_of(llama, settings, tp) for tp in (8, 1))
    assert p.mamba_page_bytes is None and not p.attention_free
    assert blocking_limit(resolve("0.17.0").profile, p, d) == ""
    assert analyze_pair(p, d, profile=resolve("0.17.0").profile).verdict == "nothing-to-align"


def test_release_limit_names_the_release() -> None:
    p, d = _ranks("0.17.0", 1, 1)
    assert release_limit(resolve("0.17.0").profile, p, d, 2096, 2096) == (
        "vLLM 0.17's NIXL connector does not serve hybrid models (no SupportsHMA)"
    )


QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"


def _family_pair(model: str, version: str):  # type: ignore[no-untyped-def]
    geometry = load_model(model)
    p, d = (rank_of(geometry, Settings(vllm_version=version), 1) for _ in range(2))
    profile = resolve(version).profile
    return p, d, profile


def test_nixl_refuses_gdn_state_before_0_25() -> None:
    # docs/versions.md "NIXL P/D per state family": derive_mamba_conv_split knows only
    # mamba2 in 0.20-0.21 (NotImplementedError for GDN at start-up); GDN from 0.25.0
    p, d, profile = _family_pair(QWEN3_NEXT, "0.21.0")
    assert p.state_family == "gdn"
    pair = analyze_pair(p, d, profile=profile)
    assert pair.verdict == "incompatible"
    assert pair.reason == (
        "vLLM 0.21's NIXL connector cannot transfer gdn state (derive_mamba_conv_split "
        "supports mamba2: NotImplementedError at start-up)"
    )
    assert blocking_limit(profile, p, d) == (
        "vLLM 0.21's NIXL connector cannot transfer gdn state: upgrade to vLLM 0.25.0 or "
        "later (the first release whose NIXL connector does), then check again with "
        "--vllm-version 0.25.0"
    )
    # 0.25.0 transfers GDN state: same TP, same block → ok, nothing to upgrade
    p, d, profile = _family_pair(QWEN3_NEXT, "0.25.0")
    assert analyze_pair(p, d, profile=profile).verdict == "ok"
    assert blocking_limit(profile, p, d) == ""


def test_families_no_release_transfers_are_not_judged() -> None:
    # short conv (LFM2): no release read transfers it, so kvalign pairs it as before
    # (docs/versions.md: "Families no release read transfers are not judged")
    p, d, profile = _family_pair("LiquidAI/LFM2-1.2B", "0.21.0")
    assert p.state_family not in ("", "mamba2", "mamba1", "gdn")
    assert analyze_pair(p, d, profile=profile).verdict == "ok"
    assert blocking_limit(profile, p, d) == ""


def test_family_limit_needs_a_family() -> None:
    # a hybrid rank that names no state family is not judged per family
    from kvalign.policy import _nixl_family_limited

    profile = resolve("0.21.0").profile
    assert _nixl_family_limited(profile, "gdn") is True
    assert _nixl_family_limited(profile, "mamba2") is False
    assert _nixl_family_limited(profile, "") is False
    assert _nixl_family_limited(resolve("0.19.1").profile, "gdn") is False  # no per-family check
