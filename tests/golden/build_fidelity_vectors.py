"""Build tests/golden/fidelity-X.Y.Z.jsonl: the fidelity cases, measured with one vLLM release.

Not a test and never run by CI: it needs a real vLLM release (``make verify-releases``,
tests/golden/README.md). Same probe and line format as build_release_vectors.py, over a
short list of cases instead of the catalog grid:

* prefix caching asked for (``--enable-prefix-caching``) on every bundled model at TP 1:
  what ``CacheConfig.enable_prefix_caching`` ends as (``resolved``);
* the text-only Qwen3.5-27B checkpoint (tests/data/qwen3.5-27b-text) at TP 1 and 2 with
  default flags: whether the release's registry resolves it and the block size it aligns.

    PYTHONPATH=.:/root/vllm-env/0.17.0 VLLM_PLUGINS="" /root/vllm-env/venv/bin/python \\
        tests/golden/build_fidelity_vectors.py --out tests/golden/fidelity-0.17.0.jsonl

Each line records the transformers version it ran with (``vllm.transformers``); kvalign is
compared with ``--transformers-version`` set to it. A second transformers on the path first
(``PYTHONPATH=.:ENV/0.19.1:ENV/0.14.0``: 0.14.0's directory holds transformers 4.57.6)
measures the other side of a release whose range allows both
(``fidelity-0.19.1-transformers-4.57.6.jsonl``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from build_release_vectors import _expected, _setting, catalog, resolved_json  # noqa: E402

TEXT_ONLY = ROOT / "tests" / "data" / "qwen3.5-27b-text"


def _config_name(model: str, directory: Path) -> str:
    """The vector's ``config``: ``hf-configs/<org>__<name>/config.json`` for the catalog (as
    in vllm-X.Y.Z.jsonl), the repository path otherwise."""
    if directory == TEXT_ONLY:
        return str((directory / "config.json").relative_to(ROOT))
    return f"hf-configs/{model.replace('/', '__')}/config.json"


def cases() -> list[tuple[str, Path, dict[str, Any], int]]:
    """(model id, directory, settings, TP) of every measured case."""
    found = []
    for model, directory in catalog():
        found.append((model, directory, _setting("FLASH_ATTN", prefix=True), 1))
    for tp in (1, 2):
        found.append(("qwen3.5-27b-text", TEXT_ONLY, _setting("FLASH_ATTN"), tp))
    return found


def main(argv: list[str] | None = None) -> int:
    """Write one line per case; print a summary on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    from kvalign.vllm_probe.boot import ASSUMABLE, boot
    from kvalign.vllm_probe.run import vllm_answer
    from kvalign.vllm_probe.types import ProbeRequest

    boot(ASSUMABLE["H100"])
    version = str(importlib.import_module("vllm").__version__)
    tf = str(importlib.import_module("transformers").__version__)
    lines = []
    for model, directory, setting, tp in cases():
        request = ProbeRequest(
            model=str(directory),
            tp=tp,
            attention_backend=setting["attention_backend"],
            enable_prefix_caching=setting["enable_prefix_caching"],
            gpu="H100",
        )
        answer = vllm_answer(request)
        raw = json.loads((directory / "config.json").read_text(encoding="utf-8"))
        line = {
            "model": model,
            "config": _config_name(model, directory),
            "architecture": (raw.get("architectures") or [""])[0],
            "settings": {**setting, "gpu": "H100"},
            "tp": tp,
            # releases older than the probe's adapters answer the block size only
            "expected": {k: v for k, v in _expected(answer).items() if v not in (None, [])},
            "resolved": resolved_json(answer),
            "vllm": {"version": version, "platform": answer.platform, "transformers": tf},
        }
        if answer.error:
            line["expected"].setdefault("vllm_error", answer.error)
        lines.append(json.dumps(line, sort_keys=False))
        print(f"{model} TP {tp}: {line['expected']} {line['resolved']}", file=sys.stderr)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} vectors to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
