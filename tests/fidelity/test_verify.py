"""``kvalign verify`` with a stand-in probe (never real vLLM; the real probe is measured by
``make verify-releases``, whose 0.33.0 vectors tests/fidelity/test_release_vectors.py checks against
the oracle).

Hand-derived numbers for Nemotron-3-Nano-30B-A3B (2 KV heads, head_dim 128, bf16;
mamba2: 64 heads × 64 head_dim, n_groups 8, ssm_state_size 128, conv_kernel 4; SSM float32),
vLLM 0.33 rules:

* TP 1: a = 2·(128+128)·2 = 1,024 B/token; conv (3 × (4096 + 2·8·128 = 6144)) · 2 B = 36,864,
  ssm 64·64·128·4 B = 2,097,152 → m = 2,134,016; block 16·ceil(2,134,016 / 16,384) = 16·131
  = 2,096; padded page 2,096·1,024 = 2,146,304.
* TP 2: a = 512; conv 3 × 3072 · 2 = 18,432, ssm 32·64·128·4 = 1,048,576 → m = 1,067,008;
  block 16·ceil(1,067,008 / 8,192) = 16·131 = 2,096; padded 2,096·512 = 1,073,152.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign import verify as verify_module
from kvalign.cli import app
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.verify import ProbeRequest, VllmAnswer, verify
from kvalign.vllm_probe import boot, in_tested_range, range_note
from kvalign.vllm_probe.releases import TESTED_RELEASES, adapter_for

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
QWEN3_NEXT = "Qwen/Qwen3-Next-80B-A3B-Instruct"
runner = CliRunner()

#: the hand-derived answers above, per TP
NANO_ANSWERS = {
    1: VllmAnswer(
        vllm_version="0.33.0",
        platform="stand-in (SM 9.0)",
        tp=1,
        backend="FLASH_ATTN",
        kv_heads_per_rank=2,
        attn_page_bytes_per_token=1024,
        mamba_page_bytes=2_134_016,
        mamba_state_shapes=((3, 6144), (64, 64, 128)),
        mamba_state_dtypes=("bfloat16", "float32"),
        block_size=2096,
        kernel_block_size=2096,
        mamba_page_size_padded=2_146_304,
        notes=("stand-in note",),
    ),
    2: VllmAnswer(
        vllm_version="0.33.0",
        platform="stand-in (SM 9.0)",
        tp=2,
        backend="FLASH_ATTN",
        kv_heads_per_rank=1,
        attn_page_bytes_per_token=512,
        mamba_page_bytes=1_067_008,
        mamba_state_shapes=((3, 3072), (32, 64, 128)),
        mamba_state_dtypes=("bfloat16", "float32"),
        block_size=2096,
        kernel_block_size=2096,
        mamba_page_size_padded=1_073_152,
    ),
}


class StandIn:
    """Records requests; answers with NANO_ANSWERS, optionally altered."""

    def __init__(self, version: str = "0.33.0") -> None:
        self.version = version
        self.requests: list[ProbeRequest] = []
        self.mode = "ok"

    def __call__(self, request: ProbeRequest) -> VllmAnswer:
        self.requests.append(request)
        base = VllmAnswer(self.version, "stand-in (SM 9.0)", request.tp, "FLASH_ATTN")
        if self.mode == "raise":
            raise RuntimeError("probe failure: no platform")
        if self.mode == "unknown":
            return dataclasses.replace(base, valid=False, unknown_architecture=True)
        if request.tp not in NANO_ANSWERS:
            return dataclasses.replace(
                base,
                valid=False,
                error="ValueError: Total number of attention heads (32) must be divisible "
                f"by tensor parallel size ({request.tp}).",
            )
        answer = dataclasses.replace(NANO_ANSWERS[request.tp], vllm_version=self.version)
        if self.mode == "block-plus-16":
            block = 2096 + 16
            answer = dataclasses.replace(
                answer,
                block_size=block,
                kernel_block_size=block,
                mamba_page_size_padded=block * (answer.attn_page_bytes_per_token or 0),
            )
        return answer


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    """The stand-in replaces the real probe and the installed-version lookup."""
    probe = StandIn()
    monkeypatch.setattr(verify_module, "default_probe", probe)
    monkeypatch.setattr(verify_module, "installed_vllm_version", lambda: probe.version)
    yield probe


def _json(args: list[str]) -> tuple[int, dict[str, object]]:
    result = runner.invoke(app, ["verify", NANO, *args, "--format", "json"])
    return result.exit_code, json.loads(result.stdout)


def _fields(payload: dict[str, object], tp_index: int) -> dict[str, dict[str, object]]:
    tps = payload["tps"]
    assert isinstance(tps, list)
    return {f["name"]: f for f in tps[tp_index]["fields"]}


def test_identical_exit_0(stand_in: StandIn) -> None:
    code, payload = _json(["--tp", "1,2"])
    assert code == 0
    assert payload["identical"] is True and payload["differences"] == 0
    vllm = payload["vllm"]
    assert isinstance(vllm, dict)
    assert vllm["version"] == "0.33.0" and vllm["tested_release_range"] is True
    tp1, tp2 = _fields(payload, 0), _fields(payload, 1)
    assert tp1["mamba_page_bytes"]["kvalign"] == tp1["mamba_page_bytes"]["vllm"] == 2_134_016
    assert tp1["block_size"] == {
        "name": "block_size", "unit": "tokens", "kvalign": 2096, "vllm": 2096, "same": True
    }  # fmt: skip
    assert tp2["mamba_page_size_padded"]["kvalign"] == 1_073_152
    assert "stand-in note" in payload["notes"]  # type: ignore[operator]


def test_identical_table(stand_in: StandIn) -> None:
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 0, result.stderr
    assert "identical: kvalign matches vLLM" in result.stdout
    assert "2,134,016" in result.stdout and "DIFFERENT" not in result.stdout
    assert "one of the releases verify was measured on" in result.stdout


def test_block_size_difference_exit_1(stand_in: StandIn) -> None:
    stand_in.mode = "block-plus-16"
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 1
    row = next(line for line in result.stdout.splitlines() if "block size" in line)
    assert "2,096" in row and "2,112" in row and "DIFFERENT" in row
    # 2,112 · 1,024 = 2,162,688
    assert "2,162,688" in result.stdout
    code, payload = _json(["--tp", "1"])
    assert code == 1 and payload["identical"] is False
    assert payload["differences"] == 3  # block size, kernel block size, padded page


def test_vllm_missing_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm → ImportError
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "pip install '.[verify]' in a kvalign checkout" in result.stderr
    assert "tested on vLLM 0.14.0–0.33.x" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_probe_raising_one_line_exit_2(stand_in: StandIn) -> None:
    stand_in.mode = "raise"
    result = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "kvalign: error: vLLM raised at TP 1: RuntimeError: probe failure: no platform"
    ]


def test_rejected_tp_both_sides(stand_in: StandIn) -> None:
    # Nemotron-3-Nano has 32 attention heads: TP 3 is rejected by vLLM and kvalign alike
    code, payload = _json(["--tp", "3"])
    assert code == 0
    entry = payload["tps"][0]  # type: ignore[index]
    assert entry["rejected"] == "heads not divisible by tensor parallel size"
    assert entry["vllm_error"].startswith("ValueError: Total number of attention heads (32)")


def test_vllm_refusing_what_kvalign_accepts_is_a_difference(stand_in: StandIn) -> None:
    stand_in.mode = "unknown"
    code, payload = _json(["--tp", "1"])
    assert code == 1 and payload["differences"] == 1
    entry = payload["tps"][0]  # type: ignore[index]
    assert entry["rejected"] is None
    assert entry["vllm_error"] == "vLLM 0.33.0 does not know this architecture"
    table = runner.invoke(app, ["verify", NANO, "--tp", "1"])
    assert table.exit_code == 1 and "does not know this architecture" in table.stdout


@pytest.mark.parametrize(
    ("version", "tested", "words"),
    [
        ("0.40.0", False, "OUTSIDE the range kvalign verify was tested on (0.14.0–0.33.x)"),
        ("0.22.0", True, "lies in the tested range 0.14.0–0.33.x but was not itself measured"),
    ],
)
def test_release_range_is_said_plainly(
    stand_in: StandIn, version: str, tested: bool, words: str
) -> None:
    stand_in.version = version
    _, payload = _json(["--tp", "1"])
    vllm = payload["vllm"]
    assert isinstance(vllm, dict)
    assert vllm["tested_release_range"] is tested and words in vllm["range_note"]
    table = runner.invoke(app, ["verify", NANO, "--tp", "1"]).stdout
    assert words in " ".join(table.split())
    assert ("WARNING" in table) is not tested


def test_flags_reach_the_probe(stand_in: StandIn) -> None:
    args = ["--tp", "2", "--num-speculative-tokens", "2", "--gpu", "B200", "--block-size", "64"]
    runner.invoke(app, ["verify", NANO, *args, "--kv-cache-dtype", "fp8"])
    request = stand_in.requests[-1]
    assert (request.tp, request.num_speculative_tokens, request.gpu) == (2, 2, "B200")
    assert (request.block_size, request.kv_cache_dtype) == (64, "fp8")
    assert request.model.endswith("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")


def test_gpu_the_probe_cannot_assume_exit_2(stand_in: StandIn) -> None:
    result = runner.invoke(app, ["verify", NANO, "--gpu", "MI300X"])
    assert result.exit_code == 2
    assert "--gpu MI300X: verify can run vLLM as if on" in result.stderr
    assert "B200" in result.stderr and stand_in.requests == []


def test_gdn_compared_with_triton_prefill() -> None:
    """On H100 kvalign would align Qwen3-Next to FlashInfer's 64-token checkpoints; the
    probe has no FlashInfer, so verify compares kvalign's Triton answer and says so."""
    seen: list[ProbeRequest] = []

    def probe(request: ProbeRequest) -> VllmAnswer:
        seen.append(request)
        return VllmAnswer("0.33.0", "stand-in", request.tp, "FLASH_ATTN")

    geometry = load_model(QWEN3_NEXT)
    result = verify(geometry, Settings(gpu="H100"), [2], probe=probe, version=lambda: "0.33.0")
    assert result.settings.gdn_prefill_backend == "triton"
    assert any("GDN prefill compared on Triton" in note for note in result.notes)
    assert seen[0].gpu == "H100" and seen[0].attention_backend == "FLASH_ATTN"


