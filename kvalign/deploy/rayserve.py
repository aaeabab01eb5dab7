"""Ray Serve LLM prefill/decode configs (``build_pd_openai_app``).

A Serve config file (``applications: [{import_path, args}]``) or the builder's own
arguments (``prefill_config`` / ``decode_config`` at the top level) describe one P/D
deployment: each ``*_config`` is an ``LLMConfig`` whose ``engine_kwargs`` are vLLM engine
arguments (``tensor_parallel_size``, ``block_size``, ``kv_transfer_config``, …; the same
names as the ``vllm serve`` flags, with underscores) and whose ``model_loading_config``
names the model (``model_source``, else ``model_id``). ``accelerator_type`` is the GPU.
The role is the block's key; the application's ``name`` ties the two pools together.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator, Mapping
from typing import Any

from kvalign.deploy.common import PoolInput, build_pool, line_of
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, DeploymentKey, Location, Pool, Problem, Role

KIND = "ray-serve"
_BLOCKS: tuple[tuple[Role, str], ...] = (("prefill", "prefill_config"), ("decode", "decode_config"))
#: most P/D applications one file may hold (counted before any is read). A Serve config
#: deploys a handful; 256 applications are 512 pools, well within the run's pool budget
#: (:data:`kvalign.deploy.MAX_POOLS`) and a fraction of a second to read. Past it the file
#: is not evaluated (exit 3), naming the count and the budget.
MAX_APPLICATIONS = 256
#: what YAML may build that is engine-argument data (what ``json`` writes and vLLM takes).
_SCALARS = (str, int, float, bool, type(None))


def _apps(doc: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(application name, builder args)`` for every P/D application of one document."""
    if not isinstance(doc, Mapping):
        return
    if any(key in doc for _, key in _BLOCKS):
        yield "pd", doc
    apps = doc.get("applications")
    for index, app in enumerate(apps if isinstance(apps, list) else []):
        if not isinstance(app, Mapping):
            continue
        args = app.get("args")
        if isinstance(args, Mapping) and any(key in args for _, key in _BLOCKS):
            yield str(app.get("name") or f"applications[{index}]"), args


def matches(docs: list[Any]) -> bool:
    """Whether a document holds ``prefill_config`` / ``decode_config`` (top level or in
    an application's ``args``)."""
    return any(True for doc in docs for _ in _apps(doc))


def _count(doc: Any) -> int:
    """How many P/D applications one document holds, without reading any (the top-level
    builder arguments count as one; every ``applications`` entry counts)."""
    if not isinstance(doc, Mapping):
        return 0
    apps = doc.get("applications")
    return int(any(key in doc for _, key in _BLOCKS)) + (len(apps) if isinstance(apps, list) else 0)


def _not_data(value: Any, where: str) -> str | None:
    """A place in an ``engine_kwargs`` value that holds something YAML builds but
    an engine argument cannot be (a date ``2024-01-01``, a ``!!set``, ``!!binary`` bytes,
    a key that is no text or number), as ``where.key[index]: a date``; ``None`` when it is
    all plain data (text, numbers, booleans, null, lists and mappings of them). The walk
    visits each node once (YAML documents are bounded, :mod:`kvalign.safeio`)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, Mapping):
            for key, child in node.items():
                if not isinstance(key, _SCALARS):
                    return f"{path}: a key of type {_kind(key)} is not an engine argument"
                stack.append((child, f"{path}.{key}"))
        elif isinstance(node, (list, tuple)):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node))
        elif not isinstance(node, _SCALARS):
            return f"{path}: a YAML {_kind(node)} is not an engine argument (quote it as text)"
    return None


def _kind(value: Any) -> str:
    """What YAML built, in YAML's words (``date``, ``timestamp``, ``set``, ``binary``)."""
    if isinstance(value, datetime.datetime):
        return "timestamp"
    if isinstance(value, datetime.date):
        return "date"
    if isinstance(value, (set, frozenset)):
        return "set"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    return "null" if value is None else type(value).__name__


def _flag(key: str, value: Any) -> list[str]:
    """One engine keyword argument as ``vllm serve`` words (``block_size: 64`` →
    ``--block-size 64``; ``True`` → the bare flag; mappings and lists as JSON)."""
    flag = "--" + key.replace("_", "-")
    if value is None:
        return []
    if isinstance(value, bool):
        return [flag] if value else [f"--no-{key.replace('_', '-')}"]
    if isinstance(value, (Mapping, list)):
        return [flag, json.dumps(value)]
    return [flag, str(value)]


def read(source: Source) -> Deployment:
    """One pool per ``prefill_config`` / ``decode_config`` of every application."""
    pools: list[Pool] = []
    problems: list[Problem] = []
    launches = 0
    count = sum(_count(doc) for _, doc in source.documents)
    if count > MAX_APPLICATIONS:
        first = source.documents[0][0] if source.documents else 1
        return Deployment(
            source=source.file, kind=KIND, launches=count,
            problems=(
                Problem(
                    Location(source.file, first),
                    f"{count:,} Ray Serve applications, more than {MAX_APPLICATIONS:,} in one "
                    "file (budget: applications per file)",
                ),
            ),
        )  # fmt: skip
    for start, doc in source.documents:
        for name, args in _apps(doc):
            for role, key in _BLOCKS:
                block = args.get(key)
                if block is None:
                    continue
                launches += 1
                location = Location(source.file, line_of(source.text, f"{key}:", start) or start)
                if not isinstance(block, Mapping):
                    problems.append(Problem(location, f"{name}.{key}: expected a mapping"))
                    continue
                loading = block.get("model_loading_config")
                loading = loading if isinstance(loading, Mapping) else {}
                model = loading.get("model_source") or loading.get("model_id")
                engine = block.get("engine_kwargs")
                if engine is not None and not isinstance(engine, Mapping):
                    problems.append(
                        Problem(location, f"{name}.{key}.engine_kwargs: expected a mapping")
                    )
                    continue
                odd = _not_data(engine, f"{name}.{key}.engine_kwargs")
                if odd is not None:
                    problems.append(Problem(location, odd))
                    continue
                words = [w for k, v in (engine or {}).items() for w in _flag(str(k), v)]
                gpu = block.get("accelerator_type")
                found = PoolInput(
                    role=role,
                    role_source="field",
                    name=f"{name}-{role}",
                    args=words,
                    location=location,
                    env={},
                    model=str(model) if isinstance(model, str) and model.strip() else None,
                    deployment_key=DeploymentKey("Ray Serve application", name, single_object=True),
                    gpu=str(gpu) if isinstance(gpu, str) else None,
                )
                pool, found_problems = build_pool(found)
                problems += found_problems
                if pool is not None:
                    pools.append(pool)
    return Deployment(
        source=source.file, kind=KIND, pools=tuple(pools), problems=tuple(problems),
        launches=launches,
    )  # fmt: skip


class Reader:
    """Ray Serve LLM P/D configs as a :class:`~kvalign.deploy.interface.Reader`."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """A YAML document with ``prefill_config`` / ``decode_config``."""
        return source.is_yaml and matches(source.values)

    def read(self, source: Source) -> Deployment:
        """:func:`read`."""
        return read(source)
