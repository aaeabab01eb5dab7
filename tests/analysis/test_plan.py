"""``kvalign plan``: hand-derived values for a Mamba2, a GDN and a short-conv model on two
releases and two GPU classes, and the round trip (every ``--emit`` snippet passes audit).

Page sizes follow docs/modelled.md (per rank, bytes): attention page per token
``a = kv_heads_per_rank * head_size * 2 (K and V) * dtype bytes``; Mamba page ``m`` = the sum
of the state tensors; block ``N = align * ceil(m / (align * a))``; padding
``100 * (N*a - m) / m``; tokens lost per GiB ``floor(2**30 * (N*a - m) / (N*a * a))``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.emit import STACK_OF, TARGETS, emit
from kvalign.errors import InvalidSettings
from kvalign.plan import (
    cached_tokens,
    kv_tokens_lost_per_gib,
    lmcache_chunk_size,
    max_num_batched_tokens,
    parse_prefix_lengths,
    plan,
)
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import resolve

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"  # Mamba2 (nemotron_h)
QWEN = "Qwen/Qwen3.5-27B"  # gated delta net
LFM2 = "LiquidAI/LFM2-1.2B"  # short conv


def _plan(model: str, prefill: int, decode: int, **kw: object):  # type: ignore[no-untyped-def]
    stack = str(kw.pop("stack", "vllm"))
    lmcache = bool(kw.pop("lmcache", False))
    return plan(load_model(model), Settings(**kw), prefill, decode, stack=stack, lmcache=lmcache)  # type: ignore[arg-type]


def test_mamba2_nemotron_tp8_tp1() -> None:
    # Nemotron-3-Nano, bf16 KV, ssm float32 (hand-derived below): m(TP1) = 2,134,016;
    # TP 8: conv (4096 + 2*8*128)/8 * 3 * 2 = 4,608, ssm 64/8 * 64 * 128 * 4 = 262,144,
    # m = 266,752. a(TP1) = 2 kv heads * 128 * 2 * 2 = 1,024; a(TP8) = 1 * 128 * 2 * 2 = 512.
    # TP1 needs 16 * ceil(2,134,016 / 16,384) = 2,096; TP8 alone 16 * ceil(266,752 / 8,192)
    # = 528. The common block is 2,096 (TP 8 keeps it: 2,096 * 512 >= 266,752).
    p = _plan(NANO, 8, 1)
    assert p.block_size == 2096
    assert len(p.proven_on) == 5  # every CUDA class: A100, H100, B200, B300, RTX-PRO-6000
    prefill, decode = p.pools
    assert (prefill.own_block_size, decode.own_block_size) == (528, 2096)
    # TP 8: page 2,096 * 512 = 1,073,152; padding (1,073,152 - 266,752) / 266,752
    assert prefill.padding_pct == pytest.approx(100 * 806_400 / 266_752)  # 302.30 %
    assert prefill.kv_tokens_lost_per_gib == 2**30 * 806_400 // (1_073_152 * 512) == 1_575_865
    # TP 1: page 2,096 * 1,024 = 2,146,304; padding 12,288 bytes
    assert decode.padding_pct == pytest.approx(100 * 12_288 / 2_134_016)  # 0.58 %
    assert decode.kv_tokens_lost_per_gib == 6_003
    # granularity over the default lengths 512 ... 32,768: whole 2,096-token blocks are
    # cached: 0, 0, 0, 2,096, 6,288, 14,672, 31,440 → mean 54,496 / 7; tails 65,024 - 54,496
    g = p.granularity
    assert g is not None and g.hit_floor_tokens == 2096
    assert g.expected_cached_tokens == pytest.approx(54_496 / 7)
    assert g.expected_tail_tokens == pytest.approx(10_528 / 7)
    kinds = [c.kind for c in p.candidates]
    assert kinds == ["lower-padding", "tp-change", "tp-stable"]
    # prefill TP 2 (a = 512, m = 1,067,008 → 2,096 with no --block-size) pairs with TP 1
    # at 0.58 % on both sides
    lower = p.candidates[0]
    assert (lower.prefill_tp, lower.decode_tp, lower.block_size) == (2, 1, 2096)
    assert p.max_num_batched_tokens is None  # 0.33 has no align-mode check


def test_mamba2_max_num_batched_tokens_on_0_25() -> None:
    # vLLM 0.25 asserts block_size <= max_num_batched_tokens in Mamba cache mode align:
    # the smallest multiple of 2,096 at or above 8,192 is 4 * 2,096 = 8,384
    p = _plan(
        NANO,
        2,
        1,
        vllm_version="0.25.0",
        gpu="H100",
        enable_prefix_caching=True,
        mamba_cache_mode="align",
    )
    assert (p.block_size, p.max_num_batched_tokens) == (2096, 8384)
    names = {s.name: s.value for s in p.dependent}
    assert names["--max-num-batched-tokens"] == "8384"


@pytest.mark.parametrize(
    ("first", "expected"),
    [("0.16.0", None), ("0.17.0", 8384), ("0.26.0", 8384), ("0.27.0", None)],
)
def test_max_num_batched_tokens_releases(first: str, expected: int | None) -> None:
    # read in each release's vllm/config/vllm.py: the check is in 0.17.0 .. 0.26.x only
    profile = resolve(first).profile
    assert max_num_batched_tokens(2096, profile, "align") == expected
    assert max_num_batched_tokens(2096, profile, "none") is None


def test_gdn_qwen35_depends_on_gpu_and_release() -> None:
    # Qwen3.5-27B: conv dim 2*16*128 + 48*128 = 10,240, kernel 4, bf16; recurrent state
    # 48 heads * 128 * 128 float32 (mamba_ssm_dtype). TP 4: m = 2,560*3*2 + 12*16,384*4
    # = 801,792, a = 1 kv head * 256 * 2 * 2 = 1,024. TP 2: m = 1,603,584, a = 2,048.
    # A100: align 16 → 16 * ceil(801,792 / 16,384) = 784 at both TPs.
    a100 = _plan(QWEN, 4, 2, gpu="A100")
    assert a100.block_size == 784
    assert a100.pools[0].padding_pct == pytest.approx(100 * (784 * 1024 - 801_792) / 801_792)
    # H100 on 0.33: the FlashInfer GDN prefill checkpoints every 64 tokens, align 64 →
    # 64 * ceil(801,792 / 65,536) = 832 at both TPs; padding 50,176 / 801,792 = 6.26 %
    h100 = _plan(QWEN, 4, 2, gpu="H100")
    assert h100.block_size == 832
    assert h100.pools[0].padding_pct == pytest.approx(100 * 50_176 / 801_792)
    assert h100.pools[0].kv_tokens_lost_per_gib == 2**30 * 50_176 // (832 * 1024 * 1024)
    # 0.27 has no GDN checkpoint alignment: 784 on H100 too, and prefix caching is off
    # by default there (0.11.1-0.27), so nothing is cached
    old = _plan(QWEN, 4, 2, gpu="H100", vllm_version="0.27.0")
    assert old.block_size == 784
    assert old.granularity is not None and not old.granularity.prefix_caching
    assert old.granularity.expected_cached_tokens == 0
    # no --gpu: 784 on A100 but 832 on H100, so only 832 holds everywhere
    every = _plan(QWEN, 4, 2)
    assert every.block_size == 832
    assert every.pools[0].own_block_size == 784  # what A100, the first class, picks


def test_short_conv_lfm2() -> None:
    # LFM2-1.2B: conv state (2,048 / TP) * (3 - 1) * 2 bytes; a = 8 kv heads / TP * 64 * 4.
    # TP 1: m = 8,192, a = 2,048 → one 16-token block (page 32,768); TP 2: m = 4,096,
    # a = 1,024 (page 16,384). Padding 300 % on both.
    p = _plan(LFM2, 1, 2, lmcache=True)
    assert p.block_size == 16
    assert [x.padding_pct for x in p.pools] == [pytest.approx(300.0)] * 2
    assert [x.kv_tokens_lost_per_gib for x in p.pools] == [
        2**30 * 24_576 // (32_768 * 2_048),  # 393,216
        2**30 * 12_288 // (16_384 * 1_024),  # 786,432
    ]
    assert p.lmcache_chunk_size == 256  # 16 divides LMCache's default 256
    mine = _plan(LFM2, 1, 2, block_size=64)  # the plan chooses the block size itself
    assert mine.block_size == 16
    assert "--block-size 64 is ignored: the plan chooses it" in mine.notes
    spec = _plan(LFM2, 1, 2, num_speculative_tokens=2)
    assert spec.granularity is not None and spec.granularity.hit_floor_tokens == 32


def test_no_block_size_proposes_a_release() -> None:
    # vLLM 0.17's NIXL connector does not serve hybrids; 0.20 pairs them at different TP
    p = _plan(NANO, 2, 1, vllm_version="0.17.0")
    assert p.block_size is None and not p.found
    assert any("0.20.0" in line for line in p.no_fix)
    assert any(line.startswith("vLLM 0.20.0: --block-size 2096") for line in p.proposals)
    with pytest.raises(InvalidSettings):
        emit(p, "vllm-args")


def test_no_block_size_proposes_a_tp_change() -> None:
    # vLLM 0.19 pairs Mamba hybrids over NIXL only at equal TP: prefill TP 1 or decode TP 2
    # would work (2,096 at TP 1 and 2: a = 1,024 / 512, m = 2,134,016 / 1,067,008), as would
    # vLLM 0.20.0 at the requested TP sizes
    p = _plan(NANO, 2, 1, vllm_version="0.19.1")
    assert p.block_size is None
    assert [line.split(":")[0] for line in p.proposals] == [
        "prefill TP 1, decode TP 1",
        "prefill TP 2, decode TP 2",
        "vLLM 0.20.0",
    ]


@pytest.mark.parametrize(
    ("block", "chunk"), [(16, 256), (64, 256), (96, 288), (100, 300), (784, 784), (2096, 2096)]
)
def test_lmcache_chunk_size(block: int, chunk: int) -> None:
    # nearest multiple of the block to 256: 96 → 288 (32 away) not 192 (64 away)
    assert lmcache_chunk_size(block) == chunk
    assert chunk % block == 0


def test_cached_tokens_and_lengths() -> None:
    assert cached_tokens(4095, 2048, 1) == 2048
    assert cached_tokens(4095, 2048, 2) == 0  # speculative: the last matched block drops
    assert cached_tokens(6144, 2048, 2) == 4096
    assert kv_tokens_lost_per_gib(16, 1024, 16 * 1024) == 0
    assert parse_prefix_lengths("100\n\n# note\n200 # two\n", "f") == (100, 200)
    with pytest.raises(InvalidSettings, match="f: line 2"):
        parse_prefix_lengths("1\nx\n", "f")
    with pytest.raises(InvalidSettings, match="no prompt length"):
        parse_prefix_lengths("# empty\n", "f")


ROUND_TRIP = [
    (NANO, 8, 1, {}, False),
    (QWEN, 4, 2, {"gpu": "H100"}, True),
    (LFM2, 1, 2, {"vllm_version": "0.20.0", "gpu": "A100"}, True),
    ("tiiuae/falcon-mamba-7b", 2, 1, {}, False),  # attention-free: nothing to align
    (
        NANO,
        2,
        1,
        {
            "vllm_version": "0.25.0",
            "enable_prefix_caching": True,
            "mamba_cache_mode": "align",
            "gpu": "B200",
        },
        True,
    ),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("model", "prefill", "decode", "kw", "lmcache"), ROUND_TRIP)
def test_round_trip(
    tmp_path: Path,
    target: str,
    model: str,
    prefill: int,
    decode: int,
    kw: dict[str, object],
    lmcache: bool,
) -> None:
    p = _plan(model, prefill, decode, stack=STACK_OF[target], lmcache=lmcache, **kw)
    assert p.block_size is not None
    suffix = ".sh" if target == "vllm-args" else ".yaml"
    path = tmp_path / f"snippet{suffix}"
    path.write_text(emit(p, target), encoding="utf-8")
    args = ["audit", str(path), "--vllm-version", p.release_first, "--format", "json"]
    if kw.get("gpu"):
        args += ["--gpu", str(kw["gpu"])]
    result = runner.invoke(app, args)
    doc = json.loads(result.stdout)
    assert result.exit_code == 0, doc["findings"]
    assert doc["findings"] == []
    pools = [pool for f in doc["files"] for pool in f["pools"]]
    block = p.block_size if p.aligned else None  # attention-free pools report no block
    assert sorted((x["role"], x["tp"], x["block_size"]) for x in pools) == sorted(
        [("prefill", prefill, block), ("decode", decode, block)]
    )
    if lmcache:  # audit really reads the snippet's LMCache chunk: a wrong one is found
        chunk = re.compile(r"(LMCACHE_CHUNK_SIZE(?:=|: |\n\s*value: )'?)(\d+)")
        text, count = chunk.subn(lambda m: m.group(1) + str(int(m.group(2)) + 1), path.read_text())
        assert count == 2  # one per pool
        path.write_text(text, encoding="utf-8")
        again = json.loads(runner.invoke(app, args).stdout)
        assert "KVA007" in {f["rule"] for f in again["findings"]}


@pytest.mark.parametrize("target", ["llm-d-values", "kserve", "dynamo"])
def test_round_trip_router_block_size_is_read(tmp_path: Path, target: str) -> None:
    p = _plan(QWEN, 4, 2, stack=STACK_OF[target], gpu="H100")
    text = emit(p, target)
    router = {
        "llm-d-values": "blockSizeTokens: 832",
        "kserve": "blockSizeTokens: 832",
        "dynamo": "value: '832'",
    }[target]
    assert router in text
    path = tmp_path / "snippet.yaml"
    path.write_text(text.replace(router, router.replace("832", "784")), encoding="utf-8")
    result = runner.invoke(app, ["audit", str(path), "--gpu", "H100", "--format", "json"])
    assert {f["rule"] for f in json.loads(result.stdout)["findings"]} == {"KVA006"}


def test_cli_table_fits_80_columns_answer_first() -> None:
    result = runner.invoke(
        app,
        ["plan", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--lmcache", "--stack", "dynamo"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("BLOCK SIZE 2096")
    assert max(len(line) for line in lines) <= 80
    assert "DYN_KV_CACHE_BLOCK_SIZE" in result.stdout


def test_cli_json_and_exit_codes(tmp_path: Path) -> None:
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("4096\n100\n", encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "plan",
            NANO,
            "--prefill-tp",
            "8",
            "--decode-tp",
            "1",
            "--prefix-lengths",
            str(lengths),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["block_size"] == 2096
    # 4,096 tokens: one cached block (2,096), 2,000 at the tail; 100 tokens: all tail
    assert doc["granularity"]["expected_cached_tokens"] == 1048
    assert doc["granularity"]["expected_tail_tokens"] == 1050
    assert doc["granularity"]["distribution"] == str(lengths)
    none = runner.invoke(
        app, ["plan", NANO, "--prefill-tp", "2", "--vllm-version", "0.17.0", "--emit", "dynamo"]
    )
    assert none.exit_code == 1 and none.stdout == ""
    assert "no block size serves every pool" in none.stderr
    lengths.write_text("ten\n", encoding="utf-8")
    bad = runner.invoke(app, ["plan", NANO, "--prefix-lengths", str(lengths)])
    assert bad.exit_code == 2
    assert bad.stderr.count("\n") == 1 and "line 1" in bad.stderr


COMPOSE = """
services:
  proxy:
    image: nginx:1.27
  vllm-prefill:
    image: vllm/vllm-openai:v0.33.0
    command: >-
      vllm serve nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 -tp 8
      --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'
  decode:
    image: vllm/vllm-openai:v0.33.0
    command: [nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, -tp, "1"]
    environment: [LMCACHE_CHUNK_SIZE=256]
