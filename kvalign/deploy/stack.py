"""vLLM production-stack Helm values (``servingEngineSpec.modelSpec[]``).

The chart (``helm/templates/deployment-vllm-multi.yaml``) runs, per ``modelSpec`` entry,
``vllm serve MODEL_URL`` with flags made from ``vllmConfig`` and ``lmcacheConfig``. kvalign
makes the same flags from the values (no Helm needed):

* ``modelURL`` → MODEL; ``vllmConfig.tensorParallelSize`` → ``--tensor-parallel-size``;
  ``maxModelLen``, ``dtype``; ``enablePrefixCaching`` → ``--enable-prefix-caching``, and
  its absence from a non-empty ``vllmConfig`` → ``--no-enable-prefix-caching`` (the chart's
  rule: no ``vllmConfig``, or an empty one, gives neither flag, so vLLM's default applies);
  ``extraArgs`` as given.
* ``lmcacheConfig.enabled`` → ``--kv-transfer-config`` with ``LMCacheConnectorV1`` and
  ``kv_role`` = ``lmcacheConfig.kvRole`` (default ``kv_both``); ``kv_producer`` is the
  prefill pool, ``kv_consumer`` the decode pool, else the role comes from the entry's
  ``name`` / ``labels``.
* ``repository:tag`` is the image (a ``vllm/vllm-openai:vX.Y.Z`` tag gives the release
  profile); ``requestGPU`` the GPUs per pod; ``nodeSelectorTerms`` with
  ``nvidia.com/gpu.product`` the GPU model; ``env`` the environment.

All pools of one values file are one Helm release: they pair within the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kvalign.deploy.common import (
    PoolInput,
    collect_pool,
    image_deployment,
    line_of,
    role_from_text,
    version_from_image,
)
from kvalign.deploy.interface import Source
from kvalign.deploy.k8s import gpu_of
from kvalign.deploy.model import Deployment, DeploymentKey, Location, Pool, Problem
from kvalign.errors import InvalidConfig

KIND = "production-stack"


def matches(doc: Any) -> bool:
    """Helm values with ``servingEngineSpec.modelSpec`` (a list)."""
    if not isinstance(doc, Mapping):
        return False
    spec = doc.get("servingEngineSpec")
    return isinstance(spec, Mapping) and isinstance(spec.get("modelSpec"), list)


def _flag_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _arguments(entry: Mapping[str, Any], file: str, where: str) -> list[str]:
    model = entry.get("modelURL")
    if not isinstance(model, str) or not model.strip():
        raise InvalidConfig(f"{file}: {where}.modelURL: expected a model id, got {model!r}")
    words = [model.strip()]
    config = entry.get("vllmConfig") or {}
    if not isinstance(config, Mapping):
        raise InvalidConfig(f"{file}: {where}.vllmConfig: expected a mapping")
    if config:  # the chart writes these flags inside ``with .vllmConfig`` (non-empty only)
        words.append("--enable-prefix-caching" if config.get("enablePrefixCaching") else
                     "--no-enable-prefix-caching")  # fmt: skip
    for key, flag in (
        ("maxModelLen", "--max-model-len"),
        ("dtype", "--dtype"),
        ("tensorParallelSize", "--tensor-parallel-size"),
    ):
        if key in config:
            words += [flag, _flag_value(config[key])]
    extra = config.get("extraArgs") or []
    if not isinstance(extra, list):
        raise InvalidConfig(f"{file}: {where}.vllmConfig.extraArgs: expected a list")
    words += [str(w) for w in extra]
    lmcache = entry.get("lmcacheConfig") or {}
    if not isinstance(lmcache, Mapping):
        raise InvalidConfig(f"{file}: {where}.lmcacheConfig: expected a mapping")
    if lmcache.get("enabled"):
        role = lmcache.get("kvRole") or "kv_both"
        if not isinstance(role, str):
            raise InvalidConfig(
                f"{file}: {where}.lmcacheConfig.kvRole: expected kv_producer, kv_consumer or "
                f"kv_both, got {role!r}"
            )
        words += [
            "--kv-transfer-config",
            json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": role}),
        ]
    return words


def read(doc: Mapping[str, Any], text: str, file: str) -> Deployment:
    """Read production-stack values: one pool per ``modelSpec`` entry with a P/D role.

    Raises:
        InvalidConfig: an entry that is not a mapping, no ``modelURL``, a malformed
            ``vllmConfig`` / ``extraArgs``.
    """
    specs = doc["servingEngineSpec"]["modelSpec"]
    pools: list[Pool] = []
    problems: list[Problem] = []
    versions: dict[str, str] = {}
    for index, entry in enumerate(specs):
        where = f"servingEngineSpec.modelSpec[{index}]"
        if not isinstance(entry, Mapping):
            raise InvalidConfig(f"{file}: {where}: expected a mapping")
        name = str(entry.get("name", f"modelSpec-{index}"))
        line = next(
            (n for q in ("", '"', "'") if (n := line_of(text, f"name: {q}{name}{q}"))), None
        )
        location = Location(file, line or line_of(text, "modelSpec:"))
        image = f"{entry.get('repository', '')}:{entry.get('tag', '')}"
        version = version_from_image(image)
        if version is not None:
            versions.setdefault(version, image)
        labels = entry.get("labels")
        words = " ".join(str(v) for v in labels.values()) if isinstance(labels, Mapping) else ""
        hint = name if role_from_text(name) else words
        gpus = entry.get("requestGPU")
        env = {
            str(e.get("name")): str(e.get("value"))
            for e in entry.get("env") or []
            if isinstance(e, Mapping) and "value" in e
        }
        found = PoolInput(
            role=None,
            role_source="args",
            name=name,
            args=_arguments(entry, file, where),
            location=location,
            env=env,
            name_hint=hint,
            vllm_version=version,
            gpus_per_node=gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else None,
            gpu=gpu_of(problems, entry, name, location),
            deployment_key=DeploymentKey("production-stack values", file, single_object=True),
        )
        collect_pool(found, pools, problems)
    return image_deployment(file, KIND, pools, problems, versions, len(specs))


class Reader:
    """production-stack Helm values as a :class:`~kvalign.deploy.interface.Reader`: one
    YAML document with ``servingEngineSpec.modelSpec`` (:func:`matches`, :func:`read`)."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """One YAML document of production-stack values."""
        values = source.values
        return len(values) == 1 and matches(values[0])

    def read(self, source: Source) -> Deployment:
        """:func:`read` of the file's one document."""
        return read(source.values[0], source.text, source.file)
