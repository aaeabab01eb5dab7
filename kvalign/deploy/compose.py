"""Docker Compose files: one pool per service that runs a vLLM image.

A service is read when its ``image`` is vLLM's (``vllm/vllm-openai``, an image named
``vllm``), whose entrypoint is ``vllm serve``: ``command`` (a list, or a string split as a
shell would; a leading ``vllm serve`` is dropped) is then the ``vllm serve`` arguments;
``environment`` (a mapping or a list of ``NAME=value``) the environment. The role comes from
the arguments (``kv_role``), else the service name. The release comes from the image tag.
All services of one file pair with each other. Other services (a proxy, a router) are not
pools.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from kvalign.deploy.common import (
    PoolInput,
    collect_pool,
    image_deployment,
    is_vllm_image,
    line_of,
    version_from_image,
)
from kvalign.deploy.interface import OneDocumentReader
from kvalign.deploy.model import Deployment, DeploymentKey, Location, Pool, Problem
from kvalign.errors import InvalidConfig

KIND = "compose"


def matches(doc: Any) -> bool:
    """A Compose file: a top-level ``services`` mapping one of whose services runs a vLLM
    image, and no Kubernetes ``kind``."""
    if not isinstance(doc, Mapping) or "kind" in doc:
        return False
    services = doc.get("services")
    return isinstance(services, Mapping) and any(
        isinstance(s, Mapping) and isinstance(s.get("image"), str) and is_vllm_image(s["image"])
        for s in services.values()
    )


def _environment(value: Any, file: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): "" if v is None else str(v) for k, v in value.items()}
    if isinstance(value, list):
        out: dict[str, str] = {}
        for item in value:
            name, _, val = str(item).partition("=")
            out[name] = val
        return out
    raise InvalidConfig(f"{file}: {where}.environment: expected a mapping or a list")


def _command(value: Any, file: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise InvalidConfig(f"{file}: {where}.command: {exc}") from None
    if isinstance(value, list) and all(isinstance(w, (str, int, float)) for w in value):
        return [str(w) for w in value]
    raise InvalidConfig(f"{file}: {where}.command: expected a string or a list of strings")


def read(doc: Mapping[str, Any], text: str, file: str) -> Deployment:
    """Read a Compose file: one pool per vLLM service with a P/D role.

    Raises:
        InvalidConfig: a service that is not a mapping; a malformed ``command`` or
            ``environment``.
    """
    pools: list[Pool] = []
    problems: list[Problem] = []
    versions: dict[str, str] = {}
    launches = 0
    for name, service in doc["services"].items():
        where = f"services.{name}"
        if not isinstance(service, Mapping):
            raise InvalidConfig(f"{file}: {where}: expected a mapping")
        image = service.get("image")
        if not isinstance(image, str) or not is_vllm_image(image):
            continue
        launches += 1
        location = Location(file, line_of(text, f"{name}:"))
        version = version_from_image(image)
        if version is not None:
            versions.setdefault(version, image)
        words = _command(service.get("command"), file, where)
        if words[:2] == ["vllm", "serve"]:  # the entrypoint spelled out again
            words = words[2:]
        found = PoolInput(
            role=None,
            role_source="args",
            name=str(name),
            args=words,
            location=location,
            env=_environment(service.get("environment"), file, where),
            vllm_version=version,
            deployment_key=DeploymentKey("compose file", file, single_object=True),
        )
        collect_pool(found, pools, problems)
    return image_deployment(file, KIND, pools, problems, versions, launches)


class Reader(OneDocumentReader):
    """Docker Compose files as a :class:`~kvalign.deploy.interface.Reader`: one YAML
    document with a ``services`` mapping that runs a vLLM image (:func:`matches`,
    :func:`read`)."""

    def __init__(self) -> None:
        super().__init__(KIND, matches, read)
