"""The proof behind every printed fix: ``prove_fix`` re-runs each pool with the
candidate ``--block-size`` on every GPU class and accepts it only when every pool keeps it.

Nemotron-3-Nano-30B-A3B, bf16, vLLM 0.33 defaults (Platform._align_hybrid_block_size):
at TP 1 a = 1,024 B/token,
m = 2,134,016 B → 16 · cdiv(2,084, 16) = 2,096 tokens; TP 8 needs fewer (528),
so 2,096 is the smallest block both TP 8 and TP 1 keep (tests/analysis/test_policy.py feeds 2,096
back to ``check`` and gets ``ok``).
"""

from __future__ import annotations

import dataclasses

import pytest

from kvalign import fixes
from kvalign.engine import create_engine_config
from kvalign.fixes import PLATFORM_CLASSES, FixPool, prove_fix
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import DEFAULT_PROFILE
from tests.resolve import rank_of

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _pools() -> list[FixPool]:
    geometry = load_model(NANO)
    return [
        FixPool(geometry, create_engine_config(geometry, Settings()), 8, "prefill TP 8"),
        FixPool(geometry, create_engine_config(geometry, Settings()), 1, "decode TP 1"),
    ]


def test_fix_is_the_smallest_block_every_pool_keeps_on_every_class() -> None:
    fix = prove_fix(_pools(), [(0, 1)], DEFAULT_PROFILE)
    assert fix.block_size == 2096
    labels = [c.label for c in PLATFORM_CLASSES["cuda"]]
    assert list(fix.proven_on) == labels
    for cls in PLATFORM_CLASSES["cuda"]:
        for tp in (8, 1):
            rank = rank_of(load_model(NANO), Settings(block_size=2096, gpu=cls.gpu), tp)
            assert rank.block_size == 2096


@pytest.mark.parametrize("candidate", [(16, 2000), (48, 2000)])
def test_a_candidate_some_pool_does_not_keep_is_never_printed(
    monkeypatch: pytest.MonkeyPatch, candidate: tuple[int, int]
) -> None:
    # fault injection: the requirement estimate is too small (2,000 < 2,096). TP 1 then
    # raises every candidate below 2,096 to a larger block (vLLM overrides --block-size
    # when block_size < the aligned block), so the proof must reject those candidates and
    # step on until the pools keep one: 2,096 (unit 16: 2000 + 6 · 16) or, with unit 48,
    # 2,112 (48 · 44: the first multiple of 48 at or above 2,096; TP 1 keeps it because
    # 48 · cdiv(2,084, 48) = 2,112).
    monkeypatch.setattr(fixes, "block_requirement", lambda *_args, **_kw: candidate)
    fix = prove_fix(_pools(), [(0, 1)], DEFAULT_PROFILE)
    assert fix.block_size == {16: 2096, 48: 2112}[candidate[0]]


# ---- survivors of the mutmut run over kvalign/fixes.py ----------------------------------


def test_group_without_pools_gets_the_generic_advice() -> None:
    # an audit group with no pool to re-run has no proof: the finding says what to do
    # without a number (audit output, docs/policy.md)
    group = fixes.GroupFix([], [], DEFAULT_PROFILE, fixes.RunCache())
    assert group.text == "set the same --block-size on every pool"


def test_group_fix_is_proven_in_the_runs_cache() -> None:
    # a group's fix is proven once per run, in the run's cache: asking that cache for the
    # same pools and pairs afterwards returns the very Fix the group printed (a group that
    # proved in a cache of its own would prove it again: 720 times in an audit of 24 x 24
    # pools)
    cache = fixes.RunCache()
    pools = _pools()
    group = fixes.GroupFix(pools, [(0, 1)], DEFAULT_PROFILE, cache)
    assert group.text == (
        "set --block-size 2096 on every prefill and decode pool (holds on A100 (SM80), "
        "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120))"
    )
    first = cache._fixes[next(iter(cache._fixes))]
    assert prove_fix(pools, [(0, 1)], DEFAULT_PROFILE, cache) is first


CUDA_CLASSES = ", ".join(c.label for c in PLATFORM_CLASSES["cuda"])


