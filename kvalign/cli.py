"""The ``kvalign`` command line: parse options → Settings → analyse → render → exit code.

No arithmetic here. Exit codes: 0 the gate passes, 1 it fails (:mod:`kvalign.policy`,
``--fail-on``), 2 bad input or usage, 3 (audit) a file could not be evaluated, 70
internal error (a bug: please report it).
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from kvalign import __version__
from kvalign.errors import InvalidSettings, KvalignError
from kvalign.settings import MAX_BLOCK_SIZE, MAX_SPEC_TOKENS, MAX_TP, Settings

if TYPE_CHECKING:  # heavy modules load inside the commands: --version/--help stay fast
    from rich.console import Console

    from kvalign.geometry import ModelGeometry
    from kvalign.pd import Report

EXIT_OK, EXIT_FLAGGED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70

app = typer.Typer(
    name="kvalign",
    help=(
        "Predict the KV-cache block size vLLM picks for hybrid attention + state-space "
        "models at each tensor-parallel size, and audit prefill/decode pairs "
        "(block_size_ratio, prefix-cache drift) before you deploy."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class OutputFormat(str, Enum):
    """``--format`` values."""

    table = "table"
    json = "json"
    markdown = "markdown"


class AlignmentChoice(str, Enum):
    """``--alignment`` values."""

    vllm = "vllm"
    tp_stable = "tp-stable"


class FailOn(str, Enum):
    """``--fail-on`` severities."""

    error = "error"
    warning = "warning"
    info = "info"


FailOnOpt = Annotated[
    FailOn,
    typer.Option(
        "--fail-on",
        help="Exit 1 on findings at or above this severity (see docs/policy.md).",
    ),
]


class GdnBackendChoice(str, Enum):
    """``--gdn-prefill-backend`` values."""

    auto = "auto"
    triton = "triton"
    flashinfer = "flashinfer"


def _stdout() -> Console:
    """The console for data on stdout (width from the terminal, else ``COLUMNS`` or 200)."""
    from rich.console import Console

    class _Stdout(Console):
        def on_broken_pipe(self) -> None:  # rich's default exits 1, which means "flagged"
            self.quiet = True
            _stdout_closed()

    from kvalign.numbers import columns

    width = None if sys.stdout.isatty() else columns(os.environ.get("COLUMNS"))
    return _Stdout(width=width, soft_wrap=False, highlight=False)


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    one_line = " ".join(message.split())
    sys.stderr.write(f"kvalign: error: {one_line}\n")
    raise typer.Exit(code)


T = TypeVar("T")


#: exit code when the reader of stdout went away (128 + SIGPIPE, as shells report it).
EXIT_BROKEN_PIPE = 141


def _stdout_closed() -> NoReturn:
    """The reader of stdout closed the pipe (``| head``): stop quietly with exit 141."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass
    raise typer.Exit(EXIT_BROKEN_PIPE)


def _guarded(action: Callable[[], T]) -> T:
    """Run ``action``; typed errors become one line on stderr + exit 2, bugs exit 70."""
    try:
        return action()
    except KvalignError as exc:
        _fail(str(exc), exc.exit_code)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        _stdout_closed()
    except Exception as exc:  # a bug: no traceback, no locals
        if os.environ.get("KVALIGN_DEBUG"):
            raise
        _fail(
            f"internal error ({type(exc).__name__}: {exc}); rerun with KVALIGN_DEBUG=1 "
            "and report it",
            EXIT_INTERNAL,
        )


def _json_on_error(action: Callable[[], int], output_format: Enum) -> Callable[[], int]:
    """``action``, printing a JSON error document on stdout before a typed error when
    ``--format json`` was asked for (a CI consumer always gets a document to parse; the
    one-line message still goes to stderr and the exit code is unchanged)."""

    def run() -> int:
        try:
            return action()
        except KvalignError as exc:
            if output_format.value == "json":
                from kvalign.report.json_format import error_to_json

                typer.echo(error_to_json(str(exc), exc.exit_code))
            raise

    return run


