"""``kvalign explain``: the steps agree with the prediction; CLI text and JSON."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.explain import economics, explain
from kvalign.settings import Settings
from kvalign.versions import newest
from tests.conftest import geometry_for

NANO = "hf-configs/nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16/config.json"
NANO_ID = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
runner = CliRunner()


def _steps(settings: Settings, tp: int) -> dict[str, object]:
    ex = explain(geometry_for(NANO), settings, tp)
    return {step.key: step.value for step in ex.steps}


def test_steps_reproduce_issue_41037_at_tp4() -> None:
    # fp8 KV, --block-size 32, TP 4: a = 1 head * 256 * 1 B = 256; m = 533,504
    # (vLLM's MambaStateShapeCalculator);
    # ceil(533,504 / 256) = 2,084 → 32 * ceil(2,084 / 32) = 2,112 (vLLM issue 41037)
    steps = _steps(Settings(kv_cache_dtype="fp8", block_size=32), 4)
    assert steps["kv_heads_per_rank"] == 1
    assert steps["attn_page_bytes_per_token"] == 256
    assert steps["mamba_page_bytes"] == 533_504
    assert steps["alignment_unit"] == 32
    assert steps["tokens_needed"] == 2084
    assert steps["block_size"] == 2112
    assert steps["kernel_block_size"] == 2112
    assert steps["mamba_page_size_padded"] == 2112 * 256


def test_flashinfer_kernel_block_step() -> None:
    # FlashInfer accepts {16, 32, 64}: the largest dividing 2,112 = 64 * 33 is 64
    steps = _steps(Settings(kv_cache_dtype="fp8", block_size=32, attention_backend="FLASHINFER"), 4)
    assert steps["kernel_block_size"] == 64


def test_economics_are_block_arithmetic() -> None:
    ex = explain(geometry_for(NANO), Settings(kv_cache_dtype="fp8", block_size=32), 4)
    eco = economics(ex.rank)
    assert eco is not None
    assert eco.smallest_cacheable_prefix == 2112
    assert eco.worst_case_recompute == 4224
    assert eco.mamba_padding_bytes == 2112 * 256 - 533_504  # 7,168 B


def test_old_profile_explains_the_model_config_hook() -> None:
    ex = explain(geometry_for(NANO), Settings(vllm_version="0.14.0", enable_prefix_caching=True), 1)
    keys = {s.key: s for s in ex.steps}
    assert keys["block_size"].value == 2176  # chunk 128: 128 * ceil(2,084 / 128)
    assert "HybridAttentionMambaModelConfig" in keys["block_size"].mirrors
    assert "chunk size 128" in str(keys["alignment_unit"].formula)
    assert "backend_lcm_rounding" not in keys


def test_cli_text_names_profile_default_backend_and_result() -> None:
    result = runner.invoke(app, ["explain", NANO_ID, "--tp", "4", "--kv-cache-dtype", "fp8",
                                 "--block-size", "32"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert f"Profile: vLLM {newest().name} rules (default profile)" in out
    assert "default: FLASH_ATTN on an unspecified CUDA GPU" in out
    assert "from --block-size = 32" in out
    assert "from H = mamba_num_heads" in out
    assert "Platform._align_hybrid_block_size" in out
    assert "Result: block size 2,112 tokens, kernel block size 2,112 tokens" in out
    assert "worst-case recompute per turn up to 4,224 tokens" in out


def test_cli_json() -> None:
    result = runner.invoke(app, ["explain", NANO_ID, "--tp", "1", "--format", "json",
                                 "--vllm-version", "0.10.2"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["profile"]["name"] == "0.10"
    assert doc["block_size"] == 1072  # see tests/arithmetic/test_profiles.py
    assert doc["kernel_block_size"] == 1072
    assert doc["steps"][-1]["key"] in ("mamba_page_size_padded", "kernel_block_size")
    # 0.10 turns prefix caching off for every hybrid whatever the flag (
    # 0.10.2 MambaModelConfig.verify_and_update_config): no prefix-cache economics
    assert doc["economics"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "3"], "invalid tensor parallel size 3"),
        (["--vllm-version", "banana"], "--vllm-version"),
    ],
)
def test_cli_bad_input_exits_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["explain", NANO_ID, *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_check_prints_profile_and_economics() -> None:
    result = runner.invoke(app, ["check", NANO_ID, "--vllm-version", "0.19.1"])
    assert "vLLM 0.18 rules (for --vllm-version 0.19.1)" in result.stdout
    # hybrid prefix caching is off by default on 0.11.1-0.27: no prefix-cache economics
    assert "smallest prefix that gives a hit" not in result.stdout
    # 0.18-0.19's NIXL needs equal TP for Mamba hybrids; TP 1 → TP 1 is fine, drift-free
    assert result.exit_code == 0, result.stdout
    on = runner.invoke(
        app, ["check", NANO_ID, "--vllm-version", "0.19.1", "--enable-prefix-caching"]
    )
    assert "smallest prefix that gives a hit" in on.stdout
