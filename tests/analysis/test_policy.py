"""One verdict everywhere: check's exit equals audit's on the same pools written
as a `vllm serve` script, as Kubernetes Deployments and as kvalign YAML; the JUnit, SARIF
and GitHub counts agree with the exit code; fixes hold on every GPU class they claim."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.policy import drift_level, exit_code, verdict_level
from kvalign.settings import Settings
from kvalign.sources import load_model
from tests.resolve import rank_of

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
FALCON = "tiiuae/Falcon-H1-0.5B-Base"
QWEN397 = "Qwen/Qwen3.5-397B-A17B"
LLAMA = str(Path(__file__).resolve().parents[1] / "data" / "llama-pd" / "model")

#: (id, model, prefill TP, decode TP, vllm serve flags, --gpu, check's verdict, exit).
#: Verdicts and exits hand-checked against the arithmetic (see the comments).
CASES = [
    # 528 vs 2096 (bf16 KV): a 16-token split needs 131 > 128 units
    ("incompatible", NANO, 8, 1, [], None, "incompatible", 1),
    # fp8 KV: 1056 vs 4176, gcd 48, 87 units: the 0.33 split path
    ("split", NANO, 8, 1, ["--kv-cache-dtype", "fp8"], None, "split", 1),
    # FlashInfer 32 vs 64-token kernels: block_size_ratio 2
    ("ratio-flashinfer", NANO, 1, 4,
     ["--kv-cache-dtype", "fp8_e4m3", "--block-size", "32", "--attention-backend", "FLASHINFER"],
     None, "ratio", 1),
    # FlashInfer: 16-token kernels on both, logical 528 vs 2096, prefix caching on: error
    ("drift-caching-on", NANO, 8, 1, ["--attention-backend", "FLASHINFER"], None, "drift", 1),
    # the same with prefix caching off on both pools: info, passes
    ("drift-caching-off", NANO, 8, 1,
     ["--attention-backend", "FLASHINFER", "--no-enable-prefix-caching"], None, "drift", 0),
    ("ok-same-tp", NANO, 8, 8, [], None, "ok", 0),
    # the proven fix fed back: 2096 on both sides
    ("ok-user-block", NANO, 8, 1, ["--block-size", "2096"], None, "ok", 0),
    # TP 16: n_groups 8 cannot shard (MambaMixer2)
    ("invalid", NANO, 16, 1, [], None, "invalid", 1),
    # Falcon-H1 on Triton: 400 vs 800, ratio 2
    ("ratio-triton", FALCON, 4, 1, ["--attention-backend", "TRITON_ATTN"], None, "ratio", 1),
    # a plain Llama pair: attention-only, nothing to align
    ("nothing-to-align", LLAMA, 8, 1, [], None, "nothing-to-align", 0),
    # H200: vLLM raises --block-size 2096 to 8384 on both pools (a warning: passes)
    ("user-block-raised-h200", QWEN397, 8, 1, ["--block-size", "2096"], "H200", "ok", 0),
    # the release's NIXL connector serves no hybrid models
    ("old-release", "Qwen/Qwen3-Next-80B-A3B-Instruct", 2, 2, [], None, "incompatible", 1),
]  # fmt: skip
_VERSIONS = {"old-release": "0.10.2"}

_KV = '{"kv_connector":"NixlConnector","kv_role":"%s"}'


def _script(model: str, ptp: int, dtp: int, flags: list[str]) -> str:
    extra = " ".join(f"'{f}'" for f in flags)
    return (
        f"vllm serve {model} --tensor-parallel-size {ptp} {extra} "
        f"--kv-transfer-config '{_KV % 'kv_producer'}' &\n"
        f"vllm serve {model} --tensor-parallel-size {dtp} {extra} "
        f"--kv-transfer-config '{_KV % 'kv_consumer'}' &\n"
    )


def _deployment(name: str, role: str, model: str, tp: int, flags: list[str]) -> str:
    args = [f"--model={model}", f"--tensor-parallel-size={tp}", *flags,
            f"--kv-transfer-config={_KV % 'kv_both'}"]  # fmt: skip
    items = "\n".join(f"        - {json.dumps(a)}" for a in args)
    return f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}-{role}
  labels: {{llm-d.ai/role: {role}, app: {name}}}
spec:
  template:
    metadata:
      labels: {{llm-d.ai/role: {role}, app: {name}}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args:
{items}
"""


