"""The Kubernetes reader's per-kind branches pinned at the values the manifest itself
states (the expected block sizes, TPs, roles and lines are read off the YAML below): the
Dynamo frontend's ``--kv-cache-block-size`` / ``DYN_KV_CACHE_BLOCK_SIZE`` (NVIDIA Dynamo
``dynamo.frontend`` options), AIBrix ``StormService`` roles (one pod template per role,
the role's ``name`` its P/D role) and llm-d ``DisaggregatedSet`` roles; then each kind's
whole result (pools with every field the reader sets, problems with line and blocking,
components, release), for the mutants of kvalign/deploy/k8s.py (tests/mutation/run.py k8s).
"""

from __future__ import annotations

from kvalign.deploy import read_text
from kvalign.deploy.model import ComponentBlockSize, Deployment, DeploymentKey, Location, Problem

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


# ---- whole results per kind (tests/mutation: the k8s survivors of the 1,930-mutant run) ----
#
# Every expectation below is read off the manifest in the test: names, roles (the labels
# and fields the reader documents), TPs, lines (1-based, counted in the YAML text),
# environment values. Kubernetes semantics relied on: ``$(VAR)`` in command/args expands
# from the container's env (Kubernetes "Define dependent environment variables"), env
# entries may reference earlier ones, ``envFrom`` imports a ConfigMap's data keys,
# ``valueFrom.configMapKeyRef`` one key; ``initContainers`` run before and are not the
# server; GPUs are requested as an extended resource ``<vendor>/gpu`` under
# ``resources.limits`` (or ``requests``).


def _pool_rows(found: Deployment) -> list[tuple[object, ...]]:
    """Every field of every pool that the reader sets (the parsed args through their
    block-size-relevant settings)."""
    return [
        (p.role, p.role_source, p.name, p.model, p.tp, p.dp, p.nodes, p.gpus_per_node,
         p.settings.gpu, p.settings.block_size, p.location.line, p.env)
        for p in found.pools
    ]  # fmt: skip


def _problem_rows(found: Deployment) -> list[tuple[object, ...]]:
    return [(p.location.line, p.message, p.blocking, p.verbose_only) for p in found.problems]


