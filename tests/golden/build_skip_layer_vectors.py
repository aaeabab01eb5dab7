"""Build tests/golden/skip-layers-X.Y.Z.jsonl (``--kv-cache-dtype-skip-layers``) and, with
``--hidden-states``, hidden-state-X.Y.Z.jsonl (the ``extract_hidden_states`` group), measured.

Not a test and never run by CI: it needs a real vLLM release (``make verify-releases``).
No kvalign arithmetic is used. Per case (a bundled hybrid, TP, ``--kv-cache-dtype``, the
skip list; default flags otherwise, FLASH_ATTN):

* the block size, kernel block size, padded Mamba page and ``mamba_block_size``: the probe
  (:func:`kvalign.vllm_probe.run.vllm_answer`, which runs the release's own
  ``Platform.update_block_size_for_backend``, its skip-layer step included) given the flag;
* the KV-cache groups: one spec per decoder layer with the release's own spec classes, as
  ``build_group_vectors.py`` builds them, except that an attention layer whose index the
  list names takes the model dtype (what ``Attention.__init__`` does: ``kv_cache_dtype =
  "auto"``), then the release's ``unify_kv_cache_spec_page_size`` and
  ``_get_kv_cache_groups_uniform_page_size``; an exception there is recorded as
  ``error`` (vLLM fails at start-up with it).

With ``--hidden-states`` each case (:data:`HIDDEN_CASES`) adds the cache-only layer of the
``extract_hidden_states`` speculative method: the release's own ``HiddenStateCacheSpec``
with ``len(eagle_aux_hidden_state_layer_ids)`` heads of ``hidden_size`` in the model dtype
at the block (what ``CacheOnlyAttentionLayer.get_kv_cache_spec`` returns), and the groups
come from the release's own ``get_kv_cache_groups`` (given a stand-in ``VllmConfig`` that
answers the two questions it asks here: the hybrid KV-cache manager is on, the KV-cache
layout is not block-outermost); its kind ``hidden-state``.

    PYTHONPATH=/root/vllm-env/0.33.0 VLLM_PLUGINS="" /root/vllm-env/venv/bin/python \\
        tests/golden/build_skip_layer_vectors.py --out tests/golden/skip-layers-0.33.0.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_group_vectors import CATALOG, _kinds

#: (model, TP, --kv-cache-dtype, skip list): the first attention layer, two of them, a
#: layer that is no attention layer (0 is a Mamba/conv layer in each), and the model dtype.
CASES: tuple[tuple[str, int, str, tuple[str, ...]], ...] = (
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, "fp8", ("5",)),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 2, "fp8", ("5", "12")),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, "fp8", ("0",)),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, "auto", ("5",)),
    ("LiquidAI/LFM2-1.2B", 1, "fp8", ("2",)),
    ("LiquidAI/LFM2-1.2B", 1, "fp8", ("0",)),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 1, "fp8", ("3",)),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 4, "fp8", ("3", "7")),
    ("tiiuae/Falcon-H1-0.5B-Base", 1, "fp8", ("0",)),
)


#: (model, TP, eagle_aux_hidden_state_layer_ids) for ``--hidden-states`` (default flags).
HIDDEN_CASES: tuple[tuple[str, int, tuple[int, ...]], ...] = (
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 1, (1, 20, 39)),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 8, (1, 20, 39)),
    ("LiquidAI/LFM2-1.2B", 1, (1, 7, 13)),
    ("LiquidAI/LFM2-1.2B", 1, tuple(range(12))),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 4, (1, 2, 3, 4)),
    ("tiiuae/Falcon-H1-0.5B-Base", 1, (1, 2)),
)


def _stand_in_config() -> Any:
    """The two answers ``get_kv_cache_groups`` asks a ``VllmConfig`` for here."""
    from types import SimpleNamespace

    layout = SimpleNamespace(is_block_outermost=False)
    return SimpleNamespace(
        scheduler_config=SimpleNamespace(disable_hybrid_kv_cache_manager=False),
        cache_config=SimpleNamespace(get_resolved_kv_cache_layout=lambda: layout),
        attention_config=None,
    )


def measure(
    model_id: str,
    tp: int,
    kv_cache_dtype: str,
    skip: tuple[str, ...],
    aux: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """One line: the probe's sizes and the groups for one case."""
    import torch
    import vllm
    from transformers import AutoConfig
    from vllm.v1 import kv_cache_interface as kvi

    from kvalign.vllm_probe.run import vllm_answer
    from kvalign.vllm_probe.types import ProbeRequest

    row: dict[str, Any] = {
        "model": model_id,
        "tp": tp,
        "kv_cache_dtype": kv_cache_dtype,
        "kv_cache_dtype_skip_layers": list(skip),
        "vllm_version": str(vllm.__version__),
    }
    if aux is not None:
        row["speculative_method"] = "extract_hidden_states"
        row["eagle_aux_hidden_state_layer_ids"] = list(aux)
    answer = vllm_answer(
        ProbeRequest(
            model=str(CATALOG / model_id),
            tp=tp,
            kv_cache_dtype=kv_cache_dtype,
            kv_cache_dtype_skip_layers=skip,
        )
    )
    if not answer.valid:
        row["error"] = answer.error
        return row
    resolved = answer.resolved
    block = int(answer.block_size or 0)
    mamba_block = resolved.mamba_block_size if resolved is not None else None
    row.update(
        block_size=block,
        kernel_block_size=answer.kernel_block_size,
        mamba_page_size_padded=answer.mamba_page_size_padded,
        mamba_block_size=mamba_block,
        mamba_cache_mode=resolved.mamba_cache_mode if resolved is not None else None,
    )
    try:
        planning = importlib.import_module("vllm.v1.core.kv_cache_planning")
    except ImportError:
        planning = importlib.import_module("vllm.v1.core.kv_cache_utils")
    if not hasattr(planning, "_get_kv_cache_groups_uniform_page_size"):
        planning = importlib.import_module("vllm.v1.core.kv_cache_utils")
    config = AutoConfig.from_pretrained(str(CATALOG / model_id), trust_remote_code=False)
    text = config.get_text_config()
    kinds = _kinds(model_id, text)
    assert kinds is not None, model_id

    def fields(cls: Any, **values: Any) -> Any:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})

    a, kv = int(answer.attn_page_bytes_per_token or 0), int(answer.kv_heads_per_rank or 1)
    quantized = kv_cache_dtype != "auto"
    model_dtype = getattr(
        torch, str(getattr(text, "torch_dtype", None) or text.dtype).split(".")[-1]
    )
    # the probe's page per token is of the resolved KV dtype: one byte for fp8 (uint8 has
    # the same size), the model dtype for auto
    primary_dtype = torch.uint8 if quantized else model_dtype
    head = a // (2 * kv * (1 if quantized else model_dtype.itemsize))
    primary = fields(kvi.FullAttentionSpec, block_size=block, num_kv_heads=kv,
                     head_size=head, dtype=primary_dtype)  # fmt: skip
    skipped = fields(kvi.FullAttentionSpec, block_size=block, num_kv_heads=kv,
                     head_size=head, dtype=model_dtype)  # fmt: skip
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
            specs[f"model.layers.{i}.self_attn.attn"] = skipped if str(i) in skip else primary
        if has_state:
            specs[f"model.layers.{i}.mamba"] = mamba
    if aux is not None:
        specs[f"cache_only_layers.{len(kinds)}"] = fields(
            kvi.HiddenStateCacheSpec, block_size=block, num_kv_heads=len(aux),
            head_size=int(text.hidden_size), dtype=model_dtype,
        )  # fmt: skip
    try:
        if aux is not None:
            groups = planning.get_kv_cache_groups(_stand_in_config(), specs)
            for g in groups:  # each spec's page, as the allocator asks for it
                _ = g.kv_cache_spec.page_size_bytes
        else:
            specs = planning.unify_kv_cache_spec_page_size(specs)
            groups = planning._get_kv_cache_groups_uniform_page_size(specs)
    except Exception as exc:  # vLLM stops at start-up with this
        row["error"] = f"at startup: {type(exc).__name__}: {exc}"[:300]
        return row

    def kind(spec: Any) -> str:
        if isinstance(spec, kvi.HiddenStateCacheSpec):
            return "hidden-state"
        if isinstance(spec, kvi.MambaSpec):
            return "mamba"
        return "attention-skip" if spec.dtype == model_dtype and quantized else "attention"

    row["groups"] = [
        {
            "kind": kind(g.kv_cache_spec),
            "layers": len(g.layer_names),
            "block_size": int(g.kv_cache_spec.block_size),
        }
        for g in groups
    ]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--hidden-states", action="store_true", help="the HIDDEN_CASES")
    args = parser.parse_args()
    lines = []
    cases = (
        [(m, tp, "auto", (), aux) for m, tp, aux in HIDDEN_CASES]
        if args.hidden_states
        else [(*case, None) for case in CASES]
    )
    for model_id, tp, kv_dtype, skip, aux in cases:
        try:
            row = measure(model_id, tp, kv_dtype, skip, aux)
        except Exception as exc:  # a case this release cannot build: left out, said so
            print(f"{model_id} TP {tp}: not measured ({type(exc).__name__}: {exc})"[:200])
            continue
        lines.append(json.dumps(row, sort_keys=True))
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(lines)} vectors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
