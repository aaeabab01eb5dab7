"""Helpers shared by the deployment readers: variables, roles, ignores, lines, pools."""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kvalign.deploy.model import Deployment, DeploymentKey, Ignore, Location, Pool, Problem, Role
from kvalign.deploy.vllm_args import VllmArgs, parse_vllm_args, settings_from_args
from kvalign.errors import KvalignError
from kvalign.settings import MAX_BLOCK_SIZE, MAX_SPEC_TOKENS, MAX_TP

_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
# linear: the codes are matched greedily and the rest of the line split off in code
_IGNORE = re.compile(r"#\s*kvalign:\s*ignore=([A-Z0-9, ]+)(.*)$")
_REASON = re.compile(r"\s*reason=(.*)$")
#: word stems that name a role: ``prefill`` / ``prefiller`` / ``prefilling``, ``decode`` /
#: ``decoder`` / ``decoding`` (LMCache and vLLM examples use all of them).
_ROLE_WORDS: tuple[tuple[str, Role], ...] = (("prefill", "prefill"), ("decod", "decode"))
#: role-carrying labels, checked in this order.
ROLE_LABELS: tuple[str, ...] = (
    "llm-d.ai/role",
    "app.kubernetes.io/component",
    "nvidia.com/dynamo-sub-component-type",
    "role",
)


#: deployment-key labels for ``--pair-by label``, checked in this order (the first one a
#: pool carries is its key): the Helm release first (``app.kubernetes.io/instance``,
#: production-stack's ``helm-release-name``), so that several releases serving one model
#: are several deployments (not one pair per model), then the application, then the model.
#: ``llm-d.ai/inferenceServing`` is not one: llm-d sets it to ``"true"`` on every serving
#: pod, so it names no deployment.
DEPLOYMENT_LABELS: tuple[str, ...] = (
    "app.kubernetes.io/instance",
    "helm-release-name",
    "app.kubernetes.io/part-of",
    "llm-d.ai/model",
)


def key_from_labels(labels: Mapping[str, Any], namespace: str = "") -> DeploymentKey | None:
    """The first :data:`DEPLOYMENT_LABELS` label with a non-empty value, as a key."""
    for name in DEPLOYMENT_LABELS:
        value = labels.get(name)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return DeploymentKey(name, str(value).strip(), namespace)
    return None


#: characters a ``$(VAR)`` substitution may produce: ``V2=$(V1)$(V1)``, ``V3=$(V2)$(V2)`` …
#: doubles without bound (memory); a longer result keeps the text as written.
MAX_SUBSTITUTED = 256 * 1024


class _TooLong(Exception):
    pass


def substitute_k8s(text: str, env: Mapping[str, str]) -> str:
    """Replace Kubernetes ``$(VAR)`` references whose value is known; others stay as is.

    A result longer than :data:`MAX_SUBSTITUTED` characters leaves ``text`` as written
    (its references then read as unresolved)."""
    size = len(text)

    def value(match: re.Match[str]) -> str:
        nonlocal size
        known = env.get(match.group(1))
        if known is None:
            return match.group(0)
        size += len(known) - len(match.group(0))
        if size > MAX_SUBSTITUTED:
            raise _TooLong
        return known

    try:
        return _K8S_VAR.sub(value, text)
    except _TooLong:
        return text


def role_from_text(text: str) -> Role | None:
    """``prefill`` / ``decode`` when exactly one of the two (or ``prefiller``,
    ``decoding``, …) occurs in ``text``."""
    lowered = text.lower()
    found = [role for word, role in _ROLE_WORDS if word in lowered]
    return found[0] if len(found) == 1 else None


def role_from_args(args: VllmArgs) -> Role | None:
    """Role from ``kv_role`` (``kv_producer`` = prefill, ``kv_consumer`` = decode) or
    Dynamo's ``--disaggregation-mode`` / ``--is-prefill-worker`` / ``--is-decode-worker``."""
    if args.kv_role == "kv_producer":
        return "prefill"
    if args.kv_role == "kv_consumer":
        return "decode"
    if args.disaggregation_mode in ("prefill", "decode"):
        return "prefill" if args.disaggregation_mode == "prefill" else "decode"
    return None


def role_from_labels(labels: Mapping[str, Any]) -> Role | None:
    """Role from the first role-carrying label (:data:`ROLE_LABELS`)."""
    for key in ROLE_LABELS:
        value = labels.get(key)
        if isinstance(value, str):
            role = role_from_text(value)
            if role is not None:
                return role
    return None


def ignores_in(text: str, file: str) -> tuple[list[Ignore], list[Problem]]:
    """In-file ``# kvalign: ignore=KVA002[,KVA003] reason=…`` comments.

    A comment without ``reason=`` is not honoured and reported as a non-blocking problem.
    """
    ignores: list[Ignore] = []
    problems: list[Problem] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _IGNORE.search(line.strip())
        if match is None:
            continue
        codes, rest = match.group(1), match.group(2)
        reason_match = _REASON.match(rest)
        if rest and (reason_match is None or not (codes.endswith(" ") or rest[:1].isspace())):
            continue  # not `CODES reason=…`: not an ignore comment
        where = Location(file, number)
        reason = (reason_match.group(1) if reason_match else "").strip()
        if not reason:
            problems.append(
                Problem(where, "ignore comment without reason= is not honoured", blocking=False)
            )
            continue
        for rule in codes.replace(" ", "").split(","):
            if rule:
                ignores.append(Ignore(rule, reason, where))
    return ignores, problems


