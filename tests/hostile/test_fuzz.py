"""Property-based fuzzing: on any input, the vllm serve parser, the deployment readers and
the arithmetic either return their documented result or raise a kvalign.errors type.

Anything else escaping (KeyError, TypeError, RecursionError, ...) fails the test.
"""

from __future__ import annotations

import json
import os
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvalign.deploy import cmdline, read_text
from kvalign.deploy.model import Deployment
from kvalign.deploy.vllm_args import ALIASES, KNOWN, VllmArgs, parse_vllm_args
from kvalign.errors import KvalignError
from kvalign.geometry import ModelGeometry
from kvalign.pd import analyze_pair
from kvalign.settings import Settings
from kvalign.sources import catalog, load_model
from kvalign.sources.config_file import parse_config_bytes
from kvalign.versions import resolve
from tests.resolve import rank_of

FUZZ = settings(
    max_examples=int(os.environ.get("KVALIGN_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

flags = st.sampled_from(
    [f"--{k}" for k in sorted(KNOWN)]
    + [f"--no-{k}" for k in ("enable-prefix-caching", "trust-remote-code")]
    + sorted(ALIASES)
    + ["--speculative-config.num_speculative_tokens", "--kv_transfer_config", "--unknown-x"]
)
values = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.sampled_from(["", "0", "-1", "1.5", "1e9", "32k", "2m", "true", "off", "$(VAR)", "'"]),
    st.sampled_from(['{"kv_role":"kv_producer"}', '{"num_speculative_tokens": "x"}', "[1]"]),
    st.sampled_from(['{"kv_connector_extra_config": {"chunk_size": -3}}', "{", "null"]),
    st.text(max_size=12),
)
argv = st.lists(st.one_of(flags, values, flags.map(lambda f: f + "=")), max_size=14)


@FUZZ
@given(words=argv, env=st.dictionaries(st.sampled_from(["LMCACHE_CHUNK_SIZE",
       "VLLM_ATTENTION_BACKEND"]), values, max_size=2))  # fmt: skip
def test_vllm_args_parser_raises_only_kvalign_errors(words: list[str], env: dict[str, str]) -> None:
    try:
        parsed = parse_vllm_args(words, env=env)
    except KvalignError:
        return
    assert isinstance(parsed, VllmArgs)
    for size in (parsed.tensor_parallel_size, parsed.block_size, parsed.max_model_len):
        assert size is None or isinstance(size, int)


@FUZZ
@given(text=st.text(max_size=200))
def test_vllm_args_parser_on_raw_strings(text: str) -> None:
    try:
        parsed = parse_vllm_args("vllm serve " + text)
    except KvalignError:
        return
    assert isinstance(parsed, VllmArgs)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=True),
    st.text(max_size=10), st.sampled_from(["vllm serve m -tp 2", "$(X)", "prefill", "decode"]),
)  # fmt: skip
keys = st.sampled_from(
    ["model", "prefill", "decode", "tp", "dp", "args", "env", "router", "block_size", "kind",
     "metadata", "name", "labels", "spec", "template", "containers", "command", "image",
     "roles", "services", "components", "modelArtifacts", "uri", "parallelism", "tensor",
     "vllm_version", "valueFrom", "configMapKeyRef", "envFrom", "mainContainer", "data"]
)  # fmt: skip
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)
KINDS = ["Deployment", "LeaderWorkerSet", "DisaggregatedSet", "DynamoGraphDeployment",
         "LLMInferenceService", "ConfigMap", "EndpointPickerConfig"]  # fmt: skip


def _dump(doc: Any) -> str:
    return yaml.safe_dump(doc, default_flow_style=False, allow_unicode=True)


def _check_read(text: str, name: str) -> None:
    try:
        found = read_text(text, name)
    except KvalignError:
        return
    assert found is None or isinstance(found, Deployment)


@FUZZ
@given(doc=documents)
def test_reader_on_arbitrary_yaml_documents(doc: Any) -> None:
    _check_read(_dump(doc), "fuzz.yaml")