def _at(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the ``nth`` line of ``text`` holding ``needle`` (counted here, in
    the test's own YAML)."""
    return [i for i, line in enumerate(text.splitlines(), 1) if needle in line][nth - 1]


def _k8s(text: str, references: dict[str, tuple[str, dict[str, object]]] | None = None,
         file: str = "x.yaml") -> Deployment:  # fmt: skip
    """The Kubernetes reader itself on ``text`` (``references``: other files' objects)."""
    from kvalign.deploy import k8s
    from kvalign.safeio import load_yaml_documents

    return k8s.read(load_yaml_documents(text, file), text, file, references)


WORKLOADS_TEXT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: falcon-prefill
  namespace: " team-a "
  labels: {app.kubernetes.io/part-of: falcon, llm-d.ai/role: prefill}
spec:
  template:
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
      initContainers:
      - name: fetch
        image: vllm/vllm-openai:v0.33.0
        args: [other/model, -tp, "8"]
      containers:
      - name: proxy
        image: envoyproxy/envoy:v1.31.0
        args: [--config-path, /etc/envoy.yaml]
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "2", --block-size, "$(BLOCK)"]
        env:
        - {name: BLOCK, value: "64"}
        resources:
          limits: {cpu: "8", nvidia.com/gpu: "2"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: falcon-decode
  labels: {app.kubernetes.io/part-of: falcon, role: decode}
spec:
  leaderWorkerTemplate: {size: 4}
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "1"]
        resources:
          limits: {nvidia.com/gpu: "0"}
          requests: {cpu: 4, amd.com/gpu: 1}
"""


def test_deployment_and_statefulset_pools_whole() -> None:
    found = _k8s(WORKLOADS_TEXT)
    part_of = "app.kubernetes.io/part-of"
    # the role from the llm-d.ai/role / role labels; the first container that runs vLLM
    # (the envoy sidecar has no vLLM flag; the init container is not the server); GPUs:
    # the limit's 2 (cpu skipped), else the request's 1 when the limit is 0; a
    # leaderWorkerTemplate on a StatefulSet is no LWS size (an unknown field there)
    assert _pool_rows(found) == [
        ("prefill", "label", "falcon-prefill", FALCON, 2, 1, None, 2, "H100", 64, 4,
         (("BLOCK", "64"),)),
        ("decode", "label", "falcon-decode", FALCON, 1, 1, None, 1, None, None, 30, ()),
    ]  # fmt: skip
    assert [p.deployment_key for p in found.pools] == [
        DeploymentKey(part_of, "falcon", "team-a"), DeploymentKey(part_of, "falcon", ""),
    ]  # fmt: skip
    assert _problem_rows(found) == []
    assert (found.kind, found.source, found.vllm_version, found.version_source,
            found.launches) == (
        "kubernetes", "x.yaml", "0.33.0", "image vllm/vllm-openai:v0.33.0", 2,
    )  # fmt: skip


LWS_TEXT = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: wide
  labels: {llm-d.ai/role: decode, app.kubernetes.io/instance: falcon}
spec:
  leaderWorkerTemplate:
    size: 2
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "2", -dp, "$(LWS_GROUP_SIZE)"]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: unsized
  labels: {llm-d.ai/role: prefill}
spec:
  leaderWorkerTemplate:
    workerTemplate:
      spec:
        containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args: [tiiuae/Falcon-H1-0.5B-Base]
"""


def test_leader_worker_set_group_size_in_the_environment() -> None:
    # the LWS controller sets LWS_GROUP_SIZE (= leaderWorkerTemplate.size) in every pod of
    # a group, so $(LWS_GROUP_SIZE) in the args expands to 2; without a size the reader
    # knows no group size and sets no variable
    found = _k8s(LWS_TEXT)
    assert _pool_rows(found) == [
        ("decode", "label", "wide", FALCON, 2, 2, 2, None, None, None, 4,
         (("LWS_GROUP_SIZE", "2"),)),
        ("prefill", "label", "unsized", FALCON, 1, 1, None, None, None, None, 19, ()),
    ]  # fmt: skip
    assert [p.deployment_key for p in found.pools] == [
        DeploymentKey("app.kubernetes.io/instance", "falcon"), None,
    ]  # fmt: skip
    assert found.problems == ()


NOT_VLLM = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w
spec:
  template:
    spec:
      containers:
      - name: srv
        image: ghcr.io/acme/server:1.0
        args: [org/model, --port, "80"]
      - name: launcher
        image: acme/custom:1.0
        command: [/entrypoint.sh]
        args: [--tensor-parallel-size, "2", --max-model-len, "4096"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: quiet
spec:
  template:
    spec:
      containers:
      - image: ghcr.io/acme/app:1.0
        command: [python3, app.py]
        args: [--port, "80"]
      - args: [org/model, --port, "80"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: then-vllm
spec:
  template:
    spec:
      containers:
      - image: acme/custom:1.0
        command: [/entrypoint.sh]
        args: [--block-size, "16"]
        envFrom:
        - configMapRef: {name: absent}
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [tiiuae/Falcon-H1-0.5B-Base]
"""


def test_containers_that_do_not_run_vllm_are_reported() -> None:
    # an image that is not vLLM's, args but no command: its entrypoint is unknown, so no
    # pool (a --verbose note, given only when no container of the workload runs vLLM); an
    # entrypoint script given vLLM flags: a launch kvalign cannot follow (blocking). A
    # container with a command of its own is not noted (its command is no vLLM launch);
    # an unnamed one is '?', one without image ''. `then-vllm`: after the script the
    # reader goes on to the next container, which runs vLLM
    found = _k8s(NOT_VLLM)
    assert _pool_rows(found) == [
        ("server", "standalone", "then-vllm", FALCON, 1, 1, None, None,
         None, None, _at(NOT_VLLM, "name: then-vllm"), ()),
    ]  # fmt: skip
    srv = ("has args but no command and its image 'ghcr.io/acme/server:1.0' is not a vllm "
           "image: not read as a vLLM pool")  # fmt: skip
    script = (": its command '/entrypoint.sh' is an entrypoint script given vLLM flags ({}), "
              "but its image 'acme/custom:1.0' is not a vllm image and kvalign cannot follow "
              "its command: use a vLLM image or command: [vllm, serve], or audit the launch "
              "script itself")  # fmt: skip
    then = _at(NOT_VLLM, "name: then-vllm")
    assert _problem_rows(found) == [
        (4, "w: container 'launcher'" + script.format("--max-model-len, --tensor-parallel-size"),
         True, False),
        (4, f"w: container 'srv' {srv}", False, True),
        (20, "quiet: container '?' has args but no command and its image '' is not a vllm "
             "image: not read as a vLLM pool", False, True),
        (_at(NOT_VLLM, "envFrom:"), "?: envFrom ConfigMap absent is not in the audited "
         "files: the variables it sets are not known (evaluated without them)", False, False),
        (then, "then-vllm: container '?'" + script.format("--block-size"), True, False),
    ]  # fmt: skip
    assert (found.launches, found.vllm_version, found.version_source) == (
        3, "0.33.0", "image vllm/vllm-openai:v0.33.0",
    )  # fmt: skip


MALFORMED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
spec:
  template:
    spec:
      containers: oops
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
spec:
  template:
    spec:
      containers:
      - name: c
        image: vllm/vllm-openai:v0.33.0
        args: serve tiiuae/Falcon-H1-0.5B-Base
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: c
spec:
  template:
    spec:
      containers:
      - image: vllm/vllm-openai:v0.33.0
        command: [vllm, serve, null]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers:
      - name: x
        image: vllm/vllm-openai:v0.33.0
        args: [[tiiuae/Falcon-H1-0.5B-Base]]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: e
spec:
  template:
    spec:
      volumes:
      - name: v
      - {name: w, containers: [5]}
"""


def test_malformed_containers_and_arguments_are_named() -> None:
    # the Kubernetes API takes containers as a list of objects and command/args as lists
    # of strings: each shape error is a blocking problem at the workload's name, naming
    # the field (its path under the workload's spec, with the list index) and what was found
    found = _k8s(MALFORMED)
    assert found.pools == ()
    assert _problem_rows(found) == [
        (4, "a: template.spec.containers: expected a list of containers", True, False),
        (13, "b: container 'c' args: expected a list of strings, got str", True, False),
        (25, "c: container '?' command[2]: expected a string, got null", True, False),
        (36, "d: container 'x' args[0]: expected a string, got list", True, False),
        (48, "e: template.spec.volumes[1].containers: expected a list of containers",
         True, False),
    ]  # fmt: skip
    assert found.launches == 0


SCRIPTED = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: v
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command: [/bin/bash, -c]
        args:
        - |
          export VLLM_ATTENTION_BACKEND=FLASHINFER
          if [ "$HOSTNAME" = big ]; then TP="$UNKNOWN_TP"; else TP=2; fi
          vllm serve tiiuae/Falcon-H1-0.5B-Base -tp "$TP"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command: [/bin/bash, -c]
        args:
        - |
          if [ "$HOSTNAME" = big ]; then TP=8; else TP=2; fi
          vllm serve tiiuae/Falcon-H1-0.5B-Base -tp $TP
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ports
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command: [/bin/bash, -c]
        args:
        - |
          echo starting
          if [ "$HOSTNAME" = big ]; then P=1; else P=2; fi
          vllm serve tiiuae/Falcon-H1-0.5B-Base -tp $TP --port $P
        env:
        - {name: TP, value: "4"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sites
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command:
        - /bin/sh
        - -c
        - if [ "$HOSTNAME" = big ]; then vllm serve "$1" -tp 8; else vllm serve "$1" -tp 2; fi
        - sh
        - tiiuae/Falcon-H1-0.5B-Base
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: lost
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command: [/bin/bash, -c]
        args:
        - |
          if [ "$HOSTNAME" = big ]; then TP="$A"; else TP="$B"; fi
          vllm serve tiiuae/Falcon-H1-0.5B-Base -tp "$TP"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: direct
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command: [vllm, serve, "$(MODEL)"]
        env:
        - {name: MODEL, value: tiiuae/Falcon-H1-0.5B-Base}
"""


def test_script_alternatives_become_pools_or_off_path_notes() -> None:
    # `w`: the pod's hostname is not known, so both branches of the if are taken: the one
    # launch line gives -tp 8 and -tp 2, two pools named w.a / w.b, and a note listing what
    # differs (TP) under which condition. `v`: the first branch's TP is an unknown
    # variable: that alternative builds no pool, so its blocking problem becomes a note
    # (the path evaluated is the else branch), and the exported variable is in the env
    # `ports`: the alternatives differ in --port only, one pool (the same sizing); the
    # script reads TP from the container's env and runs a command before vLLM. `sites`:
    # two different vllm lines: the first launch in the script counts ("$1" is the
    # script's first positional argument, the word after `sh`). `lost`: no alternative
    # builds a pool, its problems stay blocking. `direct`: $(MODEL) in the command
    found = _k8s(SCRIPTED)
    at = {name: _at(SCRIPTED, f"name: {name}") for name in ("w", "ports", "sites", "lost")}
    assert _pool_rows(found) == [
        ("server", "standalone", "v", FALCON, 2, 1, None, None, None, None, 4,
         (("VLLM_ATTENTION_BACKEND", "FLASHINFER"),)),
        ("server", "standalone", "w.a", FALCON, 8, 1, None, None, None, None, at["w"], ()),
        ("server", "standalone", "w.b", FALCON, 2, 1, None, None, None, None, at["w"], ()),
        ("server", "standalone", "ports", FALCON, 4, 1, None, None, None, None, at["ports"],
         (("TP", "4"),)),
        ("server", "standalone", "sites", FALCON, 8, 1, None, None, None, None, at["sites"],
         ()),
        ("server", "standalone", "direct", FALCON, 1, 1, None, None, None, None,
         _at(SCRIPTED, "name: direct"), (("MODEL", FALCON),)),
    ]  # fmt: skip
    assert _problem_rows(found) == [
        (4, "v: unresolved variable(s) --tensor-parallel-size: $UNKNOWN_TP (on another "
            "if/case path; not evaluated)", False, False),
        (at["w"], "w: the if/case/loop alternatives in its script give 2 different pools, "
         'each evaluated: w.a: TP=8 [if [ "$HOSTNAME" = big ]]; '
         'w.b: TP=2 [not if [ "$HOSTNAME" = big ]]', False, False),
        (at["lost"], "lost: unresolved variable(s) --tensor-parallel-size: $A", True, False),
        (at["lost"], "lost: unresolved variable(s) --tensor-parallel-size: $B", True, False),
    ]  # fmt: skip
    assert found.launches == 6


GPU_PINS = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: many
spec:
  template:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
              - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}
              - {key: nvidia.com/gpu.product, operator: NotIn, values: [Tesla-T4]}
            - matchExpressions:
              - {key: gpu.nvidia.com/model, operator: In, values: [NVIDIA-A100-SXM4-80GB]}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [tiiuae/Falcon-H1-0.5B-Base]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: odd
spec:
  template:
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: acme-x1, disktype: ssd}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [tiiuae/Falcon-H1-0.5B-Base]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: one
spec:
  template:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}
            - matchExpressions:
              - {key: topology.kubernetes.io/zone, operator: In, values: [us-east1-b]}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: [tiiuae/Falcon-H1-0.5B-Base]
"""


def test_gpu_node_pins_from_selectors_and_affinity() -> None:
    # node affinity `In` expressions on a GPU label (GPU feature discovery's
    # nvidia.com/gpu.product, gpu.nvidia.com/model) name the GPU; a zone expression or a
    # NotIn one does not; two GPU models, or one kvalign does not know (a GKE accelerator
    # value), leave the --gpu default with a note; `one`: a single H100 pin
    found = _k8s(GPU_PINS)
    assert [(p.name, p.settings.gpu, p.location.line) for p in found.pools] == [
        ("many", None, 4), ("odd", None, _at(GPU_PINS, "name: odd")),
        ("one", "H100", _at(GPU_PINS, "name: one")),
    ]  # fmt: skip
    assert _problem_rows(found) == [
        (4, "many: GPU node label NVIDIA-H100-80GB-HBM3, NVIDIA-A100-SXM4-80GB: several GPU "
            "models (the --gpu default is used)", False, False),
        (_at(GPU_PINS, "name: odd"), "odd: GPU node label acme-x1: no GPU model kvalign "
         "knows (the --gpu default is used)", False, False),
    ]  # fmt: skip


def test_gpu_products_ignore_containers() -> None:
    # a container is no scheduling constraint: a nodeSelector-like mapping inside one
    # (there is no such container field) names no GPU
    from kvalign.deploy.k8s import GPU_PRODUCT_LABEL, _gpu_products

    assert _gpu_products({"containers": [{"nodeSelector": {GPU_PRODUCT_LABEL: "X"}}]}) == []
    assert _gpu_products([{"nodeSelector": {GPU_PRODUCT_LABEL: "A"}},
                          {"nodeSelector": {GPU_PRODUCT_LABEL: "B"}}]) == ["A", "B"]  # fmt: skip


VERSIONS = """\
# two vLLM releases in one file
not a kubernetes object
---
kind: [Deployment]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: new, labels: {llm-d.ai/role: decode}}
spec:
  template:
    spec:
      containers:
      - {name: vllm, image: "vllm/vllm-openai:v0.33.0", args: [tiiuae/Falcon-H1-0.5B-Base]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: old, labels: {llm-d.ai/role: prefill}}
spec:
  template:
    spec:
      containers:
      - {name: vllm, image: "vllm/vllm-openai:v0.14.0", args: [tiiuae/Falcon-H1-0.5B-Base]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: again, labels: {llm-d.ai/role: prefill}}
spec:
  template:
    spec:
      containers:
      - {name: vllm, image: "vllm/vllm-openai:0.33.0", args: [tiiuae/Falcon-H1-0.5B-Base]}
"""


def test_different_vllm_images_are_noted_and_the_first_wins() -> None:
    # a document that is no mapping, or whose kind is no string, is skipped; the release
    # is the first vLLM image tag's (v0.33.0 → 0.33.0), the other release is noted at the
    # file (no line); a second image of the first release adds nothing
    found = _k8s(VERSIONS)
    assert [(p.name, p.settings.vllm_version) for p in found.pools] == [
        ("new", "0.33.0"), ("old", "0.14.0"), ("again", "0.33.0"),
    ]  # fmt: skip
    assert [(p.location, p.message, p.blocking) for p in found.problems] == [
        (Location("x.yaml"), "containers use different vLLM images (vllm/vllm-openai:v0.33.0, "
         "vllm/vllm-openai:v0.14.0); the release profile is taken from the first (0.33.0)",
         False),
    ]  # fmt: skip
    assert (found.vllm_version, found.version_source, found.launches) == (
        "0.33.0", "image vllm/vllm-openai:v0.33.0", 3,
    )  # fmt: skip


ENV_TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: local}
data: {BLOCK: "32", DTYPE: fp8}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: over}
data: {MAXLEN: "2048"}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: w
  labels: {llm-d.ai/role: decode}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        envFrom:
        - secretRef: {name: local}
        - configMapRef: {name: shared}
        - configMapRef: {name: over}
        - configMapRef: {}
        env:
        - {name: TP, value: "2"}
        - {value: "ignored"}
        - {name: DOUBLE, value: "$(TP)$(TP)"}
        - name: KVD
          valueFrom: {configMapKeyRef: {name: local, key: DTYPE}}
        - name: GONE
          valueFrom: {configMapKeyRef: {name: local, key: NOPE}}
        - name: ELSEWHERE
          valueFrom: {configMapKeyRef: {name: shared, key: SEED}}
        args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "$(TP)", --kv-cache-dtype, "$(KVD)",
               --max-model-len, "$(MAXLEN)", --block-size, "$(BLOCK)"]
"""

#: what other files of the run define: a ConfigMap of base.yaml, one of this very file
#: (a file's own objects are read from the file, not from the run's index) and one that
#: this file redefines (its own copy wins)
ENV_REFERENCES: dict[str, tuple[str, dict[str, object]]] = {
    "ConfigMap/shared": ("base.yaml", {"BLOCK": "16", "SEED": 7}),
    "ConfigMap/over": ("base.yaml", {"MAXLEN": "9999"}),
    "ConfigMap/mine": ("x.yaml", {"X": "1"}),
}


def test_container_environment_from_config_maps_and_values() -> None:
    # envFrom imports in order (later sources win), then env entries (later entries see
    # earlier ones: DOUBLE = $(TP)$(TP) = 22); a Secret that is not in the run is noted;
    # configMapKeyRef takes one key (a missing key sets nothing); a ConfigMap from
    # another file of the run is noted with its file
    found = _k8s(ENV_TEXT, ENV_REFERENCES)
    env = (("BLOCK", "16"), ("DOUBLE", "22"), ("ELSEWHERE", "7"), ("KVD", "fp8"),
           ("MAXLEN", "2048"), ("SEED", "7"), ("TP", "2"))  # fmt: skip
    assert _pool_rows(found) == [
        ("decode", "label", "w", FALCON, 2, 1, None, None, None, 16, 14, env),
    ]  # fmt: skip
    (pool,) = found.pools
    assert (pool.settings.kv_cache_dtype, pool.settings.max_model_len) == ("fp8", 2048)
    line = _at(ENV_TEXT, "envFrom:")
    assert _problem_rows(found) == [
        (line, "vllm: envFrom Secret local is not in the audited files: the variables it "
               "sets are not known (evaluated without them)", False, False),
        (line, "vllm: envFrom ConfigMap shared read from base.yaml", False, False),
    ]  # fmt: skip


def test_config_maps_of_the_run_and_of_the_file() -> None:
    from kvalign.deploy.k8s import _Context
    from kvalign.safeio import load_yaml_documents

    ctx = _Context(ENV_TEXT, "x.yaml", load_yaml_documents(ENV_TEXT, "x.yaml"), {
        **ENV_REFERENCES, "cfg": ("cfgs.yaml", {"template": {}}), "own": ("x.yaml", {}),
    })  # fmt: skip
    # values as strings (Kubernetes ConfigMap data is string → string)
    assert ctx.configmaps == {
        "shared": {"BLOCK": "16", "SEED": "7"}, "over": {"MAXLEN": "2048"},
        "local": {"BLOCK": "32", "DTYPE": "fp8"},
    }  # fmt: skip
    assert ctx.configmap_files == {"shared": "base.yaml"}
    assert (ctx.llmisvc_configs, ctx.config_files) == (
        {"cfg": {"template": {}}}, {"cfg": "cfgs.yaml"},
    )  # fmt: skip
    assert (ctx.pools, ctx.components, ctx.problems, ctx.launches, ctx.versions) == (
        [], [], [], 0, {},
    )  # fmt: skip
    assert (ctx.text, ctx.file, ctx.noted) == (ENV_TEXT, "x.yaml", set())


ROUTER_TEXT = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: epp}
data:
  epp.yaml: |
    plugins:
    - type: prefix-cache-scorer
      parameters: {blockSizeTokens: 64, maxPrefixBlocksToMatch: 256}
    - type: precise-prefix-cache-scorer
      parameters:
        indexerConfig:
          tokenProcessorConfig: {blockSize: 16}
  broken.yaml: |
    blockSize: [
  top.yaml: |
    blockSizeTokens: 32
    note: blockSize
  one-line: "blockSize: 8"
  script.sh: |
    echo blockSizeTokens
    exit 0
---
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefix-cache-scorer
  parameters:
    blockSizeTokens: "64"
    flag: true
- type: other
  parameters: {blockSizeTokens: true, tokenProcessorConfig: {blockSize: 128}}
"""


def test_router_block_sizes_from_config_maps_and_endpoint_picker_configs() -> None:
    # the llm-d inference scheduler's prefix-cache-scorer `blockSizeTokens` and the
    # precise scorer's `indexerConfig.tokenProcessorConfig.blockSize`, in an
    # EndpointPickerConfig or a ConfigMap that embeds one (a multi-line string value): an
    # integer only (not "64", not true); a value that does not parse is skipped, and one
    # line or a script holding the word is no embedded config; each at the first line
    # holding its key at or after the document's start (the embedded text is searched as
    # text: the 32 is located at the first blockSizeTokens, a known imprecision)
    found = _k8s(ROUTER_TEXT)
    assert [(c.component, c.value, c.location) for c in found.components] == [
        ("router/indexer parameters.blockSizeTokens", 64,
         Location("x.yaml", _at(ROUTER_TEXT, "blockSizeTokens:"))),
        ("router/indexer tokenProcessorConfig.blockSize", 16,
         Location("x.yaml", _at(ROUTER_TEXT, "{blockSize: 16}"))),
        ("router/indexer yaml.blockSizeTokens", 32,
         Location("x.yaml", _at(ROUTER_TEXT, "blockSizeTokens:"))),
        ("router/indexer tokenProcessorConfig.blockSize", 128,
         Location("x.yaml", _at(ROUTER_TEXT, "{blockSize: 128}"))),
    ]  # fmt: skip
    assert found.pools == () and found.problems == ()


def test_router_sizes_at_the_top_of_a_block() -> None:
    # a key at the top of the block given (no path before it) is named by itself
    from kvalign.deploy.k8s import _Context, _router_sizes

    text = "a: 1\nrouter:\n  blockSizeTokens: 48\n"
    ctx = _Context(text, "r.yaml", [])
    _router_sizes(ctx, {"blockSizeTokens": 48}, 2)
    _router_sizes(ctx, [{"tokenProcessorConfig": {"blockSize": 24}}], 1)
    # a list keeps the path of its key: each item's keys follow it
    _router_sizes(ctx, {"scorers": [{"blockSizeTokens": 12}],
                        "tokenProcessorConfig": [{"blockSize": 6}]}, 1)  # fmt: skip
    assert ctx.components == [
        ComponentBlockSize("router/indexer blockSizeTokens", 48, Location("r.yaml", 3)),
        ComponentBlockSize("router/indexer tokenProcessorConfig.blockSize", 24,
                           Location("r.yaml", 1)),
        ComponentBlockSize("router/indexer scorers.blockSizeTokens", 12, Location("r.yaml", 3)),
        ComponentBlockSize("router/indexer tokenProcessorConfig.blockSize", 6,
                           Location("r.yaml", 1)),
    ]  # fmt: skip


KSERVE_FULL = """\
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceServiceConfig
metadata: {name: base}
spec:
  template:
    containers:
    - name: main
      env:
      - {name: VLLM_ADDITIONAL_ARGS, value: "--block-size 64"}
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata:
  name: falcon-h1
  namespace: serving
spec:
  baseRefs: [{name: base}, {name: remote}]
  model:
    uri: pvc://models/falcon
    name: " tiiuae/Falcon-H1-0.5B-Base "
  parallelism: {tensor: 4, data: 2}
  template:
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    containers:
    - name: sidecar
      image: envoyproxy/envoy:v1.31.0
  prefill:
    parallelism: {tensor: 2, data: "two"}
    template:
      containers:
      - name: main
        args: [--max-model-len, "4096"]
    worker:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  router:
    scheduler:
      config:
        inline:
          plugins:
          - type: prefix-cache-scorer
            parameters: {blockSizeTokens: 64}
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: scripted}
spec:
  model: {uri: hf://tiiuae/Falcon-H1-0.5B-Base}
  template:
    containers:
    - name: side
      image: envoyproxy/envoy:v1.31.0
    - name: main
      image: ghcr.io/acme/vllm-wrapper:1.0
      command: [/entrypoint.sh]
      args: [--tensor-parallel-size, "2"]
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
spec:
  template:
    containers:
    - name: main
      args: [--model, tiiuae/Falcon-H1-0.5B-Base, -tp, "2"]
---
apiVersion: serving.kserve.io/v1alpha1
kind: LLMInferenceService
metadata: {name: bare}
spec:
  baseRefs: [{name: gone}, {name: lost}]
  model: {uri: hf://tiiuae/Falcon-H1-0.5B-Base}
  prefill: {}
"""

#: an LLMInferenceServiceConfig of another file of the run
KSERVE_REFERENCES: dict[str, tuple[str, dict[str, object]]] = {
    "remote": ("cfgs.yaml", {"template": {"containers": [{"name": "main", "image": "x"}]}}),
}


def test_kserve_whole() -> None:
    found = _k8s(KSERVE_FULL, KSERVE_REFERENCES)
    start = _at(KSERVE_FULL, "name: falcon-h1")
    key = DeploymentKey("LLMInferenceService", "falcon-h1", "serving", single_object=True)
    # falcon-h1: baseRefs merged (base's main container and its VLLM_ADDITIONAL_ARGS;
    # remote from cfgs.yaml, noted); weights on a PVC, the model id from spec.model.name
    # (noted); parallelism gives TP/DP (a DP that is no integer is not used); the decode
    # pool pins its GPU in the template, the prefill pool in its worker; main is the engine
    # (vLLM's entrypoint, launched by the controller). `scripted`: its main container runs
    # a script kvalign cannot follow (reported once; the envoy sidecar is no engine). The
    # unnamed service takes --model from its args. `bare`: no container at all, the two
    # configs that would hold them are not in the run (its decode pool has no template:
    # line, so it is located at the document's first line)
    assert _pool_rows(found) == [
        ("prefill", "field", "falcon-h1-prefill", FALCON, 2, 1, None, None, "A100", None,
         _at(KSERVE_FULL, "prefill:"), ()),
        ("decode", "field", "falcon-h1-decode", FALCON, 4, 2, None, None, "H100", 64,
         _at(KSERVE_FULL, "template:", 2), (("VLLM_ADDITIONAL_ARGS", "--block-size 64"),)),
        ("decode", "field", "?-decode", FALCON, 2, 1, None, None, None, None,
         _at(KSERVE_FULL, "template:", 5), ()),
        ("prefill", "field", "bare-prefill", FALCON, 1, 1, None, None, None, None,
         _at(KSERVE_FULL, "prefill: {}"), ()),
        ("decode", "field", "bare-decode", FALCON, 1, 1, None, None, None, None,
         _at(KSERVE_FULL, "apiVersion:", 5), ()),
    ]  # fmt: skip
    assert found.pools[0].settings.max_model_len == 4096
    assert [p.deployment_key for p in found.pools[:2]] == [key, key]
    assert found.pools[2].deployment_key is None
    missing = ("vLLM arguments come from baseRefs gone, lost (LLMInferenceServiceConfig not in "
               "this file): vLLM's defaults are assumed for the flags it sets")  # fmt: skip
    assert _problem_rows(found) == [
        (_at(KSERVE_FULL, "baseRefs:"), "falcon-h1: baseRefs remote read from cfgs.yaml",
         False, False),
        (_at(KSERVE_FULL, "model:"), "falcon-h1: weights from pvc://models/falcon; model "
         "config read for spec.model.name tiiuae/Falcon-H1-0.5B-Base", False, False),
        (_at(KSERVE_FULL, "template:", 4), "scripted-decode: container 'main': its command "
         "'/entrypoint.sh' is an entrypoint script given vLLM flags (--tensor-parallel-size),"
         " but its image 'ghcr.io/acme/vllm-wrapper:1.0' is not a vllm image and kvalign "
         "cannot follow its command: use a vLLM image or command: [vllm, serve], or audit "
         "the launch script itself", True, False),
        (_at(KSERVE_FULL, "prefill: {}"), f"bare-prefill: {missing}", False, False),
        (_at(KSERVE_FULL, "spec:", 5), f"bare-decode: {missing}", False, False),
    ]  # fmt: skip
    assert [(c.component, c.value, c.location.line) for c in found.components] == [
        ("router/indexer parameters.blockSizeTokens", 64, _at(KSERVE_FULL, "blockSizeTokens:")),
    ]  # fmt: skip
    assert found.launches == 6  # five pools and the script kvalign cannot follow
    assert start < _at(KSERVE_FULL, "baseRefs:")


MODELSERVICE_CUSTOM = """\
multinode: false
modelArtifacts:
  uri: pvc://models/falcon
  name: tiiuae/Falcon-H1-0.5B-Base
routing:
  epp:
    pluginsCustomConfig:
      custom.yaml: |
        plugins:
        - type: prefix-cache-scorer
          parameters: {blockSizeTokens: 32}
decode:
  parallelism: {tensor: "4"}
  containers:
  - name: vllm
    image: ghcr.io/llm-d/llm-d:v0.4.0
    modelCommand: custom
    command: [/bin/sh, -c]
    args: ["vllm serve tiiuae/Falcon-H1-0.5B-Base --block-size 64"]
prefill:
  containers:
  - name: vllm
    image: ghcr.io/llm-d/llm-d:v0.4.0
"""


def test_modelservice_custom_command_pvc_model_and_routing() -> None:
    # modelArtifacts on a PVC: the model id from its name (noted at modelArtifacts:);
    # modelCommand custom keeps the container's own command (here a shell running vllm
    # serve with --block-size 64); the chart's default vllmServe launches `vllm serve
    # MODEL`; a tensor size given as a string is not used (TP 1); the EPP's embedded
    # prefix-cache-scorer config under routing gives the router's block size
    found = _read(MODELSERVICE_CUSTOM)
    assert _pool_rows(found) == [
        ("prefill", "field", "prefill", FALCON, 1, 1, None, None, None, None,
         _at(MODELSERVICE_CUSTOM, "prefill:"), ()),
        ("decode", "field", "decode", FALCON, 1, 1, None, None, None, 64,
         _at(MODELSERVICE_CUSTOM, "decode:"), ()),
    ]  # fmt: skip
    assert _problem_rows(found) == [
        (2, "ModelService: weights from pvc://models/falcon; model config read for "
            "modelArtifacts.name tiiuae/Falcon-H1-0.5B-Base", False, False),
    ]  # fmt: skip
    assert [(c.component, c.value, c.location.line) for c in found.components] == [
        ("router/indexer parameters.blockSizeTokens", 32, 11),
    ]  # fmt: skip


def test_model_ids_from_uri_and_name() -> None:
    from kvalign.deploy.k8s import _Context, _model

    ctx = _Context("", "m.yaml", [])
    where = Location("m.yaml", 3)
    # no URI (or an empty or non-string one): the name as given, stripped; nothing: None
    assert _model(ctx, {"uri": "", "name": "org/m"}, "f", "o", where) == "org/m"
    assert _model(ctx, {"uri": 5, "name": "org/m"}, "f", "o", where) == "org/m"
    assert _model(ctx, {"name": " org/m "}, "f", "o", where) == "org/m"
    assert _model(ctx, {"name": "  "}, "f", "o", where) is None
    assert _model(ctx, {}, "f", "o", where) is None
    assert ctx.problems == []
    # an hf:// URI names the model; one in storage without a name is a blocking problem
    assert _model(ctx, {"uri": "hf://org/m", "name": "other"}, "f", "o", where) == "org/m"
    assert _model(ctx, {"uri": "s3://bucket/m", "name": " "}, "f", "o", where) is None
    assert ctx.problems == [
        Problem(where, "o: f.uri s3://bucket/m holds the weights but names no model id: set "
                "f.name to the model id (e.g. org/model) or --model in the args"),
    ]  # fmt: skip


DYNAMO_NAMES = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: " g2 "}
spec:
  components:
  - name: my-frontend
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.frontend]
        envFrom:
        - configMapRef: {name: dyn}
  - name: edge
    type: Frontend
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.frontend, --kv-cache-block-size, "16"]
        env:
        - {name: LMCACHE_CHUNK_SIZE, value: "many"}
  - name: worker-a
    subComponentType: prefill
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.vllm, --model, tiiuae/Falcon-H1-0.5B-Base]
  - name: worker-b
    type: worker
    extraPodSpec:
      mainContainer:
        command: [python3, -m, dynamo.vllm, --model, tiiuae/Falcon-H1-0.5B-Base,
                  --kv-transfer-config, '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}']