def _own(model: str, ptp: int, dtp: int, flags: list[str], version: str | None) -> str:
    args = json.dumps([*flags, "--kv-transfer-config", _KV % "kv_both"])
    head = f"model: {json.dumps(model)}\n"
    if version:
        head += f'vllm_version: "{version}"\n'
    return head + f"prefill:\n  tp: {ptp}\n  args: {args}\ndecode:\n  tp: {dtp}\n  args: {args}\n"


def _check(model: str, ptp: int, dtp: int, flags: list[str], gpu: str | None,
           version: str | None) -> dict:  # type: ignore[type-arg]  # fmt: skip
    argv = ["check", model, "--prefill-tp", str(ptp), "--decode-tp", str(dtp), *flags]
    argv += ["--gpu", gpu] if gpu else []
    argv += ["--vllm-version", version] if version else []
    result = runner.invoke(app, [*argv, "--format", "json"])
    data = json.loads(result.stdout)
    assert result.exit_code == data["exit_code"], result.stderr
    return data  # type: ignore[no-any-return]


def _audit(path: Path, gpu: str | None, version: str | None, fmt: str = "json") -> tuple[int, str]:
    argv = ["audit", str(path), "--format", fmt]
    argv += ["--gpu", gpu] if gpu else []
    argv += ["--vllm-version", version] if version else []
    result = runner.invoke(app, argv)
    return result.exit_code, result.stdout


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_check_and_audit_exit_alike_in_every_input_kind(
    case: tuple,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    name, model, ptp, dtp, flags, gpu, verdict, code = case
    version = _VERSIONS.get(name)
    data = _check(model, ptp, dtp, flags, gpu, version)
    assert [p["verdict"] for p in data["pairs"]] == [verdict]
    assert data["exit_code"] == code
    # the same word in the table and Markdown output
    argv = ["check", model, "--prefill-tp", str(ptp), "--decode-tp", str(dtp), *flags]
    argv += ["--gpu", gpu] if gpu else []
    argv += ["--vllm-version", version] if version else []
    table = runner.invoke(app, argv)
    assert table.exit_code == code and f" ({verdict}): " in table.stdout.splitlines()[1]
    markdown = runner.invoke(app, [*argv, "--format", "markdown"])
    assert markdown.exit_code == code and f"| {verdict} |" in markdown.stdout
    files = {
        "pd.sh": _script(model, ptp, dtp, flags),
        "k8s.yaml": _deployment(name, "prefill", model, ptp, flags)
        + "---\n"
        + _deployment(name, "decode", model, dtp, flags),
        "kvalign.yaml": _own(model, ptp, dtp, flags, None),
    }
    for filename, text in files.items():
        path = tmp_path / filename
        path.write_text(text)
        audit_code, out = _audit(path, gpu, version)
        _, audit_md = _audit(path, gpu, version, "markdown")
        assert f"| {verdict} |" in audit_md, filename
        report = json.loads(out)
        pairs = [p["verdict"] for g in report["groups"] for p in g["pairs"]]
        assert pairs == [verdict], (filename, report["unevaluated"])
        assert audit_code == code, (filename, report["findings"])
        # the machine formats agree with the exit code
        _, junit = _audit(path, gpu, version, "junit")
        suite = ET.fromstring(junit).find("testsuite")
        assert suite is not None
        assert (int(suite.get("failures", "0")) > 0) == (code == 1), filename
        _, sarif = _audit(path, gpu, version, "sarif")
        levels = [r["level"] for r in json.loads(sarif)["runs"][0]["results"]]
        assert ("error" in levels) == (code == 1), (filename, levels)
        _, github = _audit(path, gpu, version, "github")
        assert ("::error " in github) == (code == 1), filename


def test_severity_table() -> None:
    assert [verdict_level(v, True, True) for v in ("ok", "ratio", "split", "incompatible",
                                                  "invalid", "nothing-to-align")] == [
        None, "error", "error", "error", "error", None,
    ]  # fmt: skip
    assert [drift_level(True, True), drift_level(True, False), drift_level(False, False)] == [
        "error", "warning", "info",
    ]  # fmt: skip
    assert exit_code(["warning"], "error") == 0 and exit_code(["warning"], "warning") == 1
    assert exit_code([None, "info"], "info") == 1 and exit_code([None], "info") == 0
    with pytest.raises(KeyError):
        exit_code([], "fatal")


def test_fail_on_works_on_check_and_matrix() -> None:
    # drift with prefix caching off is info: passes by default, fails at --fail-on info
    args = ["--attention-backend", "FLASHINFER", "--no-enable-prefix-caching"]
    base = ["check", NANO, "--prefill-tp", "8", "--decode-tp", "1", *args]
    assert runner.invoke(app, base).exit_code == 0
    assert runner.invoke(app, [*base, "--fail-on", "info"]).exit_code == 1
    matrix = ["matrix", NANO, "--tp", "1,8", *args]
    assert runner.invoke(app, matrix).exit_code == 0
    assert runner.invoke(app, [*matrix, "--fail-on", "info"]).exit_code == 1
    assert runner.invoke(app, [*base, "--fail-on", "fatal"]).exit_code == 2


def test_qwen35_fix_is_2112_and_holds_on_every_gpu_class() -> None:
    # 2096 would be raised to lcm(2096, 64) = 8384 on H100/H200/B200 (FlashInfer GDN
    # prefill checkpoints every 64 tokens with prefix caching): 2112 = 33 x 64 holds
    data = _check(QWEN397, 8, 1, [], None, None)
    rec = data["recommendation"]
    assert rec["block_size"] == 2112 and rec["change"] == "--block-size 2112"
    assert rec["proven_on"] == [
        "A100 (SM80)", "H100/H200 (SM90)", "B200 (SM100)", "B300 (SM103)",
        "RTX-PRO-6000 (SM120)",
    ]  # fmt: skip
    assert data["answer"][-1].startswith("Fix: --block-size 2112 on every prefill and decode")
    geometry = load_model(QWEN397)
    for gpu in ("A100", "H100", "H200", "B200", "B300", "RTX-PRO-6000"):
        for tp in (8, 1):
            kept = rank_of(geometry, Settings(block_size=2112, gpu=gpu), tp).block_size
            assert kept == 2112, (gpu, tp)
    raised = rank_of(geometry, Settings(block_size=2096, gpu="H200"), 8).block_size
    assert raised == 8384
    # the user's own 2096 is reported as raised where it is
    data = _check(QWEN397, 8, 1, ["--block-size", "2096"], None, None)
    assert data["recommendation"]["raised"][0] == (
        "prefill TP 8: vLLM raises --block-size 2096 to 8,384 on H100/H200 (SM90), "
        "B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120)"
    )


def test_pinned_gpu_fix_for_audit(tmp_path: Path) -> None:
    # an llm-d case: pinned to H200 the fix must not be 1056 (vLLM makes it
    # 2112 there): Qwen3.5-397B TP 8 prefill (528) and TP 16 decode (272)
    path = tmp_path / "pd.sh"
    path.write_text(_script(QWEN397, 8, 16, []))
    _, out = _audit(path, "H200", None)
    fixes = {f["remediation"] for f in json.loads(out)["findings"] if f["rule"] == "KVA001"}
    (fix,) = fixes
    assert fix.startswith("set --block-size ") and fix.endswith("(holds on H200)")
    block = int(fix.split()[2])
    assert block % 64 == 0 and block != 1056
    geometry = load_model(QWEN397)
    for tp in (8, 16):
        assert rank_of(geometry, Settings(block_size=block, gpu="H200"), tp).block_size == (block)


def test_no_block_size_when_the_release_cannot_pair_hybrids() -> None:
    data = _check("Qwen/Qwen3-Next-80B-A3B-Instruct", 2, 2, [], None, "0.10.2")
    rec = data["recommendation"]
    assert rec["block_size"] is None and rec["change"] is None
    assert rec["blockers"] == [
        "vLLM 0.10's NIXL connector does not serve hybrid models: upgrade to vLLM 0.18.0 or "
        "later (the first release with hybrid P/D over NIXL), then check again with "
        "--vllm-version 0.18.0: a common block size may still be needed there"
    ]
    assert "--block-size" not in data["answer"][-1].replace("no --block-size can", "")


def test_attention_only_model_is_nothing_to_align_in_audit_of_a_folder() -> None:
    folder = Path(__file__).resolve().parents[1] / "data" / "llama-pd"
    for extra in ([], ["--skip-unrelated"]):
        result = runner.invoke(app, ["audit", str(folder), *extra, "--format", "json"])
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["findings"] == []
        assert report["notes"] == [
            f"prefill/command-1 → decode/command-2 ({'tests/data/llama-pd/model'}): nothing "
            "to align: attention-only model: no hybrid alignment; block size 16 on both"
        ]


def test_spec_decoding_floor_in_explain_and_check() -> None:
    # Qwen3.6-27B TP 1: block 800 with 3 speculative tokens (a longer conv state) and the
    # smallest prefix that gives a hit is two blocks = 1,600 tokens; 784 without
    out = runner.invoke(
        app, ["explain", "Qwen/Qwen3.6-27B", "--tp", "1", "--num-speculative-tokens", "3"]
    ).stdout
    assert "smallest prefix that gives a hit 1,600 tokens (2 blocks" in out
    plain = runner.invoke(app, ["explain", "Qwen/Qwen3.6-27B", "--tp", "1"]).stdout
    assert "smallest prefix that gives a hit 784 tokens (one block)" in plain
    off = runner.invoke(
        app, ["explain", "Qwen/Qwen3.6-27B", "--tp", "1", "--no-enable-prefix-caching"]
    ).stdout
    assert "Prefix caching: off (no prefix-cache economics)" in off
    check = runner.invoke(app, ["check", NANO, "--no-enable-prefix-caching"]).stdout
    assert "smallest prefix" not in check


def test_matrix_shows_the_tp_stable_what_if_grid_but_gates_on_vllm() -> None:
    argv = ["matrix", NANO, "--tp", "4,8", "--alignment", "tp-stable", "--format", "markdown"]
    result = runner.invoke(app, argv)
    # vLLM: 1056 (TP 4) vs 528 (TP 8) fail; the proposal: 2096 everywhere
    assert result.exit_code == 1
    out = result.stdout
    assert "| TP 4 | 1,056→1,056 ok | 1,056→528 split |" in out
    what_if = out.split("### What-if: TP-stable (vLLM PR 45575 proposal)", 1)[1]
    assert "| TP 4 | 2,096→2,096 ok | 2,096→2,096 ok |" in what_if
    assert "What-if TP-stable (vLLM PR 45575 proposal), in no vLLM release, not gated: " in out


def test_equal_tp_release_limit_says_what_would_fix_it() -> None:
    # vLLM 0.18-0.19's NIXL pairs Mamba hybrids only at equal TP; 0.20 is the first without it
    data = _check(NANO, 8, 1, [], None, "0.19.1")
    assert data["recommendation"]["blockers"] == [
        "vLLM 0.18's NIXL connector pairs Mamba hybrids only at equal TP: use the same "
        "prefill and decode TP, or upgrade to vLLM 0.20.0 or later (then check again with "
        "--vllm-version 0.20.0)"
    ]
    # 0.10 serves no hybrids at all: at different TPs the first release doing both is 0.20
    data = _check(NANO, 8, 1, [], None, "0.10.2")
    assert data["recommendation"]["blockers"][0].endswith(
        "upgrade to vLLM 0.20.0 or later (the first release with hybrid P/D over NIXL at "
        "different prefill/decode TP), then check again with --vllm-version 0.20.0: a "
        "common block size may still be needed there"
    )


def test_the_upgrade_advice_names_the_check_that_follows_it() -> None:
    # vLLM 0.14 serves no hybrids over NIXL; the advice is 0.20.0 (first with different
    # prefill/decode TP). On 0.20.0 the same pair still fails without a --block-size:
    # hybrid prefix caching is off by default there, so the logical blocks are the
    # 16-unit ones (TP 2: 2096, TP 4: 1056, see tests/cli/test_survey.py), and FLASH_ATTN
    # offers only 16/32/64-token kernel blocks for a float32 Mamba state: 2096 = 16 x 131
    # -> 16, 1056 = 32 x 33 -> 32. 0.20's NIXL needs equal kernel blocks for hybrids, so
    # the advice must not read as "upgrade and it works".
    old = _check(NANO, 2, 4, [], None, "0.14.0")
    assert old["recommendation"]["blockers"][0].endswith(
        "then check again with --vllm-version 0.20.0: a common block size may still be needed there"
    )
    new = _check(NANO, 2, 4, [], None, "0.20.0")
    pair = new["pairs"][0]
    assert (pair["prefill_kernel_block_size"], pair["decode_kernel_block_size"]) == (16, 32)
    assert pair["verdict"] == "incompatible" and new["exit_code"] == 1
    assert pair["reason"] == (
        "kernel block sizes differ (16 vs 32) and vLLM 0.20's NIXL connector requires equal "
        "block sizes for hybrid models"
    )
    # the proven fix there: 2096 on both (TP 4's 1056 < 2096 is kept; kernel 16 on both)
    assert new["recommendation"]["block_size"] == 2096


def test_no_block_size_is_claimed_when_the_backends_differ(tmp_path: Path) -> None:
    # prefill on FlashInfer (kernel blocks 16/32/64), decode on FLASH_ATTN (kernel = the
    # block): 2096 on both sides still leaves kernel 16 vs 2096 (ratio 131), so no
    # --block-size is proven; the fix names the real cause
    path = tmp_path / "pd.sh"
    text = _script(NANO, 8, 1, [])
    path.write_text(text.replace("--tensor-parallel-size 8", "--tensor-parallel-size 8 "
                                 "--attention-backend FLASHINFER", 1))  # fmt: skip
    code, out = _audit(path, None, None)
    fixes = {f["remediation"] for f in json.loads(out)["findings"]}
    assert code == 1
    assert fixes == {
        "no --block-size fixes every pair: with --block-size 2096 on A100 (SM80), "
        "prefill/command-1 → decode/command-2 is still ratio: block_size_ratio 131: decode "
        "kernel block 2096 = 131 x prefill 16; heterogeneous-block handling on the decode "
        "path; the pools run different attention backends (FLASHINFER, FLASH_ATTN): use the "
        "same --attention-backend on every pool"
    }


def test_proof_classes_follow_the_platform_and_pinned_pools(tmp_path: Path) -> None:
    # a ROCm-only backend without --gpu: the fix is proven on the ROCm class only
    data = _check(NANO, 8, 1, ["--attention-backend", "ROCM_ATTN"], None, None)
    assert data["recommendation"]["proven_on"] == ["ROCm (MI300X)"]
    # prefill pinned to H200 by nodeSelector, decode unknown: every CUDA class for the
    # decode pool, with the pinned prefill alongside. With no --attention-backend each pool
    # runs what vLLM picks for its GPU: FLASH_ATTN on the H200, FLASHINFER if the decode pool
    # lands on a B200, so no --block-size can make them agree there
    fixes = {}
    for flags in ([], ["--attention-backend", "FLASH_ATTN"]):
        prefill = _deployment("mix", "prefill", QWEN397, 8, flags).replace(
            "      containers:",
            "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}\n      containers:",
        )
        path = tmp_path / "k8s.yaml"
        path.write_text(prefill + "---\n" + _deployment("mix", "decode", QWEN397, 1, flags))
        _, out = _audit(path, None, None)
        (fix,) = {f["remediation"] for f in json.loads(out)["findings"] if f["rule"] == "KVA001"}
        fixes[bool(flags)] = fix
    assert fixes[False].startswith(
        "no --block-size fixes every pair: with --block-size 2112 on B200"
    )
    assert fixes[False].endswith(
        "the pools run different attention backends (FLASHINFER, FLASH_ATTN): use the same "
        "--attention-backend on every pool"
    )
    # both pools on FLASH_ATTN: a decode pool on a B200 pages head size 256 in 128-token
    # kernel blocks (FlashAttention 4 on SM10x, 0.29+) while the H200 prefill keeps the
    # whole block as its kernel block: 2176 vs 128 split, whatever the block size
    assert fixes[True].startswith(
        "no --block-size fixes every pair: with --block-size 2176 on B200 (SM100), "
        "prefill/mix-prefill → decode/mix-decode is still split"
    )
    # both pools pinned to H200: proven there only; GDN FlashInfer checkpoints (64) on SM90,
    # so 2112 = 33 x 64 covers TP 1's 2096
    pinned = "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}\n      containers:"
    both = [_deployment("mix", role, QWEN397, tp, []).replace("      containers:", pinned)
            for role, tp in (("prefill", 8), ("decode", 1))]  # fmt: skip
    path.write_text("---\n".join(both))
    _, out = _audit(path, None, None)
    (fix,) = {f["remediation"] for f in json.loads(out)["findings"] if f["rule"] == "KVA001"}
    assert fix == ("set --block-size 2112 on every prefill and decode pool (holds on H200)")


def test_drift_with_prefix_caching_on_one_pool_only_is_a_warning(tmp_path: Path) -> None:
    # FlashInfer: kernel blocks 16 = 16, logical 528 vs 2096; prefix caching off on the
    # prefill pool only -> KVA001 warning: passes the default gate, fails --fail-on warning
    text = _script(NANO, 8, 1, ["--attention-backend", "FLASHINFER"])
    path = tmp_path / "pd.sh"
    path.write_text(text.replace("'FLASHINFER'", "'FLASHINFER' --no-enable-prefix-caching", 1))
    code, out = _audit(path, None, None)
    findings = json.loads(out)["findings"]
    assert code == 0
    assert [(f["rule"], f["severity"]) for f in findings] == [("KVA001", "warning")]
    assert findings[0]["message"].endswith(
        "prefix caching is on for the decode pool only, so no prefix is shared anyway"
    )
    result = runner.invoke(app, ["audit", str(path), "--fail-on", "warning"])
    assert result.exit_code == 1


@given(st.lists(st.sampled_from(["error", "warning", "info", None]), max_size=6))
def test_a_stricter_fail_on_never_passes_what_a_looser_one_fails(levels: list[str | None]) -> None:
    codes = [exit_code(levels, fail_on) for fail_on in ("error", "warning", "info")]
    assert codes == sorted(codes)
    assert codes[0] == int("error" in levels)


def test_an_invalid_tp_does_not_hide_the_fix_for_the_valid_ones() -> None:
    # matrix --tp 1,2,4,8,16 on Nemotron-3-Nano: TP 16 is invalid (n_groups 8), and the
    # valid TPs size blocks 2096 / 2096 / 1056 / 528 (tests/cli/test_survey.py). The common
    # 2096 is kept on all of them: 2096 x 1024 B = 2,146,304 >= 2,134,016 (TP 1 page), and
    # 2096 x 512 B covers the TP 2/4/8 pages; padding at TP 8 = (2096*512 - 266,752) /
    # 266,752 = 302.30 %. It used to say only "no --block-size can fix this" (TP 16).
    result = runner.invoke(app, ["matrix", NANO, "--tp", "1,2,4,8,16", "--format", "json"])
    assert result.exit_code == 1  # the TP 16 pairs are invalid: the gate still fails
    rec = json.loads(result.stdout)["recommendation"]
    assert rec["block_size"] == 2096 and rec["only_tps"] == [1, 2, 4, 8]
    assert rec["padding_pct"]["8"] == pytest.approx(302.30, abs=0.01)
    assert len(rec["blockers"]) == 1 and rec["blockers"][0].startswith(
        f"TP 16 is invalid for {NANO} (n_groups G = 8"
    )
    answer = json.loads(result.stdout)["answer"][-1]
    assert answer.startswith("Fix: --block-size 2096 on every prefill and decode pool at TP 1, 2")
    # fed back, the valid pools keep it and every valid pair is ok
    back = _check(NANO, 1, 8, ["--block-size", "2096"], None, None)
    assert back["exit_code"] == 0
    assert [(p["prefill_block_size"], p["decode_block_size"]) for p in back["pairs"]] == [
        (2096, 2096)
    ]
    # when the valid pairs need no fix (TP 1 and 2 both 2096), only the invalid TP is named
    none = runner.invoke(app, ["matrix", NANO, "--tp", "1,2,16", "--format", "json"])
    rec = json.loads(none.stdout)["recommendation"]
    assert rec["block_size"] is None and rec["only_tps"] == []


@pytest.mark.parametrize(
    ("version", "default"),
    [("0.10.2", False), ("0.11.1", False), ("0.27.1", False), ("0.28.0", True)],
)
def test_policy_page_states_the_prefix_caching_defaults_check_resolves(
    version: str, default: bool
) -> None:
    # docs/versions.md: hybrid prefix caching is off by default from 0.11.1 and on again from
    # 0.28.0. 0.10 defaults to on but then turns it off for every hybrid whatever the flag
    # (0.10.2 vllm/model_executor/models/config.py MambaModelConfig.verify_and_update_config:
    # "cache_config.enable_prefix_caching = False"), so 0.10.2 resolves off.
    page = (Path(__file__).resolve().parents[2] / "docs" / "policy.md").read_text()
    assert "0.11.1–0.27: off for\nhybrid models" in page and "0.10: off" not in page
    data = _check(NANO, 1, 1, [], None, version)
    assert [d["prefix_caching"] for d in data["deployments"]] == [default, default]


def test_commands_page_states_the_spec_decoding_floor_check_prints() -> None:
    # Nemotron-3-Nano TP 1 is 2096 tokens with or without one speculative token (the conv
    # state grows by one row, 6144 x 1 x 2 B = 12,288 B: m = 2,146,304 B, exactly 2096 x
    # 1024 B, so 16 x ceil(131.0) = 2096 still), so the floor is 2 x 2096 = 4,192 tokens
    # with spec decoding, 2,096 without.
    page = (Path(__file__).resolve().parents[2] / "docs" / "commands.md").read_text()
    assert "two blocks with\n`--num-speculative-tokens`" in page
    spec = _check(NANO, 1, 1, ["--num-speculative-tokens", "1"], None, None)
    assert spec["deployments"][0]["block_size"] == 2096
    assert any(
        "smallest prefix that gives a hit 4,192 tokens (2 blocks" in n for n in spec["notes"]
    )
    plain = _check(NANO, 1, 1, [], None, None)
    assert any("smallest prefix that gives a hit 2,096 tokens," in n for n in plain["notes"])


def test_a_block_size_raised_on_another_gpu_class_is_a_warning_in_check_and_audit(
    tmp_path: Path,
) -> None:
    # Qwen3.5-397B with --block-size 2096 and no GPU given: on A100 (checkpoint alignment 1)
    # both pools keep 2096 (2096 x 1024 B covers the TP 8 page, 2096 x 2048 B = 4,292,608
    # covers the TP 1 page 4,268,032), but on H100/H200/B200/... the FlashInfer GDN prefill
    # aligns to lcm(2096, 64) = 64 x 131 = 8384. Issue 18 asks this to be a warning in both
    # (it used to be a note that never gated): audit's KVA004 per pool, check's "PASS with a
    # warning"; both exit 0 at --fail-on error and 1 at warning or info, alike.
    model = "Qwen/Qwen3.5-397B-A17B"
    script = tmp_path / "pd.sh"
    script.write_text(
        "".join(
            f"vllm serve {model} -tp {tp} --block-size 2096 --kv-transfer-config "
            f'\'{{"kv_connector":"NixlConnector","kv_role":"{role}"}}\' &\n'
            for tp, role in ((8, "kv_producer"), (1, "kv_consumer"))
        )
    )
    where = "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120)"
    for fail_on, code in (("error", 0), ("warning", 1), ("info", 1)):
        audit = runner.invoke(app, ["audit", str(script), "--format", "json", "--fail-on", fail_on])
        check = _check(model, 8, 1, ["--block-size", "2096", "--fail-on", fail_on], None, None)
        assert audit.exit_code == check["exit_code"] == code
    report = json.loads(runner.invoke(app, ["audit", str(script), "--format", "json"]).stdout)
    assert [(f["rule"], f["severity"], f["message"]) for f in report["findings"]] == [
        (
            "KVA004",
            "warning",
            f"vLLM raises --block-size 2096 to 8,384 on {where} (GPU not given: pass --gpu or "
            "a node label to check the one it runs on)",
        )
    ] * 2
    assert report["notes"] == []
    check = _check(model, 8, 1, ["--block-size", "2096"], None, None)
    assert check["recommendation"]["raised"] == [
        f"{who}: vLLM raises --block-size 2096 to 8,384 on {where}"
        for who in ("prefill TP 8", "decode TP 1")
    ]
    assert check["answer"][0] == (
        "PASS with a warning (exit 0, --fail-on error): every pair works, but vLLM raises "
        "your --block-size (--fail-on warning fails it)"
    )
    # on a named H200 it is KVA004 too (the assumed GPU's own raise), and no note
    pinned = runner.invoke(app, ["audit", str(script), "--format", "json", "--gpu", "H200"])
    doc = json.loads(pinned.stdout)
    assert [f["rule"] for f in doc["findings"]] == ["KVA004", "KVA004"] and doc["notes"] == []


def test_matrix_with_every_tp_invalid_fails_the_gate_like_check() -> None:
    # Falcon-H1-0.5B has 8 attention heads: TP 3 and 5 do not divide them (vLLM's
    # verify_with_parallel_config). check exits 1 with verdict invalid; matrix does too,
    # and each invalid TP is named once with the valid choices (1, 2, 4, 8)
    model = "tiiuae/Falcon-H1-0.5B-Base"
    check = runner.invoke(app, ["check", model, "--prefill-tp", "3", "--decode-tp", "5"])
    matrix = runner.invoke(app, ["matrix", model, "--tp", "3,5", "--format", "json"])
    assert check.exit_code == matrix.exit_code == 1
    data = json.loads(matrix.stdout)
    assert {pair["verdict"] for pair in data["pairs"]} == {"invalid"}
    assert data["recommendation"]["blockers"] == [
        f"prefill TP {tp}, decode TP {tp}: TP {tp} is invalid for {model} (heads not "
        "divisible by tensor parallel size): use a valid TP (1, 2, 4, 8)"
        for tp in (3, 5)
    ]


def test_a_group_is_proven_once_however_many_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 6 prefill x 6 decode pools in one file (one group): 36 pairs, many findings, all
    # naming the same fix (Nemotron-3-Nano TP 1/2/4/8 → 2096 covers TP 1's 2096)
    import kvalign.fixes as kva001

    calls: list[int] = []
    real = kva001.prove_fix

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(kva001, "prove_fix", counting)
    lines = ["#!/bin/bash"]
    for role, port in (("kv_producer", 8000), ("kv_consumer", 9000)):
        for i, tp in enumerate((1, 2, 4, 8, 1, 2)):
            lines.append(
                f"vllm serve {NANO} --tensor-parallel-size {tp} --port {port + i} "
                f"--kv-transfer-config '{_KV % role}' &"
            )
    path = tmp_path / "pd.sh"
    path.write_text("\n".join(lines) + "\n")
    code, out = _audit(path, None, None)
    findings = json.loads(out)["findings"]
    assert code == 1 and len(findings) > 6
    assert {f["remediation"] for f in findings if f["rule"] in ("KVA001", "KVA003")} == {
        "set --block-size 2096 on every prefill and decode pool (holds on A100 (SM80), "
        "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120))"
    }
    assert len(calls) == 1


@pytest.mark.parametrize("command", ["check", "matrix"])
def test_json_error_document_on_bad_input(command: str, tmp_path: Path) -> None:
    # a config that is not JSON: exit 2, one line on stderr, and a JSON document on stdout
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    result = runner.invoke(app, [command, str(bad), "--format", "json"])
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["schema_version"] == 1
    assert data["error"]["exit_code"] == 2
    assert str(bad) in data["error"]["message"]
    assert result.stderr.startswith("kvalign: error: ")
    assert bad.read_text() == "{not json"  # nothing the user gave is modified
