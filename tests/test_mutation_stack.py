"""The vLLM production-stack values reader (kvalign/deploy/stack.py) pinned where a wrong
rule changes the answer, for its mutants (tests/mutation/run.py stack).

Source: the chart's template helm/templates/deployment-vllm-multi.yaml
(vllm-project/production-stack 010004e), which runs, per ``servingEngineSpec.modelSpec``
entry, ``vllm serve MODEL_URL`` and then, inside ``with .vllmConfig`` (so only for a
non-empty ``vllmConfig``): ``--enable-prefix-caching`` when ``enablePrefixCaching`` is
true, else ``--no-enable-prefix-caching``; ``--max-model-len``, ``--dtype``,
``--tensor-parallel-size`` for the keys present, each value quoted; ``extraArgs`` as
given; then, for ``lmcacheConfig.enabled``, ``--kv-transfer-config`` with
``LMCacheConnectorV1`` and ``kv_role`` = ``lmcacheConfig.kvRole`` (``kv_both`` when
unset). The image is ``repository:tag``. The rest is kvalign's documented reading (the
module docstring: ``requestGPU`` the GPUs per pod, the GPU from the
``nvidia.com/gpu.product`` node-selector term, ``env`` entries with a ``value``) and the
values written in each test, read by hand (which key is on which line).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kvalign.deploy.interface import Source
from kvalign.deploy.model import DeploymentKey, Location, Problem
from kvalign.deploy.stack import Reader, _arguments, matches, read
from kvalign.errors import InvalidConfig

FALCON = "tiiuae/Falcon-H1-0.5B-Base"


def _read(text: str) -> Any:
    return read(yaml.safe_load(text), text, "v.yaml")


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"servingEngineSpec": {"modelSpec": []}}, True),
        ({"servingEngineSpec": {"modelSpec": {}}}, False),
        ({"servingEngineSpec": {}}, False),
        ({"servingEngineSpec": []}, False),
        ({"routerSpec": {}}, False),
        ([], False),
    ],
)
def test_matches(doc: Any, expected: bool) -> None:
    assert matches(doc) is expected


def test_the_reader_takes_one_values_document_only() -> None:
    one = "servingEngineSpec:\n  modelSpec: []\n"
    assert Reader().matches(Source(one, "v.yaml")) is True
    assert Reader().matches(Source(one + "---\n" + one, "v.yaml")) is False
    assert Reader().matches(Source("a: 1\n", "v.yaml")) is False


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # the chart's order: prefix caching, maxModelLen, dtype, tensorParallelSize,
        # extraArgs, then the LMCache connector
        (
            {"modelURL": " org/m ", "vllmConfig": {
                "tensorParallelSize": 2, "dtype": "bfloat16", "maxModelLen": 4096,
                "enablePrefixCaching": True, "extraArgs": ["--block-size", 64]}},
            ["org/m", "--enable-prefix-caching", "--max-model-len", "4096", "--dtype",
             "bfloat16", "--tensor-parallel-size", "2", "--block-size", "64"],
        ),
        # enablePrefixCaching false or absent in a vllmConfig: --no-enable-prefix-caching
        ({"modelURL": "m", "vllmConfig": {"enablePrefixCaching": False}},
         ["m", "--no-enable-prefix-caching"]),
        ({"modelURL": "m", "vllmConfig": {"maxModelLen": 8}},
         ["m", "--no-enable-prefix-caching", "--max-model-len", "8"]),
        # a YAML boolean is written as Helm's quote writes it (true / false)
        ({"modelURL": "m", "vllmConfig": {"dtype": True}},
         ["m", "--no-enable-prefix-caching", "--dtype", "true"]),
        ({"modelURL": "m", "vllmConfig": {"tensorParallelSize": False}},
         ["m", "--no-enable-prefix-caching", "--tensor-parallel-size", "false"]),
        ({"modelURL": "m", "vllmConfig": {"extraArgs": []}}, ["m", "--no-enable-prefix-caching"]),
        ({"modelURL": "m", "vllmConfig": {"extraArgs": None}},
         ["m", "--no-enable-prefix-caching"]),
        # LMCache: the role as given, kv_both when unset or empty; not enabled: nothing
        ({"modelURL": "m", "vllmConfig": {"maxModelLen": 8},
          "lmcacheConfig": {"enabled": True, "kvRole": "kv_producer"}},
         ["m", "--no-enable-prefix-caching", "--max-model-len", "8", "--kv-transfer-config",
          '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_producer"}']),
        ({"modelURL": "m", "vllmConfig": {"maxModelLen": 8},
          "lmcacheConfig": {"enabled": True, "kvRole": ""}},
         ["m", "--no-enable-prefix-caching", "--max-model-len", "8", "--kv-transfer-config",
          '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}']),
        ({"modelURL": "m", "vllmConfig": {"maxModelLen": 8},
          "lmcacheConfig": {"enabled": False, "kvRole": 3}},
         ["m", "--no-enable-prefix-caching", "--max-model-len", "8"]),
        ({"modelURL": "m", "vllmConfig": {"maxModelLen": 8}, "lmcacheConfig": None},
         ["m", "--no-enable-prefix-caching", "--max-model-len", "8"]),
    ],
)  # fmt: skip
def test_arguments(entry: dict[str, Any], expected: list[str]) -> None:
    assert _arguments(entry, "v.yaml", "servingEngineSpec.modelSpec[0]") == expected


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({}, "v.yaml: W.modelURL: expected a model id, got None"),
        ({"modelURL": "  "}, "v.yaml: W.modelURL: expected a model id, got '  '"),
        ({"modelURL": 7}, "v.yaml: W.modelURL: expected a model id, got 7"),
        ({"modelURL": "m", "vllmConfig": [1]}, "v.yaml: W.vllmConfig: expected a mapping"),
        ({"modelURL": "m", "vllmConfig": {"extraArgs": "--x"}},
         "v.yaml: W.vllmConfig.extraArgs: expected a list"),
        ({"modelURL": "m", "lmcacheConfig": [1]}, "v.yaml: W.lmcacheConfig: expected a mapping"),
        ({"modelURL": "m", "lmcacheConfig": {"enabled": True, "kvRole": 3}},
         "v.yaml: W.lmcacheConfig.kvRole: expected kv_producer, kv_consumer or kv_both, got 3"),
    ],
)  # fmt: skip
def test_argument_refusals(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfig) as error:
        _arguments(entry, "v.yaml", "W")
    assert str(error.value) == message


VALUES = f"""\
servingEngineSpec:
  modelSpec:
  - name: falcon-prefill
    repository: "vllm/vllm-openai"
    tag: "v0.32.1"
    modelURL: "{FALCON}"
    requestGPU: 2
    env:
    - {{name: A, value: 1}}
    - {{name: B, valueFrom: {{secretKeyRef: {{name: s, key: k}}}}}}
    vllmConfig:
      tensorParallelSize: 2
    lmcacheConfig: {{enabled: true, kvRole: kv_producer}}
    nodeSelectorTerms:
    - matchExpressions:
      - key: nvidia.com/gpu.product
        operator: In
        values: ["NVIDIA-H100-80GB-HBM3"]
  - repository: "vllm/vllm-openai"
    tag: "v0.33.0"
    modelURL: "{FALCON}"
    requestGPU: true
    vllmConfig:
      tensorParallelSize: 1
    lmcacheConfig: {{enabled: true, kvRole: kv_consumer}}
  - name: worker
    modelURL: "{FALCON}"
    labels: {{model: falcon, tier: decode}}
    vllmConfig:
      tensorParallelSize: 1
