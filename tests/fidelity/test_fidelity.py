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