def test_group_fix_text_when_the_pools_settings_differ() -> None:
    # KVA005 (the pools' KV-cache settings differ): the proven block still holds, and the
    # finding says to fix the settings first; 2,096 as in the module docstring
    group = fixes.GroupFix(_pools(), [(0, 1)], DEFAULT_PROFILE, fixes.RunCache(), True)
    assert group.text == (
        f"set --block-size 2096 on every prefill and decode pool (holds on {CUDA_CLASSES}) "
        "(each pool's own settings; their KV-cache settings differ: fix KVA005 first, then "
        "a smaller --block-size may do)"
    )


def test_group_fix_text_names_every_blocker() -> None:
    # Nano has 32 attention heads: vLLM rejects a TP that does not divide them (TP 3 and
    # TP 5), so no block size fixes the pair; both invalid TPs are named, one after the
    # other
    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings())
    pools = [
        FixPool(geometry, engine, 3, "prefill TP 3"),
        FixPool(geometry, engine, 5, "decode TP 5"),
    ]
    text = fixes.GroupFix(pools, [(0, 1)], DEFAULT_PROFILE, fixes.RunCache()).text
    head, _, rest = text.partition(": ")
    assert head == "no --block-size can fix this"
    first, second = rest.split("; ")
    assert first.startswith("prefill TP 3: TP 3 is invalid for " + NANO)
    assert second.startswith("decode TP 5: TP 5 is invalid for " + NANO)


def test_group_fix_without_hybrid_alignment_gives_the_generic_advice() -> None:
    # an attention-free model (falcon-mamba) has nothing to align (vLLM does no hybrid
    # block alignment): no block size and no reason, the generic advice
    geometry = load_model("tiiuae/falcon-mamba-7b")
    engine = create_engine_config(geometry, Settings())
    pools = [
        FixPool(geometry, engine, 1, "prefill TP 1"),
        FixPool(geometry, engine, 2, "decode TP 2"),
    ]
    text = fixes.GroupFix(pools, [(0, 1)], DEFAULT_PROFILE, fixes.RunCache()).text
    assert text == "set the same --block-size on every pool"


def test_raised_by_pool_resolves_through_the_runs_cache() -> None:
    # --block-size 528: TP 8 keeps it (it needs 528); at TP 1 the unit is max(smallest
    # kernel block, block size) = 528 (docs/versions.md, 0.20 row) and the state needs
    # 2,084 tokens (module docstring), so vLLM raises it to 528 · cdiv(2,084, 528) = 2,112
    # on every CUDA class; resolved once per class in the run's cache (five entries), not
    # in a cache of its own
    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings(block_size=528))
    pools = [
        FixPool(geometry, engine, 8, "prefill TP 8"),
        FixPool(geometry, engine, 1, "decode TP 1"),
    ]
    cache = fixes.RunCache()
    assert fixes.raised_by_pool(pools, cache) == {
        "decode TP 1": [f"vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"]
    }
    assert len(cache._seen) == len(PLATFORM_CLASSES["cuda"])


def test_raised_by_pool_keeps_a_label_with_a_colon_whole() -> None:
    # audit labels are role/name; a name with ": " must not be cut at it
    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings(block_size=528))
    pools = [FixPool(geometry, engine, 1, "decode/a: b")]
    raised = fixes.raised_by_pool(pools, fixes.RunCache())
    assert raised == {"decode/a: b": [f"vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"]}


def test_a_pool_that_cannot_run_on_a_class_is_skipped_there() -> None:
    # the ROCM_ATTN pool runs on no CUDA class: on those classes only the two FLASH_ATTN
    # pools are re-run (TP 1: 528 raised to 2,112, as above; TP 8 keeps 528: it needs 528,
    # module docstring), the ROCm pool between them is skipped, not the pools after it
    geometry = load_model(NANO)
    cuda = create_engine_config(geometry, Settings(block_size=528, attention_backend="FLASH_ATTN"))
    rocm = create_engine_config(geometry, Settings(block_size=528, attention_backend="ROCM_ATTN"))
    pools = [
        FixPool(geometry, cuda, 8, "prefill TP 8"),
        FixPool(geometry, rocm, 8, "prefill/rocm"),
        FixPool(geometry, cuda, 1, "decode TP 1"),
    ]
    assert fixes.raised_block_sizes(pools, fixes.RunCache()) == [
        f"decode TP 1: vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"
    ]


