"""Where vLLM, transformers and start-up meet (release-chain fidelity classes).

Each value is from a measured vector (tests/golden/vllm-X.Y.Z.jsonl, made with the release's
own code), a public vLLM report, or hand-derived from the config and the
cited vLLM source line. No vLLM needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.alignment import RankResult, analyze_rank
from kvalign.backends import get_gpu
from kvalign.cli import app
from kvalign.engine import create_engine_config
from kvalign.errors import InvalidSettings, UnsupportedModel
from kvalign.geometry import ModelGeometry
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import resolve, transformers_for

runner = CliRunner()


def _rank(geometry: ModelGeometry, settings: Settings, tp: int) -> RankResult:
    return analyze_rank(geometry, create_engine_config(geometry, settings), tp)


DATA = Path(__file__).resolve().parents[1] / "data"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
FALCON = "tiiuae/Falcon-H1-0.5B-Base"
LFM2 = "LiquidAI/LFM2-1.2B"
QWEN_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
#: Qwen3.5-27B's text_config as a text-only checkpoint (architectures Qwen3_5ForCausalLM)
QWEN35_TEXT = str(DATA / "qwen3.5-27b-text")


# ---- prefix caching forced off ----------------------------------------------------
@pytest.mark.parametrize("model", [NANO, LFM2, QWEN_NEXT])
def test_0_10_turns_prefix_caching_off_for_every_hybrid(model: str) -> None:
    # 0.10.2 vllm/model_executor/models/config.py MambaModelConfig.verify_and_update_config:
    # "cache_config.enable_prefix_caching = False" ("Hybrid or mamba-based model detected:
    # disabling prefix caching since it is not yet supported"), whatever the flag
    settings = Settings(vllm_version="0.10.2", enable_prefix_caching=True)
    engine = create_engine_config(load_model(model), settings)
    assert not engine.prefix_caching
    assert any("not yet supported" in note for note in engine.notes)


@pytest.mark.parametrize(
    ("model", "on"), [(LFM2, False), (QWEN_NEXT, False), (NANO, True), (FALCON, True)]
)
def test_0_14_turns_it_off_only_without_mamba_prefix_caching(model: str, on: bool) -> None:
    # measured: tests/golden/vllm-0.14.0.jsonl, resolved.enable_prefix_caching with
    # --enable-prefix-caching is false for every Lfm2 / Qwen3-Next vector, true for
    # Nemotron-H and Falcon-H1 (SupportsMambaPrefixCaching); 0.17.0 keeps it on for all
    settings = Settings(vllm_version="0.14.0", enable_prefix_caching=True)
    assert create_engine_config(load_model(model), settings).prefix_caching is on
    later = Settings(vllm_version="0.17.0", enable_prefix_caching=True)
    assert create_engine_config(load_model(model), later).prefix_caching


def test_forced_off_prefix_caching_does_not_gate_drift_in_check() -> None:
    result = runner.invoke(
        app,
        ["check", LFM2, "--vllm-version", "0.14.0", "--enable-prefix-caching",
         "--prefill-tp", "1", "--decode-tp", "1", "--format", "json"],
    )  # fmt: skip
    data = json.loads(result.stdout)
    assert [d["prefix_caching"] for d in data["deployments"]] == [False, False]
    assert any("turns prefix caching off for lfm2" in n for n in data["notes"])


# ---- --mamba-block-size not a multiple of the chunk size in mode 'all' -------------
def test_mamba_block_size_not_a_chunk_multiple_is_invalid_on_0_27_1() -> None:
    # 0.27.1 mamba_mixer2.py: chunk_stride = mamba_block_size // chunk_size; Falcon-H1's
    # mamba_chunk_size is 128, so 32 gives stride 0 (vLLM issue 57266)
    settings = Settings(
        vllm_version="0.27.1",
        enable_prefix_caching=True,
        mamba_cache_mode="all",
        mamba_block_size=32,
    )
    rank = _rank(load_model(FALCON), settings, 1)
    assert rank.valid and not rank.usable
    assert "not a multiple of the Mamba chunk size 128" in rank.problem
    assert "fails at start-up" in rank.problem
    fine = Settings(
        vllm_version="0.27.1",
        enable_prefix_caching=True,
        mamba_cache_mode="all",
        mamba_block_size=256,
    )
    assert _rank(load_model(FALCON), fine, 1).usable


def test_mamba_block_size_case_fails_check() -> None:
    result = runner.invoke(
        app,
        ["check", FALCON, "--vllm-version", "0.27.1", "--enable-prefix-caching",
         "--mamba-cache-mode", "all", "--mamba-block-size", "32"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "fails (invalid)" in result.stdout and "vLLM issue 57266" in result.stdout


# ---- text-only Qwen3.5 before 0.27 ---------------------------------------------------
def test_text_only_qwen35_on_0_17_is_400_and_fails_at_start_up() -> None:
    # public vLLM 0.17.0rc1 log: Qwen3.5-27B text-only at TP 2 → 400 tokens,
    # 0.25 % padding. Hand check: the bf16 state (mamba_ssm_dtype not applied) is
    # 817,152 B per rank, attention 2 KV heads x 256 x 2 x 2 B = 2,048 B/token,
    # 16 x ceil(817152 / (16 x 2048)) = 16 x 25 = 400; 400 x 2048 = 819,200 (+0.25 %)
    geometry = load_model(QWEN35_TEXT)
    rank = _rank(geometry, Settings(vllm_version="0.17.0"), 2)
    assert (rank.block_size, rank.mamba_page_bytes) == (400, 817_152)
    assert rank.mamba_padding_pct is not None and round(rank.mamba_padding_pct, 2) == 0.25
    assert rank.mamba_state_dtypes == ("bfloat16", "bfloat16")
    assert not rank.usable
    assert "fails at start-up" in rank.problem and "Qwen3_5ForConditionalGeneration" in rank.problem
    # measured (tests/golden/fidelity-0.25.0.jsonl): from 0.25 the model-default hooks are
    # looked up under the normalised name too, so the float32 ssm state returns: 784
    later = _rank(geometry, Settings(vllm_version="0.25.0"), 2)
    assert later.block_size == 784 and not later.usable
    # 0.27 registers the text-only class: the config's float32 ssm state, 784 at TP 1
    # (public 0.19.1 log for the multimodal checkpoint, tests/golden/public-reports.yaml)
    ok = _rank(geometry, Settings(vllm_version="0.27.1"), 1)
    assert ok.usable and ok.block_size == 784
    # 0.14 registers neither class: unknown architecture, as before
    with pytest.raises(UnsupportedModel, match="does not know this architecture"):
        create_engine_config(geometry, Settings(vllm_version="0.14.0"))


# ---- speculative decoding refusals --------------------------------------------------
@pytest.mark.parametrize(
    ("version", "spec", "fails"),
    [("0.27.1", 1, False), ("0.27.1", 2, True), ("0.17.0", 2, True), ("0.33.0", 2, False),
     ("0.14.0", 2, False)],
)  # fmt: skip
def test_falcon_h1_speculative_rows_overflow_the_padded_page(
    version: str, spec: int, fails: bool
) -> None:
    # Falcon-H1-0.5B TP 1: conv dim 1536 + 2 x 128 = 1792, 3 rows + ssm 24 x 64 x 128, bf16:
    # 403,968 B; attention 2 x 64 x 2 x 2 = 512 B/token → block 800, padded 409,600 B.
    # 0.17-0.31 MambaMixer2 adds one conv row per speculative token (1792 x 2 = 3,584 B)
    # that falcon_h1.py's state-shape function leaves out: 2 tokens give 411,136 B >
    # 409,600 → MambaSpec's "assert page_size_padded >= page_size" (kv_cache_interface.py).
    # 0.14 layers take no speculative rows; 0.32+ the model function takes them.
    rank = _rank(load_model(FALCON), Settings(vllm_version=version,
                                                     num_speculative_tokens=spec), 1)  # fmt: skip
    assert rank.valid
    assert (not rank.usable) is fails
    if fails:
        assert "411,136 B" in rank.problem and "page_size_padded >= page_size" in rank.problem


# ---- platform and dtype names ---------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "expected", "capability"),
    [("MI50", "MI50", None), ("R9700", "R9700", None), ("GB10", "GB10", (12, 1)),
     ("RTX-3090", "RTX-3090", (8, 6)), ("H800", "H800", (9, 0)),
     ("NVIDIA-H100-80GB-HBM3", "H100", (9, 0)), ("H100-SXM", "H100", (9, 0)),
     ("rtx-3090", "RTX-3090", (8, 6))],
)  # fmt: skip
def test_gpu_names_users_type(name: str, expected: str, capability: object) -> None:
    gpu = get_gpu(name)
    assert gpu is not None and gpu.name == expected and gpu.capability == capability


def test_unknown_gpu_still_refused() -> None:
    with pytest.raises(InvalidSettings, match="unknown GPU"):
        get_gpu("Z9000")


def test_dtype_names_keep_vllm_case_and_say_so() -> None:
    # one might think vLLM reads dtype names case-insensitively; 0.27.1's source says
    # otherwise: --kv-cache-dtype / --mamba-*-cache-dtype get argparse choices from their
    # Literal types (arg_utils.py literal_to_kwargs), so `vllm serve --kv-cache-dtype FP8`
    # stops. kvalign refuses as vLLM does and names the spelling vLLM takes.
    result = runner.invoke(app, ["check", NANO, "--kv-cache-dtype", "FP8"])
    assert result.exit_code == 2
    assert "vLLM's choices are case-sensitive: pass fp8" in result.stderr
    mamba = runner.invoke(app, ["check", NANO, "--mamba-cache-dtype", "Float32"])
    assert mamba.exit_code == 2 and "pass float32" in mamba.stderr
    wrong = runner.invoke(app, ["check", NANO, "--kv-cache-dtype", "fp7"])
    assert wrong.exit_code == 2 and "case-sensitive" not in wrong.stderr


# ---- versions newer than every profile ------------------------------------------------
def test_newer_release_warns_on_stderr_and_json_names_the_profile() -> None:
    result = runner.invoke(app, ["check", FALCON, "--vllm-version", "0.99.0", "--format", "json"])
    assert result.exit_code == 0
    assert "kvalign: warning: vLLM 0.99.0 is newer than every profile" in result.stderr
    data = json.loads(result.stdout)
    newest = resolve(None).profile.name
    assert data["vllm_profile"] == {"name": newest, "release": "0.99.0", "beyond_newest": True}
    assert not any(n.startswith("warning:") for n in data["notes"])
    plain = runner.invoke(app, ["check", FALCON, "--vllm-version", "0.27.1", "--format", "json"])
    assert "warning" not in plain.stderr
    assert json.loads(plain.stdout)["vllm_profile"]["beyond_newest"] is False


# ---- the transformers dimension --------------------------------------------------------
@pytest.mark.parametrize(
    ("release", "pinned_default"),
    [("0.10.2", "5.20.2"), ("0.14.0", "4.57.6"), ("0.17.0", "4.57.6"), ("0.19.1", "5.20.2"),
     ("0.27.1", "5.20.2")],
)  # fmt: skip
def test_default_transformers_is_what_installing_the_release_resolves(
    release: str, pinned_default: str
) -> None:
    # Requires-Dist of the wheels: 0.10.2 >=4.55.2; 0.11.1-0.17.0 >=4.56.0,<5; 0.19.1
    # >=4.56.0 minus 5.0-5.5.0; 0.25.0-0.27.1 >=5.5.3. The measured vectors ran 0.14.0 and
    # 0.17.0 with transformers 4.57.6 (tests/golden/README.md).
    assert transformers_for(release, None).version == pinned_default


def test_transformers_version_outside_the_pin_is_refused() -> None:
    with pytest.raises(InvalidSettings, match=r"declares transformers>=4\.56\.0,<5"):
        transformers_for("0.17.0", "5.20.2")
    assert transformers_for("0.19.1", "4.57.6").version == "4.57.6"


@pytest.mark.parametrize(("transformers", "block"), [(None, 4128), ("4.57.6", 2080)])
def test_0_19_1_nemotron_h_ssm_dtype_follows_transformers(
    transformers: str | None, block: int
) -> None:
    # on 0.19.1 Nemotron-H-56B (no mamba_ssm_cache_dtype in its config) gets
    # float32 under transformers 5 (its NemotronHConfig declares mamba_ssm_cache_dtype =
    # "float32", read in 5.20.2) and vLLM's float16 fallback under 4.57 (no nemotron_h
    # there; vLLM's own config copy): blocks 4128 and 2080
    settings = Settings(
        vllm_version="0.19.1", enable_prefix_caching=False, transformers_version=transformers
    )
    rank = _rank(load_model("nvidia/Nemotron-H-56B-Base-8K"), settings, 1)
    assert rank.block_size == block
    assert rank.mamba_state_dtypes[1] == ("float32" if transformers is None else "float16")


# ---- pipeline parallelism ----------------------------------------------------------------
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
#: releases measured by tests/golden/build_pp_vectors.py (pp-X.Y.Z.jsonl)
PP_RELEASES = ("0.19.1", "0.20.0", "0.27.1", "0.33.0")


def _vectors(prefix: str, releases: tuple[str, ...]) -> list[tuple[str, dict[str, object]]]:
    """(release, vector) of every line of tests/golden/<prefix>-<release>.jsonl."""
    return [
        (release, json.loads(line))
        for release in releases
        for line in (GOLDEN / f"{prefix}-{release}.jsonl").read_text(encoding="utf-8").splitlines()
    ]


@pytest.mark.parametrize(("release", "vector"), _vectors("pp", PP_RELEASES))
def test_pp_stages_match_the_measured_release(release: str, vector: dict) -> None:
    # measured: each stage's layers from the release's get_pp_indices, its block from the
    # release's Platform.update_block_size_for_backend on that stage's layers
    settings = Settings(
        vllm_version=release,
        pipeline_parallel_size=vector["pp"],
        enable_prefix_caching=vector["enable_prefix_caching"],
        attention_backend="FLASH_ATTN",
    )
    rank = _rank(load_model(str(vector["model"])), settings, int(vector["tp"]))
    measured = vector["stages"]
    assert [[s.start, s.end] for s in rank.pp_stages] == [m["layers"] for m in measured]
    assert [s.attention_layers > 0 for s in rank.pp_stages] == [m["attention"] for m in measured]
    if vector["resolved_prefix_caching"]:
        # the stage's Mamba group takes its block (cache mode align): what must agree
        assert [s.block_size for s in rank.pp_stages] == [m["mamba_block_size"] for m in measured]
    elif release != "0.19.1":
        # 0.19.1 resets every hybrid stage to 16 in update_block_size_for_backend and
        # restores the hook's block when page sizes are unified (kvalign.vllm_probe.releases)
        assert [s.block_size for s in rank.pp_stages] == [m["block_size"] for m in measured]


def test_pp_stage_without_attention_keeps_16_and_fails_with_prefix_caching() -> None:
    # the measured 0.33.0 vector (pp-0.33.0.jsonl, PP 6): layers 44-51 of Nemotron-3-Nano
    # are Mamba/MoE only, that stage keeps 16 while the others align to 2096; with prefix
    # caching start-up fails (vllm issue 51752)
    geometry = load_model(NANO)
    rank = _rank(geometry, Settings(pipeline_parallel_size=6, enable_prefix_caching=True), 1)
    last = rank.pp_stages[-1]
    assert (last.rank, last.start, last.end, last.attention_layers) == (5, 44, 52, 0)
    assert last.block_size == 16 and not last.aligned
    assert not rank.usable and "stage 5" in rank.problem and "51752" in rank.problem
    # prefix caching off: the stages boot (Mamba pages are padded when grouped)
    off = _rank(geometry, Settings(pipeline_parallel_size=6, enable_prefix_caching=False), 1)
    assert off.usable and off.pp_stages[-1].block_size == 16
    # the user's block as large as the aligned one: every stage agrees
    fixed = _rank(geometry, Settings(pipeline_parallel_size=6, block_size=2096), 1)
    assert fixed.usable and {s.block_size for s in fixed.pp_stages} == {2096}


def test_pp_layer_partition_moves_an_attention_layer_onto_the_stage() -> None:
    # VLLM_PP_LAYER_PARTITION (get_pp_indices): 8 layers for each of the first five stages
    # and 12 for the last puts layer 42 (an attention layer: pattern index of the last '*'
    # in hybrid_override_pattern) on stage 5
    geometry = load_model(NANO)
    assert geometry.layer_kinds[42] == "attention"
    assert "attention" not in geometry.layer_kinds[43:]
    settings = Settings(pipeline_parallel_size=6, pp_layer_partition="8,8,8,8,8,12")
    rank = _rank(geometry, settings, 1)
    assert [(s.start, s.end) for s in rank.pp_stages][-1] == (40, 52)
    assert rank.usable and {s.block_size for s in rank.pp_stages} == {2096}
    with pytest.raises(InvalidSettings, match="sums to 51"):
        _rank(geometry, Settings(pipeline_parallel_size=6, pp_layer_partition="8,8,8,8,8,11"), 1)


def test_pp_check_reports_the_stage_in_json_and_exits_1() -> None:
    done = runner.invoke(
        app, ["check", NANO, "--pipeline-parallel-size", "6", "--enable-prefix-caching",
              "--format", "json"],
    )  # fmt: skip
    assert done.exit_code == 1, done.output
    data = json.loads(done.stdout)
    stages = data["deployments"][0]["pp_stages"]
    assert stages[-1]["layers"] == [44, 52] and stages[-1]["block_size"] == 16
    assert "stage 5" in stages[-1]["problem"]
    assert data["settings"]["pipeline_parallel_size"] == 6


def test_pp_audit_reads_the_flag_and_the_partition(tmp_path: Path) -> None:
    # audit reads --pipeline-parallel-size and VLLM_PP_LAYER_PARTITION (settings_from_args)
    script = tmp_path / "serve.sh"
    line = f"vllm serve {NANO} --pipeline-parallel-size 6 --enable-prefix-caching\n"
    script.write_text("#!/bin/sh\n" + line, encoding="utf-8")
    done = runner.invoke(app, ["audit", str(tmp_path)])
    assert done.exit_code == 1, done.output
    assert "pipeline stage 5 (layers 44-51)" in done.output
    assert "fix: --block-size 2096" in done.output
    script.write_text("#!/bin/sh\nVLLM_PP_LAYER_PARTITION=8,8,8,8,8,12 " + line, "utf-8")
    done = runner.invoke(app, ["audit", str(tmp_path)])
    assert done.exit_code == 0, done.output


def test_pp_explain_names_where_the_stages_align() -> None:
    done = runner.invoke(app, ["explain", NANO, "--tp", "1", "-pp", "6"])
    assert done.exit_code == 0, done.output
    assert "each stage aligns on the layers it owns" in done.output


def test_pp_json_matches_the_check_schema() -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

    schema = json.loads(
        (Path(__file__).resolve().parents[2] / "kvalign/schemas/check.json").read_text()
    )
    done = runner.invoke(app, ["check", NANO, "-pp", "6", "--format", "json"])
    document = json.loads(done.stdout)
    Draft202012Validator(schema).validate(document)
    assert document["deployments"][0]["pp_stages"][-1]["aligned"] is False


# ---- KV-cache groups -------------------------------------------------------------------
GROUP_RELEASES = ("0.20.0", "0.27.1", "0.33.0")


@pytest.mark.parametrize(("release", "vector"), _vectors("groups", GROUP_RELEASES))
def test_kv_cache_groups_match_the_measured_release(release: str, vector: dict) -> None:
    # measured: the release's own _get_kv_cache_groups_uniform_page_size over one spec
    # per layer (tests/golden/build_group_vectors.py), default flags, FLASH_ATTN, TP 1
    settings = Settings(vllm_version=release, attention_backend="FLASH_ATTN")
    mamba = {g["block_size"] for g in vector["groups"] if g["kind"] == "mamba"}
    if vector["mamba_cache_mode"] == "none":
        # mode none: the Mamba groups' block is max_model_len, which vLLM takes from the
        # config's context length when --max-model-len is not given (kvalign does not read
        # it): pass it as the flag
        settings = Settings(vllm_version=release, attention_backend="FLASH_ATTN",
                            max_model_len=mamba.pop())  # fmt: skip
    rank = _rank(load_model(str(vector["model"])), settings, 1)
    assert rank.block_size == vector["block_size"]
    got = [(g.kind, g.layers, g.block_size) for g in rank.kv_cache_groups]
    assert got == [(g["kind"], g["layers"], g["block_size"]) for g in vector["groups"]]


def test_jamba_like_one_attention_seven_mamba_layers_make_8_groups() -> None:
    # vLLM PR 45575: Jamba-tiny-dev at TP 1 has 8 KV-cache groups (1 attention + 7 Mamba
    # layers: group size 1, kv_cache_planning._get_kv_cache_groups_uniform_page_size);
    # every group takes the logical block in cache mode align
    from dataclasses import replace

    from kvalign.alignment import kv_cache_groups

    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings())
    jamba_like = replace(geometry, layer_kinds=("state",) * 4 + ("attention",) + ("state",) * 3)
    groups = kv_cache_groups(jamba_like, engine, 144)
    assert [(g.kind, g.layers, g.block_size) for g in groups] == (
        [("mamba", 1, 144)] * 7 + [("attention", 1, 144)]
    )
    # prefix caching off (mode none): the Mamba groups' block is max_model_len
    off = create_engine_config(geometry, Settings(enable_prefix_caching=False, max_model_len=8192))
    assert {g.block_size for g in kv_cache_groups(jamba_like, off, 144) if g.kind == "mamba"} == {
        8192
    }


def test_kv_cache_groups_in_check_json_and_explain() -> None:
    # groups-0.33.0.jsonl: Nemotron-3-Nano at TP 1, 4 Mamba groups (6/6/6/5 of 23 layers)
    # and 1 attention group (6 layers), every block 2096
    done = runner.invoke(app, ["check", NANO, "--format", "json"])
    groups = json.loads(done.stdout)["deployments"][0]["kv_cache_groups"]
    assert [(g["kind"], g["layers"], g["block_size"]) for g in groups] == (
        [("mamba", 6, 2096)] * 3 + [("mamba", 5, 2096), ("attention", 6, 2096)]
    )
    done = runner.invoke(app, ["explain", NANO, "--tp", "1"])
    assert "KV-cache groups: 5" in done.output


# ---- 0.33's own vllm serve parser ------------------------------------------------------
def test_0_33_serve_parser_choices_are_what_kvalign_accepts() -> None:
    # measured: tests/golden/serve-parser-0.33.0.json (build_parser_vectors.py runs the
    # release's make_arg_parser): --mamba-cache-mode takes align/none, refuses all (exit 2)
    parser = json.loads((GOLDEN / "serve-parser-0.33.0.json").read_text(encoding="utf-8"))
    flags = parser["flags"]
    profile = resolve("0.33.0").profile
    assert sorted(profile.mamba_cache_modes) == flags["--mamba-cache-mode"]["choices"]
    assert sorted(profile.mamba_dtypes) == flags["--mamba-cache-dtype"]["choices"]
    assert sorted(profile.mamba_dtypes) == flags["--mamba-ssm-cache-dtype"]["choices"]
    geometry = load_model(NANO)
    for probe in parser["probes"]:
        if probe["argv"][0] != "--mamba-cache-mode":
            continue
        settings = Settings(vllm_version="0.33.0", mamba_cache_mode=probe["argv"][1])
        if probe["accepted"]:
            create_engine_config(geometry, settings)
        else:
            with pytest.raises(InvalidSettings, match="accepts only"):
                create_engine_config(geometry, settings)


# ---- CPU kernel block per release ------------------------------------------------------
@pytest.mark.parametrize(("release", "block"), [("0.21.0", 784), ("0.27.1", 784), ("0.33.0", 800)])
def test_cpu_attn_kernel_multiple_per_release(release: str, block: int) -> None:
    # vllm/v1/attention/backends/cpu_attn.py get_supported_kernel_block_sizes:
    # [MultipleOf(16)] in 0.21.0-0.27.1, [MultipleOf(32)] in 0.33.0. With --block-size 16
    # the alignment unit is max(k_min, 16): 16 gives Qwen3.5-27B at TP 1 the block FLASH_ATTN
    # (also MultipleOf(16)) gets on CUDA, 784 (measured: vllm-0.27.1.jsonl, H100); 32 gives
    # 32 * ceil(784 / 32) = 800 (784 tokens needed: 768 < 784)
    settings = Settings(vllm_version=release, gpu="CPU", block_size=16)
    rank = _rank(load_model("Qwen/Qwen3.5-27B"), settings, 1)
    assert rank.block_size == block


# ---- transformers cannot load the config -----------------------------------------------
LIGHTNING = "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4"
ULTRA = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"


def _not_measured(path: Path, model: str) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        vector = json.loads(line)
        if vector["model"] == model and "not_measured" in vector["expected"]:
            return str(vector["expected"]["not_measured"])
    return ""


@pytest.mark.parametrize(
    ("vectors", "release", "transformers"),
    [
        ("vllm-0.14.0.jsonl", "0.14.0", None),
        ("vllm-0.17.0.jsonl", "0.17.0", None),
        ("vllm-0.18.1.jsonl", "0.18.1", None),
        ("fidelity-0.19.1-transformers-4.57.6.jsonl", "0.19.1", "4.57.6"),
    ],
)
@pytest.mark.parametrize("model", [LIGHTNING, ULTRA])
def test_transformers_5_spelling_is_refused_where_transformers_4_runs(
    vectors: str, release: str, transformers: str | None, model: str
) -> None:
    # measured: the release's own NemotronHConfig raises AttributeError "property
    # 'layers_block_type' ... has no setter" for these configs (vectors' not_measured)
    assert "layers_block_type' of 'NemotronHConfig' object has no setter" in _not_measured(
        GOLDEN / vectors, model
    )
    settings = Settings(vllm_version=release, transformers_version=transformers)
    rank = _rank(load_model(model), settings, 1)
    assert not rank.usable
    assert "cannot load this config" in rank.problem and "vLLM 0.19.0" in rank.problem
    assert ("auto_map" in rank.problem) and (("never runs it" in rank.problem) == (model == ULTRA))


def test_transformers_5_spelling_loads_from_0_19_with_transformers_5() -> None:
    # measured: fidelity-0.19.1.jsonl (the default install, transformers 5) sizes Lightning
    # at TP 1 with --enable-prefix-caching on FLASH_ATTN (H100): 2176
    assert not _not_measured(GOLDEN / "fidelity-0.19.1.jsonl", LIGHTNING)
    settings = Settings(vllm_version="0.19.1", enable_prefix_caching=True,
                        attention_backend="FLASH_ATTN", gpu="H100")  # fmt: skip
    rank = _rank(load_model(LIGHTNING), settings, 1)
    assert rank.usable and rank.block_size == 2176


# ---- NIXL P/D support per state family -------------------------------------------------
@pytest.mark.parametrize(
    ("release", "model", "works"),
    [
        # kv_connector/v1/ssm_conv_transfer_utils.py derive_mamba_conv_split, called by
        # every NIXL worker of a model with Mamba layers: 0.20.0/0.21.0 raise
        # NotImplementedError unless mamba_type is mamba2; 0.25.0 and 0.33.0 accept
        # MAMBA1, MAMBA2 and GDN_ATTN (GDN: vLLM PR 41869)
        ("0.21.0", "Qwen/Qwen3.5-27B", False),
        ("0.21.0", FALCON, True),
        ("0.25.0", "Qwen/Qwen3.5-27B", True),
        ("0.33.0", "Qwen/Qwen3.5-27B", True),
    ],
)
def test_nixl_state_family_support(release: str, model: str, works: bool) -> None:
    done = runner.invoke(app, ["check", model, "--vllm-version", release, "--format", "json"])
    data = json.loads(done.stdout)
    verdict = data["pairs"][0]["verdict"]
    if works:
        assert verdict == "ok", data["pairs"][0]["reason"]
        return
    assert verdict == "incompatible"
    assert "cannot transfer gdn state" in data["pairs"][0]["reason"]
    assert "upgrade to vLLM 0.25.0" in " ".join(data["fix"]["blockers"])


# ---- --kv-cache-dtype-skip-layers ------------------------------------------------------
SKIP_RELEASES = ("0.25.0", "0.27.1", "0.33.0")


@pytest.mark.parametrize(("release", "vector"), _vectors("skip-layers", SKIP_RELEASES))
def test_kv_cache_dtype_skip_layers_match_the_measured_release(release: str, vector: dict) -> None:
    # measured: tests/golden/build_skip_layer_vectors.py (the probe with the flag, then the
    # release's own unify_kv_cache_spec_page_size and grouping over one spec per layer,
    # the named attention layers in the model dtype); an "error" is vLLM's start-up failure
    none = vector["mamba_cache_mode"] == "none"
    settings = Settings(
        vllm_version=release,
        attention_backend="FLASH_ATTN",
        kv_cache_dtype=vector["kv_cache_dtype"],
        kv_cache_dtype_skip_layers=tuple(vector["kv_cache_dtype_skip_layers"]),
        # mode none: the Mamba groups' block is the config's max_model_len (see above)
        max_model_len=vector["mamba_block_size"] if none else None,
    )
    rank = _rank(load_model(str(vector["model"])), settings, vector["tp"])
    assert rank.block_size == vector["block_size"]
    assert rank.kernel_block_size == vector["kernel_block_size"]
    assert rank.mamba_page_size_padded == vector["mamba_page_size_padded"]
    if "error" in vector:
        # 0.25.0: unify_kv_cache_spec_page_size's assertion (it cannot pad a Mamba page)
        assert "AssertionError" in vector["error"]
        assert not rank.usable and "AssertionError" in rank.problem
        return
    assert rank.usable, rank.problem
    got = [(g.kind, g.layers, g.block_size) for g in rank.kv_cache_groups]
    assert got == [(g["kind"], g["layers"], g["block_size"]) for g in vector["groups"]]


def test_kv_cache_dtype_skip_layers_is_refused_before_0_19() -> None:
    # EngineArgs has no kv_cache_dtype_skip_layers in 0.18.1 (vllm/engine/arg_utils.py);
    # 0.19.0 adds it: argparse refuses an unknown flag, kvalign says so (exit 2)
    geometry = load_model(LFM2)
    old = Settings(vllm_version="0.18.1", kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("2",))
    with pytest.raises(InvalidSettings, match="no such flag"):
        create_engine_config(geometry, old)
    create_engine_config(geometry, Settings(vllm_version="0.19.1", kv_cache_dtype="fp8",
                                            kv_cache_dtype_skip_layers=("2",)))  # fmt: skip


def test_kv_cache_dtype_skip_layers_from_a_launch_line_check_and_explain() -> None:
    # vLLM's flag takes several values (nargs "+", a list field of CacheConfig); a
    # --config YAML list expands to the flag and its items (FlexibleArgumentParser)
    from kvalign.deploy.vllm_args import config_to_args, parse_vllm_args

    args = parse_vllm_args("vllm serve M --kv-cache-dtype-skip-layers 2 5 --block-size 16")
    assert (args.kv_cache_dtype_skip_layers, args.block_size, args.unknown) == (("2", "5"), 16, ())
    assert config_to_args({"kv-cache-dtype-skip-layers": [2, 5]}) == [
        "--kv-cache-dtype-skip-layers", "2", "5",
    ]  # fmt: skip
    # skip-layers-0.33.0.jsonl: LFM2-1.2B, fp8, layer 2 kept in bf16: block 32, 16 groups,
    # the skipped layer's group at 32, the fp8 attention groups at 64, Mamba at 16
    flags = ["--kv-cache-dtype", "fp8", "--kv-cache-dtype-skip-layers", "2"]
    done = runner.invoke(app, ["check", LFM2, *flags, "--format", "json"])
    assert done.exit_code == 0, done.output
    deployment = json.loads(done.stdout)["deployments"][0]
    assert deployment["block_size"] == 32
    kinds = {(g["kind"], g["block_size"]) for g in deployment["kv_cache_groups"]}
    assert kinds == {("mamba", 16), ("attention-skip", 32), ("attention", 64)}
    done = runner.invoke(app, ["explain", LFM2, "--tp", "1", *flags])
    assert "block raised for the skip layers' page: 32 tokens" in done.output


# ---- the hidden-state group of speculative method extract_hidden_states ----------------
HIDDEN_RELEASES = ("0.25.0", "0.27.1", "0.28.0", "0.33.0")


@pytest.mark.parametrize(("release", "vector"), _vectors("hidden-state", HIDDEN_RELEASES))
def test_hidden_state_group_matches_the_measured_release(release: str, vector: dict) -> None:
    # measured: build_skip_layer_vectors.py --hidden-states (the release's own
    # HiddenStateCacheSpec and get_kv_cache_groups); "error": vLLM's start-up failure
    none = vector["mamba_cache_mode"] == "none"
    settings = Settings(
        vllm_version=release,
        attention_backend="FLASH_ATTN",
        speculative_method=vector["speculative_method"],
        eagle_aux_hidden_state_layer_ids=tuple(vector["eagle_aux_hidden_state_layer_ids"]),
        max_model_len=vector["mamba_block_size"] if none else None,
    )
    rank = _rank(load_model(str(vector["model"])), settings, vector["tp"])
    assert rank.block_size == vector["block_size"]
    # the probe builds no SpeculativeConfig; a launch naming the method without
    # num_speculative_tokens is refused when vLLM builds it (_verify_args:
    # "num_speculative_tokens must be provided", vllm/config/speculative.py, read in 0.25.0,
    # 0.27.1, 0.28.0, 0.33.0), before the allocator's page check the "error" vectors record
    assert not rank.usable and "needs num_speculative_tokens" in rank.problem
    if "error" in vector:
        # 0.25-0.29: one token of hidden states is larger than the page it is padded to
        assert "AssertionError" in vector["error"]
        return
    got = [(g.kind, g.layers, g.block_size) for g in rank.kv_cache_groups]
    assert got == [(g["kind"], g["layers"], g["block_size"]) for g in vector["groups"]]


def test_hidden_state_group_is_not_modelled_before_0_22_and_audit_reads_it() -> None:
    # 0.20.0 has the method but groups the cache-only layer like any other
    # (kv_cache_utils.py has no HiddenStateCacheSpec branch): not modelled, exit 2
    from kvalign.deploy.vllm_args import parse_vllm_args, settings_from_args
    from kvalign.errors import NotModelled

    geometry = load_model(NANO)
    old = Settings(vllm_version="0.20.0", speculative_method="extract_hidden_states",
                   eagle_aux_hidden_state_layer_ids=(1, 20, 39))  # fmt: skip
    with pytest.raises(NotModelled, match="not modelled"):
        create_engine_config(geometry, old)
    spec = (
        '{"method":"extract_hidden_states","num_speculative_tokens":1,'
        '"draft_model_config":{"hf_config":{"eagle_aux_hidden_state_layer_ids":[1,20,39]}}}'
    )
    settings = settings_from_args(parse_vllm_args(["vllm", "serve", NANO,
                                                   "--speculative-config", spec]))  # fmt: skip
    assert settings.speculative_method == "extract_hidden_states"
    assert settings.eagle_aux_hidden_state_layer_ids == (1, 20, 39)
    # hidden-state-0.33.0.jsonl: Nemotron-3-Nano TP 1, 3 hidden states: block 131
    groups = _rank(geometry, settings, 1).kv_cache_groups
    assert (groups[-1].kind, groups[-1].block_size) == ("hidden-state", 131)


def test_skip_layers_on_one_side_of_a_pair_is_block_drift_in_audit(tmp_path: Path) -> None:
    # skip-layers-0.33.0.jsonl: LFM2-1.2B fp8 with layer 2 skipped is 32; vllm-0.33.0.jsonl:
    # LFM2-1.2B fp8 without it is 16 (H100, FLASH_ATTN): the pools' blocks drift (KVA001)
    transfer = '\'{"kv_connector":"NixlConnector","kv_role":"%s"}\''
    base = f"vllm serve {LFM2} --kv-cache-dtype fp8 --attention-backend FLASH_ATTN"
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"{base} --kv-cache-dtype-skip-layers 2 --kv-transfer-config {transfer % 'kv_producer'} &\n"
        f"{base} --kv-transfer-config {transfer % 'kv_consumer'} &\n",
        encoding="utf-8",
    )
    done = runner.invoke(app, ["audit", str(tmp_path), "--vllm-version", "0.33.0", "--gpu", "H100"])
    assert done.exit_code == 1, done.output
    assert "KVA001" in done.output and "logical block size 32 (prefill TP 1) vs 16" in done.output
