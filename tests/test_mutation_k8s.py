"""The Kubernetes reader's per-kind branches pinned at the values the manifest itself
states (the expected block sizes, TPs, roles and lines are read off the YAML below): the
Dynamo frontend's ``--kv-cache-block-size`` / ``DYN_KV_CACHE_BLOCK_SIZE`` (NVIDIA Dynamo
``dynamo.frontend`` options), AIBrix ``StormService`` roles (one pod template per role,
the role's ``name`` its P/D role) and llm-d ``DisaggregatedSet`` roles.
"""

from __future__ import annotations

from kvalign.deploy import read_text
from kvalign.deploy.model import Deployment, Location

FALCON = "tiiuae/Falcon-H1-0.5B-Base"

DYNAMO = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: g
spec:
  components:
  - name: Frontend
    type: frontend
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.frontend, --router-mode, kv]
        args: [--kv-cache-block-size, "$(BLOCK)"]
        env:
        - {name: BLOCK, value: "1056"}
        - {name: DYN_KV_CACHE_BLOCK_SIZE, value: "528"}
  - name: Router
    type: router
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.frontend, --kv-cache-block-size, "64"]
  - name: VllmPrefillWorker
    type: prefill
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.vllm]
        args: [--model, tiiuae/Falcon-H1-0.5B-Base, -tp, "2"]
  - name: VllmDecodeWorker
    type: decode
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.vllm]
        args: [--model, tiiuae/Falcon-H1-0.5B-Base, -tp, "4"]
"""


def _read(text: str) -> Deployment:
    deployment = read_text(text, "x.yaml")
    assert deployment is not None
    return deployment


def test_dynamo_frontend_block_sizes_from_flags_and_env() -> None:
    found = _read(DYNAMO)
    # the flag's value through $(BLOCK) (Kubernetes env substitution), the env variable,
    # and a router whose flag sits in command (no args); each at its own line
    assert [(c.component, c.value) for c in found.components] == [
        ("Dynamo Frontend --kv-cache-block-size", 1056),
        ("Dynamo Frontend DYN_KV_CACHE_BLOCK_SIZE", 528),
        ("Dynamo Router --kv-cache-block-size", 64),
    ]
    # the Frontend's values at their lines (the Router's flag is located at the first
    # --kv-cache-block-size of the document, line 12: a known imprecision, not pinned)
    assert [c.location for c in found.components[:2]] == [
        Location("x.yaml", 12), Location("x.yaml", 15),
    ]  # fmt: skip
    # the frontends are no pools; the workers are, with their roles and TPs
    assert [(p.role, p.name, p.model, p.tp) for p in found.pools] == [
        ("prefill", "VllmPrefillWorker", FALCON, 2),
        ("decode", "VllmDecodeWorker", FALCON, 4),
    ]


def test_dynamo_frontend_without_a_block_size_adds_no_component() -> None:
    text = DYNAMO.replace('args: [--kv-cache-block-size, "$(BLOCK)"]', "args: [--port, '80']")
    text = text.replace('- {name: DYN_KV_CACHE_BLOCK_SIZE, value: "528"}', "")
    text = text.replace('--kv-cache-block-size, "64"', "--port, '81'")
    assert _read(text).components == ()


STORM = """\
apiVersion: orchestration.aibrix.ai/v1alpha1
kind: StormService
metadata:
  name: s
spec:
  template:
    spec:
      roles:
      - name: prefill
        template:
          spec:
            containers:
            - name: p
              image: vllm/vllm-openai:v0.33.0
              args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "2"]
      - name: decode
        template:
          spec:
            containers:
            - name: d
              image: vllm/vllm-openai:v0.33.0
              args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "4"]
"""


def test_storm_service_one_pool_per_role() -> None:
    found = _read(STORM)
    assert [(p.role, p.name, p.model, p.tp, p.role_source, p.location.line)
            for p in found.pools] == [
        ("prefill", "prefill", FALCON, 2, "field", 9),
        ("decode", "decode", FALCON, 4, "field", 16),
    ]  # fmt: skip
    (key,) = {p.deployment_key for p in found.pools}  # both roles: one StormService
    assert key is not None and (key.source, key.value) == ("StormService", "s")


def test_storm_service_role_without_a_p_d_name_takes_it_from_the_args() -> None:
    text = STORM.replace("      - name: decode\n", "      - replicas: 1\n")
    text = text.replace('args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "4"]', (
        'args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "4", --kv-transfer-config,\n'
        '                     \'{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}\']'
    ))  # fmt: skip
    found = _read(text)
    assert [(p.role, p.name, p.role_source) for p in found.pools] == [
        ("prefill", "prefill", "field"),
        ("decode", "?", "args"),
    ]


DISAGG = """\
apiVersion: llm-d.ai/v1alpha1
kind: DisaggregatedSet
metadata:
  name: d