def test_gpu_classes_of_a_pool() -> None:
    # a pinned --gpu is the one class (label and --gpu value its name); unpinned, every
    # class of the platform the backend runs on: CUDA unless the backend runs elsewhere only
    assert fixes.gpu_classes(Settings(gpu="H100")) == (fixes.GpuClass("H100", "H100"),)
    assert fixes.gpu_classes(Settings()) == PLATFORM_CLASSES["cuda"]
    assert fixes.gpu_classes(Settings(attention_backend="ROCM_ATTN")) == PLATFORM_CLASSES["rocm"]


def test_raised_block_sizes_without_a_cache_of_the_run() -> None:
    # called on its own (no run cache given) it resolves in a cache of its own
    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings(block_size=528))
    pools = [FixPool(geometry, engine, 1, "decode TP 1")]
    assert fixes.raised_block_sizes(pools) == [
        f"decode TP 1: vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"
    ]
    assert fixes.raised_by_pool(pools) == {
        "decode TP 1": [f"vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"]
    }


def test_no_valid_tp_at_all_says_none() -> None:
    # measured (tests/golden/vllm-0.14.0.jsonl): 0.14 rejects Mamba-Codestral at every TP
    # (its config cannot be built), so there is no valid TP to offer
    model = "mistralai/Mamba-Codestral-7B-v0.1"
    geometry = load_model(model)
    engine = create_engine_config(geometry, Settings(vllm_version="0.14.0"))
    pools = [
        FixPool(geometry, engine, 1, "prefill TP 1"),
        FixPool(geometry, engine, 2, "decode TP 2"),
    ]
    fix = prove_fix(pools, [(0, 1)], engine.profile)
    assert fix.block_size is None and len(fix.blockers) == 2
    assert all(b.endswith("): use a valid TP (none)") for b in fix.blockers)


def test_the_runs_proofs_are_kept_per_model() -> None:
    # one run cache, two models with the same settings, TPs and labels: each gets its own
    # proof (Nano 2,096, as above; Falcon-H1 another), as a fresh cache gives it
    cache = fixes.RunCache()
    answers = []
    for model in (NANO, "tiiuae/Falcon-H1-0.5B-Base"):
        geometry = load_model(model)
        engine = create_engine_config(geometry, Settings())
        pools = [
            FixPool(geometry, engine, 4, "prefill TP 4"),
            FixPool(geometry, engine, 1, "decode TP 1"),
        ]
        answers.append(prove_fix(pools, [(0, 1)], DEFAULT_PROFILE, cache).block_size)
        assert answers[-1] == prove_fix(pools, [(0, 1)], DEFAULT_PROFILE).block_size
    assert answers[0] == 2096 and answers[1] != 2096


def test_pools_pinned_to_two_gpus_are_proven_on_both() -> None:
    # every pool pinned: the fix is proven on the pinned GPUs (one scenario naming both);
    # one backend on both (B200 would default to FLASHINFER)
    geometry = load_model(NANO)
    h100 = create_engine_config(geometry, Settings(gpu="H100", attention_backend="FLASH_ATTN"))
    b200 = create_engine_config(geometry, Settings(gpu="B200", attention_backend="FLASH_ATTN"))
    pools = [FixPool(geometry, h100, 8, "prefill TP 8"), FixPool(geometry, b200, 1, "decode TP 1")]
    fix = prove_fix(pools, [(0, 1)], DEFAULT_PROFILE)
    assert (fix.block_size, fix.proven_on) == (2096, ("B200/H100",))


