"""Deployment readers: files → :class:`~kvalign.deploy.model.Deployment` objects.

One module per input kind (:mod:`.own`, :mod:`.cmdline`, :mod:`.k8s`); :func:`read_paths`
picks the reader by content. The only audit layer that reads user files.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kvalign.deploy import cmdline, k8s, lmcache, own
from kvalign.deploy.common import ignores_in
from kvalign.deploy.model import ComponentBlockSize, Deployment, Location, Pool, Problem
from kvalign.errors import InvalidConfig, KvalignError
from kvalign.safeio import load_yaml, load_yaml_documents, read_stream
from kvalign.safeio import read_text as read_file_text

__all__ = ["read_paths", "read_text"]

#: file suffixes read when scanning a directory.
SUFFIXES = frozenset({".yaml", ".yml", ".sh", ".bash", ".txt", ".cmd"})
HELM_HINT = (
    "Helm template ({{ }}) not rendered: run `helm template RELEASE CHART | kvalign audit -`"
)


def _config_loader(base: Path | None) -> Any:
    def load(path: str) -> Mapping[str, Any] | None:
        candidate = Path(path)
        if not candidate.is_absolute() and base is not None:
            candidate = base / candidate
        try:
            data = load_yaml(read_file_text(candidate), str(candidate))
        except KvalignError:
            return None
        return data if isinstance(data, Mapping) else None

    return load


def worker_block_sizes(pools: tuple[Pool, ...] | list[Pool]) -> list[ComponentBlockSize]:
    """``--kv-cache-block-size`` given to a worker (e.g. ``python -m dynamo.vllm``).

    vLLM has no such flag; Dynamo's vLLM worker hands engine flags to vLLM, where the
    engine's block size is ``--block-size``. The value is therefore checked like the
    Dynamo frontend's: as a router-side block size that must equal the engines' (KVA006),
    never as the engine's block size.
    """
    return [
        ComponentBlockSize(
            f"{pool.label} --kv-cache-block-size (router-side)",
            pool.args.kv_cache_block_size,
            pool.location,
        )
        for pool in pools
        if pool.args.kv_cache_block_size is not None
    ]


def read_text(text: str, file: str, base: Path | None = None) -> Deployment | None:
    """Read one file's text (``file`` is its display name, ``-`` for stdin).

    ``base`` is the file's folder: ``--config`` files and ``LMCACHE_CONFIG_FILE`` files
    are looked up there (:mod:`kvalign.deploy.lmcache`); ``None`` (stdin) looks up nothing.

    Returns:
        A :class:`Deployment`, or ``None`` when the text is no deployment kvalign knows
        (e.g. a vLLM ``--config`` YAML on its own, manifests without a vLLM pool).

    Raises:
        InvalidConfig: a YAML file that does not parse; a kvalign-schema field of the wrong type.
    """
    ignores, problems = ignores_in(text, file)
    deployment: Deployment | None = None
    is_yaml = file == "-" or file.endswith((".yaml", ".yml"))
    if "{{" in text and is_yaml and not cmdline.matches(text.split("{{")[0]):
        line = next((n for n, s in enumerate(text.splitlines(), 1) if "{{" in s), None)
        return Deployment(
            source=file, kind="helm-template", problems=(Problem(Location(file, line), HELM_HINT),)
        )
    docs: list[tuple[int, Any]] = []
    if is_yaml:
        try:
            docs = load_yaml_documents(text, file)
        except InvalidConfig:
            if file != "-":
                raise
    plain = [d for _, d in docs]
    if len(plain) == 1 and own.matches(plain[0]):
        deployment = own.read(plain[0], text, file)
    elif k8s.matches(plain):
        deployment = k8s.read(docs, text, file)
    elif cmdline.matches(text):
        deployment = cmdline.read(text, file, _config_loader(base))
    if deployment is None:
        return None
    if not deployment.pools and not any(p.blocking for p in deployment.problems):
        return None  # e.g. manifests without a vLLM container, a lone roleless command
    pools, lmcache_problems = lmcache.apply(deployment.pools, base)
    return Deployment(
        source=deployment.source,
        kind=deployment.kind,
        pools=tuple(pools),
        components=(*deployment.components, *worker_block_sizes(pools)),
        problems=(*problems, *deployment.problems, *lmcache_problems),
        ignores=tuple(ignores),
        vllm_version=deployment.vllm_version,
    )


def _read_file(path: Path) -> str:
    """A deployment file's text (size-capped, UTF-8; see :mod:`kvalign.safeio`)."""
    return read_file_text(path)


def read_paths(
    paths: list[str], stdin_text: str | None = None
) -> tuple[list[Deployment], list[str]]:
    """Read every PATH (files, directories scanned recursively, ``-`` = stdin).

    Returns:
        ``(deployments, skipped)``: files that are deployments, and scanned files that are not.

    Raises:
        InvalidConfig: a missing path, an unreadable or malformed file, or a file given by
            name that is no deployment kvalign knows.
    """
    deployments: list[Deployment] = []
    skipped: list[str] = []
    for raw in paths:
        if raw == "-":
            text = stdin_text if stdin_text is not None else read_stream(sys.stdin)
            found = read_text(text, "-")
            if found is None:
                raise InvalidConfig("-: stdin holds no deployment kvalign can read")
            deployments.append(found)
            continue
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if (
                    not child.is_file()
                    or child.suffix not in SUFFIXES
                    or any(part.startswith(".") for part in child.relative_to(path).parts)
                ):
                    continue
                found = read_text(_read_file(child), str(child), child.parent)
                if found is None:
                    skipped.append(str(child))
                else:
                    deployments.append(found)
            continue
        if not path.exists() and not path.is_symlink():  # a symlink loop is read (and refused)
            raise InvalidConfig(f"{raw}: no such file or directory")
        found = read_text(_read_file(path), raw, path.parent)
        if found is None:
            raise InvalidConfig(
                f"{raw}: no prefill/decode deployment found (expected kvalign YAML, a vllm "
                "serve command line, Kubernetes manifests or ModelService values)"
            )
        deployments.append(found)
    return deployments, skipped
