"""Audit rule findings pinned field by field, at the inputs where a wrong rule (or a
wrong branch inside one) changes what the user reads. The per-rule tests
(tests/rules/test_kva0NN.py) check that a rule fires; these check what it says.

Numbers: Falcon-H1-0.5B-Base blocks 800 / 400 at TP 1 / 4 and TP 16 refused ("Total number
of attention heads (8) must be divisible by tensor parallel size (16)"), both from
tests/golden/vllm-0.33.0.jsonl; its config has 8 attention heads, 2 KV heads, 24 Mamba
heads and 1 group, so TPs 1, 2, 4, 8 of kvalign's choices (1 … 64) load. Nemotron-3-Nano at
PP 6 with prefix caching: stage 5 (layers 44-51) has no attention layer and keeps block
16 while the others take 2096 (tests/golden/pp-0.33.0.jsonl), which fails at start-up
(vLLM issue 51752). The Mamba state dtypes of Falcon-H1 under ``auto`` are the model's
bfloat16 (the same vectors); ``fp8`` is vLLM's alias of ``fp8_e4m3`` (``CacheDType``).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from kvalign.audit import run_audit
from kvalign.deploy import read_paths, read_text
from kvalign.deploy.model import Location
from kvalign.rules import rule_doc
from kvalign.rules.base import Finding
from tests.conftest import ROOT
from tests.rules.harness import FALCON, audit_own

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
FALCON_TPS = "use a valid tensor parallel size (1, 2, 4, 8); no --block-size can fix this"


def _of(rule: str, findings: tuple[Finding, ...]) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


def test_kva010_every_invalid_pool_with_the_valid_tps() -> None:
    found = _of("KVA010", audit_own("tp: 3", "tp: 16").findings)
    assert found == [
        Finding("KVA010", "error", ("prefill/prefill",), Location("x.yaml", 2),
                f"TP 3 is invalid for {FALCON}: heads not divisible by tensor parallel size",
                FALCON_TPS),
        Finding("KVA010", "error", ("decode/decode",), Location("x.yaml", 3),
                f"TP 16 is invalid for {FALCON}: heads not divisible by tensor parallel size",
                FALCON_TPS),
    ]  # fmt: skip


STAGE = (
    "vLLM 0.33 fails at start-up: pipeline stage 5 (layers 44-51) owns no attention layer, "
    "so it skips the hybrid alignment and keeps block size 16 while the other stages use "
    "2096; with prefix caching the stages disagree (vLLM issue 51752): pass --block-size "
    "2096 or move an attention layer onto the stage (VLLM_PP_LAYER_PARTITION)"
)


def _nano_pp(prefill: str, decode: str) -> tuple[Finding, ...]:
    # the stage rule and STAGE are 0.33's (pp-0.33.0.jsonl): pinned, last so lines stay
    doc = f"model: {NANO}\nprefill: {{{prefill}}}\ndecode: {{{decode}}}\nvllm_version: '0.33.0'\n"
    deployment = read_text(doc, "x.yaml")
    assert deployment is not None
    return run_audit([deployment]).findings


def test_kva010_a_stage_that_keeps_its_block_is_fixed_by_the_aligned_block() -> None:
    pp6 = "tp: 1, args: --pipeline-parallel-size 6 --enable-prefix-caching"
    found = _of("KVA010", _nano_pp(pp6, pp6))
    assert found == [
        Finding("KVA010", "error", (f"{role}/{role}",), Location("x.yaml", line),
                f"TP 1 fails for {NANO}: {STAGE}",
                "--block-size 2096 (every pipeline stage then keeps it)")
        for role, line in (("prefill", 2), ("decode", 3))
    ]  # fmt: skip


def test_kva010_after_a_stage_problem_the_next_pool_is_still_judged() -> None:
    # prefill: the stage problem (fixable); decode: TP 16 of Nano's 8 groups (invalid)
    pp6 = "tp: 1, args: --pipeline-parallel-size 6 --enable-prefix-caching"
    found = _of("KVA010", _nano_pp(pp6, "tp: 16"))
    assert [(f.pools, f.remediation.split(" (")[0]) for f in found] == [
        (("prefill/prefill",), "--block-size 2096"),
        (("decode/decode",), "use a valid tensor parallel size"),
    ]


@pytest.mark.parametrize(
    ("prefill", "decode", "level", "tail"),
    [
        # TP 4 (400) vs TP 1 (800): drift; severity and consequence by prefix caching
        ("tp: 4", "tp: 1", "error", "prefix-cache hashes never match across pools"),
        ("tp: 4, args: --no-enable-prefix-caching", "tp: 1", "warning",
         "prefix caching is on for the decode pool only, so no prefix is shared anyway"),
        ("tp: 4", "tp: 1, args: --no-enable-prefix-caching", "warning",
         "prefix caching is on for the prefill pool only, so no prefix is shared anyway"),
        ("tp: 4, args: --no-enable-prefix-caching", "tp: 1, args: --no-enable-prefix-caching",
         "info",
         "prefix caching is off on both pools, so this costs nothing until it is turned on"),
    ],
)  # fmt: skip
def test_kva001_consequence_follows_prefix_caching(
    prefill: str, decode: str, level: str, tail: str
) -> None:
    (found,) = _of("KVA001", audit_own(prefill, decode).findings)
    assert (found.severity, found.pools) == (level, ("prefill/prefill", "decode/decode"))
    assert found.message == (f"logical block size 400 (prefill TP 4) vs 800 (decode TP 1): {tail}")


@pytest.mark.parametrize(
    ("args", "differ"),
    [
        ("--kv-cache-dtype fp8", [("kv-cache-dtype", "fp8_e4m3")]),
        ("--kv-cache-dtype fp8_e5m2", [("kv-cache-dtype", "fp8_e5m2")]),
        # auto follows the model dtype: the KV cache and both Mamba states (spec: conv
        # state auto → model dtype, ssm state auto → the conv state's)
        ("--dtype float16", [("kv-cache-dtype", "float16"), ("mamba-cache-dtype", "float16"),
                             ("mamba-ssm-cache-dtype", "float16")]),
        ("--mamba-cache-dtype float32", [("mamba-cache-dtype", "float32"),
                                         ("mamba-ssm-cache-dtype", "float32")]),
        ("--mamba-ssm-cache-dtype float32", [("mamba-ssm-cache-dtype", "float32")]),
    ],
)  # fmt: skip
def test_kva005_names_the_setting_and_both_values(args: str, differ: list[tuple[str, str]]) -> None:
    found = _of("KVA005", audit_own(f"tp: 1, args: {args}", "tp: 1").findings)
    assert [(f.severity, f.pools, f.message, f.remediation) for f in found] == [
        ("error", ("prefill/prefill", "decode/decode"),
         f"{key} differs: prefill {value}, decode bfloat16 (KV pages are copied byte for byte)",
         f"use the same {key} on both pools")
        for key, value in differ
    ]  # fmt: skip


def test_kva005_same_settings_spelled_differently_do_not_differ() -> None:
    # fp8 and fp8_e4m3 are one dtype; auto and the model's bfloat16 too
    assert not _of(
        "KVA005", audit_own("tp: 1, args: --kv-cache-dtype fp8", "tp: 1, args: --kv-cache-dtype "
                            "fp8_e4m3").findings,
    )  # fmt: skip
    assert not _of("KVA005", audit_own("tp: 1, args: --kv-cache-dtype bfloat16", "tp: 1").findings)
    # a differing setting also marks the fix as per-pool (fix KVA005 first)
    ssm32 = "tp: 1, args: --mamba-ssm-cache-dtype float32"  # a larger state page: drift
    found = _of("KVA001", audit_own(ssm32, "tp: 1").findings)
    assert found and found[0].remediation.endswith(
        "(each pool's own settings; their KV-cache settings differ: fix KVA005 first, then "
        "a smaller --block-size may do)"
    )
    same = _of("KVA001", audit_own("tp: 4", "tp: 1").findings)
    assert same and "KV-cache settings differ" not in same[0].remediation


SCRIPT = """\
vllm serve tiiuae/Falcon-H1-0.5B-Base --port 8100 {extra} \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_producer"}}' &
vllm serve tiiuae/Falcon-H1-0.5B-Base --port 8200 {extra} \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}}' &
"""


@pytest.mark.parametrize(
    ("version", "extra", "why"),
    [
        ("0.20.0", "", "vLLM 0.20 turns it off when --kv-transfer-config is set"),
        ("0.33.0", "--disable-hybrid-kv-cache-manager",
         "--disable-hybrid-kv-cache-manager is set"),
    ],
)  # fmt: skip
def test_kva012_says_why_the_manager_is_off(
    tmp_path: Path, version: str, extra: str, why: str
) -> None:
    path = tmp_path / "pd.sh"
    path.write_text(SCRIPT.format(extra=extra))
    deployments, skipped = read_paths([str(path)])
    found = _of("KVA012", run_audit(deployments, vllm_version=version,
                                    skipped=tuple(skipped)).findings)  # fmt: skip
    assert len(found) == 2
    assert {f.message for f in found} == {
        f"{FALCON} is a hybrid model but the hybrid KV-cache manager is off ({why}): the KV "
        "connector cannot serve it"
    }
    assert {f.remediation for f in found} == {
        "add --no-disable-hybrid-kv-cache-manager to the vllm serve arguments"
    }


def test_rule_doc_of_a_module_without_source_or_fix() -> None:
    module = ModuleType("kva999", "KVA999: a title line.\n\nFirst ``para``\ncontinued.\n\n"
                                  "Second :func:`~kvalign.fixes.valid_tps`.\n")  # fmt: skip
    module.CODE, module.SEVERITY, module.TITLE = "KVA999", "warning", "a title"  # type: ignore[attr-defined]
    doc = rule_doc(module)
    assert (doc.code, doc.severity, doc.title, doc.source, doc.fix) == (
        "KVA999", "warning", "a title", "", "",
    )  # fmt: skip
    assert doc.rationale == ("First `para` continued.", "Second `kvalign.fixes.valid_tps`.")
    one_line = ModuleType("kva998", "KVA998: only a title line")
    one_line.CODE, one_line.SEVERITY, one_line.TITLE = "KVA998", "info", "t"  # type: ignore[attr-defined]
    assert rule_doc(one_line).rationale == ()
    bare = ModuleType("kva997")
    bare.CODE, bare.SEVERITY, bare.TITLE = "KVA997", "info", "t"  # type: ignore[attr-defined]
    assert rule_doc(bare).rationale == ()


PRODUCER = """vllm serve tiiuae/Falcon-H1-0.5B-Base --port 8100 {tp} --kv-transfer-config \
'{{"kv_connector":"NixlConnector","kv_role":"kv_{role}"}}'
"""


def _two_files(tmp_path: Path, pair_by: str) -> tuple[tuple[Finding, ...], str, str]:
    prefill, decode = tmp_path / "p.sh", tmp_path / "d.sh"
    prefill.write_text(PRODUCER.format(tp="-tp 4", role="producer"))
    decode.write_text(PRODUCER.format(tp="", role="consumer"))
    deployments, skipped = read_paths([str(prefill), str(decode)])
    report = run_audit(deployments, skipped=tuple(skipped), pair_by=pair_by)  # type: ignore[arg-type]
    return report.findings, str(prefill), str(decode)


def test_pools_of_two_files_carry_their_file(tmp_path: Path) -> None:
    # --pair-by model groups the TP 4 prefill (400) of p.sh with the TP 1 decode (800) of
    # d.sh: the pair's labels name each pool's file, the finding sits on the decode pool
    findings, prefill, decode = _two_files(tmp_path, "model")
    (drift,) = _of("KVA001", findings)
    assert drift.pools == (f"prefill/command-1 ({prefill})", f"decode/command-1 ({decode})")
    assert drift.location == Location(decode, 1)


def test_unpaired_pool_names_its_partner_in_another_file(tmp_path: Path) -> None:
    # --pair-by label keeps the files apart: each pool names the other as its partner,
    # with the partner's file (a pool of another file than the finding's)
    findings, prefill, decode = _two_files(tmp_path, "label")
    found = {f.pools: f.message for f in _of("KVA013", findings)}
    assert found[("prefill/command-1",)].endswith(
        f"; decode/command-1 ({decode}) could be its partner but was grouped apart"
    )
    assert found[("decode/command-1",)].endswith(
        f"; prefill/command-1 ({prefill}) could be its partner but was grouped apart"
    )


def test_component_finding_names_pools_of_its_own_file_by_label() -> None:
    # router block_size 800; prefill TP 4 runs 400 tokens, decode TP 1 800
    (found,) = _of("KVA006", audit_own("tp: 4", "tp: 1", "router: {block_size: 800}").findings)
    assert found.pools == ("prefill/prefill",)
    assert found.message == "router block_size = 800 tokens but vLLM uses prefill/prefill 400"


KV_ROLE = """--kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_{role}"}}'"""


