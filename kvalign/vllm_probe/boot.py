"""Bring vLLM's configuration code up in this process, CPU-only.

What ``vllm serve`` needs a GPU for is replaced, nothing else:

* **no compiled kernels**: vLLM's extension modules (``vllm/_C*.so`` and friends) are
  replaced by empty modules when imported (:class:`_NoKernels`), so no CUDA library is
  loaded; configuration code never calls them.
* **the device is named, not inferred**: :func:`boot` installs a CUDA platform
  (a subclass of the release's own ``vllm.platforms.cuda.CudaPlatformBase``) as
  ``vllm.platforms.current_platform`` before any vLLM module binds it. Only the device
  queries are answered (capability, name, memory, count, NVLink), from the
  :class:`AssumedGpu`; every rule that reads the capability is the release's own.
  ``torch.cuda.get_device_capability`` / ``get_device_name`` (read at import time by
  e.g. ``vllm_flash_attn`` in 0.14) answer the same without touching the driver.
  CUDA is never initialised: ``CUDA_VISIBLE_DEVICES`` is set to ``""`` in this process
  (torch sees no device), which is also the setting under which vLLM keeps the real
  Triton package (``vllm/triton_utils/importing.py``: no active driver is "expected
  during initialization") — model modules build ``triton.Config`` lists at import time,
  some only on SM 9.0.
* **kernel-support queries answer "unsupported"**: model modules ask the compiled ops at
  import time whether a kernel is supported (e.g.
  ``torch.ops._C.cutlass_scaled_mm_supports_block_fp8``); in vLLM's op namespaces
  (``torch.ops._C`` and friends, see :class:`_NoOps`) those queries return ``False``
  and every other op is absent (``hasattr`` is ``False``, as vLLM's own guards expect
  when an extension is not built). No KV-cache sizing rule reads these answers.
* **model classes are inspected in-process**: ``ModelRegistry`` normally inspects a model
  class in a fresh subprocess (``registry._run_in_subprocess``), which would see none of
  the above, and caches the result on disk (``~/.cache/vllm/modelinfos``) keyed by file
  hash only; here it inspects in this process and neither reads nor writes that cache.
* **vLLM's own config classes stand in for remote code**: under transformers 4.x (the
  0.14/0.17 pins) some model types (``nemotron_h``) exist only as the repository's
  remote code, which is never executed here; vLLM ships its own copy of those classes in
  ``vllm.transformers_utils.configs``, and :func:`boot` registers each one transformers
  does not know with ``AutoConfig`` (:data:`REGISTERED_CONFIGS` lists them).
* **no network; FlashInfer's cubins assumed present**: ``vllm.utils.flashinfer``'s
  ``has_nvidia_artifactory`` (an HTTP request to NVIDIA's artifactory) answers ``True``,
  as on a deployment with ``flashinfer-cubin`` installed; that is what lets the release's
  own rules enable TRT-LLM paths (e.g. FlashInfer's ≥128-token pages on Blackwell).
* **FlashInfer without flashinfer**: the FlashInfer backend module imports ``flashinfer``
  at module level. :func:`import_backend_module` lets it import against placeholder
  ``flashinfer`` modules that exist only during that import, so the backend class's
  pure methods (``get_supported_kernel_block_sizes``) can be called; nothing of
  flashinfer runs, and ``importlib.util.find_spec("flashinfer")`` still says "absent"
  afterwards.

Everything here is glue that is the same for every release in the tested range; what
differs per release lives in :mod:`kvalign.vllm_probe.releases`.
"""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: compiled extension modules are never loaded (no CUDA runtime is needed).
_KERNEL_PACKAGES = ("vllm",)


@dataclass(frozen=True)
class AssumedGpu:
    """The device the probe platform reports (what ``nvidia-smi`` would say).

    Attributes:
        name: device name (e.g. ``"NVIDIA H100 80GB HBM3"``).
        capability: CUDA compute capability ``(major, minor)``.
        memory_bytes: device memory in bytes.
    """

    name: str
    capability: tuple[int, int]
    memory_bytes: int = 80 << 30

    @property
    def label(self) -> str:
        """``"NVIDIA H100 80GB HBM3 (SM 9.0)"``."""
        return f"{self.name} (SM {self.capability[0]}.{self.capability[1]})"


#: the default assumption (no capability-dependent rule fires on SM 9.0 except
#: Hopper-only ones).
H100 = AssumedGpu("NVIDIA H100 80GB HBM3", (9, 0))

#: GPUs a probe can assume, by kvalign's ``--gpu`` names.
ASSUMABLE: dict[str, AssumedGpu] = {
    "A100": AssumedGpu("NVIDIA A100-SXM4-80GB", (8, 0)),
    "L40S": AssumedGpu("NVIDIA L40S", (8, 9), 48 << 30),
    "H100": H100,
    "H200": AssumedGpu("NVIDIA H200", (9, 0), 141 << 30),
    "B200": AssumedGpu("NVIDIA B200", (10, 0), 180 << 30),
    "B300": AssumedGpu("NVIDIA B300", (10, 3), 270 << 30),
    "GB200": AssumedGpu("NVIDIA GB200", (10, 0), 186 << 30),
    "GB300": AssumedGpu("NVIDIA GB300", (10, 3), 279 << 30),
    "RTX PRO 6000": AssumedGpu("NVIDIA RTX PRO 6000 Blackwell", (12, 0), 96 << 30),
}