def parse_tp_list(text: str, option: str) -> list[int]:
    """``"1,2,4"`` → ``[1, 2, 4]`` (order kept, duplicates dropped).

    Raises:
        InvalidSettings: empty, non-integer or non-positive entries, or more than
            :data:`~kvalign.settings.MAX_TP_SIZES` entries.
    """
    from kvalign.numbers import try_int
    from kvalign.settings import MAX_TP_SIZES

    parts = text.split(",", MAX_TP_SIZES)
    if len(parts) > MAX_TP_SIZES:
        raise InvalidSettings(
            f"{option}: more than {MAX_TP_SIZES} tensor parallel sizes (budget: TP sizes per run)"
        )
    values: list[int] = []
    for part in parts:
        item = part.strip()
        number = try_int(item)
        if number is None or not 1 <= number <= MAX_TP:
            raise InvalidSettings(
                f"{option}: {item[:40]!r} is not a tensor parallel size from 1 to {MAX_TP} "
                "(expected e.g. 8 or 1,2,4)"
            )
        if number not in values:
            values.append(number)
    return values


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kvalign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """kvalign: hybrid KV-cache block alignment for P/D disaggregated vLLM."""
    from kvalign import safeio
    from kvalign.sanitize import guard_stderr

    safeio.forget_inputs()  # --output may not replace what this run reads
    guard_stderr()  # input strings on stderr: controls escaped, lines bounded


# ---- shared options -------------------------------------------------------------------
ModelArg = Annotated[
    str,
    typer.Argument(
        metavar="MODEL",
        help="Bundled model id (see `kvalign models`), a directory with config.json, "
        "a config.json path, or a Hugging Face hub id.",
        show_default=False,
    ),
]
DtypeOpt = Annotated[str, typer.Option("--dtype", help="Model dtype (auto = config's).")]
KvDtypeOpt = Annotated[
    str, typer.Option("--kv-cache-dtype", help="auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2.")
]
BlockOpt = Annotated[
    int | None,
    typer.Option(
        "--block-size",
        min=1,
        max=MAX_BLOCK_SIZE,
        help="vLLM --block-size in tokens (default: unset).",
    ),
]
PrefixOpt = Annotated[
    bool | None,
    typer.Option(
        "--enable-prefix-caching/--no-enable-prefix-caching",
        help="Prefix caching (default: the release's default; vLLM 0.33: on).",
        show_default=False,
    ),
]
MambaDtypeOpt = Annotated[
    str,
    typer.Option("--mamba-cache-dtype", help="Conv-state dtype: auto, float32, float16, bfloat16."),
]
SsmDtypeOpt = Annotated[
    str,
    typer.Option(
        "--mamba-ssm-cache-dtype", help="SSM/recurrent-state dtype (auto = model default)."
    ),
]
SpecOpt = Annotated[
    int,
    typer.Option(
        "--num-speculative-tokens",
        min=0,
        max=MAX_SPEC_TOKENS,
        help="Speculative tokens (MTP/EAGLE).",
    ),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        "--attention-backend",
        help="vLLM attention backend name (default auto: the backend vLLM picks for --gpu "
        "and the release, e.g. FLASHINFER on Blackwell; FLASH_ATTN without --gpu).",
    ),
]


class MambaCacheModeChoice(str, Enum):
    """``--mamba-cache-mode`` values."""

    none = "none"
    align = "align"
    all = "all"


MambaCacheModeOpt = Annotated[
    MambaCacheModeChoice | None,
    typer.Option(
        "--mamba-cache-mode",
        help="vLLM --mamba-cache-mode (0.15-0.31; 'all' until 0.31; a no-op in 0.33). "
        "Default: the release's choice.",
        show_default=False,
    ),
]
MambaBlockOpt = Annotated[
    int | None,
    typer.Option(
        "--mamba-block-size",
        min=1,
        max=MAX_BLOCK_SIZE,
        help="vLLM --mamba-block-size in tokens: replaces the Mamba chunk size in cache mode "
        "'all' (default: unset).",
    ),
]
ReplayOpt = Annotated[
    bool,
    typer.Option(
        "--use-replayssm",
        help="vLLM --use-replayssm (Nemotron-H, 0.27+): ReplaySSM ring buffers enlarge the "
        "Mamba state page.",
    ),
]
ReplayLenOpt = Annotated[
    int,
    typer.Option("--replayssm-buffer-len", min=1, max=MAX_BLOCK_SIZE,
                 help="vLLM --replayssm-buffer-len (ring length in tokens)."),
]  # fmt: skip


class MambaBackendChoice(str, Enum):
    """``--mamba-backend`` values."""

    triton = "triton"
    flashinfer = "flashinfer"