def _script(tmp_path: Path, lines: list[str], version: str | None = None) -> tuple[Finding, ...]:
    path = tmp_path / "pd.sh"
    path.write_text("\n".join(f"vllm serve {FALCON} --port {8100 + n} {line} &"
                              for n, line in enumerate(lines)) + "\n")  # fmt: skip
    deployments, skipped = read_paths([str(path)])
    return run_audit(deployments, vllm_version=version, skipped=tuple(skipped)).findings


def test_pair_rules_judge_every_pair_after_a_good_one(tmp_path: Path) -> None:
    # prefills at TP 1 (800) and TP 8 (208), one decode at TP 1 (800): the first pair is
    # ok, the second drifts and splits: gcd(208, 800) = 16, 800 / 16 = 50 units <= 128
    producer, consumer = KV_ROLE.format(role="producer"), KV_ROLE.format(role="consumer")
    findings = _script(tmp_path, [f"-tp 1 {producer}", f"-tp 8 {producer}", f"-tp 1 {consumer}"])
    pools = ("prefill/command-2", "decode/command-3")
    (drift,) = _of("KVA001", findings)
    assert (drift.pools, drift.severity) == (pools, "error")
    assert drift.message.startswith("logical block size 208 (prefill TP 8) vs 800 (decode TP 1)")
    (split,) = _of("KVA003", findings)
    assert (split.pools, split.severity) == (pools, "error")
    assert split.message == (
        "NIXL needs the decode kernel block to be a multiple of the prefill one: 800 is not a "
        "multiple of 208; NIXL splits into 16-token units (50 per block); hard failure on "
        "releases without the split path"
    )
    # the proven fix: the larger block, 800, which TP 8 keeps as a --block-size
    assert split.remediation == drift.remediation
    assert split.remediation.startswith("set --block-size 800 on every prefill and decode pool")


