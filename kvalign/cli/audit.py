"""``kvalign audit``: deployment files → findings → exit code."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from enum import Enum
from typing import Annotated

import typer

from kvalign.cli.exit import guarded
from kvalign.cli.options import FailOn, FailOnOpt, NoCacheOpt, VersionOpt, warn_beyond_newest
from kvalign.cli.output import AUDIT, AuditFormat, View
from kvalign.errors import KvalignError


class PairByChoice(str, Enum):
    """``kvalign audit --pair-by`` values (:mod:`kvalign.grouping`)."""

    label = "label"
    file = "file"
    model = "model"


def audit(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            help="Deployment files or directories (scanned recursively); - reads stdin.",
            show_default=False,
        ),
    ],
    output_format: Annotated[
        AuditFormat, typer.Option("--format", help="Output format.")
    ] = AuditFormat.table,
    output: Annotated[
        str | None, typer.Option("--output", help="Write the report to FILE instead of stdout.")
    ] = None,
    fail_on: FailOnOpt = FailOn.error,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select",
            metavar="RULE,...",
            help="Run only these rules (codes from `kvalign rules`, comma-separated, repeatable).",
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore",
            metavar="RULE,...",
            help="Do not run these rules (comma-separated, repeatable); their findings are "
            "neither shown nor counted.",
        ),
    ] = None,
    vllm_version: VersionOpt = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="JSON from an earlier `audit --format json`: only new findings count.",
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="Project file with an `ignore:` list (default: .kvalign.yaml when present; "
            "a named file must exist).",
        ),
    ] = None,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            help="Table: every pool and pair, not only the failing ones; list unknown flags "
            "and skipped files on stderr.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Table: the verdict line and the findings only."),
    ] = False,
    no_cache: NoCacheOpt = False,
    pair_by: Annotated[
        PairByChoice,
        typer.Option(
            "--pair-by",
            help="Which pools form one deployment: label (a deployment label or object "
            "name and namespace, across files and folders; folders stay apart only when "
            "each holds both roles; else the file), file, or model (same model id across "
            "all inputs).",
        ),
    ] = PairByChoice.label,
    gpu: Annotated[
        str | None,
        typer.Option(
            "--gpu",
            help="GPU model for pools whose manifest names none (nodeSelector / affinity "
            "nvidia.com/gpu.product), e.g. H100, B200, MI300X. Default: unspecified CUDA GPU.",
        ),
    ] = None,
    attention_backend: Annotated[
        str | None,
        typer.Option(
            "--attention-backend",
            help="Attention backend for pools that set neither --attention-backend nor "
            "VLLM_ATTENTION_BACKEND. Default: the one vLLM picks for the pool's GPU and "
            "release (FLASH_ATTN on an unspecified CUDA GPU, FLASHINFER on Blackwell).",
        ),
    ] = None,
    skip_unrelated: Annotated[
        bool,
        typer.Option(
            "--skip-unrelated",
            help="A named file with no vLLM pool is skipped with a note instead of exit 2, "
            "and a scanned path no reader takes (a file that mentions vLLM, a symlink loop) "
            "is listed as accepted instead of exit 3 (the pre-commit hook passes every "
            "changed YAML). A vLLM launch that was found but not evaluated stays exit 3.",
        ),
    ] = False,
) -> None:
    """Audit P/D deployment files (kvalign YAML, shell scripts and vllm serve lines,
    Justfiles, Kubernetes, LeaderWorkerSet, llm-d, llm-d-benchmark scenarios, Dynamo,
    KServe, AIBrix, Ray Serve, production-stack values, Docker Compose; Helm charts and
    kustomize folders rendered) before they ship.

    Exit 0 clean, 1 findings at or above --fail-on, 2 usage or unreadable input,
    3 a file could not be evaluated.
    """

    from kvalign.auditing import AuditRequest, AuditStopped
    from kvalign.auditing import run as run_audit
    from kvalign.report import audit as audit_report
    from kvalign.safeio import write_output

    request = AuditRequest(
        paths=tuple(paths),
        vllm_version=vllm_version,
        select=None if select is None else tuple(select),
        ignore=None if ignore is None else tuple(ignore),
        baseline=baseline,
        config=config,
        verbose=verbose,
        use_cache=not no_cache,
        pair_by=pair_by.value,
        gpu=gpu,
        attention_backend=attention_backend,
        skip_unrelated=skip_unrelated,
        fail_on=fail_on.value,
        output=output,
    )

    def run() -> int:
        warn_beyond_newest(vllm_version)
        try:
            outcome = run_audit(request)
        except AuditStopped as exc:
            # the reasons behind "nothing found" (e.g. an image not recognised as vLLM)
            # are kept for --verbose; --format json still prints a document
            _say(exc.messages)
            if output_format is AuditFormat.json:
                text = audit_report.error_to_json(str(exc), exc.exit_code, list(exc.notes)) + "\n"
                # an error never replaces an existing file (it may be an input)
                if output is None or os.path.lexists(output):
                    typer.echo(text, nl=False)
                else:
                    try:
                        write_output(output, text)
                    except KvalignError:
                        typer.echo(text, nl=False)
            raise
        _say(outcome.messages)
        report = outcome.report
        view = View(
            fail_on.value,
            None if output is None else audit_report.FILE_WIDTH,
            verbose=verbose,
            quiet=quiet,
        )
        AUDIT.emit(report, output_format, view, output)
        if output is not None:  # the report went to a file: say why exit 3 here, once
            _say((*outcome.unevaluated_messages(), f"{audit_report.headline(report)}"))
        return report.exit_code()

    with few_collections():
        code = guarded(run)
    raise typer.Exit(code)


#: the cyclic collector's thresholds during an audit (:func:`few_collections`).
AUDIT_GC_THRESHOLDS = (20_000, 10, 10)


@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """Run the block with the cyclic garbage collector's start-up objects frozen
    (``gc.freeze``: the imported modules are never traversed again) and its thresholds
    raised to :data:`AUDIT_GC_THRESHOLDS`; both restored afterwards.

    An audit keeps every file's deployment until the report is written, so with the
    default thresholds (700, 10, 10) the collector walks an ever larger heap: about a
    fifth of a 10,000-file audit's CPU time, for the few cycles it frees (a YAML
    loader per file, mostly). With 20,000 the young generation still frees those
    cycles (peak memory grows by about a tenth); reference counting frees everything
    else as always.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*AUDIT_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _say(messages: tuple[str, ...]) -> None:
    """Library messages on stderr, one ``kvalign: `` line each."""
    for message in messages:
        sys.stderr.write(f"kvalign: {message}\n")
