"""The P/D report's notes and fix text pinned at their boundaries, with numbers
derived by hand from vLLM's MambaStateShapeCalculator and
Platform._align_hybrid_block_size for Nemotron-3-Nano-30B-A3B (bf16, vLLM 0.33 defaults,
prefix caching on):

- TP 1: a = 1,024 B/token, m = 6,144 · 3 · 2 + 64 · 64 · 128 · 4 = 36,864 + 2,097,152 =
  2,134,016 B → block 16 · cdiv(2,084, 16) = 2,096; padding 2,096 · 1,024 − m = 12,288 B.
- TP 8 (one replicated KV head): a = 512, m = 768 · 3 · 2 + 8 · 64 · 128 · 4 = 4,608 +
  262,144 = 266,752 B → 16 · cdiv(521, 16) = 528; padding 528 · 512 − m = 3,584 B.
- at the common --block-size 2,096: TP 1 pads 12,288 / 2,134,016 = 0.58 %, TP 8 pads
  (2,096 · 512 − 266,752) / 266,752 = 806,400 / 266,752 = 302.30 % (more than the state).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kvalign.engine
from kvalign.pd import _padding_text, analyze, economics_notes
from kvalign.settings import Settings
from kvalign.sources import load_model
from tests.conftest import CATALOG

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def _report(**settings: object):  # type: ignore[no-untyped-def]
    return analyze(load_model(NANO), Settings(**settings), [8], [1])  # type: ignore[arg-type]


def test_prefix_cache_economics_per_tp() -> None:
    notes = _report().notes
    assert (
        "prefix caching at TP 1: smallest prefix that gives a hit 2,096 tokens, worst-case "
        "recompute per turn up to 4,192 tokens, Mamba padding 12,288 bytes per layer per block"
    ) in notes
    assert (
        "prefix caching at TP 8: smallest prefix that gives a hit 528 tokens, worst-case "
        "recompute per turn up to 1,056 tokens, Mamba padding 3,584 bytes per layer per block"
    ) in notes


def test_speculative_tokens_need_two_blocks_for_a_hit() -> None:
    # one speculative token: conv rows K − 1 + 1 = 4 → m(TP 1) = 6,144 · 4 · 2 + 2,097,152
    # = 2,146,304 = 2,096 · 1,024 exactly: block 2,096, no padding; the smallest prefix that
    # hits is two blocks (vLLM drops the last matched block with speculative decoding)
    notes = _report(num_speculative_tokens=1).notes
    assert (
        "prefix caching at TP 1: smallest prefix that gives a hit 4,192 tokens (2 blocks: "
        "with speculative tokens vLLM drops the last matched block), worst-case recompute "
        "per turn up to 4,192 tokens, Mamba padding 0 bytes per layer per block"
    ) in notes


def test_no_economics_without_prefix_caching() -> None:
    notes = _report(enable_prefix_caching=False).notes
    assert not [n for n in notes if n.startswith("prefix caching at TP")]


def test_max_model_len_below_one_block() -> None:
    # vLLM caches whole blocks only: a 2,096-token block fits --max-model-len 2,096
    assert not [n for n in _report(max_model_len=2096).notes if "--max-model-len" in n]
    assert (
        "--max-model-len 2,095 is below one block at TP 1 (2,096-token blocks): prefix "
        "caching can never hit there (only whole blocks are cached)"
    ) in _report(max_model_len=2095).notes
    # prefix caching off: nothing to say
    off = _report(max_model_len=100, enable_prefix_caching=False).notes
    assert not [n for n in off if "--max-model-len" in n]


def test_fix_text_names_the_padding_and_when_it_exceeds_the_state() -> None:
    rec = _report().recommendation
    assert rec.block_size == 2096 and rec.needed
    assert rec.padding_pct.keys() == {1, 8}
    assert round(rec.padding_pct[1], 2) == 0.58 and round(rec.padding_pct[8], 2) == 302.30
    assert rec.text.endswith(
        "Mamba page padding: TP 1 0.58%, TP 8 302.30%; at TP 8 the padding exceeds the state "
        "itself: closer prefill/decode TP sizes cost less)"
    )


def test_same_tp_needs_no_change() -> None:
    report = analyze(load_model(NANO), Settings(), [8], [8])
    assert report.recommendation.text == "no change needed"
    assert report.recommendation.block_size is None and report.exit_code() == 0


# ---- survivors of the mutmut run over kvalign/pd.py: every note check/matrix prints ------

LLAMA = str(Path(__file__).resolve().parent / "data" / "llama-pd" / "model")


def _notes(model: str, prefill: list[int], decode: list[int], **settings: object) -> list[str]:
    report = analyze(load_model(model), Settings(**settings), prefill, decode)  # type: ignore[arg-type]
    return list(report.notes)


def test_kv_cache_group_notes_follow_the_measured_groups() -> None:
    # measured (tests/golden/groups-0.33.0.jsonl): Nano TP 1, cache mode align: four Mamba
    # groups of 6/6/6/5 layers and one attention group of 6, all at block 2,096 (docs/why.md
    # prints the same line)
    assert (
        "KV-cache groups at TP 1: 5: 4 mamba (6/6/6/5 layers, block 2096), 1 attention "
        "(6 layers, block 2096)"
    ) in _notes(NANO, [1], [1])
    # groups-0.27.1.jsonl: cache mode none (0.27 turns hybrid prefix caching off by
    # default): the Mamba groups' block is max_model_len, the attention group's 2,096
    assert (
        "KV-cache groups at TP 1: 5: 4 mamba (6/6/6/5 layers, block max_model_len), "
        "1 attention (6 layers, block 2096)"
    ) in _notes(NANO, [1], [1], vllm_version="0.27.1")


@pytest.mark.parametrize(
    ("model", "settings", "source"),
    [
        (NANO, {"enable_prefix_caching": False}, "--no-enable-prefix-caching"),
        # docs/versions.md: 0.27 keeps hybrid prefix caching off by default
        (NANO, {"vllm_version": "0.27.1"}, "vLLM 0.27's default for hybrid models"),
        # 0.11.1 turns it off for models without Mamba prefix caching support, whatever
        # the flag (docs/versions.md 0.11.1 row: "others: prefix caching disabled")
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", {"vllm_version": "0.11.1",
                                              "enable_prefix_caching": True},
         "vLLM 0.11.1 turns it off for qwen3_next"),
    ],
)  # fmt: skip
def test_prefix_caching_off_note_names_why(
    model: str, settings: dict[str, object], source: str
) -> None:
    assert (
        f"prefix caching is off ({source}): logical block sizes only matter for prefix-cache "
        "hashing, so drift alone does not fail the gate"
    ) in _notes(model, [1], [1], **settings)


def test_chunk_alignment_note_in_cache_mode_all() -> None:
    # 0.25 defaults a model supporting Mamba prefix caching to mode 'all': Nano's config
    # names chunk_size 128 (vector fidelity-0.25.0: TP 1 block 128 · cdiv(2,084, 128) = 2,176)
    notes = _notes(NANO, [1], [1], vllm_version="0.25.0", enable_prefix_caching=True)
    assert (
        "prefix caching in Mamba cache mode 'all' (vLLM 0.25): blocks aligned to the Mamba "
        "chunk size 128"
    ) in notes
    assert not [n for n in _notes(NANO, [1], [1]) if "Mamba cache mode 'all'" in n]


def test_mla_note_names_the_counterpart() -> None:
    # docs/modelled.md: MLA counterparts, CUDA FLASH_ATTN → FLASH_ATTN_MLA
    notes = _notes("moonshotai/Kimi-K3", [1], [1], attention_backend="FLASH_ATTN")
    assert "MLA model: attention runs on FLASH_ATTN_MLA" in notes
    # a non-MLA hybrid gets no such note
    assert not [n for n in _notes(NANO, [1], [1]) if n.startswith("MLA model")]


def test_overridden_block_size_note_names_the_tps() -> None:
    # spec: block_size < block → the block becomes block: 528 stays at TP 8 (it needs 528)
    # and is raised at TP 1 (2,096; 528 · 4 = 2,112 with the 528 unit)
    notes = _notes(NANO, [8], [1], block_size=528)
    assert "--block-size 528 is overridden by hybrid alignment at TP 1" in notes
    assert not [n for n in _notes(NANO, [8], [1]) if "is overridden" in n]


def test_model_kind_notes() -> None:
    assert "attention-free model: vLLM does no block alignment" in _notes(
        "tiiuae/falcon-mamba-7b", [1], [2]
    )
    llama = _notes(LLAMA, [8], [1])
    assert "attention-only model: vLLM does no hybrid block alignment" in llama
    assert "attention-free model: vLLM does no block alignment" not in llama
    hybrid = _notes(NANO, [1], [1])
    assert not [n for n in hybrid if n.startswith(("attention-only", "attention-free"))]


def test_recommendation_when_nothing_can_be_aligned() -> None:
    falcon = analyze(load_model("tiiuae/falcon-mamba-7b"), Settings(), [1], [2])
    assert falcon.recommendation.text == (
        "nothing to align: attention-free model, vLLM does no hybrid block alignment"
    )
    llama = analyze(load_model(LLAMA), Settings(), [8], [1])
    assert llama.recommendation.text == (
        "nothing to align: attention-only model, vLLM does no hybrid block alignment"
    )
    assert (llama.recommendation.block_size, llama.recommendation.needed) == (None, False)


def test_flag_notes() -> None:
    notes = _notes(NANO, [8], [1], gdn_prefill_backend="triton", alignment="tp-stable")
    assert "--gdn-prefill-backend has no effect: the model has no gated delta net layers" in notes
    assert (
        "--alignment tp-stable: the vLLM PR 45575 proposal, in no vLLM release; shown as a "
        "what-if next to vLLM's rules, which decide the verdict and the exit code"
    ) in notes
    # a GDN model takes the flag: no such note
    qwen = _notes("Qwen/Qwen3.5-397B-A17B", [8], [8], gdn_prefill_backend="triton")
    assert not [n for n in qwen if n.startswith("--gdn-prefill-backend")]


def test_hybrid_kv_cache_manager_note_per_release() -> None:
    # docs/versions.md: from 0.18 NIXL serves hybrids, but --kv-transfer-config turns the
    # hybrid KV-cache manager off (KVA012); from 0.22 it stays on for connectors that
    # support it
    note = (
        "vLLM 0.20: --kv-transfer-config turns the hybrid KV-cache manager off, and NIXL "
        "then cannot serve this hybrid model: start both pools with "
        "--no-disable-hybrid-kv-cache-manager (audit rule KVA012)"
    )
    assert note in _notes(NANO, [1], [1], vllm_version="0.20.0")
    assert not [n for n in _notes(NANO, [1], [1], vllm_version="0.22.0") if "KVA012" in n]
    # before 0.18 the connector serves no hybrid at all: a blocker, not this note
    assert not [n for n in _notes(NANO, [1], [1], vllm_version="0.17.0") if "KVA012" in n]


def test_gdn_checkpoint_note_with_prefix_caching() -> None:
    # 0.33 folds the FlashInfer GDN prefill checkpoint (64 tokens on SM90) into the block:
    # the note says why (tests/test_mutation_engine.py pins the block: 576 at TP 8)
    qwen = "Qwen/Qwen3.5-397B-A17B"
    note = "H100: GDN prefill on FlashInfer, checkpoints every 64 tokens"
    assert note in _notes(qwen, [8], [8], gpu="H100")
    assert note not in _notes(qwen, [8], [8], gpu="H100", enable_prefix_caching=False)
    assert note not in _notes(qwen, [8], [8], gpu="H100", vllm_version="0.31.0")


def test_levels_per_pair_raised_block_and_among() -> None:
    # --block-size 528 at prefill TP 3 and 8, decode TP 1 (docs/policy.md severities):
    # TP 3 is invalid (32 heads, error); TP 8 keeps 528, TP 1 is raised to 528 · 4 = 2,112
    # (unit 528, state 2,084 tokens), kernel blocks 528 and 2,112 divide: ratio (error);
    # the raised --block-size is a warning, once for the TP and once for the raised line
    report = analyze(load_model(NANO), Settings(block_size=528), [3, 8], [1])
    assert [(p.prefill_tp, p.decode_tp, p.verdict) for p in report.pairs] == [
        (3, 1, "invalid"),
        (8, 1, "ratio"),
    ]
    assert report.levels() == ["error", "error", "warning", "warning"]
    # among the valid TPs only: the 8 → 1 pair and TP 1's raised block, no raised lines
    assert report.levels({8, 1}) == ["error", "warning"]
    assert report.levels({3}) == []


def test_exit_code_takes_the_fail_on_level() -> None:
    # TP 1 on both sides with --block-size 528: both raised to 2,112, the pair is ok; only
    # the raised --block-size (warning) is left: --fail-on warning fails, error passes
    report = analyze(load_model(NANO), Settings(block_size=528), [1], [1])
    assert report.pairs[0].verdict == "ok"
    assert (report.exit_code(), report.exit_code("warning")) == (0, 1)


def test_economics_without_an_engine_take_one_block() -> None:
    # economics_notes(ranks) alone: no speculative tokens known, one block hits (2,096)
    report = analyze(load_model(NANO), Settings(), [1], [1])
    assert economics_notes(report.ranks) == [
        "prefix caching at TP 1: smallest prefix that gives a hit 2,096 tokens, worst-case "
        "recompute per turn up to 4,192 tokens, Mamba padding 12,288 bytes per layer per block"
    ]


def test_an_invalid_tp_does_not_hide_the_next_tps_notes() -> None:
    # TP 3 (invalid) sorts before TP 8: TP 8 still gets its economics and group notes
    notes = _notes(NANO, [3], [8])
    assert (
        "prefix caching at TP 8: smallest prefix that gives a hit 528 tokens, worst-case "
        "recompute per turn up to 1,056 tokens, Mamba padding 3,584 bytes per layer per block"
    ) in notes
    assert [n for n in notes if n.startswith("KV-cache groups at TP 8: ")]
    assert not [
        n for n in notes if n.startswith(("KV-cache groups at TP 3", "prefix caching at TP 3"))
    ]


def test_padding_exceeds_the_state_only_above_100_percent() -> None:
    # "exceeds the state itself": padding strictly above the state's own size
    assert _padding_text({1: 100.0}) == "Mamba page padding: TP 1 100.00%"
    assert _padding_text({1: 100.5, 4: 150.0, 8: 302.3}) == (
        "Mamba page padding: TP 1 100.50%, TP 4 150.00%, TP 8 302.30%; at TP 1, 4, 8 the "
        "padding exceeds the state itself: closer prefill/decode TP sizes cost less"
    )


def test_invalid_tp_keeps_the_fix_for_the_valid_pools() -> None:
    # prefill TP 3 (invalid: 32 heads) and 8, decode TP 1: no block size fixes TP 3, but
    # the valid pools (TP 8 and 1) still get theirs, 2,096 (module docstring), proven for
    # those TPs only; the blocker is named once, without the pool label
    rec = analyze(load_model(NANO), Settings(block_size=528), [3, 8], [1]).recommendation
    blocker = (
        f"TP 3 is invalid for {NANO} (heads not divisible by tensor parallel size): use a "
        "valid TP (1, 2, 4, 8)"
    )
    assert (rec.block_size, rec.only_tps, rec.blockers) == (2096, (1, 8), (blocker,))
    assert rec.text == (
        "set --block-size 2096 on every prefill and decode pool at TP 1, 8 (holds on "
        "A100 (SM80), H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120); "
        "Mamba page padding: TP 1 0.58%, TP 8 302.30%; at TP 8 the padding exceeds the "
        f"state itself: closer prefill/decode TP sizes cost less); {blocker}"
    )
    # the raised --block-size of the whole set is kept (TP 1: 528 → 528 · 4 = 2,112)
    assert rec.raised == (
        "decode TP 1: vLLM raises --block-size 528 to 2,112 on A100 (SM80), H100/H200 "
        "(SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120)",
    )
    # every TP invalid on one side: nothing left to fix, every blocker named
    none = analyze(load_model(NANO), Settings(), [3], [16]).recommendation
    assert none.block_size is None and none.only_tps == ()
    assert none.text.startswith("no --block-size can fix this: prefill TP 3: TP 3 is invalid")
    assert "; decode TP 16: TP 16 is invalid" in none.text


def _stage_counts(start: int, end: int) -> tuple[int, int]:
    # Nano's hybrid_override_pattern: "*" attention, "M" Mamba, "E" MoE (no state)
    config = json.loads((CATALOG / NANO / "config.json").read_text())
    layers = config["hybrid_override_pattern"][start:end]
    return layers.count("*"), layers.count("M")


def test_pipeline_stage_notes_follow_the_measured_stages() -> None:
    # measured (tests/golden/pp-0.33.0.jsonl, Nano TP 1 PP 6): stages [0, 8), [8, 17),
    # [17, 26), [26, 35), [35, 44) at block 2,096; the last, [44, 52), has no attention
    # layer and keeps block 16
    bounds = [(0, 8), (8, 17), (17, 26), (26, 35), (35, 44), (44, 52)]
    parts = []
    for rank, (start, end) in enumerate(bounds):
        attention, state = _stage_counts(start, end)
        what = "block 2096" if rank < 5 else "no attention layer, keeps block 16"
        parts.append(
            f"stage {rank} layers {start}-{end - 1} ({attention} attention, {state} state): {what}"
        )
    assert _stage_counts(44, 52)[0] == 0
    notes = _notes(NANO, [1], [1], pipeline_parallel_size=6)
    assert "pipeline stages at TP 1: " + "; ".join(parts) in notes
    assert not [n for n in _notes(NANO, [1], [1]) if n.startswith("pipeline stages")]


def test_levels_among_keep_only_pairs_inside() -> None:
    # prefill TP 8 and 1, decode TP 1, --block-size 528: 8 → 1 is a ratio (error), 1 → 1 ok
    # (both raised to 2,112); among {1}: only the 1 → 1 pair and TP 1's raised block
    report = analyze(load_model(NANO), Settings(block_size=528), [8, 1], [1])
    assert [p.level for p in report.pairs] == ["error", None]
    assert report.levels({1}) == [None, "warning"]


def test_max_model_len_note_names_every_short_tp() -> None:
    # --max-model-len 500 is below both blocks (2,096 at TP 1, 528 at TP 8)
    assert (
        "--max-model-len 500 is below one block at TP 1 (2,096-token blocks), TP 8 "
        "(528-token blocks): prefix caching can never hit there (only whole blocks are cached)"
    ) in _notes(NANO, [8], [1], max_model_len=500)


def test_no_group_or_stage_notes_where_there_are_none() -> None:
    # an attention-only or attention-free model has no hybrid KV-cache groups; an invalid
    # TP (3) gets neither notes nor hides TP 8's stages
    for model in (LLAMA, "tiiuae/falcon-mamba-7b"):
        assert not [n for n in _notes(model, [8], [1]) if n.startswith("KV-cache groups")]
    notes = _notes(NANO, [3], [8], pipeline_parallel_size=2)
    attention, state = _stage_counts(0, 26)
    assert (
        f"pipeline stages at TP 8: stage 0 layers 0-25 ({attention} attention, {state} state): "
        f"block 528; stage 1 layers 26-51 ({_stage_counts(26, 52)[0]} attention, "
        f"{_stage_counts(26, 52)[1]} state): block 528"
    ) in notes
    assert not [n for n in notes if n.startswith("pipeline stages at TP 3")]


def test_check_notes_in_full_for_the_reported_pair() -> None:
    # Nano TP 8 → TP 1, defaults on 0.33: the profile, the assumed backend, the economics (module
    # docstring) and the groups (groups-0.33.0 vector at TP 1; 528 at TP 8), nothing else
    # (no prefix-caching-off, GDN checkpoint, --gdn-prefill-backend or MLA note)
    report = analyze(load_model(NANO), Settings(vllm_version="0.33.0"), [8], [1])
    assert list(report.notes) == [
        "vLLM 0.33 rules (for --vllm-version 0.33.0)",
        "attention backend not given: FLASH_ATTN, what vLLM chooses on an unspecified CUDA "
        "GPU (pass --gpu to match your deployment)",
        "prefix caching at TP 1: smallest prefix that gives a hit 2,096 tokens, worst-case "
        "recompute per turn up to 4,192 tokens, Mamba padding 12,288 bytes per layer per block",
        "prefix caching at TP 8: smallest prefix that gives a hit 528 tokens, worst-case "
        "recompute per turn up to 1,056 tokens, Mamba padding 3,584 bytes per layer per block",
        "KV-cache groups at TP 1: 5: 4 mamba (6/6/6/5 layers, block 2096), 1 attention "
        "(6 layers, block 2096)",
        "KV-cache groups at TP 8: 5: 4 mamba (6/6/6/5 layers, block 528), 1 attention "
        "(6 layers, block 528)",
    ]
    pinned = Settings(vllm_version="0.33.0")
    assert report.geometry.model_id == NANO and report.settings == pinned
    assert report.engine.settings == pinned and report.engine.profile.name == "0.33"
    rec = report.recommendation
    assert rec.proven_on == (
        "A100 (SM80)", "H100/H200 (SM90)", "B200 (SM100)", "B300 (SM103)",
        "RTX-PRO-6000 (SM120)",
    )  # fmt: skip
    assert (rec.needed, rec.raised, rec.blockers) == (True, (), ())


def test_platform_note_names_the_gpu_and_the_chosen_backend() -> None:
    # docs/modelled.md: an MLA model runs on the platform's MLA counterpart
    assert "attention backend not given: FLASH_ATTN, what vLLM chooses on H100" in _notes(
        NANO, [8], [1], gpu="H100"
    )
    kimi = _notes("moonshotai/Kimi-K3", [1], [1])
    assert (
        "attention backend not given: FLASH_ATTN_MLA, what vLLM chooses on an unspecified "
        "CUDA GPU (pass --gpu to match your deployment)"
    ) in kimi
    # the MLA backend named explicitly: no "attention runs on" note
    named = _notes("moonshotai/Kimi-K3", [1], [1], attention_backend="FLASH_ATTN_MLA")
    assert not [n for n in named if n.startswith("MLA model")]
    # an attention-free model has no attention backend to note
    assert not [n for n in _notes("tiiuae/falcon-mamba-7b", [1], [2]) if "backend" in n]


def test_prefix_caching_off_by_flag_on_a_supporting_model() -> None:
    # 0.11.1 keeps Nemotron-H's prefix caching (it supports Mamba prefix caching): off only
    # because of the flag, and the note says so
    assert (
        "prefix caching is off (--no-enable-prefix-caching): logical block sizes only matter "
        "for prefix-cache hashing, so drift alone does not fail the gate"
    ) in _notes(NANO, [1], [1], vllm_version="0.11.1", enable_prefix_caching=False)


def test_overridden_note_lists_every_tp() -> None:
    # 528 is raised at TP 1 and TP 2 (both need 2,096: docs/why.md), kept at TP 8
    assert "--block-size 528 is overridden by hybrid alignment at TP 1, 2" in _notes(
        NANO, [8], [1, 2], block_size=528
    )


def test_pairs_follow_the_releases_nixl_rules() -> None:
    # docs/versions.md: NIXL serves hybrids from 0.18; 0.17's connector does not, under
    # vLLM's rules and the TP-stable what-if alike
    report = analyze(load_model(NANO), Settings(vllm_version="0.17.0", alignment="tp-stable"),
                     [8], [8])  # fmt: skip
    assert [p.verdict for p in report.pairs] == ["incompatible"]
    assert report.tp_stable_pairs is not None
    assert [p.verdict for p in report.tp_stable_pairs] == ["incompatible"]
    # 0.18-0.19 pair Mamba hybrids only at equal TP: TP 8 → 8 ok, 8 → 1 not, so no block
    # size fixes the set (every prefill pool is paired with every decode pool)
    equal = analyze(load_model(NANO), Settings(vllm_version="0.19.1"), [8], [8, 1])
    assert [p.verdict for p in equal.pairs] == ["ok", "incompatible"]
    assert equal.recommendation.text.startswith(
        "no --block-size can fix this: vLLM 0.18's NIXL connector pairs Mamba hybrids only at "
        "equal TP"
    )


def test_recommendation_fields_per_outcome() -> None:
    same = analyze(load_model(NANO), Settings(), [8], [8]).recommendation
    assert (same.block_size, same.padding_pct, same.needed, same.raised) == (None, {}, False, ())
    blocked = analyze(load_model(NANO), Settings(), [16], [16]).recommendation
    assert (blocked.padding_pct, blocked.needed, blocked.raised) == ({}, True, ())
    free = analyze(load_model("tiiuae/falcon-mamba-7b"), Settings(), [1], [2]).recommendation
    assert (free.padding_pct, free.needed) == ({}, False)


def test_a_block_raised_only_on_some_classes_still_needs_a_fix() -> None:
    # Qwen3.5-397B TP 8 with --block-size 528: kept with no GPU given (521 tokens, no
    # checkpoint), raised on SM90/SM100/SM120 where the FlashInfer GDN prefill checkpoints
    # every 64 tokens; no pair fails, but the raise alone asks for the fix that holds on
    # every class: 64 · cdiv(521, 64) = 576 (test_mutation_engine's module docstring)
    rec = analyze(load_model("Qwen/Qwen3.5-397B-A17B"), Settings(block_size=528), [8], [8])
    assert (rec.recommendation.block_size, rec.recommendation.needed) == (576, True)
    assert len(rec.recommendation.raised) == 2


def test_invalid_tps_on_both_sides() -> None:
    # the valid pools' pairs need nothing (TP 8 → 8): the invalid TP is the whole answer
    only = analyze(load_model(NANO), Settings(), [3, 8], [8]).recommendation
    assert only.text == (
        f"no --block-size can fix this: prefill TP 3: TP 3 is invalid for {NANO} (heads not "
        "divisible by tensor parallel size): use a valid TP (1, 2, 4, 8)"
    )
    # an invalid decode TP too: both named, without their pool labels, after the fix
    both = analyze(load_model(NANO), Settings(), [3, 8], [1, 16]).recommendation
    assert both.text.endswith(
        f"; TP 3 is invalid for {NANO} (heads not divisible by tensor parallel size): use a "
        f"valid TP (1, 2, 4, 8); TP 16 is invalid for {NANO} (n_groups G = 8 is neither "
        "divisible by tensor parallel size 16 nor 1: vLLM's MambaMixer2 refuses to load): use "
        "a valid TP (1, 2, 4, 8)"
    )
    assert both.block_size == 2096 and both.only_tps == (1, 8)


def test_check_resolves_once_per_gpu_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # the pools' settings resolved once with no GPU and once per CUDA class (the fix proof
    # and the raised lines share the run's cache)
    seen: list[Settings] = []
    real = kvalign.engine.create_engine_config

    def counting(geometry: object, settings: Settings) -> object:
        seen.append(settings)
        return real(geometry, settings)  # type: ignore[arg-type]

    monkeypatch.setattr(kvalign.engine, "create_engine_config", counting)
    every = sorted(["None", "A100", "H100", "B200", "B300", "RTX-PRO-6000"])
    analyze(load_model(NANO), Settings(block_size=528), [8], [1])
    assert sorted(str(s.gpu) for s in seen) == every
    # with an invalid TP the whole set and the valid pools are proven in the same cache
    seen.clear()
    analyze(load_model(NANO), Settings(block_size=528), [3, 8], [1])
    assert sorted(str(s.gpu) for s in seen) == every