def test_kva002_judges_every_pair_after_a_good_one(tmp_path: Path) -> None:
    # prefills at TP 1 (800) and TP 4 (400), one decode at TP 1 (800): the first pair is
    # ok, the second has block_size_ratio 800 // 400 = 2 (the kernel blocks are the whole
    # blocks, as in test_kva002_ratio_on_releases_with_and_without_heterogeneous_blocks)
    producer, consumer = KV_ROLE.format(role="producer"), KV_ROLE.format(role="consumer")
    findings = _script(tmp_path, [f"-tp 1 {producer}", f"-tp 4 {producer}", f"-tp 1 {consumer}"])
    assert [(f.pools, f.message) for f in _of("KVA002", findings)] == [
        (("prefill/command-2", "decode/command-3"),
         "block_size_ratio 2: decode kernel block 800 vs prefill 400; heterogeneous-block "
         "path on every transfer"),
    ]  # fmt: skip


def test_kva010_after_a_valid_pool(tmp_path: Path) -> None:
    found = _of("KVA010", audit_own("tp: 1", "tp: 3").findings)
    assert [(f.pools, f.location.line) for f in found] == [(("decode/decode",), 3)]


def test_kva012_judges_every_pool_after_a_skipped_one(tmp_path: Path) -> None:
    producer, consumer = KV_ROLE.format(role="producer"), KV_ROLE.format(role="consumer")
    # a standalone server (no --kv-transfer-config) first: not judged; the two P/D pools are
    found = _of("KVA012", _script(tmp_path, ["", producer, consumer], "0.20.0"))
    assert [f.pools for f in found] == [("prefill/command-2",), ("decode/command-3",)]
    # a pool that keeps the manager on first: only the other pool is flagged
    keep = f"--no-disable-hybrid-kv-cache-manager {producer}"
    found = _of("KVA012", _script(tmp_path, [keep, consumer], "0.20.0"))
    assert [f.pools for f in found] == [("decode/command-2",)]