MambaBackendOpt = Annotated[
    MambaBackendChoice | None,
    typer.Option(
        "--mamba-backend",
        help="vLLM --mamba-backend (with --use-replayssm; default triton).",
        show_default=False,
    ),
]
MaxModelLenOpt = Annotated[
    int | None,
    typer.Option(
        "--max-model-len",
        min=1,
        help="vLLM --max-model-len in tokens: prefix caching never hits below one block "
        "(default: unset).",
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="GPU model, e.g. H100, B200, MI300X, Max-1550, CPU: platform and "
        "capability-dependent rules.",
    ),
]
GdnOpt = Annotated[
    GdnBackendChoice,
    typer.Option("--gdn-prefill-backend", help="GDN prefill kernel (Qwen3-Next/3.5 checkpoints)."),
]
AlignOpt = Annotated[
    AlignmentChoice,
    typer.Option(
        "--alignment", help="vllm = 0.33 per-rank rule; tp-stable = the PR 45575 proposal."
    ),
]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Output format.")]
VersionOpt = Annotated[
    str | None,
    typer.Option(
        "--vllm-version", help="vLLM release whose rules apply (default: newest profile)."
    ),
]
RevisionOpt = Annotated[
    str | None, typer.Option("--revision", help="Hub revision (branch, tag, commit).")
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Neither read nor write the geometry cache ($XDG_CACHE_HOME/kvalign).",
    ),
]
TrustOpt = Annotated[
    bool,
    typer.Option(
        "--trust-remote-code",
        help="Let transformers run a hub repo's config code for unknown model types (off).",
    ),
]
HfOverridesOpt = Annotated[
    str | None,
    typer.Option(
        "--hf-overrides",
        metavar="JSON",
        help="vLLM --hf-overrides: a JSON object merged into the config before sizing, "
        """e.g. '{"n_groups": 4}'.""",
    ),
]


@dataclass(frozen=True)
class ModelSource:
    """How a command loads MODEL: ``--revision``, ``--trust-remote-code``,
    ``--hf-overrides`` (JSON text) and the geometry cache (off with ``--no-cache``)."""

    revision: str | None = None
    trust_remote_code: bool = False
    hf_overrides: str | None = None
    use_cache: bool = True

    def overrides(self) -> dict[str, object] | None:
        """``--hf-overrides`` parsed (``None`` when not given). Raises ``InvalidSettings``."""
        from kvalign.sources.overrides import parse_hf_overrides

        return parse_hf_overrides(self.hf_overrides)

    def load(self, model: str, *, quiet: bool = False) -> ModelGeometry:
        """Load one model; warns about remote code and names overridden keys on stderr
        (``quiet`` skips those lines, for the second and later models of a run)."""
        from kvalign.sources import load_model

        if self.trust_remote_code and not quiet:
            sys.stderr.write(
                "kvalign: warning: --trust-remote-code lets a hub repository run code on "
                "this machine\n"
            )
        overrides = self.overrides()
        if overrides and not quiet:
            sys.stderr.write(f"kvalign: note: --hf-overrides applied to: {', '.join(overrides)}\n")
        return load_model(
            model,
            revision=self.revision,
            trust_remote_code=self.trust_remote_code,
            hf_overrides=overrides,
            use_cache=self.use_cache,
        )


def _param(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=annotation
    )


#: the ``vllm serve``-named options every sizing command takes, in help order.
_SETTINGS_PARAMS = (
    _param("dtype", DtypeOpt, "auto"),
    _param("kv_cache_dtype", KvDtypeOpt, "auto"),
    _param("block_size", BlockOpt, None),
    _param("enable_prefix_caching", PrefixOpt, None),
    _param("mamba_cache_dtype", MambaDtypeOpt, "auto"),
    _param("mamba_ssm_cache_dtype", SsmDtypeOpt, "auto"),
    _param("num_speculative_tokens", SpecOpt, 0),
    _param("attention_backend", BackendOpt, "auto"),
    _param("gpu", GpuOpt, None),
    _param("gdn_prefill_backend", GdnOpt, GdnBackendChoice.auto),
    _param("alignment", AlignOpt, AlignmentChoice.vllm),
    _param("vllm_version", VersionOpt, None),
    _param("mamba_cache_mode", MambaCacheModeOpt, None),
    _param("mamba_block_size", MambaBlockOpt, None),
    _param("max_model_len", MaxModelLenOpt, None),
    _param("use_replayssm", ReplayOpt, False),
    _param("replayssm_buffer_len", ReplayLenOpt, 16),
    _param("mamba_backend", MambaBackendOpt, None),
)
#: how MODEL is loaded.
_SOURCE_PARAMS = (
    _param("revision", RevisionOpt, None),
    _param("trust_remote_code", TrustOpt, False),
    _param("hf_overrides", HfOverridesOpt, None),
    _param("no_cache", NoCacheOpt, False),
)

