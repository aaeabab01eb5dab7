"""``kvalign verify``: compare kvalign's prediction with vLLM's own functions.

Three parts, kept apart on purpose:

* :func:`vllm_answer` is the only code that imports vLLM (lazily). For one TP it builds
  vLLM's ``ModelConfig`` / ``CacheConfig`` / ``ParallelConfig`` / ``AttentionConfig`` /
  ``VllmConfig`` (the same ``__post_init__`` validation and model-specific defaults as
  ``vllm serve``), resolves the model class through ``ModelRegistry`` and asks it for
  the Mamba state shapes and dtypes, prices pages with ``FullAttentionSpec`` /
  ``MLAAttentionSpec`` / ``MambaSpec.page_size_bytes``, runs the platform's
  ``update_block_size_for_backend`` (→ ``_align_hybrid_block_size``) and
  ``select_common_block_size``. No GPU, no weights, no model instantiation. It returns a
  plain frozen :class:`VllmAnswer`.
* :func:`compare` is pure: kvalign's :class:`~kvalign.alignment.RankResult` against a
  :class:`VllmAnswer`, field by field.
* :func:`verify` runs both for every TP and returns a :class:`Verification`.

Two inputs of vLLM's alignment exist only once layers are instantiated, so the probe
supplies them: the list of attention backends (``Platform._find_non_ssm_backends``:
the backend named by ``--attention-backend``, resolved by vLLM's
``AttentionBackendEnum``) and the prefill-checkpoint alignment
(``get_mamba_prefill_checkpoint_alignment``: kvalign's value, reported in the notes).
Capability-dependent kernels follow the machine vLLM runs on, not ``--gpu``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvalign.alignment import RankResult, analyze_rank
from kvalign.engine import create_engine_config
from kvalign.errors import InvalidSettings, KvalignError, MissingDependency
from kvalign.geometry import ModelGeometry
from kvalign.settings import Settings
from kvalign.versions import DEFAULT_PROFILE

#: what ``pip install 'kvalign[verify]'`` provides.
INSTALL_HINT = (
    "pip install 'kvalign[verify]' (installs vllm; kvalign's default profile models "
    f"vLLM {DEFAULT_PROFILE.verified[-1]})"
)

Shape = tuple[int, ...]


class VllmFailed(KvalignError):
    """vLLM raised while computing its answer for a configuration kvalign accepts."""


@dataclass(frozen=True)
class ProbeRequest:
    """Everything :func:`vllm_answer` needs for one TP (plain values, no kvalign types).

    Attributes:
        model: directory holding the model's ``config.json`` (vLLM's ``--model``).
        tp: tensor parallel size.
        attention_backend: ``AttentionBackendEnum`` member name for the attention layers
            (after kvalign's MLA-counterpart resolution).
        dtype, kv_cache_dtype, mamba_cache_dtype, mamba_ssm_cache_dtype: vLLM flag values.
        block_size: ``--block-size`` tokens, ``None`` when not given.
        enable_prefix_caching: ``--enable-prefix-caching``.
        hf_overrides: ``--hf-overrides`` as a dict, ``None`` when not given.
        checkpoint_alignment: prefill-checkpoint alignment in tokens (kvalign's value;
            vLLM reads it from instantiated layers).
    """

    model: str
    tp: int
    attention_backend: str
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    enable_prefix_caching: bool = True
    mamba_cache_dtype: str = "auto"
    mamba_ssm_cache_dtype: str = "auto"
    hf_overrides: Mapping[str, object] | None = None
    checkpoint_alignment: int = 1


@dataclass(frozen=True)
class VllmAnswer:
    """vLLM's numbers for one TP. Bytes (``*_bytes*``) and tokens (``*block_size``).

    ``None`` means vLLM computes no such quantity for the model (no attention layers:
    no attention page and no alignment; no state layers: no Mamba page).
    """

    vllm_version: str
    platform: str
    tp: int
    backend: str
    kv_heads_per_rank: int | None
    attn_page_bytes_per_token: int | None
    mamba_page_bytes: int | None
    mamba_state_shapes: tuple[Shape, ...]
    mamba_state_dtypes: tuple[str, ...]
    block_size: int | None
    kernel_block_size: int | None
    mamba_page_size_padded: int | None


def _dtype_name(dtype: object) -> str:
    return str(dtype).removeprefix("torch.")


def installed_vllm_version() -> str:
    """``vllm.__version__`` of the importable vLLM.

    Raises:
        MissingDependency: vLLM is not importable (message: how to install it).
        VllmFailed: importing vLLM raised something other than ``ImportError``.
    """
    try:
        import vllm
    except ImportError:
        raise MissingDependency(
            f"kvalign verify needs vLLM importable in this environment: {INSTALL_HINT}"
        ) from None
    except Exception as exc:
        raise VllmFailed(f"importing vllm failed: {type(exc).__name__}: {exc}") from None
    return str(getattr(vllm, "__version__", "unknown"))


def vllm_answer(request: ProbeRequest) -> VllmAnswer:
    """vLLM's own page sizes, state shapes/dtypes and block sizes for ``request``.

    Mirrors the call sequence of vLLM 0.33 ``Platform.update_block_size_for_backend``
    (``vllm/platforms/interface.py``), ``_align_hybrid_block_size`` and
    ``vllm/v1/worker/utils.py`` ``select_common_block_size``, on the platform vLLM
    detects on this machine. Imports vLLM lazily; exceptions from vLLM propagate.
    """
    import vllm
    from vllm.config import (
        AttentionConfig,
        CacheConfig,
        ModelConfig,
        ParallelConfig,
        VllmConfig,
        set_current_vllm_config,
    )
    from vllm.model_executor.layers.mamba import abstract as mamba_abstract
    from vllm.model_executor.models import ModelRegistry
    from vllm.platforms import current_platform
    from vllm.utils.torch_utils import STR_DTYPE_TO_TORCH_DTYPE
    from vllm.v1.attention.backends.registry import AttentionBackendEnum
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        MambaSpec,
        MLAAttentionSpec,
        get_kv_quant_mode,
    )
    from vllm.v1.worker.utils import select_common_block_size

    model_config = ModelConfig(
        model=request.model,
        tokenizer=request.model,
        skip_tokenizer_init=True,
        trust_remote_code=False,
        dtype=request.dtype,
        hf_overrides=dict(request.hf_overrides or {}),
    )
    cache_config = CacheConfig(
        block_size=request.block_size,
        cache_dtype=request.kv_cache_dtype,
        enable_prefix_caching=request.enable_prefix_caching,
        mamba_cache_dtype=request.mamba_cache_dtype,
        mamba_ssm_cache_dtype=request.mamba_ssm_cache_dtype,
    )
    backend_cls = AttentionBackendEnum[request.attention_backend].get_class()
    vllm_config = VllmConfig(
        model_config=model_config,
        cache_config=cache_config,
        parallel_config=ParallelConfig(tensor_parallel_size=request.tp),
        attention_config=AttentionConfig(backend=AttentionBackendEnum[request.attention_backend]),
    )
    parallel_config = vllm_config.parallel_config
    attention = not model_config.is_attention_free

    # The platform of this machine, with the two layer-derived inputs supplied.
    def _backends(cls: Any, config: Any) -> list[Any]:
        return [backend_cls] if attention else []

    probe: Any = type(
        "KvalignProbePlatform",
        (type(current_platform),),
        {"_find_non_ssm_backends": classmethod(_backends)},
    )
    original_checkpoint = mamba_abstract.get_mamba_prefill_checkpoint_alignment
    mamba_abstract.get_mamba_prefill_checkpoint_alignment = lambda config: (
        request.checkpoint_alignment
    )
    try:
        with set_current_vllm_config(vllm_config):
            kv_heads = model_config.get_num_kv_heads(parallel_config) if attention else None
            a: int | None = None
            if attention:
                cache_dtype = cache_config.cache_dtype
                torch_dtype = (
                    model_config.dtype
                    if cache_dtype == "auto"
                    else STR_DTYPE_TO_TORCH_DTYPE[cache_dtype]
                )
                if model_config.use_mla:
                    a = MLAAttentionSpec(
                        block_size=1,
                        num_kv_heads=kv_heads,
                        head_size=model_config.get_head_size(),
                        dtype=torch_dtype,
                        cache_dtype_str=cache_dtype,
                        kv_quant_mode=get_kv_quant_mode(cache_dtype),
                    ).page_size_bytes
                else:
                    spec = FullAttentionSpec(
                        block_size=1,
                        num_kv_heads=kv_heads,
                        head_size=model_config.get_head_size(),
                        dtype=torch_dtype,
                        kv_quant_mode=get_kv_quant_mode(cache_dtype),
                    )
                    a = backend_cls.customize_spec(spec).page_size_bytes
            shapes: tuple[Shape, ...] = ()
            dtypes: tuple[str, ...] = ()
            m: int | None = None
            if model_config.is_hybrid or model_config.is_attention_free:
                model_cls, _ = ModelRegistry.resolve_model_cls(
                    model_config.architecture, model_config=model_config
                )
                if hasattr(model_cls, "get_mamba_specs_from_config"):
                    # several state layouts (Qwen4Exp): vLLM aligns to the largest page
                    largest = max(
                        model_cls.get_mamba_specs_from_config(vllm_config),
                        key=lambda spec: spec.page_size_bytes,
                    )
                    raw_shapes, raw_dtypes = largest.shapes, largest.dtypes
                else:
                    raw_shapes = model_cls.get_mamba_state_shape_from_config(vllm_config)
                    raw_dtypes = model_cls.get_mamba_state_dtype_from_config(vllm_config)
                m = MambaSpec(shapes=raw_shapes, dtypes=raw_dtypes, block_size=-1).page_size_bytes
                shapes = tuple(tuple(int(d) for d in shape) for shape in raw_shapes)
                dtypes = tuple(_dtype_name(dt) for dt in raw_dtypes)
            block: int | None = None
            kernel: int | None = None
            if attention:
                probe.update_block_size_for_backend(vllm_config)
                block = int(cache_config.block_size)
                kernel = int(select_common_block_size(block, [backend_cls]))
    finally:
        mamba_abstract.get_mamba_prefill_checkpoint_alignment = original_checkpoint
    capability = current_platform.get_device_capability()
    platform = str(getattr(current_platform, "device_name", "") or type(current_platform).__name__)
    if capability is not None:
        platform += f" (SM{capability.major}{capability.minor})"
    padded = cache_config.mamba_page_size_padded
    return VllmAnswer(
        vllm_version=str(vllm.__version__),
        platform=platform,
        tp=request.tp,
        backend=backend_cls.get_name(),
        kv_heads_per_rank=kv_heads,
        attn_page_bytes_per_token=a,
        mamba_page_bytes=m,
        mamba_state_shapes=shapes,
        mamba_state_dtypes=dtypes,
        block_size=block,
        kernel_block_size=kernel,
        mamba_page_size_padded=int(padded) if padded is not None else None,
    )


#: the compared quantities, in display order: (field, label, unit).
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("kv_heads_per_rank", "KV heads per rank", "heads"),
    ("attn_page_bytes_per_token", "attention page per token", "bytes"),
    ("mamba_state_shapes", "Mamba state shapes", "elements"),
    ("mamba_state_dtypes", "Mamba state dtypes", ""),
    ("mamba_page_bytes", "Mamba page", "bytes"),
    ("block_size", "block size", "tokens"),
    ("kernel_block_size", "kernel block size", "tokens"),
    ("mamba_page_size_padded", "padded Mamba page", "bytes"),
)


@dataclass(frozen=True)
class FieldCheck:
    """One quantity from both sides. ``same`` is exact equality."""

    name: str
    label: str
    unit: str
    kvalign: object
    vllm: object

    @property
    def same(self) -> bool:
        """Both sides give the same value."""
        return self.kvalign == self.vllm


@dataclass(frozen=True)
class RankCheck:
    """kvalign against vLLM at one TP.

    ``rejected`` is the reason kvalign reports the TP as invalid; ``vllm_error`` the
    one-line error vLLM raised for it (both set: both reject it, which counts as
    agreement; only ``rejected``: vLLM accepted a TP kvalign rejects).
    """

    tp: int
    fields: tuple[FieldCheck, ...] = ()
    rejected: str = ""
    vllm_error: str = ""

    @property
    def identical(self) -> bool:
        """No difference at this TP."""
        if self.rejected:
            return bool(self.vllm_error)
        return all(check.same for check in self.fields)


@dataclass(frozen=True)
class Verification:
    """The result of ``kvalign verify`` for one model and settings."""

    geometry: ModelGeometry
    settings: Settings
    vllm_version: str
    platform: str
    profile_note: str
    ranks: tuple[RankCheck, ...]
    notes: tuple[str, ...]

    @property
    def identical(self) -> bool:
        """kvalign and vLLM agree on every TP."""
        return all(rank.identical for rank in self.ranks)


def _kvalign_value(rank: RankResult, name: str) -> object:
    value = getattr(rank, name)
    if name == "mamba_state_shapes":
        return tuple(tuple(shape) for shape in value)
    if name == "mamba_state_dtypes":
        return tuple(value)
    return value


def compare(rank: RankResult, answer: VllmAnswer) -> RankCheck:
    """Field-by-field comparison of kvalign's prediction with vLLM's answer at one TP.

    Pure. For attention-free models only the Mamba fields are compared (vLLM does no
    alignment for them).
    """
    names = FIELDS
    if rank.attention_free:
        names = tuple(
            f for f in FIELDS if f[0].startswith("mamba_state") or f[0] == "mamba_page_bytes"
        )
    checks = tuple(
        FieldCheck(name, label, unit, _kvalign_value(rank, name), getattr(answer, name))
        for name, label, unit in names
    )
    return RankCheck(tp=rank.tp, fields=checks)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


Probe = Callable[[ProbeRequest], VllmAnswer]


def verify(
    geometry: ModelGeometry,
    settings: Settings,
    tps: list[int],
    *,
    hf_overrides: Mapping[str, object] | None = None,
    probe: Probe | None = None,
    version: Callable[[], str] = installed_vllm_version,
) -> Verification:
    """Run kvalign and vLLM for every TP in ``tps`` and compare them.

    Without ``--vllm-version`` kvalign uses the profile of the installed vLLM release.
    ``geometry`` must have been loaded with the same ``hf_overrides`` (vLLM applies them
    itself, from the model directory's ``config.json``).

    Raises:
        MissingDependency: vLLM is not importable.
        VllmFailed: vLLM raised for a TP kvalign accepts (one line, with the TP).
        InvalidSettings: settings verify cannot reproduce (speculative tokens).
    """
    if settings.num_speculative_tokens:
        raise InvalidSettings(
            "--num-speculative-tokens: verify does not build a speculative config; "
            "compare without it"
        )
    installed = version()
    notes: list[str] = []
    if settings.vllm_version is None and installed != "unknown":
        settings = dataclasses.replace(settings, vllm_version=installed)
        notes.append(f"kvalign's release profile follows the installed vLLM {installed}")
    engine = create_engine_config(geometry, settings)
    run = probe or vllm_answer
    checkpoint = engine.checkpoint
    gdn = geometry.state is not None and geometry.state.family == "gdn"
    if engine.profile.gdn_checkpoint_alignment and gdn:
        notes.append(
            f"prefill-checkpoint alignment {checkpoint} supplied to vLLM by kvalign "
            f"(vLLM reads it from instantiated layers): {engine.checkpoint_note}"
        )
    if settings.gpu is not None:
        notes.append(
            f"--gpu {settings.gpu} applies to kvalign only: vLLM's capability-dependent "
            "kernels follow the machine verify runs on"
        )
    model_dir = str(Path(geometry.config_path).parent)
    ranks: list[RankCheck] = []
    platform = ""
    for tp in tps:
        rank = analyze_rank(geometry, engine, tp)
        request = ProbeRequest(
            model=model_dir,
            tp=tp,
            attention_backend=rank.backend
            or (engine.backend.name if engine.backend else settings.attention_backend.upper()),
            dtype=settings.dtype,
            kv_cache_dtype=settings.kv_cache_dtype,
            block_size=settings.block_size,
            enable_prefix_caching=engine.prefix_caching,
            mamba_cache_dtype=settings.mamba_cache_dtype,
            mamba_ssm_cache_dtype=settings.mamba_ssm_cache_dtype,
            hf_overrides=hf_overrides,
            checkpoint_alignment=checkpoint,
        )
        try:
            answer = run(request)
        except Exception as exc:
            if not rank.valid:
                ranks.append(RankCheck(tp=tp, rejected=rank.reason, vllm_error=_one_line(exc)))
                continue
            raise VllmFailed(f"vLLM raised at TP {tp}: {_one_line(exc)}") from None
        platform = answer.platform
        if not rank.valid:
            ranks.append(RankCheck(tp=tp, rejected=rank.reason))
            continue
        ranks.append(compare(rank, answer))
    return Verification(
        geometry=geometry,
        settings=settings,
        vllm_version=installed,
        platform=platform,
        profile_note=engine.profile_note,
        ranks=tuple(ranks),
        notes=tuple(notes),
    )