def test_kva006_second_component_of_a_group_and_every_wrong_pool() -> None:
    # two files of one model grouped by --pair-by model, TP 4 everywhere (400 tokens):
    # a.yaml's router says 400 (right), b.yaml's 800 (wrong for all four pools)
    docs = [
        read_text(f"model: {FALCON}\nprefill: {{tp: 4}}\ndecode: {{tp: 4}}\n"
                  f"router: {{block_size: {size}}}\n", name)
        for name, size in (("a.yaml", 400), ("b.yaml", 800))
    ]  # fmt: skip
    assert all(d is not None for d in docs)
    (found,) = _of("KVA006", run_audit(docs, pair_by="model").findings)  # type: ignore[arg-type]
    wrong = ("decode/decode", "decode/decode (a.yaml)", "prefill/prefill",
             "prefill/prefill (a.yaml)")  # fmt: skip
    assert (found.severity, found.pools, found.location) == ("error", wrong, Location("b.yaml", 4))
    assert found.message == (
        "router block_size = 800 tokens but vLLM uses decode/decode 400, decode/decode "
        "(a.yaml) 400, prefill/prefill 400, prefill/prefill (a.yaml) 400"
    )
    assert found.remediation == "set router block_size to 400"


def test_kva006_pools_on_different_blocks_are_fixed_first() -> None:
    (found,) = _of("KVA006", audit_own("tp: 4", "tp: 8", "router: {block_size: 800}").findings)
    assert found.message == (
        "router block_size = 800 tokens but vLLM uses decode/decode 208, prefill/prefill 400"
    )
    assert found.remediation == (
        "make every pool use one block size first (KVA001), then match it here"
    )


def _files(tmp_path: Path, roles: list[str]) -> tuple[list[str], tuple[Finding, ...]]:
    paths = []
    for n, role in enumerate(roles):
        path = tmp_path / f"{n}-{role}.sh"
        path.write_text(f"vllm serve {FALCON} --port 8100 {KV_ROLE.format(role=role)}\n")
        paths.append(str(path))
    deployments, skipped = read_paths(paths)
    return paths, run_audit(deployments, skipped=tuple(skipped)).findings