---
apiVersion: v1
kind: ConfigMap
metadata: {name: dyn}
data: {DYN_KV_CACHE_BLOCK_SIZE: "48"}
"""


def test_dynamo_frontends_by_name_and_roles_by_sub_component_type() -> None:
    # a component whose name holds "frontend" is a frontend whatever its type (its block
    # size here from a ConfigMap through envFrom); the `edge` frontend's environment makes
    # vLLM's argument parser refuse (LMCACHE_CHUNK_SIZE is no integer), so its flags are
    # not read; v1beta1 subComponentType names worker-a's role when type is absent;
    # worker-b's type names none: the role comes from kv_role (kv_consumer = decode)
    found = _read(DYNAMO_NAMES)
    assert [(c.component, c.value, c.location.line) for c in found.components] == [
        # located at the first line naming the variable (the ConfigMap's data)
        ("Dynamo my-frontend DYN_KV_CACHE_BLOCK_SIZE", 48,
         _at(DYNAMO_NAMES, "DYN_KV_CACHE_BLOCK_SIZE")),
    ]  # fmt: skip
    assert [(p.role, p.role_source, p.name, p.location.line) for p in found.pools] == [
        ("prefill", "field", "worker-a", 19), ("decode", "args", "worker-b", 24),
    ]  # fmt: skip
    key = DeploymentKey("DynamoGraphDeployment", "g2", "", single_object=True)
    assert {p.deployment_key for p in found.pools} == {key}
    assert found.problems == ()


def test_dynamo_v1alpha1_locations() -> None:
    # v1alpha1 services are keyed by name: each pool at the first line holding its name
    found = _read(V1ALPHA1)
    assert [(p.name, p.location.line) for p in found.pools] == [("Prefill", 15), ("Decode", 21)]


def test_disaggregated_set_whole() -> None:
    text = DISAGG.replace("  - name: decode\n", "  - replicas: 2\n").replace(
        'args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "1"]',
        'args: [tiiuae/Falcon-H1-0.5B-Base, -tp, "1", --kv-transfer-config,\n'
        '                 \'{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}\']',
    )
    found = _read(text)
    key = DeploymentKey("DisaggregatedSet", "d", "", single_object=True)
    # a role entry without a name is "?" (its role then from kv_role); both in one object
    assert [(p.role, p.role_source, p.name, p.tp, p.location.line, p.deployment_key)
            for p in found.pools] == [
        ("prefill", "field", "prefill", 8, 7, key), ("decode", "args", "?", 1, 1, key),
    ]  # fmt: skip
    # an object name that is empty or blank keys nothing
    blank = _read(DISAGG.replace("  name: d\n", "  name: '  '\n"))
    assert {p.deployment_key for p in blank.pools} == {None}
    unnamed = _read(DISAGG.replace("metadata:\n  name: d\n", "metadata: {}\n"))
    assert {p.deployment_key for p in unnamed.pools} == {None}


def test_helpers_at_their_edges() -> None:
    from types import MappingProxyType

    from kvalign.deploy.k8s import (
        _containers,
        _is_mapping,
        _labels,
        _looks_like_vllm,
        _malformed_containers,
        is_modelservice,
        matches,
    )

    # a Dynamo mainContainer is a container: its fields are no pod labels
    assert _labels({"labels": {"a": 1}, "mainContainer": {"labels": {"b": 2}}}) == {"a": 1}
    # llm-d ModelService values: modelArtifacts and a prefill or a decode block
    assert is_modelservice({"modelArtifacts": {}, "decode": {}})
    assert is_modelservice({"modelArtifacts": {}, "prefill": {}})
    assert not is_modelservice({"modelArtifacts": {}})
    assert not is_modelservice({"prefill": {}, "decode": {}})
    assert matches([{"modelArtifacts": {}, "decode": {}}]) and matches(["x", {"kind": "Pod"}])
    assert not matches(["kind", 5, None, {"spec": {}}])
    # containers inside lists (a list of pod templates) are found, in order
    node = {"items": [{"containers": [{"name": "a"}]}, {"mainContainer": {"name": "b"}}]}
    assert [c["name"] for c in _containers(node)] == ["a", "b"]
    assert _is_mapping(MappingProxyType({})) and not _is_mapping([])
    assert _malformed_containers([{"x": 1}, {"a": [{}, {"containers": 5}]}]) == (
        "[1].a[1].containers"
    )
    assert _malformed_containers(MappingProxyType({"containers": [1]})) == "containers"
    assert _malformed_containers([[{"containers": "x"}]]) == "[0][0].containers"
    assert _malformed_containers([MappingProxyType({"containers": "x"})]) == "[0].containers"
    assert _malformed_containers({"containers": [{}], "more": [{"containers": []}]}) is None
    # the --kv-transfer-config spelling with dashes, a JSON value holding "="
    assert _looks_like_vllm({"args": ['--kv-transfer-config={"k":"a=b"}']}) == (
        "its arguments give --kv-transfer-config"
    )


def test_unnamed_workload_and_kserve_worker_shape() -> None:
    # a workload without metadata.name is "?"
    text = LWS_BAD_SIZE.replace("{size}", "1").replace("  name: w\n", "")
    assert [(p.name, p.location.line) for p in _read(text).pools] == [("?", 1)]
    # the KServe worker pod spec is read with the template: a malformed one is named
    text = KSERVE.replace("  prefill:\n", "  worker:\n    containers: oops\n  prefill:\n")
    found = _read(text)
    assert [p.name for p in found.pools] == ["falcon-h1-prefill"]
    assert [(p.location.line, p.message, p.blocking) for p in found.problems][1:] == [
        (_at(text, "template:"), "falcon-h1-decode: worker.containers: expected a list of "
         "containers", True),
    ]  # fmt: skip
