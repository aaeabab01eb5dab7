"""kvalign's own deployment schema (what runbooks and the README use).

```yaml
model: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16
name: nano-pd                     # optional deployment name (--pair-by label)
vllm_version: "0.33.0"            # optional
gpu: H100                         # optional: GPU model of every pool (as --gpu)
prefill: {tp: 8, dp: 1, args: "--block-size 64", env: {VAR: value}}
decode:  {tp: 1, args: ["--block-size", "64"], gpu: H200}   # a block's gpu wins
router:  {block_size: 64}         # optional: router / indexer block size (tokens)
```

Keys kvalign does not know are reported (a warning), never dropped silently.
With a top-level ``name``, a file may hold only ``prefill:`` or only ``decode:``; files of
the same directory with the same ``name`` form one deployment under ``--pair-by label``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvalign.backends import get_gpu
from kvalign.deploy.common import PoolInput, build_pool, line_of
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
from kvalign.errors import InvalidConfig, KvalignError

KIND = "kvalign"
TOP_KEYS = frozenset({"model", "name", "vllm_version", "gpu", "prefill", "decode", "router"})
BLOCK_KEYS = frozenset({"model", "name", "tp", "dp", "args", "env", "gpu"})


def _gpu(value: Any, field: str, file: str) -> str | None:
    """A ``gpu:`` value as kvalign's GPU name (``h100`` → ``H100``).

    Raises:
        InvalidConfig: not a GPU kvalign knows.
    """
    if value is None:
        return None
    try:
        gpu = get_gpu(str(value))
    except KvalignError:
        raise InvalidConfig(
            f"{file}: {field}: unknown GPU {value!r} (see `kvalign audit --help` --gpu)"
        ) from None
    return gpu.name if gpu is not None else None


def _unknown(keys: Any, known: frozenset[str], where: str, text: str, file: str) -> list[Problem]:
    return [
        Problem(
            Location(file, line_of(text, f"{key}:")),
            f"{where}{key}: not a kvalign field (known: {', '.join(sorted(known))}); ignored",
            blocking=False,
        )
        for key in keys
        if str(key) not in known
    ]


def matches(doc: Any) -> bool:
    """A mapping with ``model`` and ``prefill`` and ``decode`` blocks (mappings or lists),
    or one of the two blocks and a top-level ``name`` (half of a split deployment)."""
    if not isinstance(doc, Mapping) or "model" not in doc or "modelArtifacts" in doc:
        return False
    blocks = [doc[role] for role in ("prefill", "decode") if role in doc]
    if not blocks or not all(isinstance(b, (Mapping, list)) for b in blocks):
        return False
    return len(blocks) == 2 or "name" in doc


def _int(value: Any, field: str, file: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(f"{file}: {field}: expected a positive integer, got {value!r}")
    return value


def _model(value: Any, field: str, file: str, what: str = "a model id or path") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidConfig(f"{file}: {field}: expected {what}, got {value!r}")
    return value.strip()


def _located(model: str, base: Path | None) -> str:
    """``model`` as a path relative to the YAML file's folder ``base`` when it is one: it
    starts with ``./`` or ``../``, or names a folder or file that exists there (a local
    path wins over a Hub id of the same spelling, as for ``vllm serve``'s working folder).
    Absolute paths, Hub ids and stdin (``base`` ``None``) are left as written."""
    if base is None or Path(model).is_absolute() or model.startswith("~"):
        return model
    tried = os.path.normpath(base / model)
    if model.startswith(("./", "../")) or os.path.exists(tried):
        return tried
    return model


def read(doc: Mapping[str, Any], text: str, file: str, base: Path | None = None) -> Deployment:
    """Read one kvalign-schema document; ``base`` is its folder, against which a relative
    ``model`` path is resolved (:func:`_located`; docs/inputs.md).

    Raises:
        InvalidConfig: a field has the wrong type (``model`` or ``name`` not a non-empty
            string, ``vllm_version`` a number, ``tp`` not a positive integer, ``args`` not a
            list or string).
    """
    key: DeploymentKey | None = None
    if "name" in doc:
        key = DeploymentKey("kvalign name", _model(doc["name"], "name", file, "a name"))
    version = doc.get("vllm_version")
    if isinstance(version, (bool, int, float)):
        # YAML reads an unquoted 0.30 as the number 0.3: a release written so is refused,
        # never read as another release
        raise InvalidConfig(
            f"{file}: vllm_version: {version!r} is not a string (an unquoted release such as "
            '0.30 is read as a number); quote it: vllm_version: "0.30.0"'
        )
    version = None if version is None else str(version)
    model = _located(_model(doc["model"], "model", file), base)
    gpu = _gpu(doc.get("gpu"), "gpu", file)
    pools: list[Pool] = []
    problems: list[Problem] = _unknown(doc, TOP_KEYS, "", text, file)
    role: Role
    for role in ("prefill", "decode"):
        if role not in doc:
            continue
        block = doc[role]
        entries = block if isinstance(block, list) else [block]
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                raise InvalidConfig(f"{file}: {role}: expected a mapping")
            args = entry.get("args", [])
            if not isinstance(args, (str, list)):
                raise InvalidConfig(f"{file}: {role}.args: expected a list or a string")
            env = entry.get("env", {}) or {}
            if not isinstance(env, Mapping):
                raise InvalidConfig(f"{file}: {role}.env: expected a mapping")
            name = str(entry.get("name", role if len(entries) == 1 else f"{role}-{index}"))
            problems += _unknown(entry, BLOCK_KEYS, f"{role}.", text, file)
            found = PoolInput(
                role=role,
                role_source="field",
                name=name,
                args=args if isinstance(args, str) else [str(a) for a in args],
                location=Location(file, line_of(text, f"{role}:")),
                env={str(k): str(v) for k, v in env.items()},
                model=(
                    _located(_model(entry["model"], f"{role}.model", file), base)
                    if "model" in entry
                    else model
                ),
                tp=_int(entry["tp"], f"{role}.tp", file) if "tp" in entry else None,
                dp=_int(entry["dp"], f"{role}.dp", file) if "dp" in entry else None,
                vllm_version=version,
                deployment_key=key,
                gpu=_gpu(entry["gpu"], f"{role}.gpu", file) if "gpu" in entry else gpu,
            )
            pool, found_problems = build_pool(found)
            problems += found_problems
            if pool is not None:
                pools.append(pool)
    components: list[ComponentBlockSize] = []
    router = doc.get("router")
    if isinstance(router, Mapping) and "block_size" in router:
        components.append(
            ComponentBlockSize(
                "router block_size",
                _int(router["block_size"], "router.block_size", file),
                Location(file, line_of(text, "block_size:", line_of(text, "router:") or 1)),
            )
        )
    return Deployment(
        source=file,
        kind=KIND,
        pools=tuple(pools),
        components=tuple(components),
        problems=tuple(problems),
        vllm_version=version,
    )


class Reader:
    """kvalign's own schema as a :class:`~kvalign.deploy.interface.Reader`: one YAML
    document with ``model`` and ``prefill`` / ``decode`` (:func:`matches`, :func:`read`)."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """One YAML document in kvalign's schema."""
        values = source.values
        return len(values) == 1 and matches(values[0])

    def read(self, source: Source) -> Deployment:
        """:func:`read` of the file's one document."""
        return read(source.values[0], source.text, source.file, source.base)