def test_kva013_lists_up_to_three_partners_of_the_other_role(tmp_path: Path) -> None:
    # one producer and four consumers, each in its own file (--pair-by label: five groups)
    paths, findings = _files(tmp_path, ["producer", *["consumer"] * 4])
    by_pool = {f.location.file: f for f in _of("KVA013", findings)}
    names = ", ".join(f"decode/command-1 ({p})" for p in paths[1:4])
    assert by_pool[paths[0]].message == (
        f"no decode pool in its deployment (file {paths[0]} (no deployment key)): no pair "
        f"check ran; {names} and 1 more could be its partner but was grouped apart"
    )
    assert by_pool[paths[0]].severity == "error"
    # a consumer names the producer only, not the other consumers (same model, same role)
    assert by_pool[paths[1]].message.endswith(
        f"; prefill/command-1 ({paths[0]}) could be its partner but was grouped apart"
    )


def test_kva013_says_when_a_partner_may_be_in_a_file_not_evaluated() -> None:
    # the prefill pool names a revision the (offline) Hub cannot give: not evaluated
    (found,) = _of("KVA013", audit_own("tp: 1, args: --revision abc", "tp: 1").findings)
    assert (found.severity, found.pools) == ("warning", ("decode/decode",))
    assert found.message == (
        "no prefill pool in its deployment (file x.yaml (no deployment key)): no pair check "
        "ran; a pool of x.yaml could not be evaluated (its partner may be there)"
    )
    assert found.remediation == (
        "audit it with its prefill pool (pass both files or their common folder), or, if it "
        "serves alone, drop its --kv-transfer-config"
    )


# ---- the other rules' findings, field by field ----

FIX_800 = (
    "set --block-size 800 on every prefill and decode pool (holds on A100 (SM80), H100/H200 "
    "(SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120))"
)


def test_kva002_ratio_on_releases_with_and_without_heterogeneous_blocks() -> None:
    # TP 4 (400) prefill, TP 1 (800) decode: block_size_ratio 800 / 400 = 2
    (found,) = _of("KVA002", audit_own("tp: 4", "tp: 1").findings)
    assert (found.severity, found.pools, found.location.line) == (
        "error", ("prefill/prefill", "decode/decode"), 3,
    )  # fmt: skip
    assert found.message == (
        "block_size_ratio 2: decode kernel block 800 vs prefill 400; heterogeneous-block "
        "path on every transfer"
    )
    assert found.remediation == FIX_800


def test_kva004_every_raised_block_size() -> None:
    # --block-size 16 is below the 800 the TP-1 state needs: raised on both pools
    found = _of("KVA004", audit_own("tp: 1, args: --block-size 16",
                                    "tp: 1, args: --block-size 16").findings)  # fmt: skip
    assert [(f.rule, f.severity, f.pools, f.location.line,
             f.message, f.remediation) for f in found] == [
        ("KVA004", "warning", (f"{role}/{role}",), line,
         "--block-size 16 becomes 800 at TP 1 (hybrid alignment)", FIX_800)
        for role, line in (("prefill", 2), ("decode", 3))
    ]  # fmt: skip
    # a first pool that keeps its --block-size does not hide the second
    found = _of("KVA004", audit_own("tp: 1, args: --block-size 800",
                                    "tp: 1, args: --block-size 16").findings)  # fmt: skip
    assert [f.pools for f in found] == [("decode/decode",)]
    # nor does a first pool whose TP is invalid (TP 3: Falcon-H1's 8 heads do not divide)
    found = _of("KVA004", audit_own("tp: 3, args: --block-size 16",
                                    "tp: 1, args: --block-size 16").findings)  # fmt: skip
    assert [f.pools for f in found] == [("decode/decode",)]


QWEN397 = "Qwen/Qwen3.5-397B-A17B"
ELSEWHERE = "H100/H200 (SM90), B200 (SM100), B300 (SM103), RTX-PRO-6000 (SM120)"
FIX_2112 = (
    "set --block-size 2112 on every prefill and decode pool (holds on A100 (SM80), "
    + f"{ELSEWHERE})"
)


def _qwen397(prefill: str, decode: str) -> list[Finding]:
    doc = f"model: {QWEN397}\nprefill: {{{prefill}}}\ndecode: {{{decode}}}\n"
    deployment = read_text(doc, "x.yaml")
    assert deployment is not None
    return _of("KVA004", run_audit([deployment]).findings)