spec:
  roles:
  - name: prefill
    template:
      spec:
        containers:
        - name: p
          image: vllm/vllm-openai:v0.33.0
          args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "8"]
  - name: decode
    template:
      spec:
        containers:
        - name: d
          image: vllm/vllm-openai:v0.33.0
          args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "1"]
"""


def test_disaggregated_set_one_pool_per_role() -> None:
    found = _read(DISAGG)
    assert [(p.role, p.name, p.model, p.tp, p.role_source) for p in found.pools] == [
        ("prefill", "prefill", FALCON, 8, "field"),
        ("decode", "decode", FALCON, 1, "field"),
    ]
    keys = {p.deployment_key for p in found.pools}
    assert len(keys) == 1 and None not in keys


V1ALPHA1 = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: falcon
  namespace: ns
spec:
  services:
    Api:
      componentType: frontend
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.frontend]
          env:
          - {name: DYN_KV_CACHE_BLOCK_SIZE, value: "800"}
    Prefill:
      componentType: worker
      subComponentType: prefill
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.vllm, --model, tiiuae/Falcon-H1-0.5B-Base]
    Decode:
      componentType: decode
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.vllm, --model, tiiuae/Falcon-H1-0.5B-Base, -tp, "2"]
"""


def test_dynamo_v1alpha1_services() -> None:
    # subComponentType names the role, else componentType; componentType frontend makes
    # a frontend whatever the service is called
    found = _read(V1ALPHA1)
    assert [(c.component, c.value) for c in found.components] == [
        ("Dynamo Api DYN_KV_CACHE_BLOCK_SIZE", 800),
    ]
    assert [(p.role, p.name, p.tp, p.role_source) for p in found.pools] == [
        ("prefill", "Prefill", 1, "field"),
        ("decode", "Decode", 2, "field"),
    ]
    keys = {p.deployment_key for p in found.pools}
    assert len(keys) == 1
    (key,) = keys
    assert key is not None
    assert (key.source, key.value, key.namespace) == ("DynamoGraphDeployment", "falcon", "ns")


def test_dynamo_v1beta1_sub_component_type_and_unnamed_component() -> None:
    text = DYNAMO.replace("    type: prefill\n", "    subComponentType: prefill\n")
    text = text.replace("  - name: VllmDecodeWorker\n    type: decode\n", "  - type: decode\n")
    found = _read(text)
    assert [(p.role, p.name, p.tp) for p in found.pools] == [
        ("prefill", "VllmPrefillWorker", 2),
        ("decode", "?", 4),
    ]
    (key,) = {p.deployment_key for p in found.pools}
    assert key is not None and (key.source, key.value) == ("DynamoGraphDeployment", "g")


# ---- helpers of the reader, at the inputs where a wrong branch changes the answer ----


def test_kserve_merge_semantics() -> None:
    # LLMInferenceServiceConfig merging: mappings key by key, named lists (containers,
    # env) by name, any other list replaced
    from kvalign.deploy.k8s import _merge

    base = {"a": {"x": 1, "y": 2}, "containers": [{"name": "main", "image": "i", "args": ["1"]},
                                                  {"name": "side"}],
            "list": [1, 2], "keep": True}  # fmt: skip
    over = {"a": {"y": 3}, "containers": [{"name": "main", "args": ["2"]}, {"name": "new"}],
            "list": [3]}  # fmt: skip
    assert _merge(base, over) == {
        "a": {"x": 1, "y": 3},
        "containers": [{"name": "main", "image": "i", "args": ["2"]}, {"name": "side"},
                       {"name": "new"}],
        "list": [3], "keep": True,
    }  # fmt: skip
    # a list whose items are not all named is replaced, as are scalars
    assert _merge([{"name": "a"}, 1], [{"name": "b"}]) == [{"name": "b"}]
    assert _merge([{"name": "a"}], [{"x": 1}]) == [{"x": 1}]
    assert _merge({"k": 1}, 5) == 5
    assert base["a"] == {"x": 1, "y": 2}  # the base is not changed in place


