"""Build tests/golden/vllm-X.Y.Z.jsonl from the vLLM release importable here.

Not a test and never run by CI: it needs a real vLLM release (see ``make
verify-releases`` and tests/golden/README.md). Every number comes from that release's
own functions through :mod:`kvalign.vllm_probe` (no kvalign arithmetic is used):

    PYTHONPATH=/root/vllm-env/0.20.0 VLLM_PLUGINS="" /root/vllm-env/venv/bin/python \\
        tests/golden/build_release_vectors.py --out tests/golden/vllm-0.20.0.jsonl

One process per release and GPU assumption (``--gpu``; vLLM caches capability-derived
answers); ``--append`` adds a second assumption's lines to the same file.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "configs" / "models"
TPS = (1, 2, 4, 8, 16)

Setting = dict[str, Any]


def _setting(
    backend: str,
    kv: str = "auto",
    prefix: bool | None = None,
    block: int | None = None,
    spec: int = 0,
    mode: str | None = None,
    ssm: str = "auto",
) -> Setting:
    return {
        "dtype": "auto",
        "kv_cache_dtype": kv,
        "mamba_cache_dtype": "auto",
        "mamba_ssm_cache_dtype": ssm,
        "block_size": block,
        "enable_prefix_caching": prefix,
        "mamba_cache_mode": mode,
        "attention_backend": backend,
        "num_speculative_tokens": spec,
    }


def settings_grid(gpu: str, mamba_cache_mode: bool) -> list[Setting]:
    """The settings measured per (model, TP).

    H100 (the default assumption): every backend × prefix caching unset/on/off ×
    kv-cache dtype auto/fp8; ``--block-size 32`` with prefix caching on/off on
    FLASH_ATTN/FLASHINFER; speculative decoding (1 token, and the 2/3-token settings of
    the 0.33 oracle); ``--mamba-cache-mode none/align/all`` with prefix caching on, where
    the release has the flag; ``--mamba-ssm-cache-dtype`` float32/bfloat16. Other GPUs
    (capability-dependent rules): FLASH_ATTN and FLASHINFER × prefix caching unset/on,
    kv-cache dtype auto.
    """
    backends = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN")
    prefixes: tuple[bool | None, ...] = (None, True, False)
    if gpu != "H100":
        return [_setting(b, prefix=p) for b, p in itertools.product(backends[:2], prefixes[:2])]
    grid = [
        _setting(b, kv=kv, prefix=p)
        for b, p, kv in itertools.product(backends, prefixes, ("auto", "fp8"))
    ]
    grid += [
        _setting(b, prefix=p, block=32) for b, p in itertools.product(backends[:2], (True, False))
    ]
    grid += [
        _setting("FLASH_ATTN", spec=1),
        _setting("FLASH_ATTN", prefix=False, spec=2),
        _setting("FLASH_ATTN", kv="fp8", prefix=True, spec=3),
    ]
    grid += [_setting("FLASH_ATTN", ssm=dtype) for dtype in ("float32", "bfloat16")]
    if mamba_cache_mode:
        grid += [_setting("FLASH_ATTN", prefix=True, mode=m) for m in ("none", "align", "all")]
    return grid


def catalog() -> Iterator[tuple[str, Path]]:
    """(model id, model directory) of every bundled config, sorted."""
    for config in sorted(CATALOG.glob("*/*/config.json")):
        yield f"{config.parent.parent.name}/{config.parent.name}", config.parent


def _expected(answer: Any) -> dict[str, Any]:
    if answer.unknown_architecture:
        return {"unknown_architecture": True}
    if answer.not_measured:
        return {"not_measured": answer.not_measured}
    if not answer.valid:
        return {"valid": False, "vllm_error": answer.error}
    mamba = {
        "mamba_page_bytes": answer.mamba_page_bytes,
        "mamba_state_shapes": [list(s) for s in answer.mamba_state_shapes],
        "mamba_state_dtypes": list(answer.mamba_state_dtypes),
    }
    if answer.attention_free:
        return {"valid": True, "attention_free": True, **mamba}
    return {
        "valid": True,
        "attention_free": False,
        **mamba,
        "kv_heads_per_rank": answer.kv_heads_per_rank,
        "attn_page_bytes_per_token": answer.attn_page_bytes_per_token,
        "block_size": answer.block_size,
        "kernel_block_size": answer.kernel_block_size,
        "mamba_page_size_padded": answer.mamba_page_size_padded,
        "use_mla": answer.use_mla,
    }


def resolved_json(answer: Any) -> dict[str, Any] | None:
    """The ``CacheConfig`` values vLLM ended with (a vector's ``resolved``), ``None`` when
    the probe did not get that far."""
    if answer.resolved is None:
        return None
    return {
        "kv_cache_dtype": answer.resolved.kv_cache_dtype,
        "enable_prefix_caching": answer.resolved.enable_prefix_caching,
        "mamba_cache_mode": answer.resolved.mamba_cache_mode,
        "mamba_block_size": answer.resolved.mamba_block_size,
    }


def _key(row: dict[str, Any]) -> str:
    return json.dumps([row["model"], row["settings"], row["tp"]], sort_keys=True)


def _replaced(path: Path, new_lines: list[str]) -> list[str]:
    """``path``'s lines with each re-measured vector replacing the one of the same (model,
    settings, TP), order kept."""
    fresh = {_key(json.loads(line)): line for line in new_lines}
    old = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    merged = [fresh.pop(_key(json.loads(line)), line) for line in old]
    assert not fresh, f"{len(fresh)} re-measured vectors have no line in {path}"
    return merged


def main(argv: list[str] | None = None) -> int:
    """Write one line per (model, settings, TP); print a summary on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gpu", default="H100", help="GPU the probe platform reports")
    parser.add_argument("--append", action="store_true")
    parser.add_argument(
        "--model",
        help="re-measure only this catalog model and replace its lines in --out in place "
        "(same GPU assumption), e.g. after a probe fix",
    )
    args = parser.parse_args(argv)

    from kvalign.vllm_probe.boot import ASSUMABLE, boot
    from kvalign.vllm_probe.releases import adapter_for
    from kvalign.vllm_probe.run import vllm_answer
    from kvalign.vllm_probe.types import ProbeRequest

    boot(ASSUMABLE[args.gpu])  # before anything else imports vLLM
    version = str(importlib.import_module("vllm").__version__)
    grid = settings_grid(args.gpu, adapter_for(version).mamba_cache_mode)
    started = time.monotonic()
    errors: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    lines: list[str] = []
    for model, directory in catalog():
        if args.model and model != args.model:
            continue
        raw = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        for setting, tp in itertools.product(grid, TPS):
            request = ProbeRequest(
                model=str(directory),
                tp=tp,
                attention_backend=setting["attention_backend"],
                dtype=setting["dtype"],
                kv_cache_dtype=setting["kv_cache_dtype"],
                block_size=setting["block_size"],
                enable_prefix_caching=setting["enable_prefix_caching"],
                mamba_cache_mode=setting["mamba_cache_mode"],
                mamba_cache_dtype=setting["mamba_cache_dtype"],
                mamba_ssm_cache_dtype=setting["mamba_ssm_cache_dtype"],
                num_speculative_tokens=setting["num_speculative_tokens"],
                gpu=args.gpu,
            )
            answer = vllm_answer(request)
            expected = _expected(answer)
            if answer.unknown_architecture:
                counts["unknown_architecture"] += 1
            elif answer.not_measured:
                counts["not_measured"] += 1
                errors[answer.not_measured[:160]] += 1
            elif not answer.valid:
                counts["invalid"] += 1
                errors[answer.error[:160]] += 1
            else:
                counts["valid"] += 1
            row: dict[str, Any] = {
                "model": model,
                "config": f"hf-configs/{model.replace('/', '__')}/config.json",
                "architecture": (raw.get("architectures") or [""])[0],
                "settings": {**setting, "gpu": args.gpu},
                "tp": tp,
                "expected": expected,
            }
            if answer.resolved is not None:
                row["resolved"] = resolved_json(answer)
            row["vllm"] = {"version": version, "platform": answer.platform}
            lines.append(json.dumps(row))
    if args.model:
        lines = _replaced(args.out, lines)
    mode = "a" if args.append and not args.model else "w"
    with args.out.open(mode, encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in lines)
    elapsed = time.monotonic() - started
    print(
        f"vLLM {version} on {args.gpu}: {len(lines)} vectors ({dict(counts)}) "
        f"in {elapsed:.0f} s -> {args.out}",
        file=sys.stderr,
    )
    for message, count in errors.most_common():
        print(f"  {count:5d} x {message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
