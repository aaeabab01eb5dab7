"""Kubernetes manifests (multi-document YAML) and llm-d ModelService Helm values.

Kinds read: ``Deployment`` / ``StatefulSet`` / ``LeaderWorkerSet`` / ``Pod`` (role from
labels, then arguments, then names), llm-d ``DisaggregatedSet`` (``spec.roles[].name``),
NVIDIA Dynamo ``DynamoGraphDeployment`` v1alpha1 (``spec.services.*.subComponentType``)
and v1beta1 (``spec.components[].type``), KServe ``LLMInferenceService`` (``spec.prefill``
vs the top-level ``spec.template``; ``VLLM_ADDITIONAL_ARGS``), ``ConfigMap`` (``$(VAR)``
values, embedded router configs), ``EndpointPickerConfig`` (router block size), and llm-d
ModelService values (``modelArtifacts`` + ``prefill``/``decode`` blocks).

``$(VAR)`` in ``command``/``args`` resolves from the container's ``env`` (literal values and
``configMapKeyRef`` / ``envFrom`` ConfigMaps in the same file); anything else is reported.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kvalign.backends import gpu_from_product
from kvalign.deploy.common import (
    PoolInput,
    build_pool,
    key_from_labels,
    line_of,
    role_from_labels,
    role_from_text,
    substitute_k8s,
)
from kvalign.deploy.model import (
    ComponentBlockSize,
    Deployment,
    DeploymentKey,
    Location,
    Pool,
    Problem,
    Role,
)
from kvalign.deploy.shell import assignments, shell_words
from kvalign.deploy.vllm_args import parse_vllm_args, serve_arguments, split_command
from kvalign.errors import KvalignError
from kvalign.safeio import load_yaml

KIND = "kubernetes"
WORKLOADS = frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet", "Pod", "Job"})
_SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/env"})
_ROUTER_KEYS = ("blockSizeTokens",)
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})


def matches(docs: list[Any]) -> bool:
    """Whether any document is a Kubernetes object or ModelService values."""
    return any(isinstance(d, Mapping) and ("kind" in d or is_modelservice(d)) for d in docs)


def is_modelservice(doc: Any) -> bool:
    """llm-d ModelService Helm values: ``modelArtifacts`` plus a prefill or decode block."""
    return (
        isinstance(doc, Mapping)
        and "modelArtifacts" in doc
        and ("prefill" in doc or "decode" in doc)
    )


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class _Context:
    """Per-file state: text, ConfigMaps, collected pools/components/problems."""

    def __init__(self, text: str, file: str, docs: list[tuple[int, Any]]) -> None:
        self.text, self.file = text, file
        self.configmaps: dict[str, Mapping[str, str]] = {}
        for _, doc in docs:
            if isinstance(doc, Mapping) and doc.get("kind") == "ConfigMap":
                name = str(_map(doc.get("metadata")).get("name", ""))
                data = _map(doc.get("data"))
                self.configmaps[name] = {str(k): str(v) for k, v in data.items()}
        self.pools: list[Pool] = []
        self.components: list[ComponentBlockSize] = []
        self.problems: list[Problem] = []

    def where(self, needle: str, start: int) -> Location:
        return Location(self.file, line_of(self.text, needle, start) or start)


def _env(container: Mapping[str, Any], ctx: _Context) -> dict[str, str]:
    env: dict[str, str] = {}
    for ref in _list(container.get("envFrom")):
        name = _map(_map(ref).get("configMapRef")).get("name")
        if isinstance(name, str) and name in ctx.configmaps:
            env.update(ctx.configmaps[name])
    for item in _list(container.get("env")):
        item = _map(item)
        name = item.get("name")
        if not isinstance(name, str):
            continue
        if "value" in item:
            env[name] = substitute_k8s(str(item["value"]), env)
            continue
        key_ref = _map(_map(item.get("valueFrom")).get("configMapKeyRef"))
        data = ctx.configmaps.get(str(key_ref.get("name")), {})
        if str(key_ref.get("key")) in data:
            env[name] = data[str(key_ref.get("key"))]
    return env


def _launch(container: Mapping[str, Any], env: Mapping[str, str]) -> list[str] | str | None:
    """The ``vllm serve`` arguments of a container (``None`` when it does not run vLLM)."""
    words = [substitute_k8s(str(w), env) for w in _list(container.get("command"))]
    words += [substitute_k8s(str(w), env) for w in _list(container.get("args"))]
    extra = env.get("VLLM_ADDITIONAL_ARGS", "")
    if len(words) >= 2 and words[0] in _SHELLS and "-c" in words:
        script = " ".join(words[words.index("-c") + 1 :])
        script_env = dict(env)
        for line in script.replace("\\\n", " ").splitlines():
            try:
                assigned = assignments(line, script_env)
                if assigned is not None:
                    script_env.update(assigned)
                    continue
                launched = serve_arguments(shell_words(line, script_env))
            except KvalignError:
                continue
            if launched is not None:
                cut = next((i for i, w in enumerate(launched) if w in _SEPARATORS), None)
                return (launched[:cut] if cut is not None else launched) + split_command(extra)
        return None
    launched = serve_arguments(words)
    if launched is not None:
        return launched + split_command(extra)
    image = str(container.get("image", ""))
    if not container.get("command") and ("vllm" in image or extra):
        return words + split_command(extra)
    return None


def _containers(node: Any) -> Iterator[Mapping[str, Any]]:
    """Containers anywhere under ``node`` (``containers[]``, Dynamo ``mainContainer``)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                if key == "containers":
                    yield from (c for c in value if isinstance(c, Mapping))
            elif key == "mainContainer" and isinstance(value, Mapping):
                yield value
            else:
                yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


