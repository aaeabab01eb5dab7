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

from kvalign.deploy import k8s
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment

KIND = "aibrix"


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
        included), as input kind ``aibrix``."""
        found = k8s.read(list(source.documents), source.text, source.file, source.references)
        return dataclasses.replace(found, kind=KIND)