F = TypeVar("F", bound=Callable[..., None])


def sizing_options(*, alignment: bool = True, trust: bool = True) -> Callable[[F], F]:
    """Give a command the shared settings and model-loading options.

    The decorated function declares ``settings: Settings`` and ``source: ModelSource``
    instead of the dozen flags; typer sees the flags (inserted before ``--format``), the
    function receives the built objects. ``alignment``/``trust`` drop ``--alignment`` /
    ``--trust-remote-code`` for commands where they do not apply.
    """

    def decorate(func: F) -> F:
        own = inspect.signature(func, eval_str=True)
        mine = [p for p in own.parameters.values() if p.name not in ("settings", "source")]
        settings_params = [p for p in _SETTINGS_PARAMS if alignment or p.name != "alignment"]
        source_params = [p for p in _SOURCE_PARAMS if trust or p.name != "trust_remote_code"]
        cut = next((i for i, p in enumerate(mine) if p.name == "output_format"), len(mine))
        params = [*mine[:cut], *settings_params, *mine[cut:], *source_params]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> None:
            flags = {p.name: kwargs.pop(p.name) for p in settings_params}
            loading = {p.name: kwargs.pop(p.name) for p in source_params}
            kwargs["settings"] = Settings(
                **{k: v.value if isinstance(v, Enum) else v for k, v in flags.items()}
            )
            kwargs["source"] = ModelSource(
                revision=loading["revision"],
                trust_remote_code=loading.get("trust_remote_code", False),
                hf_overrides=loading["hf_overrides"],
                use_cache=not loading["no_cache"],
            )
            func(**kwargs)

        wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper  # type: ignore[return-value]

    return decorate


def _emit(
    report: Report,
    output_format: OutputFormat,
    table: Callable[[Report, int | None, str], Any],
    markdown: Callable[[Report, str], str],
    fail_on: FailOn,
) -> int:
    """Print ``report`` in ``output_format``; the exit code is the gate
    (:func:`kvalign.policy.exit_code` at ``--fail-on``)."""
    from kvalign.report import to_json

    if output_format is OutputFormat.json:
        typer.echo(to_json(report, fail_on.value))
    elif output_format is OutputFormat.markdown:
        typer.echo(markdown(report, fail_on.value), nl=False)
    else:
        console = _stdout()
        console.print(table(report, console.width, fail_on.value))
    return report.exit_code(fail_on.value)


