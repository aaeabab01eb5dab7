"""The Ray Serve LLM prefill/decode reader (kvalign/deploy/rayserve.py) pinned where a
wrong rule changes the answer, for its mutants (tests/mutation/run.py rayserve).

Sources: Ray Serve's LLM API (docs.ray.io, ``ray.serve.llm``: ``build_pd_openai_app``
takes ``prefill_config`` and ``decode_config``, each an ``LLMConfig`` whose
``engine_kwargs`` are the vLLM engine's keyword arguments, whose
``model_loading_config`` has ``model_id`` and ``model_source``, and whose
``accelerator_type`` names the GPU, e.g. ``H100``; a Serve config file lists
``applications`` with ``name``, ``import_path`` and ``args``), vLLM 0.33.0's CLI (an
engine argument ``block_size`` is the flag ``--block-size``; a boolean flag's negation
is ``--no-…``; dict-valued arguments such as ``--kv-transfer-config`` take JSON), the
reader's documented rules (its module docstring: the role is the block's key, the
application's name ties the pools), and the configs written in each test, read by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from kvalign.deploy.interface import Source
from kvalign.deploy.model import DeploymentKey, Location, Problem
from kvalign.deploy.rayserve import Reader, _apps, _flag, matches, read

FALCON = "tiiuae/Falcon-H1-0.5B-Base"


def _read(text: str, file: str = "serve.yaml") -> Any:
    return read(Source(text, file))


def _key(name: str) -> DeploymentKey:
    return DeploymentKey("Ray Serve application", name, single_object=True)


@pytest.mark.parametrize(
    ("key", "value", "words"),
    [
        ("block_size", 64, ["--block-size", "64"]),
        ("max_model_len", "32k", ["--max-model-len", "32k"]),
        ("enable_prefix_caching", True, ["--enable-prefix-caching"]),
        ("enable_prefix_caching", False, ["--no-enable-prefix-caching"]),
        ("kv_transfer_config", {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
         ["--kv-transfer-config", '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}']),
        ("x_y", [1, "a"], ["--x-y", '[1, "a"]']),
        ("dtype", None, []),
        ("gpu_memory_utilization", 0.9, ["--gpu-memory-utilization", "0.9"]),
    ],
)  # fmt: skip
def test_flag(key: str, value: Any, words: list[str]) -> None:
    assert _flag(key, value) == words


def test_apps() -> None:
    top = {"prefill_config": {}, "applications": "x"}
    assert list(_apps(top)) == [("pd", top)]
    assert list(_apps({"decode_config": None})) == [("pd", {"decode_config": None})]
    args = {"decode_config": {}}
    doc = {
        "applications": [
            "not an app",
            {"name": "a", "args": {"llm_configs": []}},  # no P/D block
            {"name": "b", "args": args},
            {"args": args},  # no name: by its index
            {"name": "", "args": args},
            {"name": "c", "args": ["prefill_config"]},
        ]
    }
    assert list(_apps(doc)) == [("b", args), ("applications[3]", args),
                                ("applications[4]", args)]  # fmt: skip
    assert list(_apps(["prefill_config"])) == []
    assert matches([None, doc]) is True
    assert matches([{"applications": []}, {"llm_configs": []}]) is False


def test_the_reader_takes_yaml_files_with_a_block() -> None:
    text = "prefill_config: {}\n"
    assert Reader().matches(Source(text, "serve.yaml")) is True
    assert Reader().matches(Source(text, "serve.sh")) is False
    assert Reader().matches(Source("applications: []\n", "serve.yaml")) is False


CONFIG = f"""\
applications:
- name: falcon-pd
  import_path: ray.serve.llm:build_pd_openai_app
  args:
    prefill_config:
      model_loading_config:
        model_id: falcon
        model_source: {FALCON}
      accelerator_type: H100
      engine_kwargs:
        tensor_parallel_size: 2
        block_size: 64
        enable_prefix_caching: false
    decode_config:
      model_loading_config: {{model_id: {FALCON}, model_source: ""}}
      engine_kwargs: {{tensor_parallel_size: 1}}
      accelerator_type: 7