def test_kva004_a_block_size_raised_only_on_gpu_classes_the_pool_may_run_on() -> None:
    # Qwen3.5-397B, no GPU given, --block-size 2096 on TP 8 and TP 1. With no GPU the
    # arithmetic assumes the GDN prefill is not on FlashInfer (checkpoint alignment 1, as on
    # A100): both keep 2096, since TP 1's state page is 4,268,032 B and 2096 x 2048 B/token =
    # 4,292,608 B covers it (tests/golden/vllm-0.33.0.jsonl: TP 1 block 2096). On SM90 and
    # later FlashInfer's GDN prefill checkpoints every 64 tokens with prefix caching, so
    # vLLM raises it to lcm(2096, 64) = 64 x 131 = 8,384 there.
    # The fix is the smallest multiple of 64 that covers 2096: 33 x 64 = 2112 (issue 18,
    # tests/analysis/test_policy.py). One warning per pool, each at its own line.
    found = _qwen397("tp: 8, args: --block-size 2096", "tp: 1, args: --block-size 2096")
    assert found == [
        Finding("KVA004", "warning", (f"{role}/{role}",), Location("x.yaml", line),
                f"vLLM raises --block-size 2096 to 8,384 on {ELSEWHERE} (GPU not given: pass "
                "--gpu or a node label to check the one it runs on)",
                FIX_2112)
        for role, line in (("prefill", 2), ("decode", 3))
    ]  # fmt: skip


def test_kva004_raised_here_and_raised_elsewhere_in_one_group() -> None:
    # prefill --block-size 16 at TP 8: below the 528 the TP 8 state needs (state page
    # 533,504 B / 1024 B per token = 521 tokens, 16 x cdiv(521, 16) = 528;
    # tests/golden/vllm-0.33.0.jsonl), raised on the assumed GPU itself; decode TP 1 keeps
    # 2096 there and is raised only elsewhere (as above): both findings, in pool order
    found = _qwen397("tp: 8, args: --block-size 16", "tp: 1, args: --block-size 2096")
    assert [(f.pools, f.location.line) for f in found] == [
        (("prefill/prefill",), 2), (("decode/decode",), 3)
    ]  # fmt: skip
    assert [f.message for f in found] == [
        "--block-size 16 becomes 528 at TP 8 (hybrid alignment)",
        f"vLLM raises --block-size 2096 to 8,384 on {ELSEWHERE} (GPU not given: pass --gpu "
        "or a node label to check the one it runs on)",
    ]


@pytest.mark.parametrize(
    ("chunk", "multiple"),
    [
        ("1000", 800),  # round(1000 / 800) = 1 → 800
        ("2500", 2400),  # round(2500 / 800) = 3 → 2400
        ("300", 800),  # round(300 / 800) = 0, at least one block → 800
    ],
)
def test_kva007_names_the_nearest_multiple(chunk: str, multiple: int) -> None:
    (found,) = _of("KVA007", audit_own(f"tp: 1, env: {{LMCACHE_CHUNK_SIZE: '{chunk}'}}",
                                       "tp: 1").findings)  # fmt: skip
    assert (found.severity, found.pools) == ("warning", ("prefill/prefill",))
    assert found.message == (
        f"LMCache chunk_size {chunk} (from LMCACHE_CHUNK_SIZE) is not a multiple of block size 800"
    )
    assert found.remediation == (f"set LMCache chunk_size to a multiple of 800 (e.g. {multiple})")


@pytest.mark.parametrize(
    ("prefill", "decode", "shown"),
    [
        ("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: DS}", "tp: 1", "DS on prefill, unset (SD)"),
        ("tp: 1", "tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: ds}", "unset (SD) on prefill, ds"),
    ],
)
def test_kva008_names_both_layouts(prefill: str, decode: str, shown: str) -> None:
    (found,) = _of("KVA008", audit_own(prefill, decode).findings)
    assert (found.severity, found.pools) == ("error", ("prefill/prefill", "decode/decode"))
    assert found.message == f"VLLM_SSM_CONV_STATE_LAYOUT is {shown} on decode"
    assert found.remediation == "set VLLM_SSM_CONV_STATE_LAYOUT=DS on every prefill and decode pool"


def test_kva008_layout_case_and_default() -> None:
    # the layout is compared case-insensitively, and unset is SD
    same = [("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: ds}",
             "tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: DS}"),
            ("tp: 1, env: {VLLM_SSM_CONV_STATE_LAYOUT: sd}", "tp: 1")]  # fmt: skip
    for prefill, decode in same:
        assert not _of("KVA008", audit_own(prefill, decode).findings), prefill


LAYOUT = "VLLM_SSM_CONV_STATE_LAYOUT"
LLAMA = ROOT / "tests" / "data" / "llama-pd" / "model"