"""


def test_audit_reads_compose(tmp_path: Path) -> None:
    # the demo pair (TP 8: 528-token blocks, TP 1: 2,096) in a Compose file: the string
    # command (with `vllm serve` spelled out) and the list command are both read, the
    # nginx service is not a pool, the role of `decode` comes from its name
    path = tmp_path / "compose.yaml"
    path.write_text(COMPOSE, encoding="utf-8")
    result = runner.invoke(app, ["audit", str(path), "--format", "json"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 1
    pools = sorted((p["role"], p["tp"], p["block_size"]) for p in doc["files"][0]["pools"])
    assert pools == [("decode", 1, 2096), ("prefill", 8, 528)]
    assert "KVA001" in {f["rule"] for f in doc["findings"]}
    assert doc["files"][0]["kind"] == "compose"
    path.write_text(COMPOSE.replace("[LMCACHE_CHUNK_SIZE=256]", "7"), encoding="utf-8")
    bad = runner.invoke(app, ["audit", str(path)])
    assert bad.exit_code == 2 and "services.decode.environment" in bad.stderr


def test_cli_table_says_when_no_block_size_exists() -> None:
    result = runner.invoke(
        app, ["plan", NANO, "--prefill-tp", "2", "--vllm-version", "0.19.1"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("NO COMMON BLOCK SIZE")
    assert any(line.startswith("  would work: prefill TP 1, decode TP 1") for line in lines)
    assert max(len(line) for line in lines) <= 80
    doc = json.loads(
        runner.invoke(app, ["plan", NANO, "--prefill-tp", "2", "--vllm-version", "0.19.1",
                            "--format", "json"]).stdout
    )  # fmt: skip
    assert doc["block_size"] is None and doc["granularity"] is None
    assert doc["proposals"][-1].startswith("vLLM 0.20.0")


def test_emit_keeps_skip_layers_and_the_hidden_state_method(tmp_path: Path) -> None:
    # LFM2-1.2B fp8 with layer 2 skipped is 32 on 0.33 (skip-layers-0.33.0.jsonl); the
    # snippet must launch what was planned: the skip list in vLLM's nargs="+" spelling and
    # the method with its count (SpeculativeConfig refuses a method without
    # num_speculative_tokens, _verify_args, and 0, Field(gt=0), vllm/config/speculative.py)
    p = _plan(LFM2, 1, 1, kv_cache_dtype="fp8", kv_cache_dtype_skip_layers=("2", "5"),
              speculative_method="extract_hidden_states", num_speculative_tokens=1,
              eagle_aux_hidden_state_layer_ids=(1, 2), vllm_version="0.33.0")  # fmt: skip
    assert p.block_size == 32
    text = emit(p, "vllm-args")
    assert text.count(" --kv-cache-dtype-skip-layers 2 5 ") == 2
    spec = '{"method":"extract_hidden_states","num_speculative_tokens":1,"draft_model_config":'
    assert text.count(spec + '{"hf_config":{"eagle_aux_hidden_state_layer_ids":[1,2]}}}') == 2
    path = tmp_path / "serve.sh"
    path.write_text(text, encoding="utf-8")
    done = runner.invoke(app, ["audit", str(path), "--vllm-version", "0.33.0", "--format", "json"])
    assert done.exit_code == 0, done.stdout
    pools = [pool for f in json.loads(done.stdout)["files"] for pool in f["pools"]]
    assert [pool["block_size"] for pool in pools] == [32, 32]
