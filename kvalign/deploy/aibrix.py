"""AIBrix ``StormService`` (``orchestration.aibrix.ai``): one pool per role.

A StormService holds a prefill and a decode role under ``spec.template.spec.roles``, each
with its own pod template; the role's ``name`` is its P/D role and the object's name ties
the pools together (a single-object key, like a DisaggregatedSet). The pod templates are
read as Kubernetes pod templates are (:mod:`kvalign.deploy.k8s`, which also reads a
StormService found among other manifests).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kvalign.deploy import k8s
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, Location, Problem

KIND = "aibrix"
#: most roles one StormService may hold (counted before any is read). AIBrix's samples
#: hold two or three (prefill, decode, a router); 256 roles are 256 pools, and at most
#: 128 × 128 = 16,384 pairs in the object's one group, within the run's pair budget
#: (:data:`kvalign.grouping.MAX_PAIRS`). Past it the file is not evaluated (exit 3),
#: naming the object, the count and the budget.
MAX_ROLES = 256


def _roles(doc: Any) -> int:
    """How many roles a StormService document lists (``spec.template.spec.roles``), without
    reading any; 0 for any other document."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "StormService":
        return 0
    found: Any = doc
    for key in ("spec", "template", "spec", "roles"):
        found = found.get(key) if isinstance(found, Mapping) else None
    return len(found) if isinstance(found, list) else 0


def _over_budget(source: Source) -> Deployment | None:
    """A file with a StormService of more than :data:`MAX_ROLES` roles, as a deployment
    with one blocking problem at that document (``None``: every one is within it)."""
    for start, doc in source.documents:
        roles = _roles(doc)
        if roles > MAX_ROLES:
            meta = doc.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            what = f"StormService {name}" if isinstance(name, str) else "a StormService"
            problem = Problem(
                Location(source.file, start),
                f"{what}: {roles:,} roles, more than {MAX_ROLES:,} in one object (budget: "
                "roles per StormService)",
            )
            return Deployment(source=source.file, kind=KIND, problems=(problem,), launches=roles)
    return None


class Reader:
    """AIBrix StormService files as a :class:`~kvalign.deploy.interface.Reader`."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """A YAML document of kind ``StormService``."""
        return source.is_yaml and any(
            isinstance(d, Mapping) and d.get("kind") == "StormService" for d in source.values
        )

    def read(self, source: Source) -> Deployment:
        """Every document as :func:`kvalign.deploy.k8s.read` reads it (StormService roles
        included), as input kind ``aibrix``; a StormService of more than
        :data:`MAX_ROLES` roles makes the file not evaluated before any role is read."""
        refused = _over_budget(source)
        if refused is not None:
            return refused
        found = k8s.read(list(source.documents), source.text, source.file, source.references)
        return dataclasses.replace(found, kind=KIND)
