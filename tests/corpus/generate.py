"""Generate the hostile-input corpus (``tests/corpus/``).

Three parts, all committed and checked by ``tests/deploy/test_corpus.py`` (a test fails when the
committed output differs from what this script generates):

* ``configs/``: model configs ``kvalign check`` must reject (below);
* ``deployments/``: deployment files ``kvalign audit`` must reject (exit 2) or report as
  not evaluated (exit 3), see :func:`deployment_cases`;
* ``cli-args.json``: command lines for ``check``/``matrix``/``explain``/``survey``/``audit``
  that must fail with exit 2, see :func:`cli_cases`.

Cases git cannot hold (a symlink loop, a 100 MB file, a FIFO) are made at runtime by the
test in a temporary folder.

Run ``python tests/corpus/generate.py`` to regenerate. Every ``configs/`` case is a file
that ``kvalign check`` must reject with exit 2 and a one-line message naming the file (and
the field, where one is at fault), without a traceback. Cases start from real bundled
configs and break one thing at a time.
Missing fields are only cases for raw-JSON types (Kimi-K3): for types transformers ships,
the config class fills a documented default, exactly as vLLM sees it.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "configs"
DEPLOY_OUT = HERE / "deployments"
CLI_OUT = HERE / "cli-args.json"
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
    out["bert.json"] = b'{"model_type": "bert", "num_attention_heads": 12, "hidden_size": 768}'
    out["duplicate-nonsense.json"] = b'{"model_type": "nemotron_h", "mamba_num_heads": {}}'
    return out


NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
OWN = f"""model: {NANO}
prefill:
  tp: 8
  args: "--block-size 64"
decode:
  tp: 1
  args: ["--block-size", "64"]
router:
  block_size: 64
"""
K8S = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: nano-prefill
  labels:
    llm-d.ai/role: prefill
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: ["vllm", "serve", "{NANO}", "--tensor-parallel-size", "8"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nano-decode
  labels:
    llm-d.ai/role: decode
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        args: ["vllm", "serve", "{NANO}", "--tensor-parallel-size", "1"]
"""
SHELL = f"""#!/bin/sh
# prefill
vllm serve {NANO} --tensor-parallel-size 8 \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_producer"}}'
# decode
vllm serve {NANO} --tensor-parallel-size 1 \\
  --kv-transfer-config '{{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}}'
"""


def _bomb(levels: int = 9, width: int = 9) -> str:
    """A "billion laughs" YAML: ``width ** levels`` nodes once aliases expand."""
    names = [f"l{i}" for i in range(levels + 1)]
    lines = [f"{names[0]}: &{names[0]} [" + ", ".join(['"lol"'] * width) + "]"]
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _own(prefill: str = "tp: 8", decode: str = "tp: 1", model: str = NANO, extra: str = "") -> str:
    return f"model: {model}\nprefill: {{{prefill}}}\ndecode: {{{decode}}}\n{extra}"


