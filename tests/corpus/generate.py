"""Generate the hostile-input corpus for model configs (``tests/corpus/configs/``).

Run ``python tests/corpus/generate.py`` to regenerate; the output is committed and checked
by ``tests/test_corpus.py``. Every case is a file that ``kvalign check`` must reject with exit
2 and a one-line message naming the file (and the field, where one is at fault), without a
traceback. Cases start from real bundled configs and break one thing at a time.
Missing fields are only cases for raw-JSON types (Kimi-K3): for types transformers ships,
the config class fills a documented default, exactly as vLLM sees it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "configs"
CATALOG = ROOT / "configs" / "models"

# base config -> the fields its formulas read (dotted; ``text_config.`` for VL wrappers)
BASES: dict[str, tuple[str, list[str]]] = {
    "nano": (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        [
            "mamba_num_heads",
            "mamba_head_dim",
            "n_groups",
            "ssm_state_size",
            "conv_kernel",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
        ],
    ),
    "qwen35": (
        "Qwen/Qwen3.5-27B",
        [
            "text_config.linear_num_key_heads",
            "text_config.linear_num_value_heads",
            "text_config.linear_key_head_dim",
            "text_config.linear_value_head_dim",
            "text_config.linear_conv_kernel_dim",
            "text_config.num_attention_heads",
            "text_config.num_key_value_heads",
            "text_config.head_dim",
        ],
    ),
    "kimi": (
        "moonshotai/Kimi-K3",
        [
            "text_config.linear_attn_config.num_heads",
            "text_config.linear_attn_config.head_dim",
            "text_config.linear_attn_config.short_conv_kernel_size",
            "text_config.kv_lora_rank",
            "text_config.qk_rope_head_dim",
            "text_config.num_attention_heads",
        ],
    ),
    "lfm2": (
        "LiquidAI/LFM2-2.6B",
        ["conv_dim", "conv_L_cache", "num_attention_heads", "num_key_value_heads"],
    ),
    "falcon_h1": (
        "tiiuae/Falcon-H1-0.5B-Base",
        [
            "mamba_d_ssm",
            "mamba_n_heads",
            "mamba_d_head",
            "mamba_d_state",
            "mamba_n_groups",
            "num_attention_heads",
            "head_dim",
        ],
    ),
    "falcon_mamba": ("tiiuae/falcon-mamba-7b", ["intermediate_size", "state_size", "conv_kernel"]),
}

# JSON text of each bad value (``Infinity``/``NaN`` are what Python's json writes and reads)
BAD_VALUES: dict[str, str] = {
    "zero": "0",
    "negative": "-8",
    "fraction": "1.5",
    "string": '"sixty-four"',
    "bool": "true",
    "null_": "null",
    "list": "[64]",
    "object": '{"n": 64}',
    "huge": "1" + "0" * 30,
    "infinity": "Infinity",
    "nan": "NaN",
}


def _set(data: dict[str, Any], dotted: str, marker: str) -> None:
    node = data
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node[part]
    node[leaf] = marker


def _delete(data: dict[str, Any], dotted: str) -> None:
    node = data
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node[part]
    node.pop(leaf, None)


def _load(model_id: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CATALOG / model_id / "config.json").read_text("utf-8"))
    return loaded


def cases() -> dict[str, bytes]:
    """Every corpus file name → its bytes."""
    out: dict[str, bytes] = {}
    for base, (model_id, fields) in BASES.items():
        original = _load(model_id)
        text = json.dumps(original, indent=2)
        for field in fields:
            for name, value in BAD_VALUES.items():
                if field.endswith("head_dim") and name in ("zero", "negative", "null_"):
                    continue  # head_dim <= 0 or null legitimately means hidden_size // heads
                data = json.loads(text)
                _set(data, field, "@@BAD@@")
                body = json.dumps(data, indent=2).replace('"@@BAD@@"', value)
                out[f"{base}--{field}--{name}.json"] = body.encode()
            if base == "kimi":  # raw JSON: no transformers defaults fill a missing field
                data = json.loads(text)
                _delete(data, field)
                out[f"{base}--{field}--missing.json"] = json.dumps(data).encode()
        for cut in (1, len(text) // 3, len(text) // 2, len(text) - 2):
            out[f"{base}--truncated-{cut}.json"] = text[:cut].encode()
        data = json.loads(text)
        data["model_type"] = "mystery_hybrid"
        data.pop("text_config", None)
        out[f"{base}--unknown-model-type.json"] = json.dumps(data).encode()
        data = json.loads(text)
        data["model_type"] = 42
        out[f"{base}--model-type-number.json"] = json.dumps(data).encode()
        data = json.loads(text)
        data.pop("model_type")
        out[f"{base}--model-type-missing.json"] = json.dumps(data).encode()
        data = json.loads(text)
        data["torch_dtype"] = "int3"
        data.pop("dtype", None)
        if "text_config" in data:
            data["text_config"].pop("dtype", None)
            data["text_config"].pop("torch_dtype", None)
        out[f"{base}--bad-dtype.json"] = json.dumps(data).encode()
    # VL wrappers with a broken text_config
    for name, value in {
        "list": "[1, 2]",
        "string": '"qwen3_5_text"',
        "null_": "null",
        "empty": "{}",
        "number": "7",
    }.items():
        data = _load("Qwen/Qwen3.5-27B")
        data["text_config"] = "@@BAD@@"
        out[f"qwen35--text_config-{name}.json"] = (
            json.dumps(data).replace('"@@BAD@@"', value).encode()
        )
    data = _load("Qwen/Qwen3.5-27B")
    data["text_config"]["model_type"] = "llama"
    out["qwen35--text_config-model-type-llama.json"] = json.dumps(data).encode()
    # whole-file shapes
    out["empty.json"] = b""
    out["whitespace.json"] = b"   \n\t  \n"
    out["array.json"] = b"[1, 2, 3]"
    out["null.json"] = b"null"
    out["number.json"] = b"42"
    out["string.json"] = b'"config"'
    out["not-json.json"] = b"model_type: nemotron_h\n"
    out["binary.json"] = bytes(range(256)) * 4
    out["latin1.json"] = '{"model_type": "nemotron_h", "name": "caf\xe9"}'.encode("latin-1")
    out["utf16.json"] = '{"model_type": "nemotron_h"}'.encode("utf-16")
    out["deep-nesting.json"] = (
        b'{"model_type": "nemotron_h", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    )
    out["very-deep-nesting.json"] = b"[" * 200_000 + b"]" * 200_000
    out["llama.json"] = b'{"model_type": "llama", "num_attention_heads": 32, "hidden_size": 4096}'
    out["duplicate-nonsense.json"] = b'{"model_type": "nemotron_h", "mamba_num_heads": {}}'
    return out


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    generated = cases()
    for name, body in sorted(generated.items()):
        (OUT / name).write_bytes(body)
    print(f"wrote {len(generated)} cases to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