#: what :meth:`str.splitlines` splits on
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


@lru_cache(maxsize=8)
def _line_starts(text: str) -> tuple[int, ...]:
    """Offset of each line of ``text`` (lines as :meth:`str.splitlines` makes them)."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return tuple(starts[:-1]) if len(starts) > 1 else ()


def line_of(text: str, needle: str, start: int = 1) -> int | None:
    """1-based number of the first line at or after ``start`` containing ``needle``.

    The lines are split once per text (readers call this once per pool or container: a
    20 000-container manifest was quadratic)."""
    if any(c in _LINE_BREAKS for c in needle):
        for number, line in enumerate(text.splitlines()[start - 1 :], start=start):
            if needle in line:
                return number
        return None
    starts = _line_starts(text)
    index = max(start, 1) - 1
    if index >= len(starts):
        return None
    found = text.find(needle, starts[index])
    return None if found < 0 else bisect_right(starts, found)


@dataclass(frozen=True)
class PoolInput:
    """What a reader found for one pool, before parsing and validation."""

    role: Role | None
    role_source: str
    name: str
    args: Sequence[str] | str
    location: Location
    env: Mapping[str, str]
    model: str | None = None
    tp: int | None = None
    dp: int | None = None
    vllm_version: str | None = None
    name_hint: str = ""
    deployment_key: DeploymentKey | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    gpu: str | None = None


#: the prefix of a Hugging Face cache repo folder (huggingface_hub's cache layout,
#: ``repo_folder_name``: ``models--ORG--NAME``, ``/`` in the repo id written ``--``)
_CACHE_PREFIX = "models--"


def snapshot_hub_id(model: str) -> str | None:
    """The Hub id (``ORG/NAME``) of a model path that is a Hugging Face cache snapshot
    (``/root/.cache/huggingface/hub/models--ORG--NAME/snapshots/REV``), else ``None``.

    vLLM loads such a folder as a local path; its config is that of the Hub model at that
    revision, so kvalign reads it as the Hub id (bundled, or from the local cache).
    Plain string splitting, linear in the path's length (a regular expression with two
    adjacent ``[^/]+`` groups split by ``--`` backtracks cubically on a run of dashes).
    """
    parts = model.removesuffix("/").split("/")
    if len(parts) < 3 or parts[-2] != "snapshots" or not parts[-1]:
        return None
    folder = parts[-3]
    if not folder.startswith(_CACHE_PREFIX):
        return None
    rest = folder[len(_CACHE_PREFIX) :]
    cut = rest.find("--", 1)
    if cut < 0 or not rest[cut + 2 :]:
        return None
    return f"{rest[:cut]}/{rest[cut + 2 :]}"


def build_pool(
    found: PoolInput,
    config_files: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Pool | None, list[Problem]]:
    """Parse ``found.args`` and make a :class:`Pool`, or report why not.

    Explicit ``model``/``tp``/``dp`` (from manifest fields) win over the arguments. The role
    falls back from ``found.role`` → the arguments' ``kv_role`` / disaggregation mode → the
    name; a pool with no role and no ``--kv-transfer-config`` (or ``kv_role`` ``kv_both``)
    is a standalone ``server``; any other pool with no role is skipped (non-blocking
    problem). Unresolved variables and a missing model are blocking problems.
    """
    try:
        args = parse_vllm_args(found.args, config_files=config_files, env=found.env)
    except KvalignError as exc:
        guess = found.role or role_from_text(found.name_hint or found.name)
        label = f"{guess}/{found.name}" if guess else found.name
        return None, [Problem(found.location, f"{label}: {exc}")]
    role, source = found.role, found.role_source
    if role is None:
        role, source = role_from_args(args), "args"
    if role is None:
        role, source = role_from_text(found.name_hint or found.name), "name"
    if (
        role is None
        and not args.unresolved
        and (not args.kv_transfer_config or args.kv_role == "kv_both")
    ):
        # known positively to be no P/D pool: an aggregated server (its own rules still run;
        # kvalign.audit refuses a kv_both one when another launch of its model could pair)
        role, source = "server", "standalone"
    if role is None and args.unresolved:  # e.g. "kv_role":"$(KV_ROLE)": it may name the role
        refs = ", ".join(args.unresolved)
        return None, [Problem(found.location, f"{found.name}: unresolved variable(s) {refs}")]
    if role is None:
        return None, [
            Problem(
                found.location,
                f"{found.name}: role unknown (no kv_role kv_producer/kv_consumer, "
                "--disaggregation-mode or prefill/decode in the names, comments or "
                "conditions next to it): not a prefill or decode pool; set kv_role in "
                "--kv-transfer-config or name the pool prefill/decode",
                blocking=False,
            )
        ]
    if args.unresolved:
        refs = ", ".join(args.unresolved)
        return None, [
            Problem(found.location, f"{role}/{found.name}: unresolved variable(s) {refs}")
        ]
    notes = [
        Problem(
            found.location,
            f"{role}/{found.name}: unresolved {ref} cannot change sizing or role: evaluated",
            blocking=False,
        )
        for ref in args.unresolved_noted
    ]
    model = found.model or args.model
    if not model:
        return None, [Problem(found.location, f"{role}/{found.name}: no model given")]
    hub_id = snapshot_hub_id(model)
    if hub_id is not None:
        notes.append(
            Problem(
                found.location,
                f"{role}/{found.name}: model {model} is a Hugging Face cache snapshot: read as "
                f"{hub_id}",
                blocking=False,
            )
        )
        model = hub_id
    # (what, value, smallest, largest): the bounds `check` applies to the same settings
    sizes = (
        ("tensor parallel size (manifest field)", found.tp, 1, MAX_TP),
        ("data parallel size (manifest field)", found.dp, 1, None),
        ("--tensor-parallel-size", args.tensor_parallel_size, 1, MAX_TP),
        ("--data-parallel-size", args.data_parallel_size, 1, None),
        ("--pipeline-parallel-size", args.pipeline_parallel_size, 1, None),
        ("--block-size", args.block_size, 1, MAX_BLOCK_SIZE),
        ("--speculative-config num_speculative_tokens", args.num_speculative_tokens, 0,
         MAX_SPEC_TOKENS),
    )  # fmt: skip
    for what, value, low, high in sizes:
        if value is None:
            continue
        if isinstance(value, bool) or value < low or (high is not None and value > high):
            expected = ("a positive integer" if low == 1 else "a non-negative integer") + (
                f" up to {high}" if high is not None else ""
            )
            return None, [
                Problem(
                    found.location,
                    f"{role}/{found.name}: {what}: expected {expected}, got {value!r}",
                )
            ]
    tp = found.tp or args.tensor_parallel_size or 1
    dp = found.dp or args.data_parallel_size or 1
    settings = settings_from_args(args, gpu=found.gpu, vllm_version=found.vllm_version)
    pool = Pool(
        role=role,
        name=found.name,
        model=model,
        tp=tp,
        dp=dp,
        settings=settings,
        location=found.location,
        args=args,
        env=tuple(sorted(found.env.items())),
        role_source=source,
        deployment_key=found.deployment_key,
        nodes=found.nodes,
        gpus_per_node=found.gpus_per_node,
    )
    return pool, notes


_IMAGE_VERSION = re.compile(r":v?(\d+\.\d+\.\d+)(?:[-+.][A-Za-z0-9.\-+]*)?$")


def is_vllm_image(image: str) -> bool:
    """Whether a container image is vLLM's own (``vllm/vllm-openai``, ``…/vllm:tag``)."""
    name = image.strip().split("@", 1)[0]
    path = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    last = path.rsplit("/", 1)[-1].lower()
    return last in ("vllm-openai", "vllm", "vllm-tpu", "vllm-cpu", "vllm-rocm") or (
        "vllm/vllm" in path.lower()
    )