class _EmptyModule(importlib.abc.Loader):
    """Loader of an empty module (a compiled extension that is not loaded)."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _NoKernels(importlib.abc.MetaPathFinder):
    """Replace vLLM's compiled extension modules (``*.so``) with empty modules."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".", 1)[0] not in _KERNEL_PACKAGES or "." not in fullname:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not str(spec.origin or "").endswith((".so", ".pyd")):
            return None
        return importlib.machinery.ModuleSpec(fullname, _EmptyModule())


#: torch.ops namespaces of vLLM's compiled extensions.
_OP_NAMESPACES = (
    "_C",
    "_C_cache_ops",
    "_C_custom_ar",
    "_moe_C",
    "_rocm_C",
    "_vllm_fa2_C",
    "_vllm_fa3_C",
    "_flashmla_C",
    "_flashmla_extension_C",
    "_qutlass_C",
)


class _NoOp:
    """An op of a compiled extension that is not loaded: calling it returns ``False``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: object, **kwargs: object) -> bool:
        return False

    def __getattr__(self, name: str) -> _NoOp:  # e.g. ``.default`` overloads
        if name.startswith("__"):
            raise AttributeError(name)
        return _NoOp(f"{self.name}.{name}")


class _NoOps:
    """A ``torch.ops`` namespace of an extension that is not loaded: its kernel-support
    queries (op names containing ``support``) are :class:`_NoOp`; other ops are absent."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, name: str) -> _NoOp:
        if name.startswith("__") or "support" not in name:
            raise AttributeError(f"{self.name}.{name}: compiled extension not loaded")
        return _NoOp(f"{self.name}.{name}")


