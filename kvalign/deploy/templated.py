"""YAML that is still a Helm template (``{{ }}`` not rendered): never read as manifests.

The file is one blocking problem naming the command that renders it.
"""

from __future__ import annotations

from kvalign.deploy import cmdline
from kvalign.deploy.interface import Source
from kvalign.deploy.model import Deployment, Location, Problem

KIND = "helm-template"
HELM_HINT = (
    "Helm template ({{ }}) not rendered: run `helm template RELEASE CHART | kvalign audit -`"
)


class Reader:
    """An unrendered Helm template as a :class:`~kvalign.deploy.interface.Reader`."""

    kind = KIND

    def matches(self, source: Source) -> bool:
        """YAML (or stdin) holding ``{{``, unless the text before it launches vLLM as a
        plain command line."""
        return (
            "{{" in source.text
            and source.is_yaml
            and not cmdline.matches(source.text.split("{{")[0])
        )

    def read(self, source: Source) -> Deployment:
        """One blocking problem at the first line holding ``{{``."""
        line = next((n for n, s in enumerate(source.text.splitlines(), 1) if "{{" in s), None)
        return Deployment(
            source=source.file,
            kind=KIND,
            problems=(Problem(Location(source.file, line), HELM_HINT),),
        )
