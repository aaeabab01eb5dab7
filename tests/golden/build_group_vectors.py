"""Build tests/golden/groups-X.Y.Z.jsonl: KV-cache groups, measured with a real vLLM.

Not a test and never run by CI: it needs a real vLLM release (``make verify-releases``).
No kvalign arithmetic is used. Per bundled hybrid model at TP 1 (default flags, so prefix
caching as the release defaults, FLASH_ATTN):

* the block size and page sizes: the probe (:func:`kvalign.vllm_probe.run.vllm_answer`,
  the release's own configuration code);
* one KV-cache spec per decoder layer, built with the release's own spec classes
  (``FullAttentionSpec`` / ``MLAAttentionSpec`` with the block size; ``MambaSpec`` with the
  probe's state shapes and dtypes, ``mamba_block_size`` and the padded page), the layer
  kinds read from the model config as the release loads it (``layers_block_type`` /
  ``layer_types``; Kimi ``linear_attn_config``; Falcon-H1 both in every layer);
* the groups: the release's ``unify_kv_cache_spec_page_size`` then
  ``_get_kv_cache_groups_uniform_page_size`` (``vllm/v1/core/kv_cache_utils.py``, or
  ``kv_cache_planning.py`` in 0.33): each group's layer count and block size.

    PYTHONPATH=/root/vllm-env/0.33.0 VLLM_PLUGINS="" /root/vllm-env/venv/bin/python \\
        tests/golden/build_group_vectors.py --out tests/golden/groups-0.33.0.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "configs" / "models"
ATTENTION = {"attention", "full_attention", "*", "hybrid"}
STATE = {"mamba", "linear_attention", "conv", "m", "hybrid"}


def _kinds(model_id: str, text: Any) -> list[tuple[bool, bool]] | None:
    """(attention, state) per layer, from the config as the release loaded it."""
    layers = int(text.num_hidden_layers)
    if "Falcon-H1" in model_id:
        return [(True, True)] * layers
    linear = getattr(text, "linear_attn_config", None)
    if isinstance(linear, dict) and "full_attn_layers" in linear:
        full = set(linear["full_attn_layers"])
        return [(i + 1 in full, i + 1 not in full) for i in range(layers)]
    names = getattr(text, "layers_block_type", None) or getattr(text, "layer_types", None)
    if not names or len(names) != layers:
        return None
    return [(str(n).lower() in ATTENTION, str(n).lower() in STATE) for n in names]


def measure(model_id: str) -> dict[str, Any] | None:
    """One line: the groups of ``model_id`` at TP 1, or ``None`` (not a hybrid here)."""
    from kvalign.vllm_probe.run import vllm_answer
    from kvalign.vllm_probe.types import ProbeRequest

    answer = vllm_answer(ProbeRequest(model=str(CATALOG / model_id), tp=1))
    if not answer.valid or answer.attention_free or answer.mamba_page_bytes is None:
        return None
    import torch
    import vllm
    from transformers import AutoConfig
    from vllm.v1 import kv_cache_interface as kvi

    try:  # 0.33 moved the grouping to kv_cache_planning
        planning = importlib.import_module("vllm.v1.core.kv_cache_planning")
    except ImportError:
        planning = importlib.import_module("vllm.v1.core.kv_cache_utils")
    if not hasattr(planning, "_get_kv_cache_groups_uniform_page_size"):
        planning = importlib.import_module("vllm.v1.core.kv_cache_utils")
    config = AutoConfig.from_pretrained(str(CATALOG / model_id), trust_remote_code=False)
    text = config.get_text_config()
    kinds = _kinds(model_id, text)
    if kinds is None:
        return None
    resolved = answer.resolved
    block = int(answer.block_size or 0)
    mamba_block = resolved.mamba_block_size if resolved is not None else None

    def fields(cls: Any, **values: Any) -> Any:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    attn_cls = kvi.MLAAttentionSpec if answer.use_mla else kvi.FullAttentionSpec
    # a one-byte dtype and the head size that gives the probe's page per token: the
    # grouping reads only page sizes and spec types
    a, kv = int(answer.attn_page_bytes_per_token or 0), int(answer.kv_heads_per_rank or 1)
    attn = fields(
        attn_cls,
        block_size=block,
        num_kv_heads=kv,
        head_size=a if answer.use_mla else a // (2 * kv),
        dtype=torch.uint8,
    )
    mamba = fields(
        kvi.MambaSpec,
        shapes=answer.mamba_state_shapes,
        dtypes=tuple(getattr(torch, d) for d in answer.mamba_state_dtypes),
        block_size=int(mamba_block or block),
        page_size_padded=answer.mamba_page_size_padded,
        mamba_cache_mode=(resolved.mamba_cache_mode if resolved is not None else None) or "none",
    )
    specs: dict[str, Any] = {}
    for i, (has_attn, has_state) in enumerate(kinds):
        if has_attn:
            specs[f"model.layers.{i}.self_attn.attn"] = attn
        if has_state:
            specs[f"model.layers.{i}.mamba"] = mamba
    specs = planning.unify_kv_cache_spec_page_size(specs)
    groups = planning._get_kv_cache_groups_uniform_page_size(specs)
    return {
        "model": model_id,
        "tp": 1,
        "vllm_version": str(vllm.__version__),
        "block_size": block,
        "mamba_cache_mode": resolved.mamba_cache_mode if resolved is not None else None,
        "groups": [
            {
                "kind": "mamba" if isinstance(g.kv_cache_spec, kvi.MambaSpec) else "attention",
                "layers": len(g.layer_names),
                "block_size": int(g.kv_cache_spec.block_size),
            }
            for g in groups
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    lines = []
    for config in sorted(CATALOG.glob("*/*/config.json")):
        model_id = f"{config.parent.parent.name}/{config.parent.name}"
        try:
            row = measure(model_id)
        except Exception as exc:  # a model this release cannot build: left out, said so
            print(f"{model_id}: not measured ({type(exc).__name__}: {exc})"[:200])
            continue
        if row is not None:
            lines.append(json.dumps(row, sort_keys=True))
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(lines)} vectors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
