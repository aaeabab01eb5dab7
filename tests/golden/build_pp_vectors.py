"""Build tests/golden/pp-X.Y.Z.jsonl: pipeline-parallel stages, measured with a real vLLM.

Not a test and never run by CI: it needs a real vLLM release (``make verify-releases``
runs it next to build_release_vectors.py). No kvalign arithmetic is used; per stage:

* its layers: ``vllm.distributed.utils.get_pp_indices(num_hidden_layers, rank, pp)``;
* whether it owns an attention layer: the model config's own per-layer list as vLLM
  loads it (``hf_text_config.layers_block_type`` / ``layer_types``), with the
  release's own ``ModelConfig``;
* its block size: a copy of the ``VllmConfig`` that ``EngineArgs.create_engine_config``
  built (``--pipeline-parallel-size`` given), then the release's
  ``Platform.update_block_size_for_backend`` with the stage's layers: for a stage with an
  attention layer the probe supplies the backend (as kvalign.vllm_probe does), for a stage
  without one nothing is supplied, which is what ``_find_non_ssm_backends`` sees on that
  worker (it finds no attention layer among the layers the stage built).

    PYTHONPATH=/root/vllm-env/0.33.0 VLLM_PLUGINS="" /root/vllm-env/venv/bin/python \\
        tests/golden/build_pp_vectors.py --out tests/golden/pp-0.33.0.jsonl
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "configs" / "models"
#: (model id, TP, PP): a Nemotron-H pattern whose last layers hold no attention layer
#: (PP 6 leaves stage 5 without one; PP 2 and 4 do not), and Qwen3.5 (every fourth
#: layer is attention: every stage owns one).
CASES = (
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, 2),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, 4),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, 6),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 2, 6),
    ("Qwen/Qwen3.5-27B", 2, 4),
)
ATTENTION_NAMES = {"attention", "full_attention", "*", "hybrid"}


def _stage_block(platform: Any, adapter: Any, base: Any, backend_cls: Any | None) -> Any:
    cfg = copy.deepcopy(base)
    if backend_cls is None:
        platform.update_block_size_for_backend(cfg)  # no attention layer on this worker
    else:
        adapter.align(platform, cfg, backend_cls)
    return cfg.cache_config


def measure(model_id: str, tp: int, pp: int, prefix: bool | None) -> dict[str, Any]:
    """One line: the stages of ``model_id`` at ``tp`` × ``pp`` (prefix caching ``prefix``)."""
    from kvalign.vllm_probe.boot import H100, boot
    from kvalign.vllm_probe.releases import adapter_for
    from kvalign.vllm_probe.run import _backend_class, _engine_kwargs
    from kvalign.vllm_probe.types import ProbeRequest

    platform = boot(H100)
    import vllm
    from vllm.config import set_current_vllm_config
    from vllm.distributed.utils import get_pp_indices
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    adapter = adapter_for(str(vllm.__version__))
    request = ProbeRequest(model=str(CATALOG / model_id), tp=tp, enable_prefix_caching=prefix)
    names = {f.name for f in dataclasses.fields(EngineArgs)}
    kwargs = _engine_kwargs(request, adapter.mamba_cache_mode, "swap_space" in names)
    kwargs["pipeline_parallel_size"] = pp
    base = EngineArgs(**kwargs).create_engine_config(UsageContext.OPENAI_API_SERVER)
    text = base.model_config.hf_text_config
    kinds = getattr(text, "layers_block_type", None) or getattr(text, "layer_types", None)
    layers = int(text.num_hidden_layers)
    stages = []
    with set_current_vllm_config(base):
        backend_cls = _backend_class("FLASH_ATTN")
        for rank in range(pp):
            start, end = get_pp_indices(layers, rank, pp)
            owns = any(str(k).lower() in ATTENTION_NAMES for k in kinds[start:end])
            cache = _stage_block(platform, adapter, base, backend_cls if owns else None)
            stages.append(
                {
                    "rank": rank,
                    "layers": [start, end],
                    "attention": owns,
                    "block_size": int(cache.block_size),
                    "mamba_block_size": getattr(cache, "mamba_block_size", None),
                }
            )
    return {
        "model": model_id,
        "tp": tp,
        "pp": pp,
        "enable_prefix_caching": prefix,
        "vllm_version": str(vllm.__version__),
        "resolved_prefix_caching": bool(base.cache_config.enable_prefix_caching),
        "stages": stages,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    lines = [
        json.dumps(measure(model, tp, pp, prefix), sort_keys=True)
        for model, tp, pp in CASES
        for prefix in (True, False)
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(lines)} vectors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