def test_group_fix_when_every_pool_keeps_the_block_but_a_pair_still_differs() -> None:
    # H100 on FLASH_ATTN (kernel = the logical block), B200 on its default FLASHINFER
    # (kernel blocks up to 1,024 on Blackwell): both pools keep 2,096, the kernel blocks
    # still differ, so no block size is proven and the text says to align the backends
    geometry = load_model(NANO)
    h100 = create_engine_config(geometry, Settings(gpu="H100", attention_backend="FLASH_ATTN"))
    b200 = create_engine_config(geometry, Settings(gpu="B200"))
    pools = [FixPool(geometry, h100, 8, "prefill TP 8"), FixPool(geometry, b200, 1, "decode TP 1")]
    text = fixes.GroupFix(pools, [(0, 1)], DEFAULT_PROFILE, fixes.RunCache()).text
    assert text.startswith(
        "no --block-size fixes every pair: with --block-size 2096 on B200/H100, prefill TP 8 → "
        "decode TP 1 is still "
    )
    assert text.endswith(
        "; the pools run different attention backends (FLASHINFER, FLASH_ATTN): use the same "
        "--attention-backend on every pool"
    )


def test_nothing_to_align_is_not_aligned() -> None:
    # an attention-free model: vLLM does no hybrid block alignment, so the proof reports
    # that there is nothing to align (no block size, no reason)
    geometry = load_model("tiiuae/falcon-mamba-7b")
    engine = create_engine_config(geometry, Settings())
    pools = [
        FixPool(geometry, engine, 1, "prefill TP 1"),
        FixPool(geometry, engine, 2, "decode TP 2"),
    ]
    fix = prove_fix(pools, [(0, 1)], DEFAULT_PROFILE)
    assert (fix.block_size, fix.aligned, fix.blockers, fix.unproven) == (None, False, (), "")


def test_a_pool_off_the_class_does_not_stop_the_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    # the ROCm pool runs on no CUDA class: it is skipped there, and the CUDA pool after it
    # is still checked. Fault injection as above (requirement 2,000, unit 16): TP 1 raises
    # every candidate below 2,096, so the proof must step on to 2,096
    monkeypatch.setattr(fixes, "block_requirement", lambda *_args, **_kw: (16, 2000))
    geometry = load_model(NANO)
    cuda = create_engine_config(geometry, Settings(attention_backend="FLASH_ATTN"))
    rocm = create_engine_config(geometry, Settings(attention_backend="ROCM_ATTN"))
    pools = [
        FixPool(geometry, cuda, 8, "prefill TP 8"),
        FixPool(geometry, rocm, 8, "prefill/rocm"),
        FixPool(geometry, cuda, 1, "decode TP 1"),
    ]
    fix = prove_fix(pools, [(0, 2), (1, 2)], DEFAULT_PROFILE)
    assert fix.block_size == 2096


def test_run_cache_analyses_each_model_and_tp_once() -> None:
    # RunCache.rank: analyze_rank once per (model, settings, TP); two models with the same
    # settings each get their own rank (Nano TP 1: 2,096, module docstring)
    cache = fixes.RunCache()
    nano, falcon = load_model(NANO), load_model("tiiuae/falcon-mamba-7b")
    first = cache.rank(nano, create_engine_config(nano, Settings()), 1)
    assert first.block_size == 2096
    assert cache.rank(nano, create_engine_config(nano, Settings()), 1) is first
    other = cache.rank(falcon, create_engine_config(falcon, Settings()), 1)
    assert other is not first and other.mamba_page_bytes != first.mamba_page_bytes


def test_a_pinned_pool_is_named_beside_the_classes() -> None:
    # one pool pinned to H100, the other unpinned: proven on every CUDA class and on the
    # pinned pool's GPU
    geometry = load_model(NANO)
    pinned = create_engine_config(geometry, Settings(gpu="H100", attention_backend="FLASH_ATTN"))
    free = create_engine_config(geometry, Settings(attention_backend="FLASH_ATTN"))
    pools = [
        FixPool(geometry, pinned, 8, "prefill TP 8"),
        FixPool(geometry, free, 1, "decode TP 1"),
    ]
    fix = prove_fix(pools, [(0, 1)], DEFAULT_PROFILE)
    assert fix.block_size == 2096
    assert fix.proven_on == (*[c.label for c in PLATFORM_CLASSES["cuda"]], "H100 (pinned)")


