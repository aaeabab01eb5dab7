"""Which prefill and decode pools form one deployment (``kvalign audit --pair-by``).

Pure: pools in, groups out. Every prefill pool of a group is paired with every decode pool
of the same group.

* ``file``: one group per file (the behaviour before ``--pair-by`` existed).
* ``label`` (default): a pool with an explicit deployment key
  (:class:`~kvalign.deploy.model.DeploymentKey`) joins the other pools with the same key,
  namespace and folder, across files. The key is the Helm release when the manifests name
  one (``app.kubernetes.io/instance``, ``helm-release-name``), else the application
  (``app.kubernetes.io/part-of``), else the model (``llm-d.ai/model``): several releases
  of one model in one folder stay several deployments
  (:data:`kvalign.deploy.common.DEPLOYMENT_LABELS`); e.g. ``prefill.yaml`` +
  ``decode.yaml``, a Helm chart rendered with ``--output-dir``; a key that names a
  single object holding every pool (a Dynamo graph, a KServe service, a
  DisaggregatedSet) groups within that object only. A pool without a key falls back to
  its file.
* ``model``: every prefill pool with every decode pool of the same model id, across all
  inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from kvalign.deploy.model import Pool

PairBy = Literal["label", "file", "model"]


@dataclass(frozen=True)
class Grouping:
    """How one group of pools was formed.

    Attributes:
        key: a stable id, unique per group (e.g. ``file:deploy/pd.yaml``).
        basis: what grouped the pools: ``file``, ``label`` (a deployment key shared across
            files), ``object`` (one custom resource) or ``model``.
        how: one line for people, e.g. ``label app.kubernetes.io/part-of=qwen in deploy/``.
    """

    key: str
    basis: str
    how: str


def folder_of(file: str) -> str:
    """The folder that scopes label keys (``-`` for stdin)."""
    return "-" if file == "-" else str(PurePath(file).parent)


def grouping_of(pool: Pool, pair_by: PairBy) -> Grouping:
    """The group ``pool`` belongs to under ``pair_by`` (see the module docstring)."""
    file = pool.location.file
    if pair_by == "model":
        return Grouping(f"model:{pool.model}", "model", f"model {pool.model}")
    key = pool.deployment_key
    if pair_by == "label" and key is not None:
        ident = f"{key.source}:{key.namespace}/{key.value}"
        if key.single_object:
            return Grouping(f"object:{file}:{ident}", "object", f"{key} in {file}")
        folder = folder_of(file)
        where = "stdin" if folder == "-" else f"{folder}/"
        return Grouping(f"label:{folder}:{ident}", "label", f"label {key} in {where}")
    suffix = " (no deployment key)" if pair_by == "label" else ""
    return Grouping(f"file:{file}", "file", f"file {file}{suffix}")


def group_pools(pools: Sequence[Pool], pair_by: PairBy) -> list[tuple[Grouping, tuple[int, ...]]]:
    """Group pools (by index into ``pools``), groups in order of their first pool.

    Returns:
        ``(grouping, indices)`` pairs; every index appears in exactly one group.
    """
    order: dict[str, tuple[Grouping, list[int]]] = {}
    for index, pool in enumerate(pools):
        grouping = grouping_of(pool, pair_by)
        order.setdefault(grouping.key, (grouping, []))[1].append(index)
    return [(grouping, tuple(indices)) for grouping, indices in order.values()]