"""


def test_a_serve_config() -> None:
    found = _read(CONFIG)
    pools = [
        (p.role, p.name, p.model, p.tp, p.location, p.settings.gpu, p.role_source,
         p.deployment_key, p.settings.block_size, p.settings.enable_prefix_caching)
        for p in found.pools
    ]  # fmt: skip
    assert pools == [
        # prefill_config: at line 5; model_source wins over model_id
        ("prefill", "falcon-pd-prefill", FALCON, 2, Location("serve.yaml", 5), "H100",
         "field", _key("falcon-pd"), 64, False),
        # decode_config: line 14; an empty model_source: model_id; a GPU that is no string
        ("decode", "falcon-pd-decode", FALCON, 1, Location("serve.yaml", 14), None, "field",
         _key("falcon-pd"), None, None),
    ]  # fmt: skip
    assert (found.source, found.kind, found.launches) == ("serve.yaml", "ray-serve", 2)
    assert found.problems == ()


def test_blocks_are_found_in_their_own_document() -> None:
    text = (
        "prefill_config:\n  model_loading_config: {model_id: org/a}\n"
        "---\n"
        "# second\n"
        "prefill_config:\n  model_loading_config: {model_id: org/b}\n"
        "decode_config: {model_loading_config: {model_id: org/b}}\n"
    )
    found = _read(text)
    assert [(p.name, p.model, p.location.line) for p in found.pools] == [
        ("pd-prefill", "org/a", 1),
        ("pd-prefill", "org/b", 5),  # the second document's prefill_config:, not line 1
        ("pd-decode", "org/b", 7),
    ]
    assert found.launches == 3


def test_a_block_line_not_found_is_the_document_start() -> None:
    # written as a quoted key, "prefill_config": is not found: the document's first line
    text = 'a: 1\n---\n"prefill_config": {model_loading_config: {model_id: org/a}}\n'
    (pool,) = _read(text).pools
    assert pool.location == Location("serve.yaml", 3)


def test_blocks_that_are_not_mappings_are_refused() -> None:
    text = (
        "prefill_config: [1]\n"
        "decode_config:\n  model_loading_config: {model_id: org/a}\n  engine_kwargs: [1]\n"
    )
    found = _read(text)
    assert found.pools == () and found.launches == 2
    assert found.problems == (
        Problem(Location("serve.yaml", 1), "pd.prefill_config: expected a mapping"),
        Problem(Location("serve.yaml", 2), "pd.decode_config.engine_kwargs: expected a mapping"),
    )


def test_a_missing_decode_block_is_no_launch_and_a_refusal_does_not_stop_the_next() -> None:
    found = _read("prefill_config: 3\ndecode_config:\n  model_loading_config: {model_id: m}\n")
    assert [p.name for p in found.pools] == ["pd-decode"] and found.launches == 2
    found = _read("prefill_config:\n  model_loading_config: {model_id: m}\n")
    assert [p.name for p in found.pools] == ["pd-prefill"] and found.launches == 1
    found = _read(
        "prefill_config:\n  engine_kwargs: 1\n  model_loading_config: {model_id: m}\n"
        "decode_config:\n  model_loading_config: {model_id: m}\n"
    )
    assert [p.name for p in found.pools] == ["pd-decode"]
    # the refusal of the first block stays when the second is read
    assert found.problems == (
        Problem(Location("serve.yaml", 1), "pd.prefill_config.engine_kwargs: expected a mapping"),
    )
    # no prefill block at all: the decode block is still read
    found = _read("decode_config:\n  model_loading_config: {model_id: m}\n")
    assert [p.name for p in found.pools] == ["pd-decode"] and found.launches == 1


@pytest.mark.parametrize(
    "loading",
    ["{model_id: '  '}", "{model_id: 3}", "[org/m]", "{}", "{model_source: null}"],
)
def test_no_model_name(loading: str) -> None:
    # no usable model_source / model_id: the pool has no model from the config, so its
    # arguments must name one; here they do not
    text = (
        f"prefill_config:\n  model_loading_config: {loading}\n  engine_kwargs: {{model: org/x}}\n"
    )
    (pool,) = _read(text).pools
    assert pool.model == "org/x"
