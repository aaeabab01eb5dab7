"""``kvalign audit``: deployment files → findings → exit code."""

from __future__ import annotations

from typing import Annotated

import typer

from kvalign.cli.audit_run import (
    AUDIT_GC_THRESHOLDS,
    PairByChoice,
    execute,
    few_collections,
)
from kvalign.cli.options import FailOn, FailOnOpt, NoCacheOpt, VersionOpt
from kvalign.cli.output import AuditFormat

__all__ = ["AUDIT_GC_THRESHOLDS", "PairByChoice", "audit", "few_collections"]


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

    from kvalign.auditing import AuditRequest

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
    raise typer.Exit(execute(request, output_format, verbose=verbose, quiet=quiet))
