"""The deployment readers, in the order they are tried (the first that matches reads).

Order matters where two readers could take one file: an unrendered Helm template is
never parsed as YAML; a Justfile is taken by its name; kvalign's own schema,
production-stack values and Compose files are one document each and come before
Kubernetes manifests; llm-d-benchmark scenarios (shell files of ``LLMDBENCH_*``
variables, which launch nothing themselves) come before shell scripts and command lines,
which come last (a YAML file that merely mentions ``vllm serve`` in a container's
``args`` is a manifest).
"""

from __future__ import annotations

from kvalign.deploy import (
    aibrix,
    cmdline,
    compose,
    justfile,
    k8s,
    llmdbench,
    own,
    rayserve,
    stack,
    templated,
)
from kvalign.deploy.interface import Reader, Source

__all__ = ["READERS", "reader_for"]

#: every reader, in the order they are tried.
READERS: tuple[Reader, ...] = (
    templated.Reader(),
    justfile.Reader(),
    own.Reader(),
    stack.Reader(),
    compose.Reader(),
    rayserve.Reader(),
    aibrix.Reader(),
    k8s.Reader(),
    llmdbench.Reader(),
    cmdline.Reader(),
)


def reader_for(source: Source) -> Reader | None:
    """The first reader of :data:`READERS` that takes ``source`` (``None``: none does).

    Raises:
        InvalidConfig: YAML that does not parse (:attr:`Source.documents`).
    """
    return next((reader for reader in READERS if reader.matches(source)), None)
