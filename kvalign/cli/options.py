"""Shared command-line options (``vllm serve`` names) as typer declares them, and
``sizing_options``; their enums and value parsing live in :mod:`kvalign.cli.sizing`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from typer.models import OptionInfo

from kvalign.cli.exit import guarded, json_on_error
from kvalign.cli.output import OutputFormat
from kvalign.cli.sizing import (
    AlignmentChoice,
    FailOn,
    GdnBackendChoice,
    MambaBackendChoice,
    MambaCacheModeChoice,
    ModelSource,
    parse_tp_list,
    settings_from_flags,
    source_from_flags,
    warn_beyond_newest,
)
from kvalign.settings import MAX_BLOCK_SIZE, MAX_SPEC_TOKENS, MAX_TP
from kvalign.versions import newest

__all__ = [  # the typer-free names are defined in kvalign.cli.sizing
    "AlignmentChoice", "FailOn", "GdnBackendChoice", "MambaBackendChoice",
    "MambaCacheModeChoice", "ModelSource", "parse_tp_list", "sizing_options",
    "warn_beyond_newest",
]  # fmt: skip


FailOnOpt = Annotated[
    FailOn,
    typer.Option(
        "--fail-on",
        help="Exit 1 on findings at or above this severity (see docs/policy.md).",
    ),
]


# ---- help panels (``--help`` groups the options under these titles) ---------------------
#: prefill/decode tensor parallel sizes.
PD_PANEL = "P/D"
#: the ``vllm serve`` flags a pool runs with.
VLLM_PANEL = "vLLM flags"
#: how MODEL is read (hub revision, remote code, overrides, cache).
MODEL_PANEL = "Model loading"
#: what is printed and when the command exits 1.
OUTPUT_PANEL = "Output"


def in_panel(annotation: Any, panel: str, metavar: str | None = None) -> Any:
    """Put an ``Annotated[..., typer.Option(...)]`` option into help panel ``panel``
    (typer's ``rich_help_panel``), with ``metavar`` when given; returns the annotation."""
    for info in getattr(annotation, "__metadata__", ()):
        if isinstance(info, OptionInfo):
            info.rich_help_panel = panel
            if metavar is not None:
                info.metavar = metavar
    return annotation


def tp_list_option(flag: str, help: str) -> Any:
    """A comma-separated tensor parallel list option (``LIST``, P/D panel) for ``flag``;
    the text is parsed by :func:`parse_tp_list`."""
    return typer.Option(flag, metavar="LIST", rich_help_panel=PD_PANEL, help=help)


def tp_option(flag: str, help: str) -> Any:
    """One tensor parallel size option (``N``, 1 to :data:`~kvalign.settings.MAX_TP`, P/D
    panel) for ``flag``."""
    return typer.Option(flag, metavar="N", rich_help_panel=PD_PANEL, min=1, max=MAX_TP, help=help)


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


MambaBackendOpt = Annotated[
    MambaBackendChoice | None,
    typer.Option(
        "--mamba-backend",
        help="vLLM --mamba-backend (with --use-replayssm; default triton).",
        show_default=False,
    ),
]
TransformersOpt = Annotated[
    str | None,
    typer.Option(
        "--transformers-version",
        help="transformers release the pool runs with, inside the vLLM release's declared "
        "range (default: what installing that vLLM release resolves; docs/versions.md).",
        show_default=False,
    ),
]
PipelineOpt = Annotated[
    int,
    typer.Option(
        "--pipeline-parallel-size",
        "-pp",
        min=1,
        max=MAX_TP,
        help="vLLM --pipeline-parallel-size: stages without an attention layer keep their "
        "block size (vLLM ≥ 0.20; docs/versions.md).",
    ),
]
PpPartitionOpt = Annotated[
    str | None,
    typer.Option(
        "--pp-layer-partition",
        help="vLLM's VLLM_PP_LAYER_PARTITION: layers per pipeline stage, e.g. 24,28 "
        "(default: vLLM's even split).",
        show_default=False,
    ),
]
SkipLayersOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-cache-dtype-skip-layers",
        help="vLLM --kv-cache-dtype-skip-layers: attention layer indices (e.g. 0,5) that "
        "keep the model dtype next to a quantized --kv-cache-dtype (vLLM ≥ 0.19).",
        show_default=False,
    ),
]
SpecMethodOpt = Annotated[
    str | None,
    typer.Option(
        "--speculative-method",
        help="vLLM --speculative-config method, one the release knows (e.g. mtp, eagle3, "
        "extract_hidden_states, whose hidden-state layer is a KV-cache group of its own); "
        "give --num-speculative-tokens too (vLLM defaults it only for suffix: 24).",
        show_default=False,
    ),
]
AuxLayersOpt = Annotated[
    str | None,
    typer.Option(
        "--eagle-aux-hidden-state-layer-ids",
        help="--speculative-config draft_model_config.hf_config."
        "eagle_aux_hidden_state_layer_ids, e.g. 1,20,39 (extract_hidden_states).",
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
        "--alignment",
        help="vllm = the release's per-rank rule; tp-stable = the PR 45575 proposal.",
    ),
]
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Output format.")]
VersionOpt = Annotated[
    str | None,
    typer.Option(
        "--vllm-version",
        help=f"vLLM release whose rules apply (default: the newest profile, {newest().name}).",
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


for _annotation, _panel, _metavar in (
    (FailOnOpt, OUTPUT_PANEL, None),
    (FormatOpt, OUTPUT_PANEL, None),
    (DtypeOpt, VLLM_PANEL, "DTYPE"),
    (KvDtypeOpt, VLLM_PANEL, "DTYPE"),
    (BlockOpt, VLLM_PANEL, "N"),
    (PrefixOpt, VLLM_PANEL, None),
    (MambaDtypeOpt, VLLM_PANEL, "DTYPE"),
    (SsmDtypeOpt, VLLM_PANEL, "DTYPE"),
    (SpecOpt, VLLM_PANEL, "N"),
    (BackendOpt, VLLM_PANEL, "NAME"),
    (MambaCacheModeOpt, VLLM_PANEL, None),
    (MambaBlockOpt, VLLM_PANEL, "N"),
    (ReplayOpt, VLLM_PANEL, None),
    (ReplayLenOpt, VLLM_PANEL, "N"),
    (MambaBackendOpt, VLLM_PANEL, None),
    (MaxModelLenOpt, VLLM_PANEL, "N"),
    (PipelineOpt, VLLM_PANEL, "N"),
    (PpPartitionOpt, VLLM_PANEL, "COUNTS"),
    (SkipLayersOpt, VLLM_PANEL, "LAYERS"),
    (SpecMethodOpt, VLLM_PANEL, "NAME"),
    (AuxLayersOpt, VLLM_PANEL, "LAYERS"),
    (GpuOpt, VLLM_PANEL, "GPU"),
    (GdnOpt, VLLM_PANEL, None),
    (AlignOpt, VLLM_PANEL, None),
    (VersionOpt, VLLM_PANEL, "VERSION"),
    (RevisionOpt, MODEL_PANEL, "REV"),
    (NoCacheOpt, MODEL_PANEL, None),
    (TrustOpt, MODEL_PANEL, None),
    (HfOverridesOpt, MODEL_PANEL, "JSON"),
):
    in_panel(_annotation, _panel, _metavar)


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
    _param("transformers_version", TransformersOpt, None),
    _param("pipeline_parallel_size", PipelineOpt, 1),
    _param("pp_layer_partition", PpPartitionOpt, None),
    _param("kv_cache_dtype_skip_layers", SkipLayersOpt, None),
    _param("speculative_method", SpecMethodOpt, None),
    _param("eagle_aux_hidden_state_layer_ids", AuxLayersOpt, None),
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
            kwargs["settings"] = guarded(
                json_on_error(lambda: settings_from_flags(flags), kwargs.get("output_format"))
            )
            kwargs["source"] = source_from_flags(loading)
            func(**kwargs)

        wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper  # type: ignore[return-value]

    return decorate
