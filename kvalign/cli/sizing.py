"""What the sizing commands share without typer: the option value enums, ``--tp`` lists,
how MODEL is loaded, the ``Settings`` built from the flags, and the bodies of ``check``
and ``matrix``.

Nothing here imports typer, click or rich, so :mod:`kvalign.cli.fast` can run a plain
``check``/``matrix`` command line with it; :mod:`kvalign.cli.options` declares the same
options for typer and re-exports these names.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

from kvalign.errors import InvalidSettings
from kvalign.settings import MAX_TP, Settings, layer_ids, skip_layer_entries

if TYPE_CHECKING:
    from kvalign.geometry import ModelGeometry


class AlignmentChoice(str, Enum):
    """``--alignment`` values."""

    vllm = "vllm"
    tp_stable = "tp-stable"


class FailOn(str, Enum):
    """``--fail-on`` severities."""

    error = "error"
    warning = "warning"
    info = "info"


class GdnBackendChoice(str, Enum):
    """``--gdn-prefill-backend`` values."""

    auto = "auto"
    triton = "triton"
    flashinfer = "flashinfer"


class MambaCacheModeChoice(str, Enum):
    """``--mamba-cache-mode`` values."""

    none = "none"
    align = "align"
    all = "all"


class MambaBackendChoice(str, Enum):
    """``--mamba-backend`` values."""

    triton = "triton"
    flashinfer = "flashinfer"


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


class ModelSource(NamedTuple):
    """How a command loads MODEL: ``--revision``, ``--trust-remote-code``,
    ``--hf-overrides`` (JSON text) and the geometry cache (off with ``--no-cache``)."""

    revision: str | None = None
    trust_remote_code: bool = False
    hf_overrides: str | None = None
    use_cache: bool = True

    def overrides(self) -> dict[str, object] | None:
        """``--hf-overrides`` parsed (``None`` when not given). Raises ``InvalidSettings``."""
        if self.hf_overrides is None:  # the override module is imported only when needed
            return None
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


def warn_beyond_newest(version: str | None) -> None:
    """A ``--vllm-version`` newer than every profile: one warning line on stderr (a bad
    version is left for the command to report)."""
    from kvalign.errors import KvalignError
    from kvalign.versions import resolve

    try:
        warning = resolve(version).warning
    except KvalignError:
        return
    if warning:
        sys.stderr.write(f"kvalign: warning: {warning}\n")


def settings_from_flags(flags: Mapping[str, Any]) -> Settings:
    """``Settings`` from the ``vllm serve``-named options (enum members by their value),
    after the ``--vllm-version`` warning (:func:`warn_beyond_newest`)."""
    values = {k: v.value if isinstance(v, Enum) else v for k, v in flags.items()}
    if "kv_cache_dtype_skip_layers" in values:
        values["kv_cache_dtype_skip_layers"] = skip_layer_entries(
            values["kv_cache_dtype_skip_layers"]
        )
    if "eagle_aux_hidden_state_layer_ids" in values:
        values["eagle_aux_hidden_state_layer_ids"] = layer_ids(
            values["eagle_aux_hidden_state_layer_ids"], "--eagle-aux-hidden-state-layer-ids"
        )
    settings = Settings(**values)
    warn_beyond_newest(settings.vllm_version)
    return settings


def source_from_flags(loading: Mapping[str, Any]) -> ModelSource:
    """``ModelSource`` from the model-loading options (``--trust-remote-code`` may be
    absent: commands without it never run remote code)."""
    return ModelSource(
        revision=loading["revision"],
        trust_remote_code=loading.get("trust_remote_code", False),
        hf_overrides=loading["hf_overrides"],
        use_cache=not loading["no_cache"],
    )


def run_pairs(
    command: str,
    model: str,
    settings: Settings,
    source: ModelSource,
    tps: tuple[tuple[str, str], tuple[str, str]],
    fail_on: FailOn,
    output_format: Enum,
) -> int:
    """The body of ``check`` (``command="check"``) and ``matrix``: analyse every prefill ×
    decode pair of ``model`` and print it; returns the exit code (0 passes, 1 fails the
    ``--fail-on`` gate; typed errors: one stderr line and their code,
    :func:`kvalign.cli.exit.guarded`).

    ``tps`` is ``((prefill list, its option name), (decode list, its option name))``.
    """
    from kvalign.cli.exit import guarded, json_on_error
    from kvalign.cli.output import CHECK, MATRIX, View

    formats = CHECK if command == "check" else MATRIX

    def run() -> int:
        from kvalign.pd import analyze

        (prefill_text, prefill_option), (decode_text, decode_option) = tps
        prefill = parse_tp_list(prefill_text, prefill_option)
        decode = parse_tp_list(decode_text, decode_option)
        report = analyze(source.load(model), settings, prefill, decode)
        formats.emit(report, output_format, View(fail_on.value))
        return report.exit_code(fail_on.value)

    return guarded(json_on_error(run, output_format))
