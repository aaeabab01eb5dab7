"""``kvalign audit`` below the CLI: an :class:`AuditRequest` in, an :class:`AuditOutcome` out.

The pipeline of one audit run, from the command-line choices to the report: check the
run-wide choices (rule codes, ``--gpu``, ``--attention-backend``, ``--output``), read the
deployment files (:func:`kvalign.deploy.read_paths`), load the project file's ignores and
the baseline (:mod:`kvalign.deploy.project`), evaluate (:func:`kvalign.audit.run_audit`),
and collect the lines the CLI prints on stderr. Nothing here prints or exits: messages
come back as text, a stop as :class:`AuditStopped`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kvalign.errors import InvalidSettings, KvalignError

if TYPE_CHECKING:
    from kvalign.audit import AuditReport
    from kvalign.deploy.model import Problem
    from kvalign.grouping import PairBy


@dataclass(frozen=True)
class AuditRequest:
    """One audit run's choices, as ``kvalign audit`` takes them.

    Attributes:
        paths: files or directories (``-`` = stdin).
        vllm_version: ``--vllm-version`` (wins over a file's ``vllm_version``).
        select: ``--select`` values as given (comma-separated, repeatable); ``None``: all.
        ignore: ``--ignore`` values as given.
        baseline: ``--baseline`` file (an earlier ``audit --format json``).
        config: ``--config`` project file; ``None``: ``.kvalign.yaml`` when present.
        verbose: ``--verbose`` (notes, skipped files, unknown flags).
        use_cache: the geometry cache (off with ``--no-cache``).
        pair_by: ``--pair-by`` (``label``, ``file``, ``model``).
        gpu: ``--gpu`` for pools that name none.
        attention_backend: ``--attention-backend`` for pools that name none.
        skip_unrelated: ``--skip-unrelated``.
        fail_on: ``--fail-on`` severity.
        output: ``--output`` file (checked: it may not replace an input).
    """

    paths: tuple[str, ...]
    vllm_version: str | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    baseline: str | None = None
    config: str | None = None
    verbose: bool = False
    use_cache: bool = True
    pair_by: PairBy = "label"
    gpu: str | None = None
    attention_backend: str | None = None
    skip_unrelated: bool = False
    fail_on: str = "error"
    output: str | None = None


@dataclass(frozen=True)
class AuditOutcome:
    """What one run found: the report and the stderr lines (without ``kvalign: ``),
    in the order they are printed before the report."""

    report: AuditReport
    messages: tuple[str, ...] = ()

    def unevaluated_messages(self) -> tuple[str, ...]:
        """One ``error: not evaluated: …`` line per file that could not be evaluated and
        one ``error: not read: …`` line per path not read (printed on stderr when the
        report goes to ``--output``, so exit 3 says why once)."""
        return tuple(
            f"error: not evaluated: {problem.location}: {problem.message}"
            for problem in self.report.unevaluated
        ) + tuple(f"error: not read: {p.location}: {p.message}" for p in self.report.unread)


class AuditStopped(KvalignError):
    """A typed error stopped the run. The message and exit code are the cause's;
    ``notes`` are the reasons gathered so far (e.g. a file not recognised as a vLLM
    launch), for the JSON error document; ``messages`` are the stderr lines due before
    the error line (the warnings of a run that found nothing, or with ``--verbose`` the
    notes)."""

    def __init__(
        self, cause: KvalignError, notes: tuple[Problem, ...], messages: tuple[str, ...]
    ) -> None:
        super().__init__(str(cause))
        self.exit_code = cause.exit_code
        self.notes = notes
        self.messages = messages


def run(request: AuditRequest) -> AuditOutcome:
    """Run one audit (the whole of ``kvalign audit`` except rendering and exit).

    Raises:
        AuditStopped: a bad choice, unreadable input, or no deployment found (wrapping
            the typed error, with the notes gathered until then).
    """
    notes: list[Problem] = []
    try:
        return _run(request, notes)
    except _NothingFound as exc:
        raise AuditStopped(exc, tuple(notes), exc.messages) from None
    except KvalignError as exc:
        shown = [f"note: {n.location}: {n.message}" for n in notes] if request.verbose else []
        raise AuditStopped(exc, tuple(notes), tuple(shown)) from None


def _run(request: AuditRequest, notes: list[Problem]) -> AuditOutcome:
    from kvalign.audit import Platform, run_audit
    from kvalign.backends import check_backend_choice, get_gpu
    from kvalign.deploy import INPUT_KINDS, read_paths, refuse_output_over_input
    from kvalign.deploy.project import load_baseline, load_ignores
    from kvalign.rules import parse_rule_codes

    paths = list(request.paths)
    selected = parse_rule_codes(_listed(request.select), "--select")
    ignored = parse_rule_codes(_listed(request.ignore), "--ignore") or frozenset()
    # bad command-line choices are usage errors, not per-file problems (pools that name
    # their own backend are checked against --gpu when they are evaluated)
    gpu_model = get_gpu(request.gpu)
    if request.attention_backend is not None:
        check_backend_choice(request.attention_backend, gpu_model)
    if request.output is not None:
        refuse_output_over_input(request.output, paths, request.baseline, request.config)
    unread: list[Problem] = []
    deployments, skipped = read_paths(
        paths, notes=notes, skip_unrelated=request.skip_unrelated, unread=unread
    )
    config = None if request.config is None else Path(request.config)
    if config is not None and (not config.exists() or config.is_dir()):
        raise InvalidSettings(f"--config {request.config}: no such file")
    ignores, ignore_problems = load_ignores(Path(request.config or ".kvalign.yaml"))
    known = load_baseline(Path(request.baseline)) if request.baseline else frozenset()
    report = run_audit(
        deployments,
        vllm_version=request.vllm_version,
        ignores=ignores,
        baseline=known,
        skipped=tuple(skipped),
        use_cache=request.use_cache,
        pair_by=request.pair_by,
        platform=Platform(request.gpu, request.attention_backend),
        fail_on=request.fail_on,
        select=selected,
        ignore_rules=ignored,
        unread=tuple(unread),
        unread_accepted=request.skip_unrelated,
    )
    messages = [
        f"warning: {problem.location}: {problem.message}"
        for problem in (*ignore_problems, *notes, *report.problems)
        if request.verbose or not problem.verbose_only
    ]
    if request.verbose:
        messages += [f"skipped {item}: no deployment found" for item in skipped]
        messages += [
            f"{result.pool.location} {result.pool.label}: ignored flags: "
            + " ".join(result.pool.args.unknown)
            for file in report.files
            for result in file.pools
            if result.pool.args.unknown
        ]
    if (
        not report.files
        and not report.unevaluated
        and not report.unread
        and not request.skip_unrelated
    ):
        # an empty or mistyped deploy path must not pass a CI gate silently; the lines
        # gathered so far are printed before the error
        raise _NothingFound(_nothing_found(paths, skipped, request.verbose, INPUT_KINDS), messages)
    return AuditOutcome(report, tuple(messages))


class _NothingFound(InvalidSettings):
    """No deployment in the inputs; ``messages``: the lines gathered before it."""

    def __init__(self, text: str, messages: list[str]) -> None:
        super().__init__(text)
        self.messages = tuple(messages)


def _nothing_found(paths: list[str], skipped: list[str], verbose: bool, kinds: str) -> str:
    looked = (
        f"{len(skipped)} file(s) read, none a deployment"
        + ("" if verbose else " (--verbose gives the reasons)")
        + "; "
        if skipped
        else ""
    )
    return (
        f"no vLLM prefill/decode deployment found in: {', '.join(paths)} "
        f"({looked}use --skip-unrelated to accept that; kvalign reads: {kinds})"
    )


def _listed(values: tuple[str, ...] | None) -> list[str] | None:
    return None if values is None else list(values)