def test_a_pool_off_the_class_without_fault_injection() -> None:
    # the ROCm pool between the CUDA ones needs no requirement on a CUDA class: TP 1 needs
    # 2,096 (module docstring), TP 8 keeps it
    geometry = load_model(NANO)
    cuda = create_engine_config(geometry, Settings(attention_backend="FLASH_ATTN"))
    rocm = create_engine_config(geometry, Settings(attention_backend="ROCM_ATTN"))
    pools = [
        FixPool(geometry, cuda, 8, "prefill TP 8"),
        FixPool(geometry, rocm, 8, "prefill/rocm"),
        FixPool(geometry, cuda, 1, "decode TP 1"),
    ]
    assert prove_fix(pools, [(1, 2), (0, 2)], DEFAULT_PROFILE).block_size == 2096


def test_run_cache_keeps_each_model_alive_for_the_run() -> None:
    # RunCache.rank keys on id(model): a model freed by the caller must not hand its id,
    # and its rank, to the next one (float16 vs bfloat16 state dtypes, as in the engine test)
    base = load_model(NANO)
    cache = fixes.RunCache()
    for i in range(40):
        dtype = ("float16", "bfloat16")[i % 2]
        model = dataclasses.replace(base, model_dtype=dtype)
        rank = cache.rank(model, create_engine_config(model, Settings()), 1)
        assert rank.mamba_state_dtypes[0] == dtype
        del model


def test_every_platform_of_the_unpinned_pools_is_checked() -> None:
    # a ROCM_ATTN pool first and a FLASH_ATTN pool after it: the CUDA classes are the
    # FLASH_ATTN pool's, so its raise (528 to 2,112 at TP 1 on every CUDA class, as in
    # test_a_pool_that_cannot_run_on_a_class_is_skipped_there) is found; taking the classes
    # from the first pool alone checked the ROCm class only and found nothing for it
    geometry = load_model(NANO)
    cuda = create_engine_config(geometry, Settings(block_size=528, attention_backend="FLASH_ATTN"))
    rocm = create_engine_config(geometry, Settings(block_size=528, attention_backend="ROCM_ATTN"))
    pools = [FixPool(geometry, rocm, 8, "prefill/rocm"), FixPool(geometry, cuda, 1, "decode TP 1")]
    labels = [label for label, _ in fixes.scenarios(pools, fixes.RunCache())]
    assert labels == ["ROCm (MI300X)", *(c.label for c in PLATFORM_CLASSES["cuda"])]
    assert fixes.raised_by_pool(pools, fixes.RunCache())["decode TP 1"] == [
        f"vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"
    ]


def test_raised_block_sizes_keep_each_pool_shape_apart_in_one_cache_of_the_run() -> None:
    # one run cache answers many groups (an audit): what it keeps for one set of pools must
    # not answer another. Nano at TP 1 raises --block-size 528 to 2,112 (as above); at 2096
    # it keeps it (the common fix, test_fix_is_the_smallest_block_every_pool_keeps_...).
    # LFM2-1.2B at TP 1 needs a 16-token block (tests/golden/vllm-0.33.0.jsonl, H100:
    # block_size 16), so it keeps 528: the same settings and TP, another model
    cache = fixes.RunCache()
    nano = load_model(NANO)
    at_528 = create_engine_config(nano, Settings(block_size=528))
    at_2096 = create_engine_config(nano, Settings(block_size=2096))
    raised = [f"decode TP 1: vLLM raises --block-size 528 to 2,112 on {CUDA_CLASSES}"]
    assert fixes.raised_block_sizes([FixPool(nano, at_528, 1, "decode TP 1")], cache) == raised
    assert fixes.raised_block_sizes([FixPool(nano, at_2096, 1, "decode TP 1")], cache) == []
    lfm2 = load_model("LiquidAI/LFM2-1.2B")
    lfm2_528 = create_engine_config(lfm2, Settings(block_size=528))
    assert fixes.raised_block_sizes([FixPool(lfm2, lfm2_528, 1, "decode TP 1")], cache) == []
    # and the first answer is still there for its own pools
    assert fixes.raised_block_sizes([FixPool(nano, at_528, 1, "decode TP 1")], cache) == raised