def test_looks_like_vllm_reasons() -> None:
    from kvalign.deploy.k8s import _looks_like_vllm

    assert _looks_like_vllm({"args": ["--kv_transfer_config={}"]}) == (
        "its arguments give --kv-transfer-config"
    )
    assert _looks_like_vllm({"args": ["org/m", "--max-model-len", "8", "--block-size", "16"]}) == (
        "its args are a model then vLLM flags (--block-size, --max-model-len)"
    )
    assert _looks_like_vllm(
        {"command": ["/start.sh"], "args": ["--tensor-parallel-size", "2"]}
    ) == (
        "its command '/start.sh' is an entrypoint script given vLLM flags (--tensor-parallel-size)"
    )
    assert _looks_like_vllm({"command": ["entrypoint"], "args": ["--block-size=16"]}) == (
        "its command 'entrypoint' is an entrypoint script given vLLM flags (--block-size)"
    )
    # no vLLM-only flag; flags first (no model); a command that is no script
    assert _looks_like_vllm({"args": ["org/m", "--port", "80"]}) is None
    assert _looks_like_vllm({"args": ["--block-size", "16"]}) is None
    assert _looks_like_vllm({"command": ["python3"], "args": ["--block-size", "16"]}) is None


def test_labels_merge_workload_first_and_skip_containers() -> None:
    from kvalign.deploy.k8s import _labels

    doc = {"metadata": {"labels": {"role": "prefill", "a": 1}},
           "spec": {"template": {"metadata": {"labels": {"role": "decode", "b": 2}},
                                 "spec": {"containers": [{"labels": {"c": 3}}]}}},
           "items": [{"labels": {"d": 4}}]}  # fmt: skip
    assert _labels(doc) == {"role": "prefill", "a": 1, "b": 2, "d": 4}


LWS_BAD_SIZE = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: w
  labels: {llm-d.ai/role: decode}
spec:
  leaderWorkerTemplate:
    size: {size}
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "2"]
"""


def test_lws_size_is_read_or_noted() -> None:
    found = _read(LWS_BAD_SIZE.replace("{size}", "3"))
    assert [(p.role, p.name, p.nodes) for p in found.pools] == [("decode", "w", 3)]
    for bad in ("0", "two", "true"):
        found = _read(LWS_BAD_SIZE.replace("{size}", bad))
        assert [p.nodes for p in found.pools] == [None], bad
        value = {"0": "0", "two": "'two'", "true": "True"}[bad]
        assert [(p.location.line, p.message, p.blocking) for p in found.problems] == [
            (8, f"w: leaderWorkerTemplate.size: expected a positive integer, got {value} "
                "(not used)", False),
        ], bad  # fmt: skip
    # no size: nothing to say
    found = _read(LWS_BAD_SIZE.replace("    size: {size}\n", ""))
    assert [p.nodes for p in found.pools] == [None] and found.problems == ()


def test_env_from_not_in_the_files_is_noted_once() -> None:
    text = LWS_BAD_SIZE.replace("{size}", "1").replace(
        "          image: vllm/vllm-openai:v0.33.0\n",
        "          image: vllm/vllm-openai:v0.33.0\n"
        "          envFrom:\n          - configMapRef: {name: cm}\n"
        "          - secretRef: {name: s}\n          - configMapRef: {name: cm}\n",
    )
    found = _read(text)
    assert [(p.location.line, p.message, p.blocking) for p in found.problems] == [
        (14, "vllm: envFrom ConfigMap cm is not in the audited files: the variables it sets "
             "are not known (evaluated without them)", False),
        (14, "vllm: envFrom Secret s is not in the audited files: the variables it sets are "
             "not known (evaluated without them)", False),
    ]  # fmt: skip


MODELSERVICE = """\
modelArtifacts:
  uri: hf://tiiuae/Falcon-H1-0.5B-Base
  name: falcon-h1
decode:
  create: true
  parallelism: {tensor: 4}
  containers:
  - name: vllm
    image: ghcr.io/llm-d/llm-d:v0.4.0
    modelCommand: vllmServe
    args: [--block-size, "32"]
  - name: sidecar
    image: x
prefill:
  create: true
  parallelism: {tensor: 2, data: 2}
  acceleratorTypes: {labelKey: nvidia.com/gpu.product, labelValues: [NVIDIA-H100-80GB-HBM3]}
  containers:
  - name: vllm
    image: ghcr.io/llm-d/llm-d:v0.4.0
    args: [--kv-cache-dtype, fp8]
