"""``kvalign verify``: compare kvalign's prediction with vLLM's own functions.

Three parts, kept apart on purpose:

* the probe (:mod:`kvalign.vllm_probe`, the only code that imports vLLM, lazily) runs the
  installed release's own code CPU-only: ``EngineArgs.create_engine_config`` (what
  ``vllm serve`` resolves: kv-cache dtype, prefix-caching default, Mamba cache mode,
  model config hooks and, in 0.14–0.19, the hybrid alignment), then the release's
  alignment step, spec classes and ``select_common_block_size``, through one small
  adapter per release range (:mod:`kvalign.vllm_probe.releases`). It returns a plain
  frozen :class:`VllmAnswer`.
* :func:`compare` is pure: kvalign's :class:`~kvalign.alignment.RankResult` against a
  :class:`VllmAnswer`, field by field.
* :func:`verify` runs both for every TP and returns a :class:`Verification`.

The probe's platform reports the capability of ``--gpu`` (default H100, SM 9.0), so
capability-dependent rules are the release's own for that GPU. Its machine has no
FlashInfer, so gated-delta-net prefill runs on Triton (no prefill checkpoints): kvalign's
side is compared with ``--gdn-prefill-backend triton``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kvalign.alignment import RankResult, analyze_rank
from kvalign.engine import EngineConfig, create_engine_config
from kvalign.errors import InvalidSettings, KvalignError, MissingDependency
from kvalign.geometry import ModelGeometry
from kvalign.settings import Settings
from kvalign.versions import DEFAULT_PROFILE
from kvalign.vllm_probe import ProbeRequest, VllmAnswer, in_tested_range, range_note
from kvalign.vllm_probe.boot import ASSUMABLE
from kvalign.vllm_probe.releases import RANGE_NOTE

__all__ = [
    "FIELDS",
    "FieldCheck",
    "ProbeRequest",
    "RankCheck",
    "Verification",
    "VllmAnswer",
    "VllmFailed",
    "compare",
    "installed_vllm_version",
    "verify",
]

#: how to get vLLM beside kvalign (kvalign is not on PyPI: the extra from a checkout).
INSTALL_HINT = (
    "pip install '.[verify]' in a kvalign checkout (installs vllm; kvalign's default "
    f"profile models vLLM {DEFAULT_PROFILE.verified[-1]}; verify is tested on vLLM {RANGE_NOTE})"
)


class VllmFailed(KvalignError):
    """vLLM (or the probe driving it) raised outside any configuration verdict."""


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


def default_probe(request: ProbeRequest) -> VllmAnswer:
    """The real probe (:func:`kvalign.vllm_probe.run.vllm_answer`), imported lazily."""
    from kvalign.vllm_probe.run import vllm_answer

    return vllm_answer(request)


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
    one-line reason vLLM refused the configuration (or "does not know this
    architecture"). Both set: both reject it, which counts as agreement; only one set:
    a difference.
    """

    tp: int
    fields: tuple[FieldCheck, ...] = ()
    rejected: str = ""
    vllm_error: str = ""

    @property
    def identical(self) -> bool:
        """No difference at this TP."""
        if self.rejected or self.vllm_error:
            return bool(self.rejected) and bool(self.vllm_error)
        return all(check.same for check in self.fields)


