"""Kubernetes manifests (multi-document YAML) and llm-d ModelService Helm values.

Kinds read: ``Deployment`` / ``StatefulSet`` / ``LeaderWorkerSet`` / ``Pod`` (role from
labels, then arguments, then names), llm-d ``DisaggregatedSet`` (``spec.roles[].name``),
NVIDIA Dynamo ``DynamoGraphDeployment`` v1alpha1 (``spec.services.*.subComponentType``)
and v1beta1 (``spec.components[].type``), KServe ``LLMInferenceService`` (``spec.prefill``
vs the top-level ``spec.template``; ``VLLM_ADDITIONAL_ARGS``), ``ConfigMap`` (``$(VAR)``
values, embedded router configs), ``EndpointPickerConfig`` (router block size), and llm-d
ModelService values (``modelArtifacts`` + ``prefill``/``decode`` blocks).

``$(VAR)`` in ``command``/``args`` resolves from the container's ``env`` (literal values and
``configMapKeyRef`` / ``envFrom`` ConfigMaps of any file of the run); a ConfigMap or Secret
that is not in the run is reported by name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from kvalign.backends import gpu_from_product
from kvalign.deploy.cmdline import differences, evaluate, launch_arguments, signature
from kvalign.deploy.common import (
    PoolInput,
    build_pool,
    is_vllm_image,
    key_from_labels,
    line_of,
    off_path,
    role_from_labels,
    role_from_text,
    substitute_k8s,
    version_from_image,
)
from kvalign.deploy.interface import Source
from kvalign.deploy.model import (
    ComponentBlockSize,
    Deployment,
    DeploymentKey,
    Location,
    Pool,
    Problem,
    Role,
)
from kvalign.deploy.vllm_args import parse_vllm_args, serve_arguments, split_command
from kvalign.errors import KvalignError
from kvalign.numbers import try_int
from kvalign.safeio import load_yaml
from kvalign.shell import Command, shell_script

KIND = "kubernetes"
WORKLOADS = frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet", "Pod", "Job"})
_ROUTER_KEYS = ("blockSizeTokens",)


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


def _malformed_argv(container: Mapping[str, Any]) -> str | None:
    """What is wrong with a container's ``command`` / ``args`` shape, if anything: the
    Kubernetes API takes lists of strings (a number is kept as written, like ``kubectl``'s
    YAML users expect); a string, mapping or nested item is never what the author meant."""
    for field_name in ("command", "args"):
        value = container.get(field_name)
        if value is None:
            continue
        if not isinstance(value, list):
            return f"{field_name}: expected a list of strings, got {type(value).__name__}"
        for index, item in enumerate(value):
            if item is None or isinstance(item, (list, Mapping)):
                kind = "null" if item is None else type(item).__name__
                return f"{field_name}[{index}]: expected a string, got {kind}"
    return None


class _Context:
    """Per-file state: text, ConfigMaps, collected pools/components/problems."""

    def __init__(
        self,
        text: str,
        file: str,
        docs: list[tuple[int, Any]],
        references: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
    ) -> None:
        self.text, self.file = text, file
        self.configmaps: dict[str, Mapping[str, str]] = {}
        #: ConfigMaps of other files of the run (name → file), for the note saying so
        self.configmap_files: dict[str, str] = {}
        for ref_name, (where, data) in (references or {}).items():
            if ref_name.startswith("ConfigMap/") and where != file:
                ref_name = ref_name.removeprefix("ConfigMap/")
                self.configmaps[ref_name] = {str(k): str(v) for k, v in data.items()}
                self.configmap_files[ref_name] = where
        for _, doc in docs:
            if isinstance(doc, Mapping) and doc.get("kind") == "ConfigMap":
                name = str(_map(doc.get("metadata")).get("name", ""))
                data = _map(doc.get("data"))
                self.configmaps[name] = {str(k): str(v) for k, v in data.items()}
                self.configmap_files.pop(name, None)
        #: notes already given (one per container and reference)
        self.noted: set[str] = set()
        self.llmisvc_configs: dict[str, Mapping[str, Any]] = {}
        #: configs of other files of the run (name → file), for the note saying so
        self.config_files: dict[str, str] = {}
        for name, (where, spec) in (references or {}).items():
            if where != file and not name.startswith("ConfigMap/"):
                self.llmisvc_configs[name], self.config_files[name] = spec, where
        for _, doc in docs:
            if isinstance(doc, Mapping) and doc.get("kind") == "LLMInferenceServiceConfig":
                name = str(_map(doc.get("metadata")).get("name", ""))
                self.llmisvc_configs[name] = _map(doc.get("spec"))
        self.pools: list[Pool] = []
        self.launches = 0
        self.versions: dict[str, str] = {}  # vLLM release → the image it was read from
        self.components: list[ComponentBlockSize] = []
        self.problems: list[Problem] = []

    def where(self, needle: str, start: int) -> Location:
        return Location(self.file, line_of(self.text, needle, start) or start)


def _env(container: Mapping[str, Any], ctx: _Context) -> dict[str, str]:
    """A container's environment as far as the run shows it: ``envFrom`` ConfigMaps (of
    any file of the run), then ``env`` values and ``configMapKeyRef`` s. An ``envFrom``
    ConfigMap or Secret that is not in the run gets a note naming it (the variables it may
    set are unknown; the pool is evaluated with what is known); one read from another file
    gets a note saying so."""
    env: dict[str, str] = {}
    container_name = str(container.get("name", "?"))
    for ref in _list(container.get("envFrom")):
        for field_name, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
            name = _map(_map(ref).get(field_name)).get("name")
            if not isinstance(name, str):
                continue
            if kind == "ConfigMap" and name in ctx.configmaps:
                env.update(ctx.configmaps[name])
                if name in ctx.configmap_files:
                    _note(ctx, f"{container_name}: envFrom ConfigMap {name} read from "
                          f"{ctx.configmap_files[name]}")  # fmt: skip
                continue
            _note(ctx, f"{container_name}: envFrom {kind} {name} is not in the audited files: "
                  "the variables it sets are not known (evaluated without them)")  # fmt: skip
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


def _note(ctx: _Context, message: str) -> None:
    """A non-blocking note at the ``envFrom:`` line, once per message."""
    if message not in ctx.noted:
        ctx.noted.add(message)
        ctx.problems.append(Problem(ctx.where("envFrom:", 1), message, blocking=False))


#: flags only vLLM's engine takes among the servers kvalign sees next to it (``vllm serve``
#: ``--help``), that make a container's arguments a vLLM launch (:func:`_looks_like_vllm`).
_VLLM_FLAGS = frozenset(
    {"--kv-transfer-config", "--kv_transfer_config", "--tensor-parallel-size", "--block-size",
     "--gpu-memory-utilization", "--max-model-len", "--enable-prefix-caching",
     "--mamba-cache-dtype", "--mamba-ssm-cache-dtype", "--kv-cache-dtype",
     "--served-model-name", "--data-parallel-size", "--pipeline-parallel-size"}
)  # fmt: skip
_SCRIPT = re.compile(r"(?:\.(?:sh|bash|py)|entrypoint[\w.-]*+)\Z", re.IGNORECASE)


def _looks_like_vllm(container: Mapping[str, Any]) -> str | None:
    """Why a container no launch form matched still launches vLLM, or ``None``: its
    arguments give ``--kv-transfer-config``; or, with no ``command``, they are a model then
    vLLM flags (:data:`_VLLM_FLAGS`, the image's entrypoint being ``vllm serve``); or its
    ``command`` is an entrypoint script given vLLM flags."""
    command = [str(w) for w in _list(container.get("command"))]
    args = [str(w) for w in _list(container.get("args"))]
    flags = [w.split("=", 1)[0] for w in (*command, *args) if w.startswith("--")]
    if any(f in ("--kv-transfer-config", "--kv_transfer_config") for f in flags):
        return "its arguments give --kv-transfer-config"
    vllm = sorted({f for f in flags if f in _VLLM_FLAGS})
    if not vllm:
        return None
    if not command and args and not args[0].startswith("-"):
        return f"its args are a model then vLLM flags ({', '.join(vllm)})"
    if command and _SCRIPT.search(command[0]):
        listed = ", ".join(vllm)
        return f"its command {command[0]!r} is an entrypoint script given vLLM flags ({listed})"
    return None


def _launch(
    container: Mapping[str, Any], env: Mapping[str, str], *, implied: bool = False
) -> list[tuple[list[str], Command | None]]:
    """The ``vllm serve`` arguments of a container (``[]`` when it does not run vLLM), one
    entry per ``if``/``case`` alternative of its launch.

    ``command``/``args`` that run a shell (``/bin/bash -exc SCRIPT``, ``sh -c``; options
    may be combined) are evaluated as a script (:mod:`kvalign.shell`) with the
    container's ``env``; the first vLLM launch in it counts, with each of its
    alternatives. A container without ``command`` runs its image's entrypoint: ``vllm
    serve`` for a vLLM image, or when ``implied`` (the reader knows the controller launches
    vLLM, e.g. KServe's ``main``).
    """
    words = [substitute_k8s(str(w), env) for w in _list(container.get("command"))]
    words += [substitute_k8s(str(w), env) for w in _list(container.get("args"))]
    extra = split_command(env.get("VLLM_ADDITIONAL_ARGS", ""))
    script = shell_script(words)
    if script is not None:
        text, positional = script
        found: list[tuple[list[str], Command | None]] = []
        site: tuple[int, ...] | None = None
        for command in evaluate(text, env, positional).commands:
            launched = launch_arguments(command)
            if launched is None or (site is not None and command.site != site):
                continue
            site = command.site
            found.append((launched + extra, command))
        return found
    launched = serve_arguments(words)
    if launched is not None:
        return [(launched + extra, None)]
    image = str(container.get("image", ""))
    if not container.get("command") and (is_vllm_image(image) or extra or implied):
        return [(words + extra, None)]
    return []


def _containers(node: Any) -> Iterator[Mapping[str, Any]]:
    """Containers anywhere under ``node`` (``containers[]``, Dynamo ``mainContainer``)."""
    if _is_mapping(node):
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
    trail = _malformed_trail(node)
    if trail is None:
        return None
    for step in reversed(trail):  # the path is spelled only for the one found
        if isinstance(step, _Index):
            path = f"{path}[{step.index}]"
        else:
            path = f"{path}.{step}" if path else str(step)
    return path


@dataclasses.dataclass(frozen=True)
class _Index:
    """A list index on the way to a malformed ``containers`` (:func:`_malformed_trail`)."""

    index: int


def _malformed_trail(node: Any) -> list[Any] | None:
    """The keys and :class:`_Index` steps to the first ``containers`` that is not a list of
    mappings, innermost first; ``None`` when there is none."""
    if type(node) is dict or isinstance(node, Mapping):
        for key, value in node.items():
            if key == "containers" and (
                not isinstance(value, list) or not all(_is_mapping(c) for c in value)
            ):
                return [key]
            if type(value) is dict or isinstance(value, (Mapping, list)):
                found = _malformed_trail(value)
                if found is not None:
                    found.append(key)
                    return found
    elif isinstance(node, list):
        for index, item in enumerate(node):
            if type(item) is dict or isinstance(item, (Mapping, list)):
                found = _malformed_trail(item)
                if found is not None:
                    found.append(_Index(index))
                    return found
    return None


def _is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, with the common case (a ``dict``) first."""
    return type(value) is dict or isinstance(value, Mapping)


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
            number = try_int(str(value).strip())
            if number is not None and number > 0:
                return number
    return None


GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: node labels that name the GPU model a pod is pinned to: GPU feature discovery's,
#: NVIDIA DRA / llm-d guides' ``gpu.nvidia.com/model``, GKE's accelerator label.
GPU_LABELS: tuple[str, ...] = (
    GPU_PRODUCT_LABEL,
    "gpu.nvidia.com/model",
    "cloud.google.com/gke-accelerator",
)


def _gpu_products(node: Any) -> list[str]:
    """GPU-model label values (:data:`GPU_LABELS`) a pod template or role block asks for:
    ``nodeSelector``, node-affinity ``matchExpressions`` (``operator: In``) and llm-d's
    ``acceleratorTypes: {labelKey, labelValues}``."""
    found: list[str] = []
    if _is_mapping(node):
        selector = node.get("nodeSelector")
        if isinstance(selector, Mapping):
            found += [str(selector[k]) for k in GPU_LABELS if isinstance(selector.get(k), str)]
        if node.get("key") in GPU_LABELS and node.get("operator") == "In":
            found += [str(v) for v in _list(node.get("values"))]
        if node.get("labelKey") in GPU_LABELS:
            found += [str(v) for v in _list(node.get("labelValues"))]
        for key, value in node.items():
            if key not in ("nodeSelector", "containers") and (
                _is_mapping(value) or isinstance(value, list)
            ):
                found += _gpu_products(value)
    elif isinstance(node, list):
        for item in node:
            found += _gpu_products(item)
    return found


def gpu_of(problems: list[Problem], node: Any, name: str, where: Location) -> str | None:
    """The GPU model the pool is scheduled on, from :func:`_gpu_products`; a non-blocking
    problem (and ``None``: the ``--gpu`` default applies) when it names several GPUs or
    none kvalign knows."""
    products = list(dict.fromkeys(_gpu_products(node)))
    if not products:
        return None
    names = {gpu_from_product(p) for p in products}
    if len(names) == 1 and None not in names:
        return names.pop()
    problems.append(
        Problem(
            where,
            f"{name}: GPU node label {', '.join(products)}: "
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
    gpu_node: Any = None,
    implied: bool = False,
    kind_lws: bool = False,
) -> None:
    """Read the first container under ``node`` that launches vLLM as one pool.

    ``gpu_node``: where the GPU pin is (default ``node``; llm-d ModelService values put
    ``nodeSelector`` / ``affinity`` / ``acceleratorTypes`` on the role block). ``implied``:
    the controller launches vLLM in the first container whatever its image (KServe).
    ``kind_lws``: a LeaderWorkerSet, whose pods see ``LWS_GROUP_SIZE`` = ``nodes``.
    """
    bad = _malformed_containers(node)
    if bad is not None:
        ctx.problems.append(
            Problem(ctx.where(needle or f"name: {name}", start),
                    f"{name}: {bad}: expected a list of containers")
        )  # fmt: skip
        return
    not_read: list[Problem] = []  # noted (--verbose) only when no container runs vLLM
    for index, container in enumerate(_containers(node)):
        shape = _malformed_argv(container)
        if shape is not None:
            ctx.problems.append(
                Problem(ctx.where(needle or f"name: {name}", start),
                        f"{name}: container {container.get('name', '?')!r} {shape}")
            )  # fmt: skip
            return
        env = _env(container, ctx)
        if nodes is not None and kind_lws:
            # the LeaderWorkerSet controller sets LWS_GROUP_SIZE in every pod of a group
            # to spec.leaderWorkerTemplate.size (leaderworkerset.x-k8s.io)
            env = {"LWS_GROUP_SIZE": str(nodes), **env}
        alternatives = _launch(container, env, implied=implied and index == 0)
        image = str(container.get("image", ""))
        if not alternatives:
            looks = _looks_like_vllm(container)
            if looks is not None:  # a launch found but not followed: not evaluated
                ctx.launches += 1
                ctx.problems.append(
                    Problem(
                        ctx.where(needle or f"name: {name}", start),
                        f"{name}: container {container.get('name', '?')!r}: {looks}, but its "
                        f"image {image!r} is not a vllm image and kvalign cannot follow its "
                        "command: use a vLLM image or command: [vllm, serve], or audit the "
                        "launch script itself",
                    )
                )
                continue
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
        ctx.launches += 1
        version = version_from_image(image)
        if version is not None:
            ctx.versions.setdefault(version, image)
        where = ctx.where(needle or f"name: {name}", start)
        gpu = gpu_of(ctx.problems, gpu_node if gpu_node is not None else node, name, where)
        built: list[tuple[Command | None, Pool]] = []
        seen: set[tuple[Any, ...]] = set()
        found_problems: list[Problem] = []
        for launched, command in alternatives:
            found = PoolInput(
                role=role,
                role_source=role_source,
                name=name,
                args=launched,
                location=where,
                env={**env, **(command.env if command is not None else {})},
                model=model,
                tp=tp,
                dp=dp,
                deployment_key=key,
                nodes=nodes,
                gpus_per_node=_gpus(container),
                gpu=gpu,
                vllm_version=version,
            )
            pool, problems = build_pool(found)
            found_problems += [p for p in problems if p not in found_problems]
            if pool is not None and signature(pool) not in seen:
                seen.add(signature(pool))
                built.append((command, pool))
        if built and len(alternatives) > 1:  # as for scripts (kvalign.deploy.cmdline)
            found_problems = off_path(found_problems)
        if len(built) > 1:
            commands = [c for c, _ in built if c is not None]
            letters = "abcdefghijklmnopqrstuvwxyz"
            named = [
                dataclasses.replace(p, name=f"{name}.{letters[i % 26]}")
                for i, (_, p) in enumerate(built)
            ]
            listing = "; ".join(
                f"{p.name}: {d}" for p, d in zip(named, differences(commands), strict=True)
            )
            found_problems.append(
                Problem(
                    where,
                    f"{name}: the if/case/loop alternatives in its script give {len(named)} "
                    f"different pools, each evaluated: {listing}",
                    blocking=False,
                )
            )
            ctx.pools += named
        else:
            ctx.pools += [p for _, p in built]
        ctx.problems.extend(found_problems)
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
        number = try_int(value) if value is not None else None
        if number is not None:
            ctx.components.append(
                ComponentBlockSize(
                    f"Dynamo {name} DYN_KV_CACHE_BLOCK_SIZE",
                    number,
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
        kind_lws=doc.get("kind") == "LeaderWorkerSet",
    )  # fmt: skip


def _disaggregated_set(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    key = _object_key(doc, "DisaggregatedSet")
    for entry in _list(_map(doc.get("spec")).get("roles")):
        entry = _map(entry)
        name = str(entry.get("name", "?"))
        role = role_from_text(name)
        _add_pool(ctx, entry, name=name, start=start, role=role, role_source="field", key=key)


def _storm_service(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    """An AIBrix ``StormService``: one pool per role of ``spec.template.spec.roles`` (each
    role has its own pod template); the role's ``name`` is its P/D role."""
    key = _object_key(doc, "StormService")
    template = _map(_map(_map(doc.get("spec")).get("template")).get("spec"))
    for entry in _list(template.get("roles")):
        entry = _map(entry)
        name = str(entry.get("name", "?"))
        role = role_from_text(name)
        _add_pool(
            ctx, entry, name=name, start=start, role=role,
            role_source="field" if role else "args", needle=f"name: {name}", key=key,
        )  # fmt: skip


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
    """The model id in a storage URI: ``hf://org/model`` → ``org/model``; a bare id or
    path as is; ``None`` for ``pvc://`` / ``oci://`` / ``s3://`` / ``gs://`` (weights in
    storage name no model id)."""
    if not isinstance(uri, str) or not uri:
        return None
    if uri.startswith("hf://"):
        return uri[len("hf://") :]
    if "://" in uri:
        return None
    return uri


def _model(
    ctx: _Context, artifacts: Mapping[str, Any], field: str, owner: str, where: Location
) -> str | None:
    """The model id from ``{uri, name}`` (KServe ``spec.model``, llm-d ``modelArtifacts``):
    an ``hf://`` URI's id, else ``name`` when the weights are in storage (``pvc://``, a
    note says so and which name was read), else ``None``; a URI in storage without a
    name is a (blocking) problem naming the field to set."""
    uri = artifacts.get("uri")
    from_uri = _uri_model(uri)
    if from_uri is not None:
        return from_uri
    name = artifacts.get("name")
    if not isinstance(uri, str) or not uri:
        return name.strip() if isinstance(name, str) and name.strip() else None
    if isinstance(name, str) and name.strip():
        ctx.problems.append(
            Problem(
                where,
                f"{owner}: weights from {uri}; model config read for {field}.name {name.strip()}",
                blocking=False,
            )
        )
        return name.strip()
    ctx.problems.append(
        Problem(
            where,
            f"{owner}: {field}.uri {uri} holds the weights but names no model id: set "
            f"{field}.name to the model id (e.g. org/model) or --model in the args",
        )
    )
    return None


def _tp(block: Mapping[str, Any]) -> tuple[int | None, int | None]:
    par = _map(block.get("parallelism"))
    tp, dp = par.get("tensor"), par.get("data")
    return (tp if isinstance(tp, int) else None, dp if isinstance(dp, int) else None)


def _merge(base: Any, over: Any) -> Any:
    """``over`` applied onto ``base`` as KServe merges an ``LLMInferenceServiceConfig``:
    mappings key by key, ``containers`` by ``name``, ``env`` by ``name``, other lists
    replaced."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        merged = dict(base)
        for key, value in over.items():
            merged[key] = _merge(base[key], value) if key in base else value
        return merged
    if (
        isinstance(base, list)
        and isinstance(over, list)
        and all(isinstance(i, Mapping) and "name" in i for i in (*base, *over))
    ):
        out = {str(i["name"]): i for i in base}
        for item in over:
            key = str(item["name"])
            out[key] = _merge(out[key], item) if key in out else item
        return list(out.values())
    return over


def _kserve(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    """An ``LLMInferenceService``: ``spec.prefill`` is the prefill pool, the top-level
    spec the decode pool. ``baseRefs`` naming an ``LLMInferenceServiceConfig`` in the same
    file are merged first. The controller launches vLLM in the ``main`` container (else
    the first), whatever its image; with no container in the file (all in a config not in
    it), the pool is read from ``parallelism`` and ``model`` with vLLM's defaults, and a
    note says so."""
    spec: Mapping[str, Any] = _map(doc.get("spec"))
    name = str(_map(doc.get("metadata")).get("name", "?"))
    refs = [str(_map(r).get("name")) for r in _list(spec.get("baseRefs"))]
    missing = [r for r in refs if r not in ctx.llmisvc_configs]
    for ref in refs:
        if ref in ctx.llmisvc_configs:
            spec = _merge(ctx.llmisvc_configs[ref], spec)
            if ref in ctx.config_files:
                ctx.problems.append(
                    Problem(
                        ctx.where("baseRefs:", start),
                        f"{name}: baseRefs {ref} read from {ctx.config_files[ref]}",
                        blocking=False,
                    )
                )
    key = _object_key(doc, "LLMInferenceService")
    where = ctx.where("model:", start)
    model = _model(ctx, _map(spec.get("model")), "spec.model", name, where)
    if model is None and any(p.blocking and p.location == where for p in ctx.problems):
        return
    blocks: list[tuple[Role, Mapping[str, Any]]] = [("decode", spec)]
    if "prefill" in spec:
        blocks.insert(0, ("prefill", _map(spec["prefill"])))
    for role, block in blocks:
        tp, dp = _tp(block)
        containers = [
            c
            for c in _list(_map(block.get("template")).get("containers"))
            if isinstance(c, Mapping)
        ]
        main = [c for c in containers if c.get("name") == "main"]
        ordered = main + [c for c in containers if c.get("name") != "main"]
        pool_name = f"{name}-{role}"
        if not ordered:
            source = f"baseRefs {', '.join(missing)}" if missing else "the controller's default"
            ctx.problems.append(
                Problem(
                    ctx.where("prefill:" if role == "prefill" else "spec:", start),
                    f"{pool_name}: vLLM arguments come from {source} "
                    "(LLMInferenceServiceConfig not in this file): vLLM's defaults are "
                    "assumed for the flags it sets",
                    blocking=False,
                )
            )
            ordered = [{"name": "main"}]
        template = {
            "template": {**_map(block.get("template")), "containers": ordered},
            "worker": block.get("worker"),
        }
        _add_pool(
            ctx, template, name=pool_name, start=start, role=role,
            role_source="field", model=model, tp=tp, dp=dp,
            needle="prefill:" if role == "prefill" else "template:", key=key, implied=True,
        )  # fmt: skip
    _router_sizes(ctx, spec.get("router"), start)


def _modelservice(ctx: _Context, doc: Mapping[str, Any], start: int) -> None:
    """llm-d ModelService values: ``prefill`` / ``decode`` blocks; ``modelArtifacts`` the
    model; the role block's ``nodeSelector`` / ``affinity`` / ``acceleratorTypes`` the
    GPU pin."""
    model = _model(
        ctx, _map(doc.get("modelArtifacts")), "modelArtifacts", "ModelService",
        ctx.where("modelArtifacts:", start),
    )  # fmt: skip
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
            pin = {k: v for k, v in block.items() if k != "containers"}
            _add_pool(
                ctx, {"containers": [container]}, name=role, start=start, role=role,
                role_source="field", model=model, tp=tp, dp=dp, needle=f"{role}:",
                gpu_node=pin,
            )  # fmt: skip
            break
    _router_sizes(ctx, doc.get("routing"), start)


def read(
    docs: list[tuple[int, Any]],
    text: str,
    file: str,
    references: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
) -> Deployment:
    """Read every document of one YAML file (``(start line, document)`` pairs);
    ``references``: ``LLMInferenceServiceConfig`` specs of other files of the run."""
    ctx = _Context(text, file, docs, references)
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
        elif kind == "StormService":
            _storm_service(ctx, doc, start)
        elif kind == "DynamoGraphDeployment":
            _dynamo(ctx, doc, start)
        elif kind == "LLMInferenceService":
            _kserve(ctx, doc, start)
        elif kind in ("ConfigMap", "EndpointPickerConfig"):
            _router_sizes(ctx, doc, start)
    version = next(iter(ctx.versions), None)
    if len(ctx.versions) > 1:
        ctx.problems.append(
            Problem(
                Location(file),
                f"containers use different vLLM images ({', '.join(ctx.versions.values())}); "
                f"the release profile is taken from the first ({version})",
                blocking=False,
            )
        )
    return Deployment(
        source=file,
        kind=KIND,
        pools=tuple(ctx.pools),
        components=tuple(ctx.components),
        problems=tuple(ctx.problems),
        vllm_version=version,
        version_source=f"image {ctx.versions[version]}" if version is not None else None,
        launches=ctx.launches,
    )


class Reader:
    """Kubernetes manifests (and llm-d / KServe / Dynamo resources, ModelService values) as
    a :class:`~kvalign.deploy.interface.Reader` (:func:`matches`, :func:`read`)."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """Any YAML document is a Kubernetes object or ModelService values."""
        return matches(source.values)

    def read(self, source: Source) -> Deployment:
        """:func:`read` of every document of the file."""
        return read(list(source.documents), source.text, source.file, source.references)
