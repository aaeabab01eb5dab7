"""The console-script entry point, and a fast path for plain ``check``/``matrix`` lines.

Importing typer (and the pydantic layer and every command module it brings) costs more
than a whole check. :func:`main` therefore parses the simple, unambiguous command lines
of ``check`` and ``matrix`` by hand, without importing typer, click or the other
commands: ``MODEL`` and ``--name value`` / ``--name=value`` / flags, each at most once,
whole numbers within the declared bounds, enum values spelled exactly. Anything else
(``--help``, ``--version``, another command, a value typer would have to judge, an
unknown or repeated option) goes to typer (:func:`kvalign.cli.app.main`), so every
message about a bad command line is still typer's.

The options are listed here as plain data (:data:`SHARED_OPTIONS`, :data:`COMMANDS`);
typer's declarations (:mod:`kvalign.cli.options`, the command modules) are the source,
and tests/test_cli_fast.py checks the two agree option by option.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import TYPE_CHECKING, Any

from kvalign.cli.output import AuditFormat, OutputFormat
from kvalign.cli.sizing import (
    AlignmentChoice,
    FailOn,
    GdnBackendChoice,
    MambaBackendChoice,
    MambaCacheModeChoice,
)
from kvalign.exitcodes import ExitCode
from kvalign.numbers import is_digits
from kvalign.settings import MAX_BLOCK_SIZE, MAX_SPEC_TOKENS, MAX_TP

if TYPE_CHECKING:
    from collections.abc import Iterator

#: how an option's value is read: ``str`` (text not starting with ``-``), ``(low, high)``
#: (a whole number, ``None`` = unbounded), an ``Enum`` (a member's value as spelled),
#: or ``True``/``False`` (a flag: the value it sets).
Kind = Any

#: the ``vllm serve``-named options that build ``Settings``, in typer's order:
#: ``{parameter: (default, {spelling: kind})}``.
SETTINGS_OPTIONS: dict[str, tuple[Any, dict[str, Kind]]] = {
    "dtype": ("auto", {"--dtype": str}),
    "kv_cache_dtype": ("auto", {"--kv-cache-dtype": str}),
    "block_size": (None, {"--block-size": (1, MAX_BLOCK_SIZE)}),
    "enable_prefix_caching": (
        None,
        {"--enable-prefix-caching": True, "--no-enable-prefix-caching": False},
    ),
    "mamba_cache_dtype": ("auto", {"--mamba-cache-dtype": str}),
    "mamba_ssm_cache_dtype": ("auto", {"--mamba-ssm-cache-dtype": str}),
    "num_speculative_tokens": (0, {"--num-speculative-tokens": (0, MAX_SPEC_TOKENS)}),
    "attention_backend": ("auto", {"--attention-backend": str}),
    "gpu": (None, {"--gpu": str}),
    "gdn_prefill_backend": (GdnBackendChoice.auto, {"--gdn-prefill-backend": GdnBackendChoice}),
    "alignment": (AlignmentChoice.vllm, {"--alignment": AlignmentChoice}),
    "vllm_version": (None, {"--vllm-version": str}),
    "mamba_cache_mode": (None, {"--mamba-cache-mode": MambaCacheModeChoice}),
    "mamba_block_size": (None, {"--mamba-block-size": (1, MAX_BLOCK_SIZE)}),
    "max_model_len": (None, {"--max-model-len": (1, None)}),
    "use_replayssm": (False, {"--use-replayssm": True}),
    "replayssm_buffer_len": (16, {"--replayssm-buffer-len": (1, MAX_BLOCK_SIZE)}),
    "mamba_backend": (None, {"--mamba-backend": MambaBackendChoice}),
    "transformers_version": (None, {"--transformers-version": str}),
    "pipeline_parallel_size": (
        1,
        {"--pipeline-parallel-size": (1, MAX_TP), "-pp": (1, MAX_TP)},
    ),
    "pp_layer_partition": (None, {"--pp-layer-partition": str}),
    "kv_cache_dtype_skip_layers": (None, {"--kv-cache-dtype-skip-layers": str}),
    "speculative_method": (None, {"--speculative-method": str}),
    "eagle_aux_hidden_state_layer_ids": (None, {"--eagle-aux-hidden-state-layer-ids": str}),
}
#: how MODEL is loaded (``ModelSource``).
SOURCE_OPTIONS: dict[str, tuple[Any, dict[str, Kind]]] = {
    "revision": (None, {"--revision": str}),
    "trust_remote_code": (False, {"--trust-remote-code": True}),
    "hf_overrides": (None, {"--hf-overrides": str}),
    "no_cache": (False, {"--no-cache": True}),
}
#: every option ``check`` and ``matrix`` share.
SHARED_OPTIONS: dict[str, tuple[Any, dict[str, Kind]]] = {
    "fail_on": (FailOn.error, {"--fail-on": FailOn}),
    **SETTINGS_OPTIONS,
    "output_format": (OutputFormat.table, {"--format": OutputFormat}),
    **SOURCE_OPTIONS,
}
#: the commands served: their own options (the TP lists) before the shared ones.
COMMANDS: dict[str, dict[str, tuple[Any, dict[str, Kind]]]] = {
    "check": {
        "prefill_tp": ("1", {"--prefill-tp": str}),
        "decode_tp": ("1", {"--decode-tp": str}),
        **SHARED_OPTIONS,
    },
    "matrix": {"tp": ("1,2,4,8", {"--tp": str}), **SHARED_OPTIONS},
}


def audit_options() -> dict[str, tuple[Any, dict[str, Kind]]]:
    """The ``audit`` options the fast path reads (a line with any other goes to typer):
    ``{parameter: (default, {spelling: kind})}``, as typer declares them
    (:func:`kvalign.cli.audit.audit`). A function: the ``--pair-by`` enum's module is
    imported only for an ``audit`` line."""
    from kvalign.cli.audit_run import PairByChoice

    return {
        "output_format": (AuditFormat.table, {"--format": AuditFormat}),
        "fail_on": (FailOn.error, {"--fail-on": FailOn}),
        "verbose": (False, {"--verbose": True}),
        "quiet": (False, {"--quiet": True, "-q": True}),
        "no_cache": (False, {"--no-cache": True}),
        "pair_by": (PairByChoice.label, {"--pair-by": PairByChoice}),
        "skip_unrelated": (False, {"--skip-unrelated": True}),
    }


#: commands the fast path serves.
FAST_COMMANDS = (*COMMANDS, "audit")


def _value(kind: Kind, text: str) -> tuple[bool, Any]:
    """``(ok, value)`` for one option value; not ok = leave it to typer."""
    if kind is str:
        return (not text.startswith("-")), text
    if isinstance(kind, tuple):
        if not is_digits(text) or (len(text) > 1 and text[0] == "0"):
            return False, None
        number = int(text)
        low, high = kind
        ok = (low is None or number >= low) and (high is None or number <= high)
        return ok, number
    if isinstance(kind, type) and issubclass(kind, Enum):
        for member in kind:
            if member.value == text:
                return True, member
    return False, None


def _take_option(
    token: str,
    tokens: Iterator[str],
    spelled: dict[str, tuple[str, Kind]],
    given: dict[str, Any],
    *,
    inline: bool,
) -> bool:
    """Read one option ``token`` (and its value, the next of ``tokens`` or, with
    ``inline``, after ``=``) into ``given``; ``False`` when typer should parse the line
    (an unknown or repeated option, a missing or unusual value)."""
    name, has_value, text = token.partition("=") if inline else (token, "", "")
    if name not in spelled:
        return False
    param, kind = spelled[name]
    if param in given:
        return False
    if isinstance(kind, bool):
        if has_value:
            return False
        given[param] = kind
        return True
    value_text = text if has_value else next(tokens, None)
    if value_text is None:
        return False
    ok, value = _value(kind, value_text)
    if ok:
        given[param] = value
    return ok


def parse(command: str, args: list[str]) -> dict[str, Any] | None:
    """Keyword arguments of ``command`` (``check`` or ``matrix``; the names of its typer
    parameters) from ``args`` (after the command name), or ``None`` when typer should
    parse them."""
    options = COMMANDS[command]
    spelled = {name: (param, kind) for param, (_, names) in options.items()
               for name, kind in names.items()}  # fmt: skip
    given: dict[str, Any] = {}
    tokens = iter(args)
    for token in tokens:
        if not token.startswith("-"):
            if "model" in given:
                return None
            given["model"] = token
            continue
        if not _take_option(token, tokens, spelled, given, inline=True):
            return None
    if "model" not in given:
        return None
    for param, (default, _) in options.items():
        given.setdefault(param, default)
    return given


def parse_audit(args: list[str]) -> dict[str, Any] | None:
    """Keyword arguments of ``audit`` (``paths`` and the :func:`audit_options`) from
    ``args`` (after the command name), or ``None`` when typer should parse them: one or
    more PATHs (none empty, none starting with ``-``, so no stdin), the options of
    :func:`audit_options` each at most once."""
    options = audit_options()
    spelled = {name: (param, kind) for param, (_, names) in options.items()
               for name, kind in names.items()}  # fmt: skip
    paths: list[str] = []
    given: dict[str, Any] = {}
    tokens = iter(args)
    for token in tokens:
        if not token.startswith("-"):
            if not token:
                return None
            paths.append(token)
            continue
        # --name=value is left to typer
        if not _take_option(token, tokens, spelled, given, inline=False):
            return None
    if not paths:
        return None
    for param, (default, _) in options.items():
        given.setdefault(param, default)
    given["paths"] = paths
    return given


def run_audit_line(args: list[str]) -> int | None:
    """Run a plain ``audit`` command line (:func:`parse_audit`) as typer's command would
    (:func:`kvalign.cli.audit_run.execute`); its exit code, or ``None`` when typer should
    run it."""
    from kvalign.cli.exit import exit_code_of

    kwargs = parse_audit(args)
    if kwargs is None:
        return None
    from kvalign.auditing import AuditRequest
    from kvalign.cli.audit_run import execute

    start_run()
    request = AuditRequest(
        paths=tuple(kwargs["paths"]),
        vllm_version=None,
        select=None,
        ignore=None,
        baseline=None,
        config=None,
        verbose=kwargs["verbose"],
        use_cache=not kwargs["no_cache"],
        pair_by=kwargs["pair_by"].value,
        gpu=None,
        attention_backend=None,
        skip_unrelated=kwargs["skip_unrelated"],
        fail_on=kwargs["fail_on"].value,
        output=None,
    )
    try:
        return execute(
            request, kwargs["output_format"], verbose=kwargs["verbose"], quiet=kwargs["quiet"]
        )
    except Exception as exc:  # typer.Exit, raised by kvalign.cli.exit.fail
        code = exit_code_of(exc)
        if code is None:
            raise
        return code


def start_run() -> None:
    """What every command does first (typer's app callback calls it too): forget the
    inputs of an earlier run (``--output`` may not replace what this run reads) and
    guard stderr (input strings escaped, lines bounded)."""
    from kvalign import safeio
    from kvalign.sanitize import guard_stderr

    safeio.forget_inputs()
    guard_stderr()


def run(args: list[str], *, last: bool = False) -> int | None:
    """Run a plain ``check``/``matrix`` command line (:func:`parse`); its exit code, or
    ``None`` when typer should run it. ``last``: the process exits after this command
    (:func:`main` reading ``sys.argv``): the objects the run leaves are then frozen
    (:func:`gc.freeze`), so the collector's passes at interpreter exit skip them."""
    from kvalign.cli.exit import exit_code_of, guarded, json_on_error
    from kvalign.cli.sizing import run_pairs, settings_from_flags, source_from_flags

    if args and args[0] == "audit":
        return run_audit_line(args[1:])
    if not args or args[0] not in COMMANDS:
        return None
    command = args[0]
    kwargs = parse(command, args[1:])
    if kwargs is None:
        return None
    import gc

    # a check's module set-up creates objects it keeps (about 14,000 the cyclic collector
    # tracks) and no cyclic garbage (a full collection after a check frees nothing): the
    # collector's two dozen passes over them cost about 5 % of the run and reclaim
    # nothing. Reference counting frees everything else as always.
    collecting = gc.isenabled()
    gc.disable()
    start_run()
    try:
        flags = {name: kwargs[name] for name in SETTINGS_OPTIONS}
        settings = guarded(
            json_on_error(lambda: settings_from_flags(flags), kwargs["output_format"])
        )
        source = source_from_flags({name: kwargs[name] for name in SOURCE_OPTIONS})
        if command == "check":
            tps = ((kwargs["prefill_tp"], "--prefill-tp"), (kwargs["decode_tp"], "--decode-tp"))
        else:
            tps = ((kwargs["tp"], "--tp"), (kwargs["tp"], "--tp"))
        return run_pairs(
            command, kwargs["model"], settings, source, tps, kwargs["fail_on"],
            kwargs["output_format"],
        )  # fmt: skip
    except Exception as exc:  # typer.Exit, raised by kvalign.cli.exit.fail
        code = exit_code_of(exc)
        if code is None:
            raise
        return code
    finally:
        if last:
            # the interpreter's exit runs full collections over every tracked object (and
            # the first pass after gc.enable() goes over all the run made): they would
            # free nothing of a check's objects. Frozen objects are still freed by
            # reference counting; only their cycles are left to the process's end.
            gc.freeze()
        if collecting:
            gc.enable()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (``kvalign``, ``python -m kvalign``): the fast path
    when it serves the command line, else typer's :func:`kvalign.cli.app.main`.
    Exits with the command's code (:class:`~kvalign.exitcodes.ExitCode`)."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        code = run(args, last=argv is None)
    except BrokenPipeError:
        from kvalign.cli.exit import silence_stdout

        silence_stdout()
        sys.exit(ExitCode.BROKEN_PIPE)
    except OSError as exc:  # a full device outside a command's guard
        from kvalign.cli.exit import exit_code_of, is_write_failure, stdout_failed

        if not is_write_failure(exc):
            raise
        try:
            stdout_failed(exc)
        except Exception as stop:  # typer.Exit
            code = exit_code_of(stop)
            if code is None:
                raise
            sys.exit(code)
    if code is None:
        from kvalign import cli

        cli.__getattr__("app")  # kvalign.cli.app is imported and ``cli.app`` stays typer's app
        sys.modules["kvalign.cli.app"].main(args)
    sys.exit(code)