"""


def test_modelservice_pools() -> None:
    # modelArtifacts' hf:// URI names the model; parallelism the TP/DP; the chart's
    # default modelCommand is vllmServe (`vllm serve MODEL` + the container's args); the
    # first container is the engine; acceleratorTypes pins the prefill GPU
    found = _read(MODELSERVICE)
    pools = {p.role: p for p in found.pools}
    assert sorted(pools) == ["decode", "prefill"]
    decode, prefill = pools["decode"], pools["prefill"]
    assert (decode.name, decode.model, decode.tp, decode.dp) == ("decode", FALCON, 4, 1)
    assert (prefill.name, prefill.model, prefill.tp, prefill.dp) == ("prefill", FALCON, 2, 2)
    assert (decode.settings.block_size, prefill.settings.kv_cache_dtype) == (32, "fp8")
    assert (decode.location.line, prefill.location.line) == (4, 14)
    assert prefill.settings.gpu == "H100" and decode.settings.gpu is None


def test_modelservice_skips_roles_not_created() -> None:
    text = MODELSERVICE.replace("prefill:\n  create: true", "prefill:\n  create: false")
    assert [p.role for p in _read(text).pools] == ["decode"]


KSERVE = """\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: falcon-h1
spec:
  model:
    uri: hf://tiiuae/Falcon-H1-0.5B-Base
  parallelism:
    tensor: 4
  template:
    containers:
    - name: sidecar
      image: x
    - name: main
      env:
      - name: VLLM_ADDITIONAL_ARGS
        value: "--block-size 32"
  prefill:
    parallelism:
      tensor: 2
"""


def test_kserve_prefill_and_decode_pools() -> None:
    # spec.prefill is the prefill pool, the top-level spec the decode pool; the main
    # container is the engine whatever its position
    found = _read(KSERVE)
    assert [(p.role, p.name, p.model, p.tp) for p in found.pools] == [
        ("prefill", "falcon-h1-prefill", FALCON, 2),
        ("decode", "falcon-h1-decode", FALCON, 4),
    ]
    assert [p.settings.block_size for p in found.pools] == [None, 32]
    (key,) = {p.deployment_key for p in found.pools}
    assert key is not None and (key.source, key.value) == ("LLMInferenceService", "falcon-h1")
    # the prefill block has no container in the file: a note says where its flags are from
    assert [(p.location.line, p.message) for p in found.problems] == [
        (18, "falcon-h1-prefill: vLLM arguments come from the controller's default "
             "(LLMInferenceServiceConfig not in this file): vLLM's defaults are assumed for "
             "the flags it sets"),
    ]  # fmt: skip


def test_kserve_base_refs_merge_and_missing_config() -> None:
    config = """\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceServiceConfig
metadata:
  name: base
spec:
  template:
    containers:
    - name: main
      env:
      - {name: VLLM_ADDITIONAL_ARGS, value: "--block-size 64"}
---
"""
    text = config + KSERVE.replace(
        "spec:\n  model:", "spec:\n  baseRefs: [{name: base}, {name: gone}]\n  model:"
    ).replace("    - name: main\n      env:\n      - name: VLLM_ADDITIONAL_ARGS\n"
              '        value: "--block-size 32"\n', "")  # fmt: skip
    found = _read(text)
    # the decode pool takes the config's main container (merged by name)
    assert [(p.role, p.settings.block_size) for p in found.pools] == [
        ("prefill", None), ("decode", 64),
    ]  # fmt: skip
    # the prefill block still has none: its flags come from the missing config
    assert [p.message for p in found.problems] == [
        "falcon-h1-prefill: vLLM arguments come from baseRefs gone (LLMInferenceServiceConfig "
        "not in this file): vLLM's defaults are assumed for the flags it sets",
    ]


def test_dynamo_frontend_substitutes_in_command_and_skips_bad_args() -> None:
    text = DYNAMO.replace(
        'command: [python3, -m, dynamo.frontend, --kv-cache-block-size, "64"]',
        'command: [python3, -m, dynamo.frontend, --kv-cache-block-size, "$(B)"]\n'
        '        env:\n        - {name: B, value: "96"}',
    ).replace('args: [--kv-cache-block-size, "$(BLOCK)"]', 'args: [--kv-cache-block-size, "x"]')
    found = _read(text)
    # the Frontend's flag value is no number: its arguments are not read (the env variable
    # still is); the Router's flag comes through $(B) in its command
    assert [(c.component, c.value) for c in found.components] == [
        ("Dynamo Frontend DYN_KV_CACHE_BLOCK_SIZE", 528),
        ("Dynamo Router --kv-cache-block-size", 96),
    ]
