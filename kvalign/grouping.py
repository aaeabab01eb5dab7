"""Which prefill and decode pools form one deployment (``kvalign audit --pair-by``).

Pure: pools in, groups out. Every prefill pool of a group is paired with every decode pool
of the same group.

* ``file``: one group per file (the behaviour before ``--pair-by`` existed).
* ``label`` (default): a pool with an explicit deployment key
  (:class:`~kvalign.deploy.model.DeploymentKey`) joins the other pools with the same key and
  namespace, across files and across every folder of the run (``deploy/prefill/`` and
  ``deploy/decode/``). Folders keep their pools apart only when both roles exist in each
  of them (``staging/`` and ``prod/`` side by side, each a whole deployment). The key is
  the Helm release when the manifests name one (``app.kubernetes.io/instance``,
  ``helm-release-name``), else the application (``app.kubernetes.io/part-of``), else the
  model (``llm-d.ai/model``): several releases of one model stay several deployments
  (:data:`kvalign.deploy.common.DEPLOYMENT_LABELS`); e.g. ``prefill.yaml`` +
  ``decode.yaml``, a Helm chart rendered with ``--output-dir``; a key that names a
  single object holding every pool (a Dynamo graph, a KServe service, a
  DisaggregatedSet) groups within that object only. A pool without a key falls back to
  its file.
* ``model``: every prefill pool with every decode pool of the same model id, across all
  inputs.

A standalone server (role ``server``) is a group of its own under every mode: it pairs
with nothing, and only its own rules run.

Budgets (docs/security.md): a run pairs at most :data:`MAX_PAIRS` prefill × decode pairs
(:func:`check_pair_budget`, counted from the groups before any pair is built), and an
unpaired pool's possible partners in other groups are listed at most
:data:`MAX_PARTNERS` per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from kvalign.deploy.model import Pool
from kvalign.errors import InvalidSettings

PairBy = Literal["label", "file", "model"]

#: most prefill × decode pairs one run analyses. Every pair is a row of the report and
#: runs the pair rules (about 80 µs each with its rules and row); 30,000 is three times
#: the 10,295 pairs of the 10,000-file audit benchmark (BENCHMARKS.md) and keeps a run
#: within seconds. Past it the run stops with one line (exit 2), naming the largest
#: group: a group of 1,000 prefill and 1,000 decode pools would be 1,000,000 rows.
MAX_PAIRS = 30_000
#: most pools of other groups listed as possible partners of one group's unpaired pools
#: (KVA013 names three and counts the rest: "and at least N more" at this bound).
MAX_PARTNERS = 100


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
    """The group ``pool`` belongs to under ``pair_by`` before folders are considered
    (see the module docstring and :func:`group_pools`)."""
    file = pool.location.file
    if pool.role == "server":
        return Grouping(f"server:{file}:{pool.name}", "server", f"standalone server in {file}")
    if pair_by == "model":
        return Grouping(f"model:{pool.model}", "model", f"model {pool.model}")
    key = pool.deployment_key
    if pair_by == "label" and key is not None:
        ident = f"{key.source}:{key.namespace}/{key.value}"
        if key.single_object:
            return Grouping(f"object:{file}:{ident}", "object", f"{key} in {file}")
        return Grouping(f"label:{ident}", "label", f"label {key}")
    suffix = " (no deployment key)" if pair_by == "label" else ""
    return Grouping(f"file:{file}", "file", f"file {file}{suffix}")


def _by_folder(
    grouping: Grouping, pools: Sequence[Pool], indices: list[int]
) -> list[tuple[Grouping, list[int]]]:
    """A label group split by folder when every folder holds both roles (else whole)."""
    folders: dict[str, list[int]] = {}
    for index in indices:
        folders.setdefault(folder_of(pools[index].location.file), []).append(index)
    if len(folders) < 2 or not all(
        {pools[i].role for i in members} >= {"prefill", "decode"} for members in folders.values()
    ):
        where = ", ".join("stdin" if f == "-" else f"{f}/" for f in folders)
        return [(Grouping(grouping.key, grouping.basis, f"{grouping.how} in {where}"), indices)]
    return [
        (
            Grouping(
                f"{grouping.key}@{folder}",
                grouping.basis,
                f"{grouping.how} in {'stdin' if folder == '-' else folder + '/'}",
            ),
            members,
        )
        for folder, members in folders.items()
    ]


def group_pools(pools: Sequence[Pool], pair_by: PairBy) -> list[tuple[Grouping, tuple[int, ...]]]:
    """Group pools (by index into ``pools``), groups in order of their first pool.

    Label groups span folders; they are split by folder only when every folder holds
    both a prefill and a decode pool (:func:`_by_folder`).

    Returns:
        ``(grouping, indices)`` pairs; every index appears in exactly one group.
    """
    order: dict[str, tuple[Grouping, list[int]]] = {}
    for index, pool in enumerate(pools):
        grouping = grouping_of(pool, pair_by)
        order.setdefault(grouping.key, (grouping, []))[1].append(index)
    out: list[tuple[Grouping, tuple[int, ...]]] = []
    for grouping, indices in order.values():
        parts = (
            _by_folder(grouping, pools, indices)
            if grouping.basis == "label"
            else [(grouping, indices)]
        )
        out += [(g, tuple(members)) for g, members in parts]
    return out


def check_pair_budget(groups: Sequence[tuple[Grouping, Sequence[Pool]]]) -> None:
    """Refuse a run whose groups make more than :data:`MAX_PAIRS` prefill × decode pairs,
    counted per group from its roles (no pair is built here).

    Raises:
        InvalidSettings: over the budget; the message names the group with the most
            pairs (its first pool's file, how it was formed, its prefill and decode
            counts), the run's total and the budget.
    """
    total = 0
    worst: tuple[int, Grouping, Pool, int, int] | None = None
    for grouping, pools in groups:
        prefill = sum(1 for pool in pools if pool.role == "prefill")
        decode = sum(1 for pool in pools if pool.role == "decode")
        pairs = prefill * decode
        total += pairs
        if pairs and (worst is None or pairs > worst[0]):
            worst = (pairs, grouping, pools[0], prefill, decode)
    if total <= MAX_PAIRS or worst is None:
        return
    pairs, grouping, first, prefill, decode = worst
    raise InvalidSettings(
        f"{first.location.file}: {grouping.how}: {prefill:,} prefill × {decode:,} decode "
        f"pools make {pairs:,} pairs ({total:,} in the run); a run pairs at most "
        f"{MAX_PAIRS:,} (budget: pairs per run): audit the deployments apart"
    )