@app.command()
@sizing_options()
def check(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    prefill_tp: Annotated[
        str, typer.Option("--prefill-tp", help="Prefill TP size(s), comma-separated.")
    ] = "1",
    decode_tp: Annotated[
        str, typer.Option("--decode-tp", help="Decode TP size(s), comma-separated.")
    ] = "1",
    fail_on: FailOnOpt = FailOn.error,
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """Check every prefill × decode TP pair: does it work, and the one change that fixes it.

    Exit 0 when the gate passes, 1 when a pair fails it (default: ratio, split,
    incompatible, invalid, and drift with prefix caching on; see docs/policy.md and
    --fail-on), 2 on bad input.
    """

    from kvalign.pd import analyze
    from kvalign.report import check_markdown, check_table

    def run() -> int:
        prefill = parse_tp_list(prefill_tp, "--prefill-tp")
        decode = parse_tp_list(decode_tp, "--decode-tp")
        report = analyze(source.load(model), settings, prefill, decode)
        return _emit(report, output_format, check_table, check_markdown, fail_on)

    raise typer.Exit(_guarded(_json_on_error(run, output_format)))


@app.command()
@sizing_options()
def matrix(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[
        str, typer.Option("--tp", help="TP sizes for both axes, comma-separated.")
    ] = "1,2,4,8",
    fail_on: FailOnOpt = FailOn.error,
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """Full prefill × decode grid for a runbook. TP sizes the model rejects show as invalid.

    Exit 0 when the gate passes, 1 when a cell fails it (the same policy as check and
    audit: docs/policy.md, --fail-on; a TP the model rejects is an ``invalid`` cell, as
    in check), 2 on bad input.
    """

    from kvalign.pd import analyze
    from kvalign.report import matrix_markdown, matrix_table

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        report = analyze(source.load(model), settings, tps, tps)
        return _emit(report, output_format, matrix_table, matrix_markdown, fail_on)

    raise typer.Exit(_guarded(_json_on_error(run, output_format)))


@app.command()
def models(
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """List the bundled model configs (usable offline by their hub id)."""

    def run() -> int:
        import json

        from kvalign.report import models_table
        from kvalign.sources import catalog
        from kvalign.sources.config_file import read_config_json

        entries = catalog.entries()
        kinds: dict[str, str] = {}
        for entry in entries:
            model_type = ""
            try:
                model_type = str(read_config_json(entry.config_path).get("model_type", ""))
            except KvalignError:
                model_type = "(unreadable)"
            kinds[entry.model_id] = model_type
        if output_format is OutputFormat.json:
            payload = [
                {
                    "id": e.model_id,
                    "model_type": kinds[e.model_id],
                    "config_path": str(e.config_path),
                }
                for e in entries
            ]
            typer.echo(json.dumps(payload, indent=2))
        elif output_format is OutputFormat.markdown:
            lines = ["| Model | Type |", "|---|---|"]
            lines += [f"| {e.model_id} | {kinds[e.model_id]} |" for e in entries]
            typer.echo("\n".join(lines))
        else:
            _stdout().print(models_table(entries, kinds))
        return EXIT_OK

    raise typer.Exit(_guarded(run))


@app.command()
def rules(
    rule_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]",
            help="A rule code (e.g. KVA003): print its rationale, vLLM source and fix.",
            show_default=False,
        ),
    ] = None,
    output_format: FormatOpt = OutputFormat.table,
) -> None:
    """List the audit rules (code, severity, summary), or explain one rule.

    Exit 0, or 2 for an unknown rule code.
    """
    from kvalign.report import rules_format
    from kvalign.rules import find_rule, rule_docs

    def run() -> int:
        if rule_id is not None:
            doc = find_rule(rule_id)
            if output_format is OutputFormat.json:
                typer.echo(rules_format.rule_json(doc))
            else:
                typer.echo(rules_format.rule_page(doc), nl=False)
            return EXIT_OK
        docs = rule_docs()
        if output_format is OutputFormat.json:
            typer.echo(rules_format.rules_json(docs))
        elif output_format is OutputFormat.markdown:
            typer.echo(rules_format.rules_markdown(docs), nl=False)
        else:
            _stdout().print(rules_format.rules_table(docs))
        return EXIT_OK

    raise typer.Exit(_guarded(run))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point.

    Usage errors (unknown option, a value out of range) become one line on stderr with
    exit 2, like every other bad input; ``kvalign`` with no arguments prints the help.
    """
    try:
        code = app(args=argv, standalone_mode=False)
    except BrokenPipeError:
        try:
            _stdout_closed()
        except typer.Exit as stop:
            sys.exit(stop.exit_code)
    except Exception as exc:
        show = getattr(exc, "show", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and callable(show):
            show()
            sys.exit(EXIT_USAGE)
        message = getattr(exc, "format_message", None)
        if callable(message):  # click's UsageError / BadParameter
            command = getattr(getattr(exc, "ctx", None), "command_path", "kvalign")
            one_line = " ".join(str(message()).split())
            sys.stderr.write(f"kvalign: error: {one_line} (see `{command} --help`)\n")
            sys.exit(int(getattr(exc, "exit_code", EXIT_USAGE)))
        if type(exc).__name__ == "Abort":
            sys.stderr.write("kvalign: error: aborted\n")
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else EXIT_OK)


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


@app.command()
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

    from rich.console import Console

    from kvalign.audit import Platform, run_audit
    from kvalign.deploy import INPUT_KINDS, read_paths, refuse_output_over_input
    from kvalign.deploy.model import Problem
    from kvalign.deploy.project import load_baseline, load_ignores
    from kvalign.report import audit as audit_report
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
                Console(file=buffer, width=audit_report.FILE_WIDTH, no_color=True).print(
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


# ---- survey (issue 6) -------------------------------------------------------------------
class SurveyFormat(str, Enum):
    """``kvalign survey --format`` values."""

    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


@app.command()
@sizing_options(alignment=False)
def survey(
    settings: Settings,
    source: ModelSource,
    model: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[MODEL]...",
            help="Models to survey (as for `check`); default: every bundled model.",
            show_default=False,
        ),
    ] = None,
    tp: Annotated[
        str, typer.Option("--tp", help="TP sizes for both sides, comma-separated.")
    ] = "1,2,4,8,16",
    output_format: Annotated[
        SurveyFormat, typer.Option("--format", help="Output format.")
    ] = SurveyFormat.table,
    plot: Annotated[
        str | None,
        typer.Option(
            "--plot",
            metavar="FILE.svg",
            help="Also write the prefill × decode grids as an SVG heatmap (needs kvalign[plot]).",
        ),
    ] = None,
) -> None:
    """Count mismatched P/D pairs per model under vLLM's and the TP-stable alignment.

    Every ordered prefill × decode pair of the valid TP sizes: how many have different
    block sizes, block_size_ratio != 1, non-dividing kernel blocks, and the Mamba padding
    each alignment pays. Exit 0 on success, 2 on bad input.
    """
    from kvalign.report.plot import survey_svg
    from kvalign.report.survey import survey_csv, survey_json, survey_markdown, survey_table
    from kvalign.sources import catalog
    from kvalign.survey import survey as run_survey

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        if plot is not None and not plot.lower().endswith(".svg"):
            raise InvalidSettings(f"--plot {plot}: only SVG output is supported (FILE.svg)")
        names = model or [entry.model_id for entry in catalog.entries()]
        geometries = [source.load(name, quiet=index > 0) for index, name in enumerate(names)]
        result = run_survey(geometries, settings, tps)
        svg = survey_svg(result) if plot is not None else None
        if output_format is SurveyFormat.json:
            typer.echo(survey_json(result))
        elif output_format is SurveyFormat.markdown:
            typer.echo(survey_markdown(result), nl=False)
        elif output_format is SurveyFormat.csv:
            typer.echo(survey_csv(result), nl=False)
        else:
            console = _stdout()
            console.print(survey_table(result, console.width))
        if plot is not None and svg is not None:
            from kvalign.safeio import write_output

            write_output(plot, svg, option="--plot")
            sys.stderr.write(f"kvalign: wrote {plot}\n")
        return EXIT_OK

    raise typer.Exit(_guarded(run))


# ---- explain (appended) -----------------------------------------------------------------
class ExplainFormat(str, Enum):
    """``explain --format`` values."""

    text = "text"
    json = "json"


@app.command()
@sizing_options(alignment=False)
def explain(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor parallel size.")] = 1,
    output_format: Annotated[
        ExplainFormat, typer.Option("--format", help="Output format.")
    ] = ExplainFormat.text,
) -> None:
    """Show the block-size derivation step by step: each quantity, the config fields and
    flags it came from, the formula with numbers, and the vLLM function it mirrors.

    Exit 0, or 2 on bad input.
    """
    from kvalign.explain import explain as build_explanation
    from kvalign.report.explain_format import explain_json, explain_text

    def run() -> int:
        geometry = source.load(model)
        ex = build_explanation(geometry, settings, tp)
        if output_format is ExplainFormat.json:
            typer.echo(explain_json(ex))
        else:
            typer.echo(explain_text(ex), nl=False)
        return EXIT_OK

    raise typer.Exit(_guarded(run))


# ---- verify (issue 4) ---------------------------------------------------------------------
class VerifyFormat(str, Enum):
    """``verify --format`` values."""

    table = "table"
    json = "json"


@app.command()
@sizing_options(alignment=False, trust=False)
def verify(
    model: ModelArg,
    settings: Settings,
    source: ModelSource,
    tp: Annotated[str, typer.Option("--tp", help="TP sizes, comma-separated.")] = "1",
    output_format: Annotated[
        VerifyFormat, typer.Option("--format", help="Output format.")
    ] = VerifyFormat.table,
) -> None:
    """Compare kvalign's pages and block sizes with the installed vLLM's own functions,
    run CPU-only as if on --gpu (default H100); needs vLLM importable here (pip install
    'kvalign[verify]'). No GPU, weights or model code. Tested on vLLM 0.14.0-0.33.x;
    says so plainly outside that range.

    Exit 0 when identical, 1 on any difference, 2 when vLLM is missing, raises, or on
    bad input.
    """
    from kvalign.report.verify_format import verify_json, verify_table
    from kvalign.verify import verify as run_verify

    def run() -> int:
        tps = parse_tp_list(tp, "--tp")
        result = run_verify(source.load(model), settings, tps, hf_overrides=source.overrides())
        if output_format is VerifyFormat.json:
            typer.echo(verify_json(result))
        else:
            _stdout().print(verify_table(result))
        return EXIT_OK if result.identical else EXIT_FLAGGED

    raise typer.Exit(_guarded(run))
