"""The deployment readers' shared helpers (kvalign/deploy/common.py) pinned where a wrong
rule changes the answer, for its mutants (tests/mutation/run.py common).

Sources of the expected values, named beside each test:

- vLLM 0.33.0 ``vllm/config/kv_transfer.py`` (``KVTransferConfig.kv_role``: ``kv_producer``
  sends KV = the prefill side, ``kv_consumer`` receives it = decode, ``kv_both``);
  ``vllm/engine/arg_utils.py`` (``--tensor-parallel-size`` etc. are integers).
- huggingface_hub's cache layout (``repo_folder_name``: ``models--`` + the repo id with
  ``/`` written ``--``; a revision under ``snapshots/REV``).
- the Docker image reference grammar (distribution/reference: ``[host[:port]/]path[:tag]
  [@digest]``, the tag after the last ``/``) and vLLM's published image names
  (``vllm/vllm-openai``, ``vllm/vllm-tpu``, ...).
- Python's :meth:`str.splitlines` (its documented line boundaries).
- the bounds kvalign's ``check`` applies (kvalign/settings.py: MAX_TP = 4096,
  MAX_BLOCK_SIZE = 2**20 = 1,048,576, MAX_SPEC_TOKENS = 1024) and the behaviour the
  module's docstrings define (the role fallback order, the ignore-comment syntax): every
  expected value is derived by hand from the input written in the test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvalign.deploy.common import (
    MAX_SUBSTITUTED,
    PoolInput,
    build_pool,
    collect_pool,
    ignores_in,
    image_deployment,
    is_vllm_image,
    key_from_labels,
    line_of,
    off_path,
    role_from_args,
    role_from_labels,
    role_from_text,
    snapshot_hub_id,
    substitute_k8s,
    version_from_image,
)
from kvalign.deploy.model import DeploymentKey, Ignore, Location, Pool, Problem
from kvalign.deploy.vllm_args import parse_vllm_args

HERE = Location("f.yaml", 3)
QWEN = "Qwen/Qwen3-0.6B"


def _kv(role: str | None) -> list[str]:
    config: dict[str, Any] = {"kv_connector": "NixlConnector"}
    if role is not None:
        config["kv_role"] = role
    return ["--kv-transfer-config", json.dumps(config)]


def _found(args: list[str] | str, **fields: Any) -> PoolInput:
    base: dict[str, Any] = {
        "role": None,
        "role_source": "",
        "name": "vllm",
        "args": args,
        "location": HERE,
        "env": {},
    }
    base.update(fields)
    return PoolInput(**base)


# ---- key_from_labels ------------------------------------------------------------------


def test_key_from_labels_takes_the_first_label_in_order_with_a_value() -> None:
    every = {
        "llm-d.ai/model": "m",
        "app.kubernetes.io/part-of": "p",
        "helm-release-name": "h",
        "app.kubernetes.io/instance": " rel ",
    }
    # the release (instance) first, its value stripped, the namespace carried
    assert key_from_labels(every, "ns") == DeploymentKey("app.kubernetes.io/instance", "rel", "ns")
    assert key_from_labels({"helm-release-name": "h", "llm-d.ai/model": "m"}) == DeploymentKey(
        "helm-release-name", "h", ""
    )
    # blank skipped, a YAML boolean is no name, an integer is read as its text
    labels = {"app.kubernetes.io/instance": "  ", "helm-release-name": True,
              "app.kubernetes.io/part-of": 7}  # fmt: skip
    assert key_from_labels(labels) == DeploymentKey("app.kubernetes.io/part-of", "7", "")
    assert key_from_labels({"llm-d.ai/model": "m"}) == DeploymentKey("llm-d.ai/model", "m")
    # llm-d's inferenceServing "true" names no deployment; a list is not a value
    assert key_from_labels({"llm-d.ai/inferenceServing": "true"}) is None
    assert key_from_labels({"app.kubernetes.io/instance": ["a"]}) is None
    assert key_from_labels({"app.kubernetes.io/instance": False}) is None


# ---- substitute_k8s -------------------------------------------------------------------


def test_substitute_k8s_replaces_known_references_only() -> None:
    # Kubernetes expands $(VAR) only; $VAR and unknown $(X) stay as written
    text = "--model $(M) --tp $(TP) $(X) $M"
    assert substitute_k8s(text, {"M": "a/b", "TP": "2"}) == "--model a/b --tp 2 $(X) $M"
    assert substitute_k8s("$(A)", {"A": ""}) == ""


def test_substitute_k8s_bound_counts_the_whole_result() -> None:
    # "$(A)" (4 characters) → A: the result is len(A) characters
    exact = "x" * MAX_SUBSTITUTED
    assert substitute_k8s("$(A)", {"A": exact}) == exact
    assert substitute_k8s("$(A)", {"A": exact + "x"}) == "$(A)"
    # two references: 8 + 2·(n − 4) characters; n = MAX/2 gives exactly MAX (kept),
    # n = MAX/2 + 1 gives MAX + 2 (over: the text stays as written, even though each
    # single substitution alone is under the bound)
    half = "y" * (MAX_SUBSTITUTED // 2)
    assert substitute_k8s("$(A)$(A)", {"A": half}) == half + half
    assert substitute_k8s("$(A)$(A)", {"A": half + "y"}) == "$(A)$(A)"
    # the text's own length counts: 1 + MAX − 4 + 4 ... "z$(A)" → 1 + len(A)
    assert substitute_k8s("z$(A)", {"A": exact}) == "z$(A)"
    assert substitute_k8s("z$(A)", {"A": exact[1:]}) == "z" + exact[1:]


# ---- roles ----------------------------------------------------------------------------


def test_role_from_text() -> None:
    assert role_from_text("Prefiller") == "prefill"
    assert role_from_text("vllm-DECODING-0") == "decode"
    assert role_from_text("decoder") == "decode"
    assert role_from_text("prefill-decode") is None  # both: no role
    assert role_from_text("server") is None


def test_role_from_args() -> None:
    # KVTransferConfig.kv_role: kv_producer = prefill, kv_consumer = decode
    assert role_from_args(parse_vllm_args(_kv("kv_producer"))) == "prefill"
    assert role_from_args(parse_vllm_args(_kv("kv_consumer"))) == "decode"
    assert role_from_args(parse_vllm_args(_kv("kv_both"))) is None
    # Dynamo's worker flags
    assert role_from_args(parse_vllm_args(["--disaggregation-mode", "prefill"])) == "prefill"
    assert role_from_args(parse_vllm_args(["--disaggregation-mode", "decode"])) == "decode"
    assert role_from_args(parse_vllm_args(["--disaggregation-mode", "agg"])) is None
    assert role_from_args(parse_vllm_args(["--is-decode-worker"])) == "decode"
    # kv_role first
    both = [*_kv("kv_consumer"), "--disaggregation-mode", "prefill"]
    assert role_from_args(parse_vllm_args(both)) == "decode"
    assert role_from_args(parse_vllm_args([])) is None


def test_role_from_labels_in_order_skipping_labels_without_a_role() -> None:
    assert role_from_labels({"llm-d.ai/role": "decode", "role": "prefill"}) == "decode"
    labels = {"llm-d.ai/role": "worker", "app.kubernetes.io/component": "prefill"}
    assert role_from_labels(labels) == "prefill"
    assert role_from_labels({"llm-d.ai/role": 3, "role": "decoder"}) == "decode"
    assert role_from_labels({"nvidia.com/dynamo-sub-component-type": "prefill"}) == "prefill"
    assert role_from_labels({"role": "router", "tier": "decode"}) is None


# ---- ignores_in -----------------------------------------------------------------------

IGNORES = """\
a: 1  # kvalign: ignore=KVA002,KVA003 reason=tested in CI
b: 2  # kvalign: ignore=KVA004
c: 3  # kvalign: ignore=KVA005 reason=
d: 4  # kvalign: ignore=KVA006reason=x
e: 5  # kvalign: ignore=KVA007 because
#kvalign:ignore=KVA008 , KVA009 reason=  spaced out
# kvalign: ignore=KVA010,,  reason=r
f: 6  # kvalign: ignore=KVA011\treason=tab
"""


def test_ignore_comments() -> None:
    ignores, problems = ignores_in(IGNORES, "d.yaml")
    at = lambda n: Location("d.yaml", n)  # noqa: E731
    assert ignores == [
        Ignore("KVA002", "tested in CI", at(1)),
        Ignore("KVA003", "tested in CI", at(1)),
        # line 4: "KVA006reason=x" is no `CODES reason=` (no space): not an ignore comment;
        # line 5: text after the codes that is not reason=: not one either
        Ignore("KVA008", "spaced out", at(6)),
        Ignore("KVA009", "spaced out", at(6)),
        Ignore("KVA010", "r", at(7)),  # the empty code between ",," skipped
        Ignore("KVA011", "tab", at(8)),  # a tab separates as a space does
    ]
    message = "ignore comment without reason= is not honoured"
    assert problems == [
        Problem(at(2), message, blocking=False),
        Problem(at(3), message, blocking=False),
    ]
    assert ignores_in("x: 1\n", "d.yaml") == ([], [])
    # a line with no comment before one with a comment: reading goes on
    text = "x: 1\n# kvalign: ignore=KVA002 reason=r\n"
    assert ignores_in(text, "d.yaml") == ([Ignore("KVA002", "r", Location("d.yaml", 2))], [])


# ---- line_of --------------------------------------------------------------------------


def test_line_of() -> None:
    text = "a\nneedle\nb\nneedle\n"
    assert line_of(text, "needle") == 2
    assert line_of(text, "needle", start=2) == 2
    assert line_of(text, "needle", start=3) == 4
    assert line_of(text, "needle", start=5) is None
    assert line_of(text, "needle", start=0) == 2  # before line 1: from line 1
    assert line_of(text, "nothing") is None
    assert line_of("", "a") is None
    # str.splitlines' boundaries: \r\n is one, \x0c (form feed) another
    assert line_of("a\r\nb\x0cneedle", "needle") == 3
    assert line_of("a\r\nb\x0cneedle", "b") == 2
    # a line never holds a line break: a needle with one is on no line
    assert line_of(text, "a\nneedle") is None
    assert line_of(text, "needle\n", start=3) is None
    # on the first line, at offset 0: found (the default start is line 1)
    assert line_of("needle\nx", "needle") == 1
    assert line_of("needle\nx", "needle", start=1) == 1


# ---- snapshot_hub_id ------------------------------------------------------------------


def test_snapshot_hub_id() -> None:
    hub = "/root/.cache/huggingface/hub"
    assert snapshot_hub_id(f"{hub}/models--Qwen--Qwen3-0.6B/snapshots/abc123") == QWEN
    assert snapshot_hub_id(f"{hub}/models--Qwen--Qwen3-0.6B/snapshots/abc123/") == QWEN
    assert snapshot_hub_id("models--a--b/snapshots/rev") == "a/b"  # exactly three parts
    assert snapshot_hub_id("snapshots/rev") is None
    assert snapshot_hub_id(f"{hub}/models--Qwen--Qwen3-0.6B/snapshots/") is None
    assert snapshot_hub_id(f"{hub}/models--Qwen--Qwen3-0.6B/snapshots//") is None
    assert snapshot_hub_id(f"{hub}/models--Qwen--Qwen3-0.6B/refs/main") is None
    assert snapshot_hub_id(f"{hub}/datasets--Qwen--data/snapshots/r") is None
    assert snapshot_hub_id(f"{hub}/models--gpt2/snapshots/r") is None  # no ORG--NAME
    assert snapshot_hub_id(f"{hub}/models--org--/snapshots/r") is None  # no NAME
    # the org is never empty: the ORG--NAME cut is searched from the second character
    assert snapshot_hub_id("models----x--y/snapshots/r") == "--x/y"
    assert snapshot_hub_id(QWEN) is None


# ---- images ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "vllm", "version"),
    [
        ("vllm/vllm-openai:v0.14.0", True, "0.14.0"),
        (" docker.io/vllm/vllm-openai:0.9.2 ", True, "0.9.2"),
        ("vllm/vllm-openai:v0.11.0-cu130", True, "0.11.0"),
        ("vllm/vllm-openai:latest", True, None),
        ("vllm/vllm-openai@sha256:0123abcd", True, None),
        ("VLLM/VLLM-OPENAI:v0.1.0", True, "0.1.0"),
        ("registry:5000/vllm:v0.10.1", True, "0.10.1"),
        ("registry:5000/vllm", True, None),  # the port is no tag
        ("my/vllm-tpu:nightly", True, None),
        ("x/vllm-cpu:v0.9.0", True, "0.9.0"),
        ("x/vllm-rocm:0.8.5", True, "0.8.5"),
        ("vllm/vllm-fork:v1.0.0", True, "1.0.0"),
        ("x/vllm-fork:v1.0.0", False, None),
        # vLLM's image names under another organisation, registry, case or a digest
        ("myorg/vllm-openai:v0.5.0", True, "0.5.0"),
        ("MyOrg/VLLM-OpenAI:v0.5.0", True, "0.5.0"),
        ("docker.io/myorg/vllm-openai:v0.5.0", True, "0.5.0"),
        ("myorg/vllm@sha256:0123abcd", True, None),
        ("ghcr.io/llm-d/llm-d:v0.2.0", False, None),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0", False, None),
    ],
)
def test_vllm_images_and_their_release(image: str, vllm: bool, version: str | None) -> None:
    assert is_vllm_image(image) is vllm
    assert version_from_image(image) == version


# ---- build_pool -----------------------------------------------------------------------


def test_a_pool_with_every_field() -> None:
    key = DeploymentKey("llm-d.ai/model", "m")
    found = _found(
        ["--model", "a/b", "--block-size", "64", *_kv("kv_producer")],
        role="decode",
        role_source="label",
        name="d-0",
        env={"B": "2", "A": "1"},
        model=QWEN,
        tp=4,
        dp=2,
        vllm_version="0.33.0",
        deployment_key=key,
        nodes=2,
        gpus_per_node=8,
        gpu="H100",
    )
    pool, notes = build_pool(found)
    assert notes == []
    assert pool is not None
    # the role given wins over kv_producer; the manifest's model/tp/dp over the args
    assert (pool.role, pool.role_source, pool.name, pool.model, pool.tp, pool.dp) == (
        "decode", "label", "d-0", QWEN, 4, 2,
    )  # fmt: skip
    assert pool.location == HERE
    assert pool.env == (("A", "1"), ("B", "2"))
    assert (pool.deployment_key, pool.nodes, pool.gpus_per_node) == (key, 2, 8)
    assert (pool.settings.gpu, pool.settings.vllm_version, pool.settings.block_size) == (
        "H100", "0.33.0", 64,
    )  # fmt: skip
    assert pool.args.block_size == 64


def test_the_environment_reaches_the_parser() -> None:
    # LMCache reads LMCACHE_CHUNK_SIZE from the environment (LMCache docs, configuration:
    # chunk_size / LMCACHE_CHUNK_SIZE); vllm_args reads it when the config has none
    pool, _ = build_pool(_found(["m/x"], role="prefill", env={"LMCACHE_CHUNK_SIZE": "512"}))
    assert pool is not None
    assert (pool.args.lmcache_chunk_size, pool.args.lmcache_chunk_source) == (
        512, "LMCACHE_CHUNK_SIZE",
    )  # fmt: skip


def test_sizes_from_the_arguments_then_one() -> None:
    pool, _ = build_pool(
        _found(["m/x", "--tensor-parallel-size", "2", "--data-parallel-size", "3"], role="prefill")
    )
    assert pool is not None and (pool.tp, pool.dp, pool.model) == (2, 3, "m/x")
    pool, _ = build_pool(_found(["m/x"], role="prefill"))
    assert pool is not None and (pool.tp, pool.dp) == (1, 1)
    assert pool.settings.gpu is None and pool.settings.vllm_version is None
    assert (pool.nodes, pool.gpus_per_node, pool.deployment_key) == (None, None, None)


@pytest.mark.parametrize(
    ("args", "fields", "role", "source"),
    [
        (["m/x", *_kv("kv_producer")], {}, "prefill", "args"),
        (["m/x", *_kv("kv_consumer")], {"name": "prefill-0"}, "decode", "args"),
        # kv_both names no role: the name does
        (["m/x", *_kv("kv_both")], {"name": "llama-prefill"}, "prefill", "name"),
        # the hint before the name
        (["m/x", *_kv(None)], {"name": "prefill-0", "name_hint": "decoder"}, "decode", "name"),
        (["m/x", *_kv(None)], {"name": "decode-0", "name_hint": ""}, "decode", "name"),
        # no P/D config (or kv_both) and no role anywhere: a standalone server
        (["m/x"], {}, "server", "standalone"),
        (["m/x", *_kv("kv_both")], {}, "server", "standalone"),
    ],
)
def test_the_role_falls_back_args_then_name_then_standalone(
    args: list[str], fields: dict[str, Any], role: str, source: str
) -> None:
    pool, problems = build_pool(_found(args, **fields))
    assert problems == []
    assert pool is not None and (pool.role, pool.role_source) == (role, source)


def test_a_pd_pool_without_a_role_is_skipped_with_a_note() -> None:
    pool, problems = build_pool(_found(["m/x", *_kv(None)], name="worker"))
    assert pool is None
    assert problems == [
        Problem(
            HERE,
            "worker: role unknown (no kv_role kv_producer/kv_consumer, --disaggregation-mode "
            "or prefill/decode in the names, comments or conditions next to it): not a "
            "prefill or decode pool; set kv_role in --kv-transfer-config or name the pool "
            "prefill/decode",
            blocking=False,
        )
    ]


def test_unresolved_variables_block() -> None:
    # vllm_args records "--FLAG: REF" per reference (vllm_args._parse)
    pool, problems = build_pool(_found(["m/x", "--block-size", "$(BS)", "--dtype", "$(D)"]))
    # no role and a reference that may name it: not a standalone server
    assert pool is None
    assert problems == [
        Problem(HERE, "vllm: unresolved variable(s) --block-size: $(BS), --dtype: $(D)")
    ]
    args = ["m/x", "--block-size", "$(BS)", "--max-model-len", "$(L)"]
    pool, problems = build_pool(_found(args, role="prefill"))
    assert pool is None
    assert problems == [
        Problem(
            HERE,
            "prefill/vllm: unresolved variable(s) --block-size: $(BS), --max-model-len: $(L)",
        )
    ]


def test_noted_references_are_notes() -> None:
    # --port is no flag kvalign reads: its reference is noted (vllm_args._parse)
    pool, problems = build_pool(_found(["m/x", "--port", "$(PORT)"], role="decode"))
    assert pool is not None and pool.role == "decode"
    assert problems == [
        Problem(
            HERE,
            "decode/vllm: unresolved --port: $(PORT) cannot change sizing or role: evaluated",
            blocking=False,
        )
    ]


def test_a_pool_needs_a_model() -> None:
    pool, problems = build_pool(_found(["--block-size", "16"], role="prefill"))
    assert (pool, problems) == (None, [Problem(HERE, "prefill/vllm: no model given")])


def test_a_cache_snapshot_reads_as_its_hub_id() -> None:
    path = "/data/hub/models--Qwen--Qwen3-0.6B/snapshots/r1"
    pool, problems = build_pool(_found([path], role="prefill"))
    assert pool is not None and pool.model == QWEN
    assert problems == [
        Problem(
            HERE,
            f"prefill/vllm: model {path} is a Hugging Face cache snapshot: read as {QWEN}",
            blocking=False,
        )
    ]


def test_a_parse_error_names_the_role_guess() -> None:
    bad = ["m/x", "--tensor-parallel-size", "two"]
    for fields, label in [
        ({"role": "prefill", "name": "p"}, "prefill/p"),
        ({"name": "vllm-decode"}, "decode/vllm-decode"),
        ({"name": "x", "name_hint": "prefiller"}, "prefill/x"),
        ({"name": "x"}, "x"),
    ]:
        pool, problems = build_pool(_found(bad, **fields))
        assert pool is None and len(problems) == 1
        assert problems[0].location == HERE and problems[0].blocking
        assert problems[0].message.startswith(f"{label}: --tensor-parallel-size")


def test_config_files_reach_the_parser() -> None:
    found = _found(["--config", "c.yaml"], role="prefill")
    pool, _ = build_pool(found, {"c.yaml": {"model": "m/x", "block-size": 32}})
    assert pool is not None and (pool.model, pool.settings.block_size) == ("m/x", 32)
    pool, problems = build_pool(found)
    assert pool is None
    assert problems == [
        Problem(HERE, "prefill/vllm: --config c.yaml: file not found next to the deployment")
    ]


POSITIVE = "a positive integer"
NON_NEGATIVE = "a non-negative integer"


@pytest.mark.parametrize(
    ("args", "fields", "message"),
    [
        ([], {"tp": 0}, f"tensor parallel size (manifest field): expected {POSITIVE} up to "
         "4096, got 0"),
        ([], {"tp": 4097}, f"tensor parallel size (manifest field): expected {POSITIVE} up to "
         "4096, got 4097"),
        ([], {"tp": True}, f"tensor parallel size (manifest field): expected {POSITIVE} up to "
         "4096, got True"),
        ([], {"dp": -1}, f"data parallel size (manifest field): expected {POSITIVE}, got -1"),
        (["--tensor-parallel-size", "0"], {}, f"--tensor-parallel-size: expected {POSITIVE} "
         "up to 4096, got 0"),
        (["--tensor-parallel-size", "4097"], {}, f"--tensor-parallel-size: expected {POSITIVE} "
         "up to 4096, got 4097"),
        (["--data-parallel-size", "0"], {}, f"--data-parallel-size: expected {POSITIVE}, got 0"),
        (["--pipeline-parallel-size", "0"], {}, f"--pipeline-parallel-size: expected "
         f"{POSITIVE}, got 0"),
        (["--block-size", "0"], {}, f"--block-size: expected {POSITIVE} up to 1048576, got 0"),
        (["--block-size", "1048577"], {}, f"--block-size: expected {POSITIVE} up to 1048576, "
         "got 1048577"),
        (["--speculative-config", '{"num_speculative_tokens": -1}'], {},
         f"--speculative-config num_speculative_tokens: expected {NON_NEGATIVE} up to 1024, "
         "got -1"),
        (["--speculative-config", '{"num_speculative_tokens": 1025}'], {},
         f"--speculative-config num_speculative_tokens: expected {NON_NEGATIVE} up to 1024, "
         "got 1025"),
    ],
)  # fmt: skip
def test_sizes_out_of_bounds(args: list[str], fields: dict[str, Any], message: str) -> None:
    pool, problems = build_pool(_found(["m/x", *args], role="prefill", **fields))
    assert pool is None
    assert problems == [Problem(HERE, f"prefill/vllm: {message}")]


def test_sizes_at_the_bounds_are_accepted() -> None:
    found = _found(
        ["m/x", "--block-size", "1048576", "--pipeline-parallel-size", "1",
         "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 1024}'],
        role="prefill", tp=4096, dp=1,
    )  # fmt: skip
    pool, problems = build_pool(found)
    assert problems == [] and pool is not None
    assert (pool.tp, pool.dp, pool.settings.block_size) == (4096, 1, 1048576)
    low = _found(
        ["m/x", "--tensor-parallel-size", "1", "--data-parallel-size", "1", "--block-size", "1",
         "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 0}'],
        role="prefill",
    )  # fmt: skip
    pool, problems = build_pool(low)
    assert problems == [] and pool is not None and pool.settings.block_size == 1
    high = _found(["m/x", "--tensor-parallel-size", "4096"], role="prefill")
    pool, problems = build_pool(high)
    assert problems == [] and pool is not None and pool.tp == 4096


# ---- collect_pool, off_path, image_deployment -----------------------------------------


def test_collect_pool() -> None:
    pools: list[Pool] = []
    problems: list[Problem] = [Problem(HERE, "earlier")]
    collect_pool(_found(["m/x", "--port", "$(P)"], role="prefill"), pools, problems)
    collect_pool(_found([], role="decode"), pools, problems)
    assert [(p.role, p.model) for p in pools] == [("prefill", "m/x")]
    assert [p.message for p in problems] == [
        "earlier",
        "prefill/vllm: unresolved --port: $(P) cannot change sizing or role: evaluated",
        "decode/vllm: no model given",
    ]


def test_off_path_turns_blocking_problems_into_notes() -> None:
    quiet = Problem(HERE, "n", blocking=False, verbose_only=True)
    assert off_path([Problem(HERE, "m"), quiet]) == [
        Problem(HERE, "m (on another if/case path; not evaluated)", blocking=False),
        quiet,
    ]


def test_image_deployment_takes_the_first_release() -> None:
    pool, _ = build_pool(_found(["m/x"], role="prefill"))
    assert pool is not None
    problem = Problem(HERE, "p")
    versions = {"0.14.0": "vllm/vllm-openai:v0.14.0", "0.15.0": "vllm/vllm-openai:v0.15.0"}
    found = image_deployment("f.yaml", "kubernetes", [pool], [problem], versions, 3)
    assert (found.source, found.kind, found.pools, found.problems, found.launches) == (
        "f.yaml", "kubernetes", (pool,), (problem,), 3,
    )  # fmt: skip
    assert (found.vllm_version, found.version_source) == (
        "0.14.0", "image vllm/vllm-openai:v0.14.0",
    )  # fmt: skip
    none = image_deployment("f.yaml", "compose", [], [], {}, 0)
    assert (none.vllm_version, none.version_source, none.pools, none.launches) == (
        None, None, (), 0,
    )  # fmt: skip
