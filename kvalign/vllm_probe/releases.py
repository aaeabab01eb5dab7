"""Release-specific glue: one small adapter per range of vLLM releases.

Each adapter answers three questions the way that release's own code does, and only
those (the shared sequence is in :mod:`kvalign.vllm_probe.run`):

* **where the hybrid alignment runs** — in 0.14–0.19 inside ``VllmConfig.__post_init__``
  (``vllm/model_executor/models/config.py``
  ``HybridAttentionMambaModelConfig.verify_and_update_config``), i.e. already done by
  ``EngineArgs.create_engine_config``; from 0.20 after the model is built, in
  ``vllm/platforms/interface.py`` ``Platform.update_block_size_for_backend`` →
  ``_align_hybrid_block_size``, whose only layer-derived input — the attention backends
  of the built layers (``_find_non_ssm_backend``: one class in 0.20–0.28;
  ``_find_non_ssm_backends``: the distinct classes in 0.31 and 0.33; 0.29/0.30 were not
  read, so the adapter uses whichever the release defines) — the adapter supplies.
  0.18/0.19 already have ``update_block_size_for_backend`` but it resets a hybrid's block
  to 16 and the hook's block is re-established when page sizes are unified; the adapter
  keeps the hook's.
* **how the kernel block size is chosen** — ``select_common_block_size``: a static
  method of ``GPUModelRunner`` over attention groups in 0.14, a function of
  ``vllm/v1/worker/utils.py`` over attention groups in 0.17, over backend classes from
  0.18, with per-backend KV-cache specs in 0.33.
* **which flags exist** — ``--mamba-cache-mode`` exists from 0.15 (0.17 in the tested
  releases); a request using it on a release without it is refused like ``vllm serve``
  refuses an unknown flag.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from packaging.version import InvalidVersion, Version

from kvalign.vllm_probe.boot import release_function

#: the releases whose own code produced tests/golden/vllm-X.Y.Z.jsonl.
TESTED_RELEASES: tuple[str, ...] = (
    "0.14.0",
    "0.17.0",
    "0.18.1",
    "0.20.0",
    "0.21.0",
    "0.25.0",
    "0.27.1",
    "0.28.0",
    "0.31.0",
    "0.33.0",
)

Align = Callable[[Any, Any, Any], tuple[str, ...]]
Kernel = Callable[[Any, int, Any, Any], int]


def _align_in_config_hook(
    platform: Any, vllm_config: Any, backend_cls: Any
) -> tuple[str, ...]:  # pragma: no cover - real vLLM only
    """0.14–0.17: the hook already ran in ``VllmConfig.__post_init__``."""
    return ("alignment: HybridAttentionMambaModelConfig.verify_and_update_config",)


def _align_hook_then_reset(
    platform: Any, vllm_config: Any, backend_cls: Any
) -> tuple[str, ...]:  # pragma: no cover - real vLLM only
    """0.18–0.19: hook in ``__post_init__``; ``update_block_size_for_backend`` only
    touches non-hybrid models (a hybrid's reset to 16 is undone when page sizes are
    unified, so the hook's block is final)."""
    if not vllm_config.model_config.is_hybrid:
        # it reads the built layers' backend itself; none are built: the default block
        platform.update_block_size_for_backend(vllm_config)
        return ("block size: Platform.update_block_size_for_backend (no layers built)",)
    return ("alignment: HybridAttentionMambaModelConfig.verify_and_update_config",)


def _with_backends(platform: Any, backend_cls: Any) -> Any:  # pragma: no cover - real vLLM only
    """A subclass of the probe platform whose layer discovery returns ``backend_cls``:
    ``_find_non_ssm_backends`` (a list; 0.31, 0.33) where the release has it, else
    ``_find_non_ssm_backend`` (one class; 0.20–0.28)."""
    if hasattr(type(platform), "_find_non_ssm_backends"):

        def _find(cls: Any, vllm_config: Any) -> Any:
            return [backend_cls]

        finder = "_find_non_ssm_backends"
    else:

        def _find(cls: Any, vllm_config: Any) -> Any:
            return backend_cls

        finder = "_find_non_ssm_backend"
    return type("KvalignProbeLayers", (type(platform),), {finder: classmethod(_find)})


def _align_on_platform(
    platform: Any, vllm_config: Any, backend_cls: Any
) -> tuple[str, ...]:  # pragma: no cover - real vLLM only
    """0.20 on: ``Platform.update_block_size_for_backend`` → ``_align_hybrid_block_size``."""
    _with_backends(platform, backend_cls).update_block_size_for_backend(vllm_config)
    return ("alignment: Platform.update_block_size_for_backend → _align_hybrid_block_size",)


def _groups(backend_cls: Any) -> list[Any]:  # pragma: no cover - real vLLM only
    # the only attribute select_common_block_size reads from an AttentionGroup
    return [SimpleNamespace(backend=backend_cls)]


def _kernel_runner_groups(
    vllm: Any, block: int, backend_cls: Any, spec: Any
) -> int:  # pragma: no cover - real vLLM only
    # its module (the GPU model runner) cannot be imported CPU-only: the one function
    select = release_function(
        "vllm.v1.worker.gpu_model_runner", "GPUModelRunner.select_common_block_size"
    )
    return int(select(block, _groups(backend_cls)))


def _kernel_utils(
    vllm: Any, block: int, backend_cls: Any, spec: Any
) -> int:  # pragma: no cover - real vLLM only
    from vllm.v1.worker import utils

    select = utils.select_common_block_size
    parameters = list(inspect.signature(select).parameters)
    if parameters[1] == "attn_groups":
        return int(select(block, _groups(backend_cls)))
    if len(parameters) >= 3:
        return int(select(block, [backend_cls], [spec]))
    return int(select(block, [backend_cls]))


@dataclass(frozen=True)
class Adapter:
    """How one range of releases is driven.

    Attributes:
        name: the range, e.g. ``"0.20–0.28"``.
        first: first release of the range (inclusive).
        align: runs the release's alignment on a built ``VllmConfig``.
        kernel_block_size: the release's ``select_common_block_size`` for one backend.
        mamba_cache_mode: the release has ``--mamba-cache-mode``.
    """

    name: str
    first: str
    align: Align
    kernel_block_size: Kernel
    mamba_cache_mode: bool


ADAPTERS: tuple[Adapter, ...] = (
    Adapter("0.14", "0.14.0", _align_in_config_hook, _kernel_runner_groups, False),
    Adapter("0.15–0.17", "0.15.0", _align_in_config_hook, _kernel_utils, True),
    Adapter("0.18–0.19", "0.18.0", _align_hook_then_reset, _kernel_utils, True),
    Adapter("0.20–0.28", "0.20.0", _align_on_platform, _kernel_utils, True),
    Adapter("0.29–0.33", "0.29.0", _align_on_platform, _kernel_utils, True),
)

#: releases from TESTED_RELEASES[0] up to the last patch of the newest tested minor.
RANGE_NOTE = f"{TESTED_RELEASES[0]}–{TESTED_RELEASES[-1].rsplit('.', 1)[0]}.x"


def _parse(version: str) -> Version | None:
    try:
        return Version(version.split("+", 1)[0])
    except InvalidVersion:
        return None


def in_tested_range(version: str) -> bool:
    """``version`` lies between the oldest and the newest tested release (patch
    releases of the newest tested minor included)."""
    parsed = _parse(version)
    if parsed is None:
        return False
    newest = Version(TESTED_RELEASES[-1])
    return Version(TESTED_RELEASES[0]) <= parsed and parsed.release[:2] <= newest.release[:2]


def adapter_for(version: str) -> Adapter:
    """The adapter of ``version``'s range (the nearest one outside the tested range)."""
    parsed = _parse(version) or Version(TESTED_RELEASES[-1])
    chosen = ADAPTERS[0]
    for adapter in ADAPTERS:
        if parsed >= Version(adapter.first):
            chosen = adapter
    return chosen


def range_note(version: str) -> str:
    """One line saying whether ``version`` was measured, in range, or outside it."""
    if version in TESTED_RELEASES:
        return f"vLLM {version} is one of the releases verify was measured on"
    if in_tested_range(version):
        return (
            f"vLLM {version} lies in the tested range {RANGE_NOTE} but was not itself "
            "measured; driven like its neighbours"
        )
    return (
        f"vLLM {version} is OUTSIDE the range kvalign verify was tested on "
        f"({RANGE_NOTE}); its answer may be wrong or it may fail"
    )
