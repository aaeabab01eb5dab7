"""``kvalign audit``: deployments → models → rank and pair analysis → rules → one report.

Loads each pool's model through :func:`kvalign.sources.load_model`, predicts its rank with
:func:`kvalign.alignment.analyze_rank` under the pool's own settings, groups the pools into
deployments (:mod:`kvalign.grouping`, ``--pair-by``), pairs every prefill pool with every
decode pool of the same group (:func:`kvalign.pd.analyze_pair`), runs the rules and applies
ignores and the baseline. Nothing here prints or exits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fnmatch import fnmatch

from kvalign.backends import get_gpu, platform_note
from kvalign.deploy.model import Deployment, Ignore, Location, Pool, Problem
from kvalign.deploy.vllm_args import settings_from_args
from kvalign.errors import InvalidSettings, KvalignError
from kvalign.exitcodes import ExitCode
from kvalign.fixes import FixPool, GroupFix, RunCache
from kvalign.geometry import ModelGeometry
from kvalign.grouping import MAX_PARTNERS, PairBy, check_pair_budget, group_pools
from kvalign.pd import analyze_pair
from kvalign.policy import DEFAULT_FAIL_ON, fails
from kvalign.policy import exit_code as policy_exit_code
from kvalign.rules import RULES, run_rules
from kvalign.rules.base import (
    FileResult,
    Finding,
    GroupResult,
    PairOutcome,
    PoolResult,
    pair_labels,
    settings_differ,
)
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.sources.overrides import parse_hf_overrides
from kvalign.versions import resolve

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_UNEVALUATED = (
    ExitCode.OK, ExitCode.FLAGGED, ExitCode.USAGE, ExitCode.UNEVALUATED,
)  # fmt: skip


@dataclass(frozen=True)
class Suppressed:
    """A finding not counted, and why (``ignore: reason`` or ``baseline``)."""

    finding: Finding
    why: str


@dataclass(frozen=True)
class AuditReport:
    """The result of one audit run; every formatter reads this.

    Attributes:
        notes: remarks that are no finding (e.g. an attention-only model: nothing to
            align).
        fail_on: the ``--fail-on`` level the exit code and the JUnit failures use.
        groups: the deployments ``pair_by`` formed from the evaluated pools.
        findings: active findings, ordered by group, rule, position.
        suppressed: ignored or baselined findings.
        unevaluated: blocking problems (files that could not be evaluated).
        problems: non-blocking problems (e.g. an ignore without a reason, unpaired pools).
        skipped: scanned files that are no deployment.
        files: the evaluated files with their pools' results, input order.
        pair_by: the ``--pair-by`` mode used.
        assumptions: the GPU / attention-backend assumptions behind the numbers
            (:func:`assumptions`).
        unread: scanned paths no reader took although they may hold a launch (a file
            that mentions vLLM or a KV connector, a FIFO, a symlink loop, an unreadable
            file), each with its reason.
        unread_accepted: ``--skip-unrelated``: ``unread`` is listed but does not make
            the exit code 3.
    """

    groups: tuple[GroupResult, ...]
    findings: tuple[Finding, ...]
    suppressed: tuple[Suppressed, ...]
    unevaluated: tuple[Problem, ...]
    problems: tuple[Problem, ...]
    skipped: tuple[str, ...] = ()
    files: tuple[FileResult, ...] = ()
    pair_by: str = "label"
    assumptions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    fail_on: str = DEFAULT_FAIL_ON
    unread: tuple[Problem, ...] = ()
    unread_accepted: bool = False

    @property
    def not_read(self) -> tuple[Problem, ...]:
        """The paths not read that make the exit code 3 (none with ``--skip-unrelated``)."""
        return () if self.unread_accepted else self.unread

    def failing(self, fail_on: str | None = None) -> tuple[Finding, ...]:
        """Active findings at or above ``fail_on`` (default: the run's ``--fail-on``)."""
        floor = fail_on or self.fail_on
        return tuple(f for f in self.findings if fails(f.severity, floor))

    def exit_code(self, fail_on: str | None = None) -> int:
        """3 when a file could not be evaluated (or a scanned path was not read, unless
        ``--skip-unrelated``), else the gate
        (:func:`kvalign.policy.exit_code`): 1 when a finding is at or above ``fail_on``
        (``error``/``warning``/``info``; default: the run's ``--fail-on``), else 0."""
        if self.unevaluated or self.not_read:
            return EXIT_UNEVALUATED
        return policy_exit_code((f.severity for f in self.findings), fail_on or self.fail_on)


def _pool_settings(pool: Pool, version: str | None, platform: Platform) -> Settings:
    """The pool's settings with the run's assumptions filled in: the version, and the
    ``--gpu`` / ``--attention-backend`` defaults where the pool names none
    (:func:`kvalign.deploy.vllm_args.settings_from_args`)."""
    return settings_from_args(
        pool.args,
        gpu=pool.settings.gpu or platform.gpu,
        vllm_version=version,
        attention_backend=platform.attention_backend,
    )


def _evaluate(
    deployment: Deployment,
    version: str | None,
    cache: dict[str, ModelGeometry],
    use_cache: bool = False,
    platform: Platform | None = None,
    engines: RunCache | None = None,
) -> tuple[FileResult | None, list[Problem]]:
    """Load every pool's model and predict its rank under the file's version assumption.

    A pool's version is ``version`` (``--vllm-version``), else the pool's own (a vLLM
    image tag), else the file's ``vllm_version``.

    Returns:
        ``(result, problems)``: the pools that could be evaluated (``None`` when the
        file's version is rejected), and one blocking problem per pool that could not (its
        model cannot be loaded, a setting or version is rejected), with its location and
        label. One unevaluable pool never hides the others.
    """
    platform = platform or Platform()
    engines = engines if engines is not None else RunCache()
    chosen = version or deployment.vllm_version
    try:
        resolved = resolve(chosen)
    except KvalignError as exc:
        if version is None and deployment.version_source is not None:
            why = str(exc).removeprefix("--vllm-version ")
            message = f"release profile from the {deployment.version_source}: {why}"
            return None, [Problem(Location(deployment.source), message)]
        return None, [Problem(Location(deployment.source), f"vllm_version: {exc}")]
    results: list[PoolResult] = []
    errors: list[Problem] = []
    for pool in deployment.pools:
        key = f"{pool.model}@{pool.args.revision or ''}#{pool.args.hf_overrides or ''}"
        try:
            if key not in cache:
                cache[key] = load_model(
                    pool.model,
                    revision=pool.args.revision,
                    hf_overrides=parse_hf_overrides(pool.args.hf_overrides),
                    use_cache=use_cache,
                )
            own = version or pool.settings.vllm_version or chosen
            if own != chosen:
                try:
                    resolve(own)
                except KvalignError as exc:
                    why = str(exc).removeprefix("--vllm-version ")
                    raise InvalidSettings(f"release profile of its vLLM image: {why}") from None
            settings = _pool_settings(pool, own, platform)
            pool = dataclasses.replace(pool, settings=settings)
            engine = engines.resolve(cache[key], settings)
            results.append(
                PoolResult(pool, cache[key], engines.rank(cache[key], engine, pool.tp), engine)
            )
        except KvalignError as exc:
            errors.append(Problem(pool.location, f"{pool.label}: {exc}"))
    return FileResult(deployment, tuple(results), resolved.note), errors


@dataclass(frozen=True)
class Platform:
    """``audit --gpu`` / ``--attention-backend``: used for pools that name neither
    (``--attention-backend`` / ``VLLM_ATTENTION_BACKEND``, ``nvidia.com/gpu.product``).
    ``None`` = the backend vLLM picks for the pool's GPU and release (FLASH_ATTN on an
    unspecified CUDA GPU)."""

    gpu: str | None = None
    attention_backend: str | None = None


def assumptions(files: tuple[FileResult, ...] | list[FileResult]) -> tuple[str, ...]:
    """The GPU / attention-backend assumption behind the evaluated pools, one line per
    distinct assumption with the number of pools it covers (like ``check``'s platform
    note), then the GDN prefill-checkpoint note for gated-delta-net models."""
    counts: dict[str, int] = {}
    for file in files:
        for result in file.pools:
            settings = result.pool.settings
            chosen = result.engine.backend.name if result.engine.backend else None
            lines = [platform_note(settings.attention_backend, settings.gpu, chosen)]
            state = result.geometry.state
            engine = result.engine
            gdn = state is not None and state.family == "gdn"
            if gdn and engine.profile.gdn_checkpoint_alignment:
                lines.append(engine.checkpoint_note)
            for line in lines:
                counts[line] = counts.get(line, 0) + 1
    return tuple(f"{line} [{n} pool(s)]" for line, n in counts.items())


def _version_notes(deployment: Deployment, version: str | None) -> list[str]:
    """Say where a release profile not stated in the file came from (a vLLM image tag),
    or that ``--vllm-version`` overrides it (C1), for the report's assumptions."""
    if deployment.version_source is None or deployment.vllm_version is None:
        return []
    if version is None:
        message = (
            f"release profile vLLM {deployment.vllm_version} taken from the "
            f"{deployment.version_source} (--vllm-version overrides it)"
        )
    elif version.strip().lstrip("v") != deployment.vllm_version:
        message = f"--vllm-version {version} used instead of the {deployment.version_source}"
    else:
        return []
    return [f"{deployment.source}: {message}"]


def _groups(
    files: list[FileResult],
    pair_by: PairBy,
    version: str | None,
    partial: set[str] | frozenset[str] = frozenset(),
    engines: RunCache | None = None,
) -> tuple[list[GroupResult], list[Problem]]:
    """Group the evaluated pools (:func:`kvalign.grouping.group_pools`) and pair them.

    A group's version-dependent rules use ``--vllm-version``, else the first
    ``vllm_version`` its files name (a non-blocking problem when they name several).
    Unpaired pools are KVA013 findings (:mod:`kvalign.rules.kva013`), with the pools of
    other groups that could be their partner. Each group carries its fix
    (:class:`kvalign.fixes.GroupFix`), proven once when a rule first reads it.
    """
    engines = engines if engines is not None else RunCache()
    flat = [(f.deployment, r) for f in files for r in f.pools]
    groups: list[GroupResult] = []
    problems: list[Problem] = []
    formed = group_pools([r.pool for _, r in flat], pair_by)
    check_pair_budget([(g, [flat[i][1].pool for i in indices]) for g, indices in formed])
    for grouping, indices in formed:
        members = [flat[i] for i in indices]
        deployments: list[Deployment] = []
        seen: set[int] = set()
        for deployment, _ in members:
            if id(deployment) not in seen:
                seen.add(id(deployment))
                deployments.append(deployment)
        named = list(dict.fromkeys(d.vllm_version for d in deployments if d.vllm_version))
        chosen = version or (named[0] if named else None)
        if version is None and len(named) > 1:
            problems.append(
                Problem(
                    members[0][1].pool.location,
                    f"{grouping.how}: files name different vllm_version "
                    f"({', '.join(named)}); pairs use {chosen}",
                    blocking=False,
                )
            )
        resolved = resolve(chosen)
        results = tuple(r for _, r in members)
        pairs = tuple(
            PairOutcome(p, d, analyze_pair(p.rank, d.rank, "vllm", resolved.profile))
            for p in results
            if p.pool.role == "prefill"
            for d in results
            if d.pool.role == "decode"
        )
        components = tuple(c for d in deployments for c in d.components)
        index = {id(r): i for i, r in enumerate(results)}
        fix = GroupFix(
            [FixPool(r.geometry, r.engine, r.pool.tp, r.pool.label) for r in results],
            [(index[id(o.prefill)], index[id(o.decode)]) for o in pairs],
            resolved.profile,
            engines,
            settings_differ=any(settings_differ(o) for o in pairs),
        )
        group = GroupResult(
            tuple(deployments), results, pairs, resolved.profile, resolved.note,
            grouping, components, fix,
            hidden=tuple(sorted(partial & {d.source for d in deployments})),
        )  # fmt: skip
        groups.append(group)
    return _with_partners(groups), problems


def _partner_keys(pool: Pool) -> list[str]:
    """What may tie an unpaired pool to a partner in another group: its model id and its
    deployment-key value (``llm-d.ai/model``, an application or release name)."""
    keys = [f"model:{pool.model}"]
    if pool.deployment_key is not None:
        keys.append(f"key:{pool.deployment_key.value}")
    return keys


def _with_partners(groups: list[GroupResult]) -> list[GroupResult]:
    """Each group with the pools of other groups that could partner its unpaired pools
    (the other role, the same model or deployment-key value), for KVA013: in the order
    its unpaired pools and their keys find them, at most
    :data:`kvalign.grouping.MAX_PARTNERS` per group (KVA013 names three), so a run of
    many unpaired pools of one model stays linear in its pools."""
    index: dict[tuple[str, str], list[tuple[int, PoolResult]]] = {}
    for number, group in enumerate(groups):
        for result in group.unpaired:
            for key in _partner_keys(result.pool):
                index.setdefault((result.pool.role, key), []).append((number, result))
    out: list[GroupResult] = []
    for number, group in enumerate(groups):
        found: list[PoolResult] = []
        seen: set[int] = set()
        looked: set[tuple[str, str]] = set()  # a key looked up again finds nothing new
        for result in group.unpaired:
            other = "decode" if result.pool.role == "prefill" else "prefill"
            for key in _partner_keys(result.pool):
                if (other, key) in looked or len(found) >= MAX_PARTNERS:
                    continue
                looked.add((other, key))
                for where, candidate in index.get((other, key), []):
                    if where != number and id(candidate) not in seen:
                        seen.add(id(candidate))
                        found.append(candidate)
                        if len(found) >= MAX_PARTNERS:
                            break
        out.append(dataclasses.replace(group, partners=tuple(found)) if found else group)
    return out


def _ignored(finding: Finding, ignores: list[Ignore]) -> Ignore | None:
    for ignore in ignores:
        if ignore.rule != finding.rule:
            continue
        if ignore.path_glob is None:  # in-file comments are passed for their file only
            return ignore
        if ignore.path_glob is not None and fnmatch(finding.location.file, ignore.path_glob):
            return ignore
    return None


def run_audit(
    deployments: list[Deployment],
    *,
    vllm_version: str | None = None,
    ignores: tuple[Ignore, ...] = (),
    baseline: frozenset[str] = frozenset(),
    skipped: tuple[str, ...] = (),
    use_cache: bool = False,
    pair_by: PairBy = "label",
    platform: Platform | None = None,
    fail_on: str = DEFAULT_FAIL_ON,
    select: frozenset[str] | None = None,
    ignore_rules: frozenset[str] = frozenset(),
    unread: tuple[Problem, ...] = (),
    unread_accepted: bool = False,
) -> AuditReport:
    """Evaluate deployments, group and pair their pools, apply ignores / baseline.

    ``vllm_version`` (``--vllm-version``) wins over a file's ``vllm_version``; neither →
    the newest profile. Each distinct ``(model, revision)`` is loaded once per run;
    ``use_cache`` also uses the on-disk geometry cache. A file with blocking problems, or
    whose model cannot be loaded or settings are rejected, is reported in ``unevaluated``
    and not analysed (its pools pair with nothing). ``pair_by`` chooses which pools form
    one deployment (:mod:`kvalign.grouping`). ``platform`` (``--gpu`` /
    ``--attention-backend``) applies to pools that name no GPU / backend themselves.
    ``fail_on`` (``--fail-on``) is kept for the exit code and the JUnit failure count.
    Pairs of an attention-only or attention-free model are ``nothing-to-align``: a note,
    no finding.
    ``select`` (``--select``: only these rule codes; ``None`` = every rule) and
    ``ignore_rules`` (``--ignore``) choose which rules run: findings of other rules are
    neither reported nor counted (unlike an ``ignore:`` with a reason, which lists them as
    suppressed). ``unread`` / ``unread_accepted``: paths the readers did not take
    (:attr:`AuditReport.unread`) and whether ``--skip-unrelated`` accepts them.

    Raises:
        InvalidSettings: ``vllm_version`` is not a version kvalign can resolve, or
            ``platform`` names an unknown GPU.
    """
    if vllm_version is not None:
        resolve(vllm_version)
    if platform is not None:
        get_gpu(platform.gpu)
    cache: dict[str, ModelGeometry] = {}
    engines = RunCache()  # each (model, settings, GPU class) resolved once per run
    files: list[FileResult] = []
    unevaluated: list[Problem] = []
    problems: list[Problem] = []
    findings: list[Finding] = []
    partial: set[str] = set()  # files with a pool that could not be evaluated
    version_notes: list[str] = []
    for deployment in deployments:
        problems += [p for p in deployment.problems if not p.blocking]
        version_notes += _version_notes(deployment, vllm_version)
        blocking = [p for p in deployment.problems if p.blocking]
        unevaluated += blocking
        if blocking:
            partial.add(deployment.source)
        if not deployment.pools:
            continue
        result, errors = _evaluate(deployment, vllm_version, cache, use_cache, platform, engines)
        unevaluated += errors
        if errors:
            partial.add(deployment.source)
        if result is not None and result.pools:
            files.append(result)
    groups, grouping_problems = _groups(files, pair_by, vllm_version, partial, engines)
    problems += grouping_problems
    for group in groups:
        findings += run_rules(group)
    findings = [
        f for f in findings if (select is None or f.rule in select) and f.rule not in ignore_rules
    ]
    known_rules = {rule.CODE for rule in RULES}
    for ignore in [i for d in deployments for i in d.ignores] + list(ignores):
        if ignore.rule not in known_rules:
            problems.append(
                Problem(
                    ignore.location,
                    f"ignore names unknown rule {ignore.rule!r} (known: "
                    f"{min(known_rules)} … {max(known_rules)})",
                    blocking=False,
                )
            )
    active: list[Finding] = []
    suppressed: list[Suppressed] = []
    by_file = {d.source: list(d.ignores) for d in deployments}
    # the answer depends on the finding's rule and file only: each pair looked up once,
    # among the ignores of that rule (a run of many findings and many ignores stays linear)
    by_rule: dict[str, list[Ignore]] = {}
    for ignore in ignores:
        by_rule.setdefault(ignore.rule, []).append(ignore)
    hits: dict[tuple[str, str], Ignore | None] = {}
    for finding in findings:
        where = (finding.rule, finding.location.file)
        if where not in hits:
            in_file = [i for i in by_file.get(where[1], []) if i.rule == where[0]]
            hits[where] = _ignored(finding, in_file + by_rule.get(where[0], []))
        hit = hits[where]
        if hit is not None:
            suppressed.append(Suppressed(finding, f"ignored: {hit.reason}"))
        elif finding.fingerprint in baseline:
            suppressed.append(Suppressed(finding, "baseline"))
        else:
            active.append(finding)
    notes: list[str] = []
    for group in groups:
        for outcome in group.pairs:
            if outcome.pair.verdict == "nothing-to-align":
                notes.append(
                    f"{' → '.join(pair_labels(outcome))} ({outcome.prefill.pool.model}): "
                    f"nothing to align: {outcome.pair.reason}"
                )
        notes += [
            f"{r.pool.label} ({r.pool.location}, {r.pool.model}): standalone server "
            f"({'kv_role kv_both' if r.pool.args.kv_transfer_config else 'no --kv-transfer-config'}"
            ", no prefill/decode role): nothing to pair; its own rules ran"
            for r in group.pools
            if r.pool.role == "server"
        ]
    return AuditReport(
        notes=tuple(dict.fromkeys(notes)),
        fail_on=fail_on,
        groups=tuple(groups),
        findings=tuple(active),
        suppressed=tuple(suppressed),
        unevaluated=tuple(unevaluated),
        problems=tuple(problems),
        skipped=skipped,
        files=tuple(files),
        pair_by=pair_by,
        assumptions=(*assumptions(files), *version_notes),
        unread=unread,
        unread_accepted=unread_accepted,
    )
