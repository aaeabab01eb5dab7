"""Build tests/golden/serve-parser-X.Y.Z.json: what the release's own ``vllm serve``
argument parser accepts for the flags kvalign reads (measured, not read).

Not a test and never run by CI: it needs a real vLLM release. It builds the parser
``vllm serve`` uses (``vllm/entrypoints/common/cli_args.py`` ``make_arg_parser`` over a
``FlexibleArgumentParser``) on the probe's platform (:func:`kvalign.vllm_probe.boot.boot`)
and records, per flag, its choices and default, and for each probe command line whether
the parser accepts it (argparse exits 2 when it refuses) and what it parsed.

    PYTHONPATH=/root/vllm-env/0.33.0 VLLM_PLUGINS="" /root/vllm-env/venv/bin/python \\
        tests/golden/build_parser_vectors.py --out tests/golden/serve-parser-0.33.0.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path
from typing import Any

#: flags whose accepted values kvalign models.
FLAGS = (
    "--mamba-cache-mode",
    "--mamba-block-size",
    "--kv-cache-dtype",
    "--kv-cache-dtype-skip-layers",
    "--pipeline-parallel-size",
    "--mamba-cache-dtype",
    "--mamba-ssm-cache-dtype",
)
#: command lines to parse (after ``vllm serve``).
PROBES = (
    ("--mamba-cache-mode", "all"),
    ("--mamba-cache-mode", "align"),
    ("--mamba-cache-mode", "none"),
    ("--kv-cache-dtype-skip-layers", "0", "3"),
    ("--kv-cache-dtype-skip-layers", "sliding_window"),
    ("--pipeline-parallel-size", "2"),
)


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None), list)) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    from kvalign.vllm_probe.boot import H100, boot

    boot(H100)
    import vllm
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    serve = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
    flags = {}
    for action in serve._actions:
        for name in FLAGS:
            if name in action.option_strings:
                flags[name] = {
                    "choices": None if action.choices is None else sorted(map(str, action.choices)),
                    "default": _jsonable(action.default),
                    "nargs": _jsonable(action.nargs),
                }
    probes = []
    for probe in PROBES:
        dest = probe[0].lstrip("-").replace("-", "_")
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                parsed = serve.parse_args(["--model", "m", *probe])
            probes.append({"argv": list(probe), "accepted": True,
                           "value": _jsonable(getattr(parsed, dest))})  # fmt: skip
        except SystemExit as exc:
            probes.append({"argv": list(probe), "accepted": False, "exit": exc.code})
    document = {"vllm_version": str(vllm.__version__), "flags": flags, "probes": probes}
    args.out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