def test_adapters_by_release() -> None:
    # where the alignment lives: the config hook up to 0.19, the platform from 0.20
    assert adapter_for("0.14.0").name == "0.14"
    assert adapter_for("0.17.0").name == "0.15–0.17"
    assert adapter_for("0.19.1").name == "0.18–0.19"
    assert adapter_for("0.20.0").name == "0.20–0.28"
    assert adapter_for("0.28.9").name == "0.20–0.28"
    assert adapter_for("0.31.0").name == "0.29–0.33"
    assert adapter_for("0.33.1").name == "0.29–0.33"
    assert adapter_for("0.13.0").name == "0.14"  # nearest, and said to be outside
    assert not adapter_for("0.14.0").mamba_cache_mode and adapter_for("0.17.0").mamba_cache_mode
    assert [in_tested_range(v) for v in ("0.13.9", "0.14.0", "0.33.4", "0.34.0", "x")] == [
        False,
        True,
        True,
        False,
        False,
    ]
    assert all(range_note(v).endswith("measured on") for v in TESTED_RELEASES)


def _probe_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, module: str, source: str
) -> None:
    """A package ``package`` on ``sys.path`` holding ``module`` (``source``, dedented)."""
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))


def test_release_function_compiles_one_function_without_its_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _probe_package(
        tmp_path,
        monkeypatch,
        "probe_pkg",
        "heavy",
        """
            import math
            import module_that_does_not_exist_anywhere

            class Runner:
                @staticmethod
                def pick(block: int, sizes: list[int]) -> int:
                    return max(s for s in sizes if block % s == 0) * math.prod([1])
            """,
    )
    pick = boot.release_function("probe_pkg.heavy", "Runner.pick")
    assert pick(96, [16, 32, 64]) == 32
    assert "probe_pkg.heavy" not in sys.modules
    with pytest.raises(LookupError):
        boot.release_function("probe_pkg.heavy", "Runner.absent")