def version_from_image(image: str) -> str | None:
    """The vLLM release in a vLLM image tag (``vllm/vllm-openai:v0.14.0`` → ``0.14.0``);
    ``None`` for other images (an llm-d or Dynamo image's tag is not vLLM's version),
    ``latest``, ``nightly`` or a digest."""
    if not is_vllm_image(image):
        return None
    match = _IMAGE_VERSION.search(image.strip())
    return match.group(1) if match else None


def off_path(problems: list[Problem]) -> list[Problem]:
    """``problems`` of a command with several if/case alternatives, one of which was
    evaluated: a blocking problem of another alternative (an unresolved ``$2`` on the path
    where the script's default is not taken) becomes a note, since that path was not the
    one evaluated."""
    return [
        dataclasses.replace(
            p, message=f"{p.message} (on another if/case path; not evaluated)", blocking=False
        )
        if p.blocking
        else p
        for p in problems
    ]


def collect_pool(found: PoolInput, pools: list[Pool], problems: list[Problem]) -> None:
    """:func:`build_pool` for a reader's loop: the pool (if any) goes to ``pools``, its
    problems to ``problems``."""
    pool, found_problems = build_pool(found)
    problems += found_problems
    if pool is not None:
        pools.append(pool)


def image_deployment(
    file: str,
    kind: str,
    pools: list[Pool],
    problems: list[Problem],
    versions: dict[str, str],
    launches: int,
) -> Deployment:
    """A reader's :class:`Deployment` whose release comes from the first vLLM image tag
    in ``versions`` (release → image)."""
    version = next(iter(versions), None)
    return Deployment(
        source=file,
        kind=kind,
        pools=tuple(pools),
        problems=tuple(problems),
        vllm_version=version,
        version_source=f"image {versions[version]}" if version is not None else None,
        launches=launches,
    )