class _Placeholder:
    """Stands for any flashinfer object during an import; never meant to be used."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        return None

    def __call__(self, *args: object, **kwargs: object) -> _Placeholder:
        return _Placeholder()

    def __getattr__(self, name: str) -> _Placeholder:
        return _Placeholder()


class _PlaceholderModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (_Placeholder,), {})


class _PlaceholderLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _PlaceholderModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _PlaceholderFinder(importlib.abc.MetaPathFinder):
    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.split(".", 1)[0] not in self.roots:
            return None
        return importlib.machinery.ModuleSpec(fullname, _PlaceholderLoader(), is_package=True)


def import_backend_module(module: str, absent: tuple[str, ...] = ("flashinfer",)) -> Any:
    """Import ``module`` (an attention-backend module of vLLM) even if ``absent`` are.

    The packages in ``absent`` that are really missing are served by placeholders for
    the duration of this import only, then forgotten. Real packages are used as is.
    """
    missing = tuple(root for root in absent if importlib.util.find_spec(root) is None)
    if not missing:
        return importlib.import_module(module)
    finder = _PlaceholderFinder(missing)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module(module)
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.split(".", 1)[0] in missing]:
            del sys.modules[name]
        _forget_flashinfer_presence()


def _forget_flashinfer_presence() -> None:  # pragma: no cover - real vLLM only
    """Clear cached "flashinfer is installed" answers taken while placeholders existed."""
    utils = sys.modules.get("vllm.utils.flashinfer")
    if utils is None:
        return
    for value in vars(utils).values():
        clear = getattr(value, "cache_clear", None)
        if callable(clear):
            clear()


_BOOTED: dict[str, Any] = {}

#: model types whose vLLM config class :func:`boot` registered with transformers.
REGISTERED_CONFIGS: list[str] = []


def _register_vllm_config_classes() -> None:  # pragma: no cover - real vLLM only
    transformers: Any = importlib.import_module("transformers")
    auto: Any = importlib.import_module("transformers.models.auto.configuration_auto")
    configs: Any = importlib.import_module("vllm.transformers_utils.configs")
    for name in getattr(configs, "__all__", ()):
        try:
            cls = getattr(configs, name)
        except Exception:  # a class whose module needs something absent
            continue
        model_type = getattr(cls, "model_type", None)
        if isinstance(model_type, str) and model_type and model_type not in auto.CONFIG_MAPPING:
            transformers.AutoConfig.register(model_type, cls)
            REGISTERED_CONFIGS.append(model_type)


def _cubins_available() -> bool:
    return True


def boot(gpu: AssumedGpu = H100) -> Any:  # pragma: no cover - real vLLM only
    """Make vLLM's configuration code runnable here; return the installed platform.

    Idempotent for the same ``gpu``. Best run before vLLM is imported; modules that
    already bound the platform vLLM detected (from 0.25 ``import vllm`` does) are rebound.

    Raises:
        RuntimeError: the probe was booted with another GPU in this process (one
            assumption per process: vLLM caches capability-derived answers).
    """
    if _BOOTED:
        if _BOOTED["gpu"] != gpu:
            raise RuntimeError(
                f"the vLLM probe is already running as {_BOOTED['gpu'].label}; "
                f"one GPU assumption per process (asked for {gpu.label})"
            )
        return _BOOTED["platform"]
    if not any(isinstance(f, _NoKernels) for f in sys.meta_path):
        sys.meta_path.insert(0, _NoKernels())
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    torch: Any = importlib.import_module("torch")
    for namespace in _OP_NAMESPACES:
        setattr(torch.ops, namespace, _NoOps(namespace))

    def _torch_capability(device: object = None) -> tuple[int, int]:
        return gpu.capability

    def _torch_name(device: object = None) -> str:
        return gpu.name

    torch.cuda.get_device_capability = _torch_capability
    torch.cuda.get_device_name = _torch_name
    # from 0.25 ``import vllm`` itself (``vllm.env_override``) resolves the platform
    platforms: Any = importlib.import_module("vllm.platforms")
    previous = getattr(platforms, "_current_platform", None)
    cuda: Any = importlib.import_module("vllm.platforms.cuda")
    interface: Any = importlib.import_module("vllm.platforms.interface")
    capability = interface.DeviceCapability(major=gpu.capability[0], minor=gpu.capability[1])

    def _capability(cls: Any, device_id: int = 0) -> Any:
        return capability

    def _name(cls: Any, device_id: int = 0) -> str:
        return gpu.name

    def _memory(cls: Any, device_id: int = 0) -> int:
        return gpu.memory_bytes

    def _connected(cls: Any, device_ids: list[int]) -> bool:
        return True

    def _count(cls: Any) -> int:
        return 64

    def _uuid(cls: Any, device_id: int = 0) -> str:
        return f"GPU-kvalign-probe-{device_id}"

    probe_cls = type(
        "KvalignProbeCudaPlatform",
        (cuda.CudaPlatformBase,),
        {
            "get_device_capability": classmethod(_capability),
            "get_device_name": classmethod(_name),
            "get_device_total_memory": classmethod(_memory),
            "is_fully_connected": classmethod(_connected),
            "device_count": classmethod(_count),
            "get_device_uuid": classmethod(_uuid),
        },
    )
    platform = probe_cls()
    platforms._current_platform = platform
    if previous is not None:
        # modules imported so far bound the platform vLLM detected: rebind them
        for module in list(sys.modules.values()):
            try:
                if vars(module).get("current_platform") is previous:
                    vars(module)["current_platform"] = platform
            except TypeError:  # not a module namespace
                continue
    registry: Any = importlib.import_module("vllm.model_executor.models.registry")

    def _in_process(fn: Any) -> Any:
        return fn()

    def _no_cache(self: Any, *args: Any) -> None:
        return None

    registry._run_in_subprocess = _in_process
    _register_vllm_config_classes()
    flashinfer_utils: Any = importlib.import_module("vllm.utils.flashinfer")
    if hasattr(flashinfer_utils, "has_nvidia_artifactory"):
        # it would probe NVIDIA's artifactory over the network; answer as a deployment
        # with FlashInfer's cubins installed (what makes TRT-LLM paths usable)
        flashinfer_utils.has_nvidia_artifactory = _cubins_available
    lazy = getattr(registry, "_LazyRegisteredModel", None)
    for name in ("_load_modelinfo_from_cache", "_save_modelinfo_to_cache"):
        if lazy is not None and hasattr(lazy, name):
            setattr(lazy, name, _no_cache)
    _BOOTED.update(gpu=gpu, platform=platform)
    return platform


def release_function(module: str, qualname: str) -> Any:
    """The function ``qualname`` of the release's ``module``, without importing ``module``.

    For functions whose module cannot be imported CPU-only (0.14's
    ``vllm/v1/worker/gpu_model_runner.py`` pulls in numba, mistral_common, ...): the
    release's own source of that one function is compiled (decorators dropped,
    annotations left unevaluated) with the module-level imports it uses, and returned.
    Nothing of it is copied into kvalign.

    Raises:
        LookupError: ``module`` has no such function.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise LookupError(f"{module}: not found")
    with open(spec.origin, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=spec.origin)
    body: list[ast.stmt] = tree.body
    node: ast.FunctionDef | None = None
    for part in qualname.split("."):
        found = next(
            (n for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part),
            None,
        )
        if found is None:
            raise LookupError(f"{module}.{qualname}: not found")
        body = found.body
        node = found if isinstance(found, ast.FunctionDef) else None
    if node is None:
        raise LookupError(f"{module}.{qualname}: not a function")
    node.decorator_list = []
    imported: dict[str, tuple[str, str | None]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for alias in stmt.names:
                imported[alias.asname or alias.name] = (stmt.module, alias.name)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                imported[alias.asname or alias.name.split(".")[0]] = (alias.name, None)
    namespace: dict[str, Any] = {"__name__": module}
    used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    for name in used & imported.keys():
        source, attr = imported[name]
        target = importlib.import_module(source)
        namespace[name] = getattr(target, attr) if attr else target
    code = compile(
        ast.Module(body=[node], type_ignores=[]),
        spec.origin,
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    exec(code, namespace)
    return namespace[node.name]