def _malformed_containers(node: Any, path: str = "") -> str | None:
    """Dotted path of the first ``containers`` that is not a list of mappings, if any."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "containers" and (
                not isinstance(value, list) or not all(isinstance(c, Mapping) for c in value)
            ):
                return here
            found = _malformed_containers(value, here)
            if found is not None:
                return found
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found = _malformed_containers(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _labels(node: Any) -> dict[str, Any]:
    """All ``labels`` mappings under ``node`` merged (workload first, then templates)."""
    found: dict[str, Any] = {}
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "labels" and isinstance(value, Mapping):
                for k, v in value.items():
                    found.setdefault(str(k), v)
            elif key not in ("containers", "mainContainer"):
                for k, v in _labels(value).items():
                    found.setdefault(k, v)
    elif isinstance(node, list):
        for item in node:
            for k, v in _labels(item).items():
                found.setdefault(k, v)
    return found


def _namespace(doc: Mapping[str, Any]) -> str:
    value = _map(doc.get("metadata")).get("namespace")
    return value.strip() if isinstance(value, str) else ""


def _object_key(doc: Mapping[str, Any], kind: str) -> DeploymentKey | None:
    """A custom resource that holds every pool: its kind and ``metadata.name``."""
    name = _map(doc.get("metadata")).get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    return DeploymentKey(kind, name.strip(), _namespace(doc), single_object=True)


def _gpus(container: Mapping[str, Any]) -> int | None:
    """GPUs a container asks for: ``resources.limits`` (else ``requests``) ``*/gpu``."""
    resources = _map(container.get("resources"))
    for section in ("limits", "requests"):
        for key, value in _map(resources.get(section)).items():
            if not str(key).endswith("/gpu") or isinstance(value, bool):
                continue
            text = str(value).strip()
            if text.isdigit() and int(text) > 0:
                return int(text)
    return None


GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"


def _gpu_products(node: Any) -> list[str]:
    """``nvidia.com/gpu.product`` values a pod template asks for: ``nodeSelector`` and
    node-affinity ``matchExpressions`` (``operator: In``)."""
    found: list[str] = []
    if isinstance(node, Mapping):
        selector = node.get("nodeSelector")
        if isinstance(selector, Mapping) and isinstance(selector.get(GPU_PRODUCT_LABEL), str):
            found.append(selector[GPU_PRODUCT_LABEL])
        if node.get("key") == GPU_PRODUCT_LABEL and node.get("operator") == "In":
            found += [str(v) for v in _list(node.get("values"))]
        for key, value in node.items():
            if key not in ("nodeSelector", "containers"):
                found += _gpu_products(value)
    elif isinstance(node, list):
        for item in node:
            found += _gpu_products(item)
    return found


def _gpu(ctx: _Context, node: Any, name: str, where: Location) -> str | None:
    """The GPU model the pool is scheduled on, from :func:`_gpu_products`; a non-blocking
    problem (and ``None``: the ``--gpu`` default applies) when it names several GPUs or
    none kvalign knows."""
    products = list(dict.fromkeys(_gpu_products(node)))
    if not products:
        return None
    names = {gpu_from_product(p) for p in products}
    if len(names) == 1 and None not in names:
        return names.pop()
    ctx.problems.append(
        Problem(
            where,
            f"{name}: {GPU_PRODUCT_LABEL} {', '.join(products)}: "
            + ("several GPU models" if len(names) > 1 else "no GPU model kvalign knows")
            + " (the --gpu default is used)",
            blocking=False,
        )
    )
    return None


def _add_pool(
    ctx: _Context,
    node: Any,
    *,
    name: str,
    start: int,
    role: Role | None,
    role_source: str,
    model: str | None = None,
    tp: int | None = None,
    dp: int | None = None,
    needle: str | None = None,
    key: DeploymentKey | None = None,
    nodes: int | None = None,
) -> None:
    bad = _malformed_containers(node)
    if bad is not None:
        ctx.problems.append(
            Problem(ctx.where(needle or f"name: {name}", start),
                    f"{name}: {bad}: expected a list of containers")
        )  # fmt: skip
        return
    not_read: list[Problem] = []  # noted (--verbose) only when no container runs vLLM
    for container in _containers(node):
        env = _env(container, ctx)
        launched = _launch(container, env)
        if launched is None:
            image = str(container.get("image", ""))
            if not container.get("command") and container.get("args"):
                not_read.append(
                    Problem(
                        ctx.where(needle or f"name: {name}", start),
                        f"{name}: container {container.get('name', '?')!r} has args but no "
                        f"command and its image {image!r} is not a vllm image: not read "
                        "as a vLLM pool",
                        blocking=False,
                        verbose_only=True,
                    )
                )
            continue
        where = ctx.where(needle or f"name: {name}", start)
        found = PoolInput(
            role=role,
            role_source=role_source,
            name=name,
            args=launched,
            location=where,
            env=env,
            model=model,
            tp=tp,
            dp=dp,
            deployment_key=key,
            nodes=nodes,
            gpus_per_node=_gpus(container),
            gpu=_gpu(ctx, node, name, where),
        )
        pool, problems = build_pool(found)
        ctx.problems.extend(problems)
        if pool is not None:
            ctx.pools.append(pool)
        return
    ctx.problems.extend(not_read)


def _router_sizes(ctx: _Context, node: Any, start: int, path: str = "") -> None:
    if isinstance(node, Mapping):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if (key in _ROUTER_KEYS or here.endswith("tokenProcessorConfig.blockSize")) and (
                isinstance(value, int) and not isinstance(value, bool)
            ):
                ctx.components.append(
                    ComponentBlockSize(
                        f"router/indexer {'.'.join(here.split('.')[-2:])}",
                        value,
                        ctx.where(f"{key}:", start),
                    )
                )
            elif isinstance(value, str) and ("blockSize" in value) and "\n" in value:
                try:
                    embedded = load_yaml(value, ctx.file)
                except KvalignError:
                    continue
                _router_sizes(ctx, embedded, start, here)
            else:
                _router_sizes(ctx, value, start, here)
    elif isinstance(node, list):
        for item in node:
            _router_sizes(ctx, item, start, path)


def _frontend(ctx: _Context, node: Any, name: str, start: int) -> None:
    """Dynamo frontend / router ``--kv-cache-block-size`` and ``DYN_KV_CACHE_BLOCK_SIZE``."""
    for container in _containers(node):
        env = _env(container, ctx)
        words = [substitute_k8s(str(w), env) for w in _list(container.get("command"))]
        words += [substitute_k8s(str(w), env) for w in _list(container.get("args"))]
        text = " ".join(words)
        try:
            parsed = parse_vllm_args(split_command(text), env=env)
        except KvalignError:
            parsed = None
        if parsed is not None and parsed.kv_cache_block_size is not None:
            ctx.components.append(
                ComponentBlockSize(
                    f"Dynamo {name} --kv-cache-block-size",
                    parsed.kv_cache_block_size,
                    ctx.where("kv-cache-block-size", start),
                )
            )
        value = env.get("DYN_KV_CACHE_BLOCK_SIZE")
        if value is not None and value.isdigit():
            ctx.components.append(
                ComponentBlockSize(
                    f"Dynamo {name} DYN_KV_CACHE_BLOCK_SIZE",
                    int(value),
                    ctx.where("DYN_KV_CACHE_BLOCK_SIZE", start),
                )
            )


def _lws_size(ctx: _Context, doc: Mapping[str, Any], name: str, start: int) -> int | None:
    """LeaderWorkerSet ``spec.leaderWorkerTemplate.size`` (pods per group), if valid."""
    template = _map(_map(doc.get("spec")).get("leaderWorkerTemplate"))
    if "size" not in template:
        return None
    size = template["size"]
    if isinstance(size, int) and not isinstance(size, bool) and size >= 1:
        return size
    ctx.problems.append(
        Problem(
            ctx.where("size:", start),
            f"{name}: leaderWorkerTemplate.size: expected a positive integer, got {size!r} "
            "(not used)",
            blocking=False,
        )
    )
    return None


def _workload(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    name = str(_map(doc.get("metadata")).get("name", "?"))
    labels = _labels(doc)
    role = role_from_labels(labels)
    nodes = _lws_size(ctx, doc, name, start) if doc.get("kind") == "LeaderWorkerSet" else None
    _add_pool(
        ctx, doc.get("spec"), name=name, start=start,
        role=role, role_source="label" if role else "args",
        key=key_from_labels(labels, _namespace(doc)), nodes=nodes,
    )  # fmt: skip


def _disaggregated_set(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    key = _object_key(doc, "DisaggregatedSet")
    for entry in _list(_map(doc.get("spec")).get("roles")):
        entry = _map(entry)
        name = str(entry.get("name", "?"))
        role = role_from_text(name)
        _add_pool(ctx, entry, name=name, start=start, role=role, role_source="field", key=key)


def _dynamo(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    key = _object_key(doc, "DynamoGraphDeployment")
    spec = _map(doc.get("spec"))
    entries: list[tuple[str, Mapping[str, Any], str]] = []
    for name, svc in _map(spec.get("services")).items():  # v1alpha1
        svc = _map(svc)
        kind = str(svc.get("subComponentType") or svc.get("componentType") or "")
        entries.append((str(name), svc, kind))
    for comp in _list(spec.get("components")):  # v1beta1
        comp = _map(comp)
        kind = str(comp.get("type") or comp.get("subComponentType") or "")
        entries.append((str(comp.get("name", "?")), comp, kind))
    for name, node, kind in entries:
        if kind.lower() in ("frontend", "router") or "frontend" in name.lower():
            _frontend(ctx, node, name, start)
            continue
        role = role_from_text(kind)
        _add_pool(
            ctx, node, name=name, start=start, role=role,
            role_source="field" if role else "args", needle=name, key=key,
        )  # fmt: skip


def _uri_model(uri: Any) -> str | None:
    if not isinstance(uri, str) or not uri:
        return None
    for prefix in ("hf://", "pvc://", "oci://"):
        if uri.startswith(prefix):
            return uri[len(prefix) :] if prefix == "hf://" else None
    return uri


def _tp(block: Mapping[str, Any]) -> tuple[int | None, int | None]:
    par = _map(block.get("parallelism"))
    tp, dp = par.get("tensor"), par.get("data")
    return (tp if isinstance(tp, int) else None, dp if isinstance(dp, int) else None)


def _kserve(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    spec = _map(doc.get("spec"))
    model = _uri_model(_map(spec.get("model")).get("uri"))
    name = str(_map(doc.get("metadata")).get("name", "?"))
    key = _object_key(doc, "LLMInferenceService")
    blocks: list[tuple[Role, Mapping[str, Any]]] = [("decode", spec)]
    if "prefill" in spec:
        blocks.insert(0, ("prefill", _map(spec["prefill"])))
    for role, block in blocks:
        tp, dp = _tp(block)
        template = {"template": block.get("template"), "worker": block.get("worker")}
        _add_pool(
            ctx, template, name=f"{name}-{role}", start=start, role=role,
            role_source="field", model=model, tp=tp, dp=dp,
            needle="prefill:" if role == "prefill" else "template:", key=key,
        )  # fmt: skip
    _router_sizes(ctx, spec.get("router"), start)


def _modelservice(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    model = _uri_model(_map(doc.get("modelArtifacts")).get("uri"))
    role: Role
    for role in ("prefill", "decode"):
        block = _map(doc.get(role))
        if not block or block.get("create") is False:
            continue
        tp, dp = _tp(block)
        for container in _list(block.get("containers")):
            container = dict(_map(container))
            if container.get("modelCommand", "vllmServe") == "vllmServe":
                # the chart launches `vllm serve MODEL` and appends the container's args
                container["command"] = ["vllm", "serve"]
            _add_pool(
                ctx, {"containers": [container]}, name=role, start=start, role=role,
                role_source="field", model=model, tp=tp, dp=dp, needle=f"{role}:",
            )  # fmt: skip
            break
    _router_sizes(ctx, doc.get("routing"), start)


def read(docs: list[tuple[int, Any]], text: str, file: str) -> Deployment:
    """Read every document of one YAML file (``(start line, document)`` pairs)."""
    ctx = _Context(text, file, docs)
    for start, doc in docs:
        if not isinstance(doc, Mapping):
            continue
        kind = doc.get("kind")
        kind = kind if isinstance(kind, str) else None
        if is_modelservice(doc):
            _modelservice(ctx, doc, start)
        elif kind in WORKLOADS:
            _workload(ctx, doc, start)
        elif kind == "DisaggregatedSet":
            _disaggregated_set(ctx, doc, start)
        elif kind == "DynamoGraphDeployment":
            _dynamo(ctx, doc, start)
        elif kind == "LLMInferenceService":
            _kserve(ctx, doc, start)
        elif kind in ("ConfigMap", "EndpointPickerConfig"):
            _router_sizes(ctx, doc, start)
    return Deployment(
        source=file,
        kind=KIND,
        pools=tuple(ctx.pools),
        components=tuple(ctx.components),
        problems=tuple(ctx.problems),
    )