def deployment_cases() -> dict[str, bytes]:
    """Every deployment corpus file name → its bytes.

    Each must make ``kvalign audit FILE`` exit 2 (unreadable, malformed, wrong type: one
    ``kvalign: error:`` line naming the file) or 3 (read, but a pool cannot be evaluated:
    a "not evaluated" entry naming the file), except the ``*--kva010*`` cases, whose TP is
    a well-formed integer the model cannot use: that is rule KVA010 (exit 1).
    """
    out: dict[str, bytes] = {}
    # truncated files: cut mid-line, so every cut is malformed or incomplete
    for label, text in (("own", OWN), ("k8s", K8S)):
        lines = text.splitlines(keepends=True)
        for keep in (1, 3, len(lines) // 2):
            cut = "".join(lines[:keep]) + lines[keep][: max(1, len(lines[keep]) // 2)]
            out[f"truncated--{label}-{keep}.yaml"] = cut.encode()
    # malformed YAML
    malformed = {
        "tab-indent": OWN.replace("  tp: 8", "\ttp: 8"),
        "unclosed-quote": OWN.replace('"--block-size 64"', '"--block-size 64'),
        "unclosed-flow": _own(prefill="tp: 8, args: [--block-size, 64"),
        "bad-indent": OWN.replace("decode:\n  tp: 1", "decode:\n tp: 1\n   x: 2"),
        "unknown-alias": OWN.replace("tp: 8", "tp: *nowhere"),
        "unhashable-key": OWN + "? [a, b]\n: 1\n",
        "duplicate-anchor-recursive": "a: &a [*a]\n" + OWN,
        "directive-only": "%YAML 1.1\n%YAML 1.1\n---\n" + OWN,
        "python-object-tag": OWN.replace(
            "tp: 8", "tp: !!python/object/apply:os.system [echo pwned]"
        ),
    }
    for name, text in malformed.items():
        out[f"malformed--{name}.yaml"] = text.encode()
    # wrong types in kvalign's own schema (``--kva010`` = valid integer, impossible TP)
    wrong = {
        "tp-string": _own(prefill='tp: "eight"'),
        "tp-float": _own(prefill="tp: 1.5"),
        "tp-zero": _own(prefill="tp: 0"),
        "tp-negative": _own(decode="tp: -4"),
        "tp-bool": _own(prefill="tp: true"),
        "tp-list": _own(prefill="tp: [8]"),
        "tp-null": _own(prefill="tp: null"),
        "tp-infinity": _own(prefill="tp: .inf"),
        "tp-nan": _own(prefill="tp: .nan"),
        "dp-zero": _own(prefill="tp: 8, dp: 0"),
        "args-number": _own(prefill="tp: 8, args: 42"),
        "args-mapping": _own(prefill="tp: 8, args: {block-size: 64}"),
        "env-list": _own(prefill="tp: 8, env: [A, B]"),
        "router-block-size-string": _own(extra="router: {block_size: sixty-four}\n"),
        "router-block-size-zero": _own(extra="router: {block_size: 0}\n"),
        "model-list": _own(model="[a, b]"),
        "model-null": _own(model="null"),
        "model-number": _own(model="42"),
        "model-empty-string": _own(model='""'),
        "prefill-list-of-strings": _own(prefill="").replace("prefill: {}", "prefill: [a, b]"),
        "args-tp-zero": _own(prefill='args: "--tensor-parallel-size 0"'),
        "args-tp-negative": _own(prefill='args: "-tp -2"'),
        "args-tp-float": _own(prefill='args: "-tp 1.5"'),
        "args-tp-word": _own(prefill='args: "--tensor-parallel-size eight"'),
        "args-block-size-zero": _own(prefill='tp: 8, args: "--block-size 0"'),
        "args-block-size-negative": _own(prefill='tp: 8, args: "--block-size=-16"'),
        "args-block-size-word": _own(prefill='tp: 8, args: "--block-size big"'),
        "args-bad-json": _own(prefill="tp: 8, args: \"--speculative-config '{oops'\""),
        "args-json-list": _own(prefill="tp: 8, args: \"--kv-transfer-config '[1]'\""),
        "args-unbalanced-quote": _own(prefill='tp: 8, args: "--block-size \'64"'),
        "args-kv-dtype-unknown": _own(prefill='tp: 8, args: "--kv-cache-dtype int3"'),
        "args-missing-config": _own(prefill='tp: 8, args: "--config missing.yaml"'),
        "args-spec-tokens-word": _own(
            prefill='tp: 8, args: "--speculative-config.num_speculative_tokens many"'
        ),
        "vllm-version-bad": _own(extra='vllm_version: "banana"\n'),
        "name-list": _own(extra="name: [a, b]\n"),
        "name-empty": _own(extra='name: ""\n'),
        "args-pp-zero": _own(prefill='tp: 8, args: "-pp 0"'),
        "args-pp-word": _own(prefill='tp: 8, args: "--pipeline-parallel-size two"'),
        "kva010-tp-indivisible": _own(prefill="tp: 3"),
        # `check`'s bounds (kvalign.settings MAX_TP / MAX_BLOCK_SIZE /
        # MAX_SPEC_TOKENS) now apply to audit too, so a TP above 4096 is refused as a
        # setting (exit 3) instead of reaching rule KVA010 (this case was kva010-tp-huge)
        "tp-huge": _own(prefill="tp: " + "9" * 30),
        "args-block-size-huge": _own(prefill='tp: 8, args: "--block-size 99999999999"'),
        "args-spec-tokens-huge": _own(
            prefill='tp: 8, args: [--speculative-config, \'{"num_speculative_tokens": '
            "99999999999999}']"
        ),
        # JSON nested deeper than safeio's limit inside a flag value
        "args-deep-json": _own(
            prefill="tp: 8, args: [--kv-transfer-config, '"
            + '{"a":' * 5000
            + "1"
            + "}" * 5000
            + "']"
        ),
    }
    for name, text in wrong.items():
        out[f"wrong-type--{name}.yaml"] = text.encode()
    # wrong types in Kubernetes manifests
    k8s_wrong = {
        "args-string": K8S.replace(
            f'args: ["vllm", "serve", "{NANO}", "--tensor-parallel-size", "8"]',
            f'args: "vllm serve {NANO} -tp 8"',
        ),
        "containers-mapping": K8S.replace(
            "containers:\n      - name: vllm", "containers:\n        name: vllm", 1
        ),
        "tp-word": K8S.replace(
            '"--tensor-parallel-size", "8"', '"--tensor-parallel-size", "eight"'
        ),
        "tp-zero": K8S.replace('"--tensor-parallel-size", "8"', '"--tensor-parallel-size", "0"'),
        "metadata-list": K8S.replace("metadata:\n  name: nano-decode", "metadata: [nano-decode]"),
        "parallelism-zero": K8S.replace('"--tensor-parallel-size", "1"', '"-tp", "1", "-dp", "0"'),
        "env-number": K8S.replace(
            f'args: ["vllm", "serve", "{NANO}", "--tensor-parallel-size", "1"]',
            'env: 5\n        args: ["vllm", "serve", "$(MODEL)", "--tensor-parallel-size", "1"]',
        ),
    }
    for name, text in k8s_wrong.items():
        out[f"k8s--{name}.yaml"] = text.encode()
    # unresolved variables
    out["unresolved--k8s-model.yaml"] = K8S.replace(
        f'"serve", "{NANO}"', '"serve", "$(MODEL_ID)"'
    ).encode()
    out["unresolved--k8s-tp.yaml"] = K8S.replace(
        '"--tensor-parallel-size", "1"', '"--tensor-parallel-size", "$(TP)"'
    ).encode()
    out["unresolved--k8s-configmap-missing-key.yaml"] = (
        K8S.replace(
            '"--tensor-parallel-size", "8"]',
            '"--tensor-parallel-size", "$(TP)"]\n'
            "        env:\n        - name: TP\n          valueFrom:\n"
            "            configMapKeyRef: {name: absent, key: TP}",
        )
    ).encode()
    out["unresolved--shell.sh"] = SHELL.replace(
        f"vllm serve {NANO} --tensor-parallel-size 1", "vllm serve $MODEL --tensor-parallel-size 1"
    ).encode()
    out["unresolved--own-args.yaml"] = _own(prefill='tp: 8, args: "--block-size $(BLOCK)"').encode()
    # LMCACHE_CONFIG_FILE naming a hostile file of this corpus (looked up by file name in
    # the manifest's folder, read through safeio): the pool cannot be evaluated (exit 3)
    for name, target in (
        ("bomb", "bomb--billion-laughs.yaml"),
        ("recursive", "bomb--recursive-alias.yaml"),
        ("deep", "deep--flow-100k.yaml"),
        ("binary", "binary--bytes.yaml"),
        ("utf16", "encoding--utf16.yaml"),
        ("list", "shape--list.yaml"),
        ("malformed", "malformed--tab-indent.yaml"),
    ):
        out[f"lmcache--config-file-{name}.yaml"] = _own(
            prefill=f"tp: 8, env: {{LMCACHE_CONFIG_FILE: /etc/lmcache/{target}}}"
        ).encode()
    # a variable the script never sets, holding flags (word-split by bash)
    out["unresolved--shell-flags-variable.sh"] = SHELL.replace(
        "--tensor-parallel-size 1", "--tensor-parallel-size 1 $EXTRA_FLAGS"
    ).encode()
    # a duplicate key (PyYAML keeps the last one silently)
    out["malformed--duplicate-decode.yaml"] = (OWN + "decode:\n  tp: 2\n").encode()
    out["malformed--concatenated-k8s.yaml"] = (K8S + K8S).encode()
    out["shell--unbalanced-quote.sh"] = SHELL.replace("kv_producer\"}'", 'kv_producer"}').encode()
    # Helm templates
    out["helm--values-template.yaml"] = OWN.replace(
        "tp: 8", "tp: {{ .Values.prefill.tp }}"
    ).encode()
    out["helm--k8s-template.yaml"] = K8S.replace(f'"{NANO}"', '"{{ .Values.model }}"').encode()
    out["helm--block-directive.yaml"] = (
        "{{- if .Values.enabled }}\n" + K8S + "{{- end }}\n"
    ).encode()
    # alias bombs, recursion, deep nesting
    out["bomb--billion-laughs.yaml"] = _bomb().encode()
    out["bomb--inside-own.yaml"] = (
        OWN + "junk:\n" + "".join("  " + ln + "\n" for ln in _bomb().splitlines())
    ).encode()
    out["bomb--inside-k8s.yaml"] = (K8S + "---\n" + _bomb()).encode()
    out["bomb--recursive-alias.yaml"] = (OWN + "loop: &loop {self: *loop}\n").encode()
    out["deep--flow-100k.yaml"] = ("x: " + "[" * 100_000 + "]" * 100_000 + "\n").encode()
    out["deep--flow-100.yaml"] = (OWN + "x: " + "[" * 100 + "]" * 100 + "\n").encode()
    out["deep--block-80.yaml"] = (
        OWN + "".join(f"{'  ' * i}k{i}:\n" for i in range(80)) + "  " * 80 + "v: 1\n"
    ).encode()
    # binary and non-UTF-8
    out["binary--bytes.yaml"] = bytes(range(256)) * 8
    out["binary--nul-in-text.yaml"] = OWN.encode().replace(b"tp: 8", b"tp: \x008")
    out["binary--elf-header.sh"] = b"\x7fELF\x02\x01\x01\x00" + bytes(200)
    out["encoding--latin1.yaml"] = (OWN + "# caf\xe9\n").encode("latin-1")
    out["encoding--utf16.yaml"] = OWN.encode("utf-16")
    out["encoding--utf32.sh"] = SHELL.encode("utf-32")
    # not a deployment at all (given by name: exit 2)
    out["shape--empty.yaml"] = b""
    out["shape--comments-only.yaml"] = b"# nothing here\n"
    out["shape--list.yaml"] = b"- 1\n- 2\n"
    out["shape--scalar.yaml"] = b"just a string\n"
    out["shape--no-decode.yaml"] = f"model: {NANO}\nprefill: {{tp: 8}}\n".encode()
    out["shape--plain-text.txt"] = b"please run vllm on eight GPUs\n"
    # a P/D launch (a KV connector) whose role is named nowhere; with no
    # --kv-transfer-config at all it would be a standalone server
    out["shape--roleless-shell.sh"] = (
        f'vllm serve {NANO} -tp 8 --kv-transfer-config \'{{"kv_connector":"NixlConnector"}}\'\n'
    ).encode()
    # unknown models inside manifests (configs from the config corpus; paths are relative
    # to the repository root, where the test runs)
    unknown = {
        "bert": "tests/corpus/configs/bert.json",
        "mystery-type": "tests/corpus/configs/nano--unknown-model-type.json",
        "type-number": "tests/corpus/configs/nano--model-type-number.json",
        "vl-text-llama": "tests/corpus/configs/qwen35--text_config-model-type-llama.json",
        "dir-without-config": "tests/corpus",
        "missing-path": "tests/corpus/configs/no-such-config.json",
        "hub-id-not-cached": "example-org/not-a-real-model",
        "not-an-id": "no spaces allowed here",
    }
    for name, model in unknown.items():
        out[f"model--{name}.yaml"] = _own(model=f'"{model}"').encode()
    out["model--k8s-unknown-hub-id.yaml"] = K8S.replace(NANO, "example-org/unknown-hybrid").encode()
    # hostile input: container argv of the wrong shape (a string, a mapping, a
    # nested or null item) is named, never read as "no model given"
    argv = f'args: ["vllm", "serve", "{NANO}", "--tensor-parallel-size", "8"]'
    for name, bad in (
        ("args-mapping", "args: {tp: 8}"),
        ("command-number", "command: 5"),
        ("args-null-item", f'args: ["vllm", "serve", "{NANO}", null]'),
        ("args-nested-list", f'args: ["vllm", "serve", ["{NANO}"]]'),
    ):
        out[f"k8s--{name}.yaml"] = K8S.replace(argv, bad, 1).encode()
    stack = (
        "servingEngineSpec:\n  modelSpec:\n"
        f"  - name: prefill\n    modelURL: {NANO}\n    vllmConfig: {{tensorParallelSize: 8}}\n"
        "    lmcacheConfig: LMCACHE\n"
        f"  - name: decode\n    modelURL: {NANO}\n    vllmConfig: {{tensorParallelSize: 1}}\n"
    )
    out["stack--lmcache-list.yaml"] = stack.replace("LMCACHE", "[enabled]").encode()
    out["stack--lmcache-kvrole-number.yaml"] = stack.replace(
        "LMCACHE", "{enabled: true, kvRole: 5}"
    ).encode()
    # shell scripts that used to crash (kvalign/shell/ bounds them; more in
    # tests/deploy/test_corpus.py::test_hostile_shell_scripts_are_bounded)
    first = f"vllm serve {NANO} --tensor-parallel-size 8"
    out["shell--arith-2000-terms.sh"] = SHELL.replace(
        first, "TP=$(( " + "+".join(["1"] * 2000) + " ))\n" + first.replace("8", "$TP")
    ).encode()
    return out


#: (id, argv, what the message must name) for command lines that must exit 2
def cli_cases() -> list[dict[str, Any]]:
    """Command-line cases: each must exit 2 with one ``kvalign: error:`` line naming
    ``names`` (the option, or the model for TP sizes the model cannot use)."""
    cases: list[dict[str, Any]] = []
    bad_tps = {
        "zero": "0",
        "negative": "-1",
        "fraction": "1.5",
        "word": "eight",
        "empty-item": "1,,2",
        "empty": "",
        "huge": "9" * 30,
        "indivisible": "3",
        "all-indivisible": "3,5,7",
    }
    model_named = ("indivisible", "all-indivisible")
    for name, value in bad_tps.items():
        # a TP the model rejects is a finding for check and matrix (verdict invalid, exit
        # 1, the same as audit's KVA010: docs/policy.md), not bad input
        if name not in model_named:
            cases.append(
                {"id": f"check-prefill-tp-{name}",
                 "argv": ["check", NANO, f"--prefill-tp={value}"], "names": "--prefill-tp"}
            )  # fmt: skip
            cases.append(
                {"id": f"check-decode-tp-{name}",
                 "argv": ["check", NANO, f"--decode-tp={value}"], "names": "--decode-tp"}
            )  # fmt: skip
        if name not in model_named:
            cases.append(
                {"id": f"matrix-tp-{name}", "argv": ["matrix", NANO, f"--tp={value}"],
                 "names": "--tp"}
            )  # fmt: skip
        if name not in ("indivisible", "huge", "all-indivisible"):
            cases.append(
                {"id": f"survey-tp-{name}", "argv": ["survey", NANO, f"--tp={value}"],
                 "names": "--tp"}
            )  # fmt: skip
    for name, value in (("zero", "0"), ("negative", "-2"), ("fraction", "1.5"), ("word", "x")):
        cases.append(
            {"id": f"explain-tp-{name}", "argv": ["explain", NANO, f"--tp={value}"],
             "names": "--tp"}
        )  # fmt: skip
    cases.append(
        {"id": "explain-tp-indivisible", "argv": ["explain", NANO, "--tp=3"], "names": NANO}
    )
    cases.append(
        {"id": "explain-tp-huge", "argv": ["explain", NANO, "--tp=" + "9" * 30], "names": NANO}
    )
    other = [
        ("check-block-size-zero", ["check", NANO, "--block-size=0"], "--block-size"),
        ("check-block-size-word", ["check", NANO, "--block-size=big"], "--block-size"),
        (
            "check-spec-negative",
            ["check", NANO, "--num-speculative-tokens=-1"],
            "--num-speculative-tokens",
        ),
        ("check-kv-dtype", ["check", NANO, "--kv-cache-dtype=int3"], "--kv-cache-dtype"),
        ("check-vllm-version", ["check", NANO, "--vllm-version=banana"], "--vllm-version"),
        ("check-format", ["check", NANO, "--format=xml"], "--format"),
        ("check-unknown-option", ["check", NANO, "--bogus"], "--bogus"),
        ("check-missing-model", ["check"], "MODEL"),
        ("check-empty-model", ["check", ""], "MODEL"),
        ("check-dir-without-config", ["check", "tests/corpus"], "tests/corpus"),
        ("check-missing-file", ["check", "tests/corpus/configs/none.json"], "none.json"),
        ("check-not-an-id", ["check", "no such model"], "no such model"),
        (
            "check-unknown-hub-id",
            ["check", "example-org/not-a-real-model"],
            "example-org/not-a-real-model",
        ),
        ("matrix-corpus-config", ["matrix", "tests/corpus/configs/bert.json"], "bert.json"),
        ("audit-missing-path", ["audit", "tests/corpus/deployments/none.yaml"], "none.yaml"),
        (
            "audit-baseline-missing",
            ["audit", "configs/deployments/kvalign", "--baseline=none.json"],
            "none.json",
        ),
        (
            "audit-baseline-not-json",
            [
                "audit",
                "configs/deployments/kvalign",
                "--baseline=tests/corpus/deployments/shape--list.yaml",
            ],
            "shape--list.yaml",
        ),
        (
            "audit-config-bomb",
            [
                "audit",
                "configs/deployments/kvalign",
                "--config=tests/corpus/deployments/bomb--billion-laughs.yaml",
            ],
            "bomb--billion-laughs.yaml",
        ),
        (
            "audit-config-malformed",
            [
                "audit",
                "configs/deployments/kvalign",
                "--config=tests/corpus/deployments/malformed--tab-indent.yaml",
            ],
            "malformed--tab-indent.yaml",
        ),
        (
            "audit-vllm-version",
            ["audit", "configs/deployments/kvalign", "--vllm-version=banana"],
            "--vllm-version",
        ),
        ("audit-fail-on", ["audit", "configs/deployments/kvalign", "--fail-on=never"], "--fail-on"),
        (
            "audit-pair-by",
            ["audit", "configs/deployments/kvalign", "--pair-by=label,file"],
            "--pair-by",
        ),
        (
            "audit-output-unwritable",
            ["audit", "configs/deployments/kvalign", "--output=no-such-dir/report.txt"],
            "--output no-such-dir/report.txt: cannot write",
        ),
        (
            "audit-output-json-unwritable",
            [
                "audit",
                "configs/deployments/kvalign",
                "--format=json",
                "--output=no-such-dir/r.json",
            ],
            "--output no-such-dir/r.json: cannot write",
        ),
    ]
    for case_id, argv, names in other:
        cases.append({"id": case_id, "argv": argv, "names": names})
    return cases


def main() -> None:
    for folder, generated in ((OUT, cases()), (DEPLOY_OUT, deployment_cases())):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        for name, body in sorted(generated.items()):
            (folder / name).write_bytes(body)
        print(f"wrote {len(generated)} cases to {folder.relative_to(ROOT)}")
    CLI_OUT.write_text(json.dumps(cli_cases(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cli_cases())} cases to {CLI_OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