def _pd_script(tmp_path: Path, servers: list[tuple[str, str, str]]) -> tuple[Finding, ...]:
    """Audit a P/D script of (environment prefix, model, role) servers, one a line."""
    path = tmp_path / "pd.sh"
    path.write_text("".join(f"{env}vllm serve {model} --port {8100 + n} "
                            f"{KV_ROLE.format(role=role)} &\n"
                            for n, (env, model, role) in enumerate(servers)))  # fmt: skip
    deployments, skipped = read_paths([str(path)])
    return run_audit(deployments, skipped=tuple(skipped)).findings


def test_kva008_judges_every_pair_after_a_skipped_one(tmp_path: Path) -> None:
    ds = f"{LAYOUT}=DS "
    # prefill 1 and the decode both DS (nothing to say), prefill 2 unset (SD): the second
    # pair differs and is reported after the first that matches
    found = _of("KVA008", _pd_script(tmp_path, [
        (ds, FALCON, "producer"), ("", FALCON, "producer"), (ds, FALCON, "consumer"),
    ]))  # fmt: skip
    assert [(f.pools, f.message) for f in found] == [
        (("prefill/command-2", "decode/command-3"),
         f"{LAYOUT} is unset (SD) on prefill, DS on decode"),
    ]  # fmt: skip
    # the first prefill runs an attention-only Llama (no conv state, so no layout to
    # match: skipped although its layout, unset, differs from the decode's DS); the
    # Falcon-H1 prefill after it is still judged
    found = _of("KVA008", _pd_script(tmp_path, [
        ("", str(LLAMA), "producer"), ("", FALCON, "producer"), (ds, FALCON, "consumer"),
    ]))  # fmt: skip
    assert [f.pools for f in found] == [("prefill/command-2", "decode/command-3")]


def test_kva009_names_the_limit_and_the_block() -> None:
    (found,) = _of("KVA009", audit_own("tp: 1, args: --max-model-len 799", "tp: 1").findings)
    assert (found.severity, found.pools, found.location.line) == (
        "warning", ("prefill/prefill",), 2,
    )  # fmt: skip
    assert found.message == (
        "--max-model-len 799 is below the aligned block size 800: no request fills a block, "
        "prefix caching never hits"
    )
    assert found.remediation == "raise --max-model-len to at least 800 or disable prefix caching"
    # the second pool is judged after a first one that is fine
    (found,) = _of("KVA009", audit_own("tp: 1", "tp: 1, args: --max-model-len 799").findings)
    assert found.pools == ("decode/decode",)
    # a first pool below the block but without prefix caching is skipped, not the end
    off = "tp: 1, args: --max-model-len 799 --no-enable-prefix-caching"
    found = _of("KVA009", audit_own(off, "tp: 1, args: --max-model-len 799").findings)
    assert [f.pools for f in found] == [("decode/decode",)]


@pytest.mark.parametrize(
    ("size", "args", "resources", "fix"),
    [
        # 2 pods × 4 GPUs = 8 with PP 1 × DP 1: TP × PP would be 8 / 1 = 8
        ("2", '"-tp", "4"', "{limits: {nvidia.com/gpu: 4}}",
         "if the group is meant to run one engine on all 8 GPUs, set --tensor-parallel-size "
         "× --pipeline-parallel-size to 8"),
        # 3 pods × 2 GPUs = 6 with DP 2: 6 / 2 = 3
        ("3", '"-tp", "2", "-dp", "2"', "{limits: {nvidia.com/gpu: 2}}",
         "if the group is meant to run one engine on all 6 GPUs, set --tensor-parallel-size "
         "× --pipeline-parallel-size to 3"),
        # 3 pods × 1 GPU = 3 with DP 2: 3 is not a multiple of 2
        ("3", '"-tp", "2", "-dp", "2"', "{limits: {nvidia.com/gpu: 1}}",
         "make size × GPUs per pod equal TP × PP × DP"),
    ],
)  # fmt: skip
def test_kva011_fix_divides_the_gpus_by_pp_and_dp(
    tmp_path: Path, size: str, args: str, resources: str, fix: str
) -> None:
    from tests.rules.harness import audit, lws

    (found,) = _of("KVA011", audit(lws(tmp_path, size, args, resources)).findings)
    assert found.remediation == fix


