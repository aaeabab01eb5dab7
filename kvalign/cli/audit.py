"""``kvalign audit``: deployment files → findings → exit code."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from enum import Enum
from typing import Annotated

import typer

from kvalign.cli.exit import _guarded
from kvalign.cli.options import FailOn, FailOnOpt, NoCacheOpt, VersionOpt
from kvalign.cli.output import _stdout
from kvalign.errors import InvalidSettings, KvalignError


# ---- audit ------------------------------------------------------------------------------
class AuditFormat(str, Enum):
    """``kvalign audit --format`` values."""

    table = "table"
    json = "json"
    markdown = "markdown"
    sarif = "sarif"
    junit = "junit"
    github = "github"


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
        bool, typer.Option("--verbose", help="List unknown flags and skipped files on stderr.")
    ] = False,
    no_cache: NoCacheOpt = False,
    pair_by: Annotated[
        PairByChoice,
        typer.Option(
            "--pair-by",
            help="Which pools form one deployment: label (a deployment label or object "
            "name, across files of one folder; else the file), file, or model (same model "
            "id across all inputs).",
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
            "and a vLLM launch with no prefill/decode role (an aggregated server) is "
            "skipped with a warning instead of exit 3 (the pre-commit hook passes every "
            "changed YAML).",
        ),
    ] = False,
) -> None:
    """Audit P/D deployment files (kvalign YAML, shell scripts and vllm serve lines,
    Kubernetes, LeaderWorkerSet, llm-d, Dynamo, KServe, production-stack values) before
    they ship.

    Exit 0 clean, 1 findings at or above --fail-on, 2 usage or unreadable input,
    3 a file could not be evaluated.
    """
    from pathlib import Path

    from kvalign.audit import Platform, run_audit
    from kvalign.deploy import INPUT_KINDS, read_paths, refuse_output_over_input
    from kvalign.deploy.model import Problem
    from kvalign.deploy.project import load_baseline, load_ignores
    from kvalign.report import audit as audit_report
    from kvalign.report.layout import SafeConsole
    from kvalign.safeio import write_output

    notes: list[Problem] = []
    shown: list[bool] = [False]  # notes already printed (--verbose)

    def run() -> int:
        try:
            return evaluate()
        except KvalignError as exc:
            # the reasons behind "nothing found" (e.g. an image not recognised as vLLM)
            # are kept for --verbose; --format json still prints a document (D4)
            if verbose and not shown[0]:
                for note in notes:
                    sys.stderr.write(f"kvalign: note: {note.location}: {note.message}\n")
            if output_format is AuditFormat.json:
                text = audit_report.error_to_json(str(exc), exc.exit_code, notes) + "\n"
                # an error never replaces an existing file (it may be an input)
                if output is None or os.path.lexists(output):
                    typer.echo(text, nl=False)
                else:
                    try:
                        write_output(output, text)
                    except KvalignError:
                        typer.echo(text, nl=False)
            raise

    def evaluate() -> int:
        from kvalign.backends import check_backend_choice, get_gpu
        from kvalign.rules import parse_rule_codes

        selected = parse_rule_codes(select, "--select")
        ignored = parse_rule_codes(ignore, "--ignore") or frozenset()
        # bad command-line choices are usage errors, not per-file problems (pools that name
        # their own backend are checked against --gpu when they are evaluated)
        gpu_model = get_gpu(gpu)
        if attention_backend is not None:
            check_backend_choice(attention_backend, gpu_model)
        if output is not None:
            refuse_output_over_input(output, paths, baseline, config)
        deployments, skipped = read_paths(paths, notes=notes, skip_unrelated=skip_unrelated)
        if config is not None and not Path(config).is_file():
            raise InvalidSettings(f"--config {config}: no such file")
        ignores, ignore_problems = load_ignores(Path(config or ".kvalign.yaml"))
        known = load_baseline(Path(baseline)) if baseline else frozenset()
        report = run_audit(
            deployments,
            vllm_version=vllm_version,
            ignores=ignores,
            baseline=known,
            skipped=tuple(skipped),
            use_cache=not no_cache,
            pair_by=pair_by.value,
            platform=Platform(gpu, attention_backend),
            fail_on=fail_on.value,
            select=selected,
            ignore_rules=ignored,
        )
        for problem in (*ignore_problems, *notes, *report.problems):
            if problem.verbose_only and not verbose:
                continue
            sys.stderr.write(f"kvalign: warning: {problem.location}: {problem.message}\n")
        shown[0] = True
        if verbose:
            for item in skipped:
                sys.stderr.write(f"kvalign: skipped {item}: no deployment found\n")
            for file in report.files:
                for result in file.pools:
                    if result.pool.args.unknown:
                        flags = " ".join(result.pool.args.unknown)
                        sys.stderr.write(
                            f"kvalign: {result.pool.location} {result.pool.label}: "
                            f"ignored flags: {flags}\n"
                        )
        if not report.files and not report.unevaluated and not skip_unrelated:
            # an empty or mistyped deploy path must not pass a CI gate silently
            looked = (
                f"{len(skipped)} file(s) read, none a deployment"
                + ("" if verbose else " (--verbose gives the reasons)")
                + "; "
                if skipped
                else ""
            )
            raise InvalidSettings(
                f"no vLLM prefill/decode deployment found in: {', '.join(paths)} "
                f"({looked}use --skip-unrelated to accept that; kvalign reads: {INPUT_KINDS})"
            )
        renderers: dict[AuditFormat, Callable[[object], str]] = {
            AuditFormat.json: audit_report.to_json,  # type: ignore[dict-item]
            AuditFormat.markdown: audit_report.to_markdown,  # type: ignore[dict-item]
            AuditFormat.sarif: audit_report.to_sarif,  # type: ignore[dict-item]
            AuditFormat.junit: audit_report.to_junit,  # type: ignore[dict-item]
            AuditFormat.github: audit_report.to_github,  # type: ignore[dict-item]
        }
        if output_format is AuditFormat.table:
            if output is None:
                console = _stdout()
                console.print(audit_report.to_table(report, console.width))
            else:
                import io

                buffer = io.StringIO()
                SafeConsole(file=buffer, width=audit_report.FILE_WIDTH, no_color=True).print(
                    audit_report.to_table(report, audit_report.FILE_WIDTH)
                )
                write_output(output, buffer.getvalue())
        else:
            text = renderers[output_format](report)
            text = text if text.endswith("\n") or not text else text + "\n"
            if output is None:
                typer.echo(text, nl=False)
            else:
                write_output(output, text)
        for problem in report.unevaluated:  # exit 3: say why on stderr too, one line each
            sys.stderr.write(
                f"kvalign: error: not evaluated: {problem.location}: {problem.message}\n"
            )
        return report.exit_code()

    raise typer.Exit(_guarded(run))