@FUZZ
@given(
    kind=st.sampled_from(KINDS),
    spec=documents,
    model=st.one_of(st.none(), scalars),
    prefill=documents,
    decode=documents,
)
def test_reader_on_manifest_shaped_documents(
    kind: str, spec: Any, model: Any, prefill: Any, decode: Any
) -> None:
    manifest = {"kind": kind, "metadata": {"name": "x-prefill"}, "spec": spec}
    own = {"model": model, "prefill": prefill, "decode": decode}
    values_file = {"modelArtifacts": {"uri": model}, "prefill": prefill, "decode": decode}
    text = "---\n".join(_dump(d) for d in (manifest, own))
    _check_read(text, "fuzz.yaml")
    _check_read(_dump(own), "own.yaml")
    _check_read(_dump(values_file), "values.yaml")


@FUZZ
@given(text=st.text(max_size=300))
def test_reader_on_arbitrary_text(text: str) -> None:
    _check_read(text, "fuzz.yaml")
    _check_read(text, "fuzz.sh")


@FUZZ
@given(lines=st.lists(st.one_of(
    st.sampled_from(["# prefill", "# decode", "export TP=2", "BS=16", "\\", "&&", "'", '"']),
    argv.map(lambda ws: "vllm serve m " + " ".join(ws)),
), max_size=6))  # fmt: skip
def test_shell_reader_on_command_scripts(lines: list[str]) -> None:
    try:
        found = cmdline.read("\n".join(lines), "fuzz.sh")
    except KvalignError:
        return
    assert isinstance(found, Deployment)


@FUZZ
@given(data=st.binary(max_size=300))
def test_config_parser_on_arbitrary_bytes(data: bytes) -> None:
    try:
        parsed = parse_config_bytes(data, "config.json")
    except KvalignError:
        return
    assert isinstance(parsed, dict)


GEOMETRIES: list[ModelGeometry] = [load_model(e.model_id) for e in catalog.entries()]
DTYPES = ["auto", "bfloat16", "float16", "float32", "fp8", "fp8_e4m3", "fp8_e5m2", "int8",
          "nvfp4", "", "garbage"]  # fmt: skip
fuzz_settings = st.builds(
    Settings,
    dtype=st.sampled_from(DTYPES),
    kv_cache_dtype=st.sampled_from(DTYPES),
    block_size=st.one_of(st.none(), st.integers(-4, 1 << 20)),
    enable_prefix_caching=st.booleans(),
    mamba_cache_dtype=st.sampled_from(DTYPES),
    mamba_ssm_cache_dtype=st.sampled_from(DTYPES),
    num_speculative_tokens=st.integers(-2, 64),
    attention_backend=st.sampled_from(
        ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLASHMLA", "bogus", ""]
    ),
    gpu=st.sampled_from([None, "H100", "B200", "A100", "toaster"]),
    gdn_prefill_backend=st.sampled_from(["auto", "triton", "flashinfer"]),
    alignment=st.sampled_from(["vllm", "tp-stable"]),
    vllm_version=st.sampled_from([None, "0.10.0", "0.20", "0.33.0", "9.9", "banana", "0.x"]),
)


@FUZZ
@given(
    index=st.integers(0, len(GEOMETRIES) - 1),
    settings_=fuzz_settings,
    tp=st.one_of(st.integers(-8, 64), st.integers(10**6, 10**30)),
)
def test_arithmetic_raises_only_kvalign_errors(index: int, settings_: Settings, tp: int) -> None:
    geometry = GEOMETRIES[index]
    try:
        rank = rank_of(geometry, settings_, tp)
    except KvalignError:
        return
    assert rank.tp == tp
    if rank.valid:
        block = rank.logical(settings_.alignment)
        assert block is None or block >= 1
        json.dumps(str(rank))  # renders without error
        analyze_pair(rank, rank, settings_.alignment, resolve(settings_.vllm_version).profile)
    else:
        assert rank.reason