"""


def test_a_values_file() -> None:
    found = _read(VALUES)
    pools = [
        (p.role, p.name, p.model, p.tp, p.location, p.env, p.gpus_per_node, p.settings.gpu,
         p.role_source, p.deployment_key)
        for p in found.pools
    ]  # fmt: skip
    key = DeploymentKey("production-stack values", "v.yaml", single_object=True)
    assert pools == [
        # line 3 (its name: line); kv_producer: prefill; A has a value, B does not
        ("prefill", "falcon-prefill", FALCON, 2, Location("v.yaml", 3), (("A", "1"),), 2,
         "H100", "args", key),
        # no name: modelSpec-1, at the modelSpec: line (2); requestGPU true is no count
        ("decode", "modelSpec-1", FALCON, 1, Location("v.yaml", 2), (), None, None, "args",
         key),
        # no LMCache: the role from its labels (tier: decode), named worker at line 26
        ("decode", "worker", FALCON, 1, Location("v.yaml", 26), (), None, None, "name", key),
    ]  # fmt: skip
    # the first vLLM image's release
    assert (found.vllm_version, found.version_source) == (
        "0.32.1",
        "image vllm/vllm-openai:v0.32.1",
    )
    assert (found.source, found.kind, found.launches) == ("v.yaml", "production-stack", 3)


def test_a_name_with_a_role_wins_over_the_labels() -> None:
    text = (
        "servingEngineSpec:\n  modelSpec:\n  - name: my-prefill\n    modelURL: m\n"
        "    labels: {tier: decode}\n"
    )
    (pool,) = _read(text).pools
    assert (pool.role, pool.name) == ("prefill", "my-prefill")
    # labels not a mapping: no hint from them; no role and no --kv-transfer-config: an
    # aggregated server
    text = (
        "servingEngineSpec:\n  modelSpec:\n  - name: web\n    modelURL: m\n    labels: [decode]\n"
    )
    assert [(p.role, p.name, p.role_source) for p in _read(text).pools] == [
        ("server", "web", "standalone")
    ]


def test_a_gpu_label_kvalign_does_not_know_is_a_note() -> None:
    text = (
        "servingEngineSpec:\n  modelSpec:\n  - name: p-prefill\n    modelURL: m\n"
        "    nodeSelectorTerms:\n    - matchExpressions:\n"
        "      - {key: nvidia.com/gpu.product, operator: In, values: [Tesla-Z999]}\n"
    )
    found = _read(text)
    assert [p.settings.gpu for p in found.pools] == [None]
    assert found.problems[0] == Problem(
        Location("v.yaml", 3),
        "p-prefill: GPU node label Tesla-Z999: no GPU model kvalign knows (the --gpu default "
        "is used)",
        blocking=False,
    )


def test_an_entry_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(InvalidConfig) as error:
        _read("servingEngineSpec:\n  modelSpec:\n  - name: a-prefill\n    modelURL: m\n  - x\n")
    assert str(error.value) == "v.yaml: servingEngineSpec.modelSpec[1]: expected a mapping"
    with pytest.raises(InvalidConfig) as error:
        _read("servingEngineSpec:\n  modelSpec:\n  - name: a-prefill\n")
    assert str(error.value) == (
        "v.yaml: servingEngineSpec.modelSpec[0].modelURL: expected a model id, got None"
    )


def test_no_vllm_image_no_release() -> None:
    text = (
        "servingEngineSpec:\n  modelSpec:\n  - name: a-prefill\n    modelURL: m\n"
        "    repository: lmcache/vllm-openai\n    tag: latest\n"
    )
    found = _read(text)
    assert (found.vllm_version, found.version_source) == (None, None)


@pytest.mark.parametrize("config", [{}, None, []])
def test_no_vllm_config_gives_no_prefix_caching_flag(config: Any) -> None:
    # the chart writes --enable-prefix-caching / --no-enable-prefix-caching inside
    # ``with .vllmConfig``: an entry without one (or with an empty one) gets neither, and
    # vLLM's own default applies
    entry: dict[str, Any] = {"modelURL": "m", "vllmConfig": config}
    assert _arguments(entry, "v.yaml", "W") == ["m"]
    assert _arguments({"modelURL": "m"}, "v.yaml", "W") == ["m"]
    # the LMCache connector is written outside that block
    entry["lmcacheConfig"] = {"enabled": True}
    assert _arguments(entry, "v.yaml", "W") == [
        "m", "--kv-transfer-config", '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'
    ]  # fmt: skip


def test_a_quoted_name_is_found_at_its_line() -> None:
    # names are often quoted in values files (tests/deploy_corpus/production-stack/
    # values-disagg.yaml): the entry is at its name's line (3, 5), not at modelSpec: (2)
    text = (
        "servingEngineSpec:\n  modelSpec:\n"
        '  - name: "a-prefill"\n    modelURL: m\n'
        "  - name: 'a-decode'\n    modelURL: m\n"
    )
    assert [(p.name, p.location.line) for p in _read(text).pools] == [
        ("a-prefill", 3),
        ("a-decode", 5),
    ]


def test_each_pool_has_its_own_image_release_and_the_reader_names_the_file() -> None:
    found = Reader().read(Source(VALUES, "v.yaml"))
    assert found.source == "v.yaml"
    # v0.32.1, v0.33.0 (their images), none (no image)
    assert [p.settings.vllm_version for p in found.pools] == ["0.32.1", "0.33.0", None]
    assert [p.location.file for p in found.pools] == ["v.yaml"] * 3
