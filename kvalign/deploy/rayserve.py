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

import json
from collections.abc import Iterator, Mapping
from typing import Any

from kvalign.deploy.common import PoolInput, build_pool, line_of
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, DeploymentKey, Location, Pool, Problem, Role

KIND = "ray-serve"
_BLOCKS: tuple[tuple[Role, str], ...] = (("prefill", "prefill_config"), ("decode", "decode_config"))


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
