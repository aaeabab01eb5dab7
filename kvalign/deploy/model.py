"""What deployment readers produce: frozen pools, component block sizes, problems, ignores.

No raw dicts cross this boundary: every reader turns its file into a :class:`Deployment`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvalign.deploy.vllm_args import VllmArgs
from kvalign.settings import Settings

#: ``server`` is a standalone (aggregated) server: no ``--kv-transfer-config``, or ``kv_both``
#: with no prefill/decode role named; it pairs with nothing and only its own rules run.
Role = Literal["prefill", "decode", "server"]


@dataclass(frozen=True)
class Location:
    """A place in a user file: path (``-`` for stdin) and 1-based line (``None`` unknown)."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True)
class DeploymentKey:
    """What ties a pool to the other pools of its deployment (``--pair-by label``).

    Attributes:
        source: where the key comes from: a label name (``llm-d.ai/model``,
            ``app.kubernetes.io/part-of``, ``app.kubernetes.io/instance``), ``kvalign name``
            (the kvalign YAML's top-level ``name``) or an object kind
            (``DynamoGraphDeployment``, ``LLMInferenceService``, ``DisaggregatedSet``).
        value: the label value or name.
        namespace: ``metadata.namespace`` (``""`` when the manifest does not set one).
        single_object: ``True`` when one object holds every pool of the deployment (the
            custom resources above): such a key groups pools within that object only, never
            across files (two files with the same object name are two versions of it).
    """

    source: str
    value: str
    namespace: str = ""
    single_object: bool = False

    def __str__(self) -> str:
        joiner = " " if self.single_object else "="
        where = f" (namespace {self.namespace})" if self.namespace else ""
        return f"{self.source}{joiner}{self.value}{where}"


@dataclass(frozen=True)
class Pool:
    """One prefill or decode pool, or a standalone server, as deployed.

    Attributes:
        role: ``prefill``, ``decode`` or ``server`` (standalone: pairs with nothing).
        name: the pool's name in the file (workload, component, block name).
        model: model id or path as vLLM is given it.
        tp, dp: tensor / data parallel sizes.
        settings: the block-size-relevant settings (:class:`kvalign.settings.Settings`).
        location: where the pool is declared.
        args: the parsed ``vllm serve`` arguments.
        env: container / process environment as ``(name, value)`` pairs (sorted).
        role_source: how the role was found (``field``, ``label``, ``args``, ``name``;
            ``standalone`` for a server).
        deployment_key: the explicit deployment key, if the file gives one.
        nodes: pods per replica (LeaderWorkerSet ``spec.leaderWorkerTemplate.size``).
        gpus_per_node: GPUs the vLLM container requests (``resources`` ``*/gpu``).
    """

    role: Role
    name: str
    model: str
    tp: int
    dp: int
    settings: Settings
    location: Location
    args: VllmArgs
    env: tuple[tuple[str, str], ...] = ()
    role_source: str = "field"
    deployment_key: DeploymentKey | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None

    def env_value(self, name: str) -> str | None:
        """The value of environment variable ``name`` in this pool (``None`` if unset)."""
        return dict(self.env).get(name)

    @property
    def label(self) -> str:
        """``role/name`` for messages."""
        return f"{self.role}/{self.name}"


@dataclass(frozen=True)
class ComponentBlockSize:
    """A block size (tokens) another component is configured with (router, indexer, frontend).

    Attributes:
        component: what it is, e.g. ``router tokenProcessorConfig.blockSize``.
        value: tokens.
        location: where it is set.
    """

    component: str
    value: int
    location: Location


@dataclass(frozen=True)
class Problem:
    """Something that stops (``blocking``) or limits evaluation of a file.

    ``verbose_only`` notes (e.g. a container not read as a vLLM pool) are shown with
    ``--verbose`` only.
    """

    location: Location
    message: str
    blocking: bool = True
    verbose_only: bool = False


@dataclass(frozen=True)
class Ignore:
    """``# kvalign: ignore=KVA002 reason=…`` or a ``.kvalign.yaml`` ``ignore:`` entry."""

    rule: str
    reason: str
    location: Location
    path_glob: str | None = None


@dataclass(frozen=True)
class Deployment:
    """Everything one file says about a P/D deployment.

    Attributes:
        source: the file path (``-`` for stdin).
        kind: the input kind (``kvalign``, ``command-line``, ``kubernetes``, ...).
        pools: prefill and decode pools, in file order.
        components: block sizes configured in other components.
        problems: what could not be read or resolved.
        ignores: in-file ignore comments.
        vllm_version: the file's ``vllm_version`` (kvalign schema) or the release in a
            vLLM image tag (``vllm/vllm-openai:v0.14.0``), if any.
        version_source: where ``vllm_version`` was read when the file does not state it
            (``image vllm/vllm-openai:v0.14.0``), for the note saying so.
        launches: how many vLLM launches (commands, containers) the reader found, pool
            or not: a file that launches vLLM but yields no pool is never skipped.
    """

    source: str
    kind: str
    pools: tuple[Pool, ...] = ()
    components: tuple[ComponentBlockSize, ...] = ()
    problems: tuple[Problem, ...] = ()
    ignores: tuple[Ignore, ...] = ()
    vllm_version: str | None = None
    version_source: str | None = None
    launches: int = 0
