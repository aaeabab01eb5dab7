"""``kvalign verify`` against a stand-in ``vllm`` package (tests/fake_vllm; never real vLLM).

Hand-derived numbers for Nemotron-3-Nano-30B-A3B (2 KV heads, head_dim 128, bf16;
mamba2: 64 heads × 64 head_dim, n_groups 8, ssm_state_size 128, conv_kernel 4; SSM float32):

* TP 1: a = 2·(128+128)·2 = 1,024 B/token; conv (3 × (4096 + 2·8·128 = 6144)) · 2 B = 36,864,
  ssm 64·64·128·4 B = 2,097,152 → m = 2,134,016; block 16·ceil(2,134,016 / 16,384) = 16·131
  = 2,096; padded page 2,096·1,024 = 2,146,304.
* TP 2: a = 512; conv 3 × 3072 · 2 = 18,432, ssm 32·64·128·4 = 1,048,576 → m = 1,067,008;
  block 16·ceil(1,067,008 / 8,192) = 16·131 = 2,096; padded 2,096·512 = 1,073,152.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.verify import ProbeRequest, VllmAnswer, verify

FAKE = Path(__file__).parent / "fake_vllm"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
runner = CliRunner()


def _purge_vllm() -> None:
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        del sys.modules[name]


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Put the stand-in package first on sys.path; forget it afterwards."""
    _purge_vllm()
    monkeypatch.syspath_prepend(str(FAKE))
    monkeypatch.delenv("FAKE_VLLM_MODE", raising=False)
    yield
    _purge_vllm()


def _json(args: list[str]) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, ["verify", NANO, *args, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


def _fields(payload: dict[str, object], tp_index: int) -> dict[str, dict[str, object]]:
    tps = payload["tps"]
    assert isinstance(tps, list)
    return {f["name"]: f for f in tps[tp_index]["fields"]}


def test_identical_exit_0(fake_vllm: None) -> None:
    code, payload = _json(["--tp", "1,2"])
    assert code == 0
    assert payload["identical"] is True and payload["differences"] == 0
    assert payload["vllm"] == {"version": "0.33.0", "platform": "stand-in"}
    tp1, tp2 = _fields(payload, 0), _fields(payload, 1)
    assert tp1["attn_page_bytes_per_token"]["vllm"] == 1024
    assert tp1["mamba_page_bytes"]["vllm"] == 2_134_016
    assert tp1["mamba_state_shapes"]["vllm"] == [[3, 6144], [64, 64, 128]]
    assert tp1["mamba_state_dtypes"]["vllm"] == ["bfloat16", "float32"]
    assert tp1["block_size"] == {
        "name": "block_size", "unit": "tokens", "kvalign": 2096, "vllm": 2096, "same": True
    }  # fmt: skip
    assert tp1["mamba_page_size_padded"]["vllm"] == 2_146_304
    assert tp2["kv_heads_per_rank"]["vllm"] == 1
    assert tp2["mamba_page_bytes"]["kvalign"] == 1_067_008
    assert tp2["mamba_page_size_padded"]["kvalign"] == 1_073_152
    assert tp2["kernel_block_size"]["vllm"] == 2096


def test_identical_table(fake_vllm: None) -> None:
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 0, result.stderr
    assert "identical: kvalign matches vLLM" in result.stdout
    assert "2,134,016" in result.stdout and "DIFFERENT" not in result.stdout


def test_block_size_difference_exit_1(fake_vllm: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_MODE", "block-plus-16")
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 1
    row = next(line for line in result.stdout.splitlines() if "block size" in line)
    assert "2,096" in row and "2,112" in row and "DIFFERENT" in row
    # the stand-in pads to the larger block: 2,112 · 1,024 = 2,162,688
    assert "2,162,688" in result.stdout
    assert "difference(s) between kvalign and vLLM" in result.stdout
    code, payload = _json(["--tp", "1"])
    assert code == 1 and payload["identical"] is False
    assert payload["differences"] == 3  # block size, kernel block size, padded page
    assert _fields(payload, 0)["block_size"]["vllm"] == 2112


def test_vllm_missing_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    _purge_vllm()
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm → ImportError
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "pip install 'kvalign[verify]'" in result.stderr
    assert "vLLM 0.33.0" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_vllm_raising_one_line_exit_2(fake_vllm: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_MODE", "raise")
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "kvalign: error: vLLM raised at TP 1: RuntimeError: fake vLLM failure: no platform detected"
    ]
    assert "Traceback" not in result.output


def test_rejected_tp_both_sides(fake_vllm: None) -> None:
    # Nemotron-3-Nano has 32 attention heads: TP 3 is rejected by vLLM and kvalign alike
    code, payload = _json(["--tp", "3"])
    assert code == 0
    entry = payload["tps"][0]  # type: ignore[index]
    assert entry["rejected"] == "heads not divisible by tensor parallel size"
    assert entry["vllm_error"].startswith("ValueError: Total number of attention heads (32)")


def test_hf_overrides_reach_both_sides(fake_vllm: None) -> None:
    # n_groups 4: conv 3 × (4096 + 2·4·128 = 5120) · 2 B = 30,720; m = 2,127,872;
    # block 16·ceil(2,127,872 / 16,384) = 16·130 = 2,080 on both sides
    code, payload = _json(["--tp", "1", "--hf-overrides", '{"n_groups": 4}'])
    assert code == 0
    fields = _fields(payload, 0)
    assert fields["mamba_page_bytes"]["vllm"] == fields["mamba_page_bytes"]["kvalign"] == 2_127_872
    assert fields["block_size"]["vllm"] == 2080


def test_bad_input_exit_2(fake_vllm: None) -> None:
    assert runner.invoke(app, ["verify", NANO, "--tp", "x"]).exit_code == 2
    bad = runner.invoke(app, ["verify", NANO, "--hf-overrides", "[1]"])
    assert bad.exit_code == 2 and "--hf-overrides" in bad.stderr
    spec = runner.invoke(app, ["verify", NANO, "--num-speculative-tokens", "1"])
    assert spec.exit_code == 2 and "--num-speculative-tokens" in spec.stderr


def test_checkpoint_alignment_passed_to_probe() -> None:
    """verify() hands kvalign's GDN checkpoint alignment (64 on H100) to the probe."""
    seen: list[ProbeRequest] = []

    def probe(request: ProbeRequest) -> VllmAnswer:
        seen.append(request)
        raise RuntimeError("stop")

    geometry = load_model(QWEN3_NEXT)
    with pytest.raises(Exception, match="vLLM raised at TP 2: RuntimeError: stop"):
        verify(geometry, Settings(gpu="H100"), [2], probe=probe, version=lambda: "0.33.0")
    assert seen[0].checkpoint_alignment == 64
    assert seen[0].attention_backend == "FLASH_ATTN"
    assert seen[0].model.endswith("Qwen3-Next-80B-A3B-Instruct")