def test_backend_module_imports_without_flashinfer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    _probe_package(
        tmp_path,
        monkeypatch,
        "probe_backends",
        "fi",
        """
            from flashinfer import BatchPrefillWithPagedKVCacheWrapper
            from flashinfer.decode import trtllm_batch_decode_with_kv_cache

            class Backend:
                @staticmethod
                def get_supported_kernel_block_sizes():
                    return [16, 32, 64]
            """,
    )
    assert importlib.util.find_spec("flashinfer") is None
    module = boot.import_backend_module("probe_backends.fi")
    assert module.Backend.get_supported_kernel_block_sizes() == [16, 32, 64]
    assert importlib.util.find_spec("flashinfer") is None  # gone again
    assert "flashinfer" not in sys.modules


def test_json_stdout_holds_only_the_document(
    stand_in: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM logs to stdout (16 INFO lines before the result in 0.33): they go to stderr."""

    def noisy(request: ProbeRequest) -> VllmAnswer:
        print("INFO 12-01 21:00:00 [config.py:1] vllm log line")
        return stand_in(request)

    monkeypatch.setattr(verify_module, "default_probe", noisy)
    result = runner.invoke(app, ["verify", NANO, "--tp", "1", "--format", "json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["identical"] is True
    assert "vllm log line" in result.stderr


def test_vllm_missing_prints_a_json_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm → ImportError
    result = runner.invoke(app, ["verify", NANO, "--tp", "1", "--format", "json"])
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["exit_code"] == 2 and "needs vLLM importable" in error["message"]