@pytest.mark.parametrize(
    ("size", "args", "resources"),
    [
        ("1", '"-tp", "1"', "{}"),  # no GPU count: nothing to compare, skipped
        ("2", '"-tp", "8"', "{limits: {nvidia.com/gpu: 4}}"),  # 2 x 4 = 8 = TP 8: fine
    ],
)  # fmt: skip
def test_kva011_judges_the_decode_after_a_prefill_it_skips(
    tmp_path: Path, size: str, args: str, resources: str
) -> None:
    from tests.rules.harness import LWS, audit, write

    # the decode LeaderWorkerSet: 2 pods x 4 GPUs = 8, but TP 4 x PP 1 x DP 1 = 4
    docs = [
        LWS.format(role="prefill", size=size, args=args, resources=resources, model=FALCON),
        LWS.format(role="decode", size="2", args='"-tp", "4"',
                   resources="{limits: {nvidia.com/gpu: 4}}", model=FALCON),
    ]  # fmt: skip
    path = write(tmp_path, "lws.yaml", "---\n".join(docs))
    found = _of("KVA011", audit(path).findings)
    assert [(f.pools, f.message) for f in found] == [
        (("decode/falcon-decode",),
         "LeaderWorkerSet size 2 × 4 GPU(s) per pod = 8 GPUs, but TP 4 × PP 1 × DP 1 = 4; "
         "audited at TP 4 (from the arguments)"),
    ]  # fmt: skip


def test_kva005_reads_the_ssm_state_dtype_not_a_replayssm_ring() -> None:
    # Nemotron-H keeps its SSM state in float32 (no mamba_ssm_cache_dtype in the config);
    # --use-replayssm (0.27+, Triton) appends ring buffers x, dt, B in the model dtype and
    # float32 after the conv and ssm states (docs/versions.md, 0.27 row). The ssm dtype is
    # float32 on both pools: the ring's last buffer (bfloat16) is not the ssm state.
    triton = "--attention-backend TRITON_ATTN --no-enable-prefix-caching"
    ring = _nano_pp(f"tp: 1, args: --use-replayssm {triton}", f"tp: 1, args: {triton}")
    assert not _of("KVA005", ring)
    # an ssm dtype that does differ is still named
    differ = _nano_pp(f"tp: 1, args: --use-replayssm {triton}",
                      f"tp: 1, args: {triton} --mamba-ssm-cache-dtype bfloat16")  # fmt: skip
    assert [f.message for f in _of("KVA005", differ)] == [
        "mamba-ssm-cache-dtype differs: prefill float32, decode bfloat16 (KV pages are "
        "copied byte for byte)"
    ]


def test_kva005_model_and_revision(tmp_path: Path) -> None:
    # a local config directory takes --revision as given (nothing to download)
    local = ROOT / "tests" / "data" / "qwen3.5-27b-text"
    doc = read_text(f"model: {local}\nprefill: {{tp: 1, args: --revision abc}}\n"
                    "decode: {tp: 1}\n", "x.yaml")  # fmt: skip
    assert doc is not None
    assert [f.message for f in _of("KVA005", run_audit([doc]).findings)] == [
        "revision differs: prefill abc, decode (default) (KV pages are copied byte for byte)"
    ]
    # two models in one P/D script: the model is the first fact named
    producer, consumer = KV_ROLE.format(role="producer"), KV_ROLE.format(role="consumer")
    path = tmp_path / "pd.sh"
    path.write_text(f"vllm serve {FALCON} --port 8100 {producer} &\n"
                    f"vllm serve {NANO} --port 8200 {consumer} &\n")  # fmt: skip
    deployments, skipped = read_paths([str(path)])
    found = _of("KVA005", run_audit(deployments, skipped=tuple(skipped), pair_by="file").findings)
    assert found and found[0].message == (
        f"model differs: prefill {FALCON}, decode {NANO} (KV pages are copied byte for byte)"
    )


def test_kva013_exactly_three_partners_and_the_fix(tmp_path: Path) -> None:
    paths, findings = _files(tmp_path, ["producer", *["consumer"] * 3])
    (found,) = [f for f in _of("KVA013", findings) if f.location.file == paths[0]]
    names = ", ".join(f"decode/command-1 ({p})" for p in paths[1:])
    assert found.message.endswith(f"; {names} could be its partner but was grouped apart")
    assert found.remediation == (
        "put the partner in the same deployment (same deployment label and namespace: "
        "--pair-by label) or audit with --pair-by model"
    )


def test_kva012_after_a_pool_that_is_not_hybrid(tmp_path: Path) -> None:
    # an attention-only producer (the test Llama) is skipped; the hybrid consumer is judged
    llama = ROOT / "tests" / "data" / "llama-pd" / "model"
    producer, consumer = KV_ROLE.format(role="producer"), KV_ROLE.format(role="consumer")
    path = tmp_path / "pd.sh"
    path.write_text(f"vllm serve {llama} --port 8100 {producer} &\n"
                    f"vllm serve {FALCON} --port 8200 {consumer} &\n")  # fmt: skip
    deployments, skipped = read_paths([str(path)])
    report = run_audit(deployments, vllm_version="0.20.0", skipped=tuple(skipped))
    assert [f.pools for f in _of("KVA012", report.findings)] == [("decode/command-2",)]