@dataclass(frozen=True)
class Verification:
    """The result of ``kvalign verify`` for one model and settings.

    ``tested`` is False when the installed vLLM lies outside the releases verify was
    tested on (:data:`kvalign.vllm_probe.TESTED_RELEASES`); ``range_note`` says so in
    words.
    """

    geometry: ModelGeometry
    settings: Settings
    vllm_version: str
    platform: str
    profile_note: str
    ranks: tuple[RankCheck, ...]
    notes: tuple[str, ...]
    tested: bool = True
    range_note: str = ""

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
    alignment for them). A configuration only one side rejects is one difference
    (``rejected`` / ``vllm_error``).
    """
    if not rank.valid or not answer.valid:
        error = answer.error if not answer.valid else ""
        if answer.unknown_architecture:
            error = f"vLLM {answer.vllm_version} does not know this architecture"
        return RankCheck(
            tp=rank.tp, rejected=rank.reason if not rank.valid else "", vllm_error=error
        )
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


def _request(
    geometry: ModelGeometry,
    engine: EngineConfig,
    tp: int,
    hf_overrides: Mapping[str, object] | None,
) -> ProbeRequest:
    settings = engine.settings
    # the backend kvalign resolved (``auto`` → vLLM's choice for the GPU; MLA counterparts
    # pass through the probe unchanged), so both sides size pages for the same kernels
    backend = engine.backend.name if engine.backend is not None else settings.attention_backend
    return ProbeRequest(
        model=str(Path(geometry.config_path).parent),
        tp=tp,
        attention_backend=backend.strip().upper(),
        dtype=settings.dtype,
        kv_cache_dtype=settings.kv_cache_dtype,
        block_size=settings.block_size,
        enable_prefix_caching=settings.enable_prefix_caching,
        mamba_cache_mode=getattr(settings, "mamba_cache_mode", None),
        mamba_cache_dtype=settings.mamba_cache_dtype,
        mamba_ssm_cache_dtype=settings.mamba_ssm_cache_dtype,
        num_speculative_tokens=settings.num_speculative_tokens,
        hf_overrides=hf_overrides,
        gpu=settings.gpu,
        kv_cache_dtype_skip_layers=settings.kv_cache_dtype_skip_layers,
    )


def verify(
    geometry: ModelGeometry,
    settings: Settings,
    tps: list[int],
    *,
    hf_overrides: Mapping[str, object] | None = None,
    probe: Probe | None = None,
    version: Callable[[], str] | None = None,
) -> Verification:
    """Run kvalign and vLLM for every TP in ``tps`` and compare them.

    Without ``--vllm-version`` kvalign uses the profile of the installed vLLM release.
    ``geometry`` must have been loaded with the same ``hf_overrides`` (vLLM applies them
    itself, from the model directory's ``config.json``). vLLM runs as if on ``--gpu``
    (default H100); kvalign's gated-delta-net prefill is taken as Triton, as on the
    probe.

    Raises:
        MissingDependency: vLLM is not importable.
        InvalidSettings: ``--gpu`` names a device the probe cannot assume.
        VllmFailed: vLLM or the probe raised outside a configuration verdict (one line,
            with the TP).
    """
    installed = (version or installed_vllm_version)()
    notes: list[str] = []
    if settings.vllm_version is None and installed != "unknown":
        settings = dataclasses.replace(settings, vllm_version=installed)
        notes.append(f"kvalign's release profile follows the installed vLLM {installed}")
    if settings.gpu is not None and settings.gpu.upper() not in ASSUMABLE:
        raise InvalidSettings(
            f"--gpu {settings.gpu}: verify can run vLLM as if on " + ", ".join(sorted(ASSUMABLE))
        )
    if settings.gpu is None:
        notes.append("vLLM runs as if on an H100 (SM 9.0); pass --gpu to assume another GPU")
    if settings.gdn_prefill_backend != "triton" and (
        geometry.state is not None and geometry.state.family == "gdn"
    ):
        settings = dataclasses.replace(settings, gdn_prefill_backend="triton")
        notes.append(
            "GDN prefill compared on Triton (no prefill checkpoints): the probe machine has "
            "no FlashInfer, so vLLM's layers export none"
        )
    engine = create_engine_config(geometry, settings)
    run = probe or default_probe
    ranks: list[RankCheck] = []
    platform = ""
    for tp in tps:
        rank = analyze_rank(geometry, engine, tp)
        try:
            answer = run(_request(geometry, engine, tp, hf_overrides))
        except Exception as exc:
            raise VllmFailed(f"vLLM raised at TP {tp}: {_one_line(exc)}") from None
        if answer.not_measured:
            raise VllmFailed(f"vLLM {installed} at TP {tp}: {answer.not_measured}")
        platform = answer.platform or platform
        ranks.append(compare(rank, answer))
        for note in answer.notes:
            if note not in notes:
                notes.append(note)
    return Verification(
        geometry=geometry,
        settings=settings,
        vllm_version=installed,
        platform=platform,
        profile_note=engine.profile_note,
        ranks=tuple(ranks),
        notes=tuple(notes),
        tested=in_tested_range(installed),
        range_note=range_note(installed),
    )
