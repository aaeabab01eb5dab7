"""Docker Compose files: one pool per service that runs a vLLM image.

A service is read when its ``image`` is vLLM's (``vllm/vllm-openai``, an image named
``vllm``), whose entrypoint is ``vllm serve``: ``command`` (a list, or a string split as a
shell would; a leading ``vllm serve`` is dropped) is then the ``vllm serve`` arguments;
``env_file`` files (``KEY=VALUE`` lines, read from the compose file's folder, confined to it)
then ``environment`` (a mapping or a list of ``NAME=value``) the environment; an ``env_file``
that cannot be read makes that service not evaluated. The role comes from
the arguments (``kv_role``), else the service name. The release comes from the image tag.
All services of one file pair with each other. Other services (a proxy, a router) are not
pools.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvalign.deploy.common import (
    PoolInput,
    collect_pool,
    image_deployment,
    is_vllm_image,
    line_of,
    version_from_image,
)
from kvalign.deploy.interface import OneDocumentReader, Source
from kvalign.deploy.model import Deployment, DeploymentKey, Location, Pool, Problem
from kvalign.errors import InvalidConfig, KvalignError
from kvalign.safeio import confined, read_text

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


def _env_files(value: Any) -> list[tuple[str, bool]]:
    """``env_file`` as ``(path, required)`` pairs: a string, a list of strings, or a list
    of ``{path, required}`` mappings (Compose's long form; ``required`` defaults to true)."""
    items = value if isinstance(value, list) else [] if value is None else [value]
    out: list[tuple[str, bool]] = []
    for item in items:
        if isinstance(item, Mapping):
            out.append((str(item.get("path", "")), item.get("required", True) is not False))
        else:
            out.append((str(item), True))
    return out


def parse_env_file(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of a Compose env file: blank lines and ``#`` comments skipped,
    one pair of matching surrounding quotes removed, nothing expanded (``$X`` stays)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


def _read_env_files(value: Any, base: Path | None) -> tuple[dict[str, str], str | None]:
    """The variables of a service's ``env_file`` files, and why one could not be read."""
    env: dict[str, str] = {}
    for raw, required in _env_files(value):
        if base is None:
            return env, f"env_file {raw}: not read (stdin has no folder)"
        path = confined(base, raw)
        if path is None:
            return env, f"env_file {raw}: outside the compose file's folder; not read"
        if not path.is_file() and not required:
            continue
        try:
            env.update(parse_env_file(read_text(path)))
        except KvalignError as exc:
            return env, f"env_file {raw}: cannot be read ({exc})"
    return env, None


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


def read(doc: Mapping[str, Any], text: str, file: str, base: Path | None = None) -> Deployment:
    """Read a Compose file: one pool per vLLM service with a P/D role (``base``: the
    file's folder, where ``env_file`` files are read; ``None`` reads none).

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
        from_files, unread = _read_env_files(service.get("env_file"), base)
        if unread is not None:
            problems.append(Problem(location, f"{name}: {unread}"))
            continue
        # a leading `vllm serve` (the entrypoint spelled out again) is skipped by
        # parse_vllm_args: skipping it here too made it read a later `vllm serve` (two
        # --served-model-name names) as the launch
        words = _command(service.get("command"), file, where)
        found = PoolInput(
            role=None,
            role_source="args",
            name=str(name),
            args=words,
            location=location,
            env={**from_files, **_environment(service.get("environment"), file, where)},
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

    def read(self, source: Source) -> Deployment:
        """:func:`read` of the file's one document, ``env_file`` from its folder."""
        return read(source.values[0], source.text, source.file, source.base)
