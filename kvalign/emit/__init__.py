"""``kvalign plan --emit TARGET``: a ready deployment snippet carrying every planned setting.

One function per target in :data:`EMITTERS`, each ``(Plan) -> str``. Every snippet passes
``kvalign audit`` with no finding (tests/analysis/test_plan.py runs the round trip); the
header comment names the audit command line (``--vllm-version``, ``--gpu``) the plan was
made for. Every value from input is quoted for the target language (bash words by
:func:`shell_word`, YAML by the safe dumper :func:`kvalign.safeio.dump_yaml`, never by
string concatenation), and escaped in comments (:func:`comment_text`): a model folder
named ``x\nrm -rf ~`` stays one argument and one comment line. No I/O.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

from kvalign.backends import get_gpu
from kvalign.errors import InvalidSettings
from kvalign.plan import Plan
from kvalign.safeio import dump_yaml
from kvalign.sanitize import clean

__all__ = ["EMITTERS", "TARGETS", "comment_text", "emit", "model_word", "serve_args", "shell_word"]

#: prefill and decode HTTP ports in the shell and compose snippets.
PORTS = {"prefill": 8100, "decode": 8200}
ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}


def serve_args(plan: Plan, role: str) -> list[str]:
    """The ``vllm serve`` arguments (after MODEL) of the ``role`` pool: TP, the common
    ``--block-size``, every flag the plan was made with, the release's
    ``--max-num-batched-tokens`` and ``--no-disable-hybrid-kv-cache-manager`` when needed,
    and the ``--kv-transfer-config`` naming the role."""
    s = plan.settings
    tp = plan.prefill_tp if role == "prefill" else plan.decode_tp
    args = ["--tensor-parallel-size", str(tp)]
    if plan.block_size is not None:
        args += ["--block-size", str(plan.block_size)]
    optional: tuple[tuple[str, object, object], ...] = (
        ("--dtype", s.dtype, "auto"),
        ("--kv-cache-dtype", s.kv_cache_dtype, "auto"),
        ("--mamba-cache-dtype", s.mamba_cache_dtype, "auto"),
        ("--mamba-ssm-cache-dtype", s.mamba_ssm_cache_dtype, "auto"),
        ("--attention-backend", s.attention_backend, "auto"),
        ("--gdn-prefill-backend", s.gdn_prefill_backend, "auto"),
        ("--mamba-cache-mode", s.mamba_cache_mode, None),
        ("--mamba-block-size", s.mamba_block_size, None),
        ("--mamba-backend", s.mamba_backend, None),
        ("--max-model-len", s.max_model_len, None),
    )
    for flag, value, default in optional:
        if value is not None and value != default:
            args += [flag, str(value)]
    if s.kv_cache_dtype_skip_layers:  # vLLM's nargs="+" spelling: one word per entry
        args += ["--kv-cache-dtype-skip-layers", *s.kv_cache_dtype_skip_layers]
    if s.use_replayssm:
        args += ["--use-replayssm", "--replayssm-buffer-len", str(s.replayssm_buffer_len)]
    if s.enable_prefix_caching is not None:
        args.append(
            "--enable-prefix-caching" if s.enable_prefix_caching else "--no-enable-prefix-caching"
        )
    if s.num_speculative_tokens or s.speculative_method:
        # vLLM refuses num_speculative_tokens 0 (SpeculativeConfig: Field(gt=0))
        spec: dict[str, object] = {"method": s.speculative_method or "mtp"}
        if s.num_speculative_tokens:
            spec["num_speculative_tokens"] = s.num_speculative_tokens
        if s.eagle_aux_hidden_state_layer_ids:
            ids = list(s.eagle_aux_hidden_state_layer_ids)
            spec["draft_model_config"] = {"hf_config": {"eagle_aux_hidden_state_layer_ids": ids}}
        args += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    if plan.max_num_batched_tokens is not None:
        args += ["--max-num-batched-tokens", str(plan.max_num_batched_tokens)]
    if plan.hybrid_kv_cache_manager_flag:
        args.append("--no-disable-hybrid-kv-cache-manager")
    connector = "LMCacheConnectorV1" if plan.lmcache else "NixlConnector"
    transfer = {"kv_connector": connector, "kv_role": ROLES[role]}
    args += ["--kv-transfer-config", json.dumps(transfer, separators=(",", ":"))]
    return args


def _env(plan: Plan) -> dict[str, str]:
    return {"LMCACHE_CHUNK_SIZE": str(plan.lmcache_chunk_size)} if plan.lmcache else {}


def _image(plan: Plan) -> str:
    return f"vllm/vllm-openai:v{plan.release_first}"


def _product(plan: Plan) -> str | None:
    """A ``nvidia.com/gpu.product`` value naming ``--gpu`` (``None``: no NVIDIA GPU given)."""
    gpu = get_gpu(plan.settings.gpu)
    if gpu is None or gpu.vendor != "nvidia":
        return None
    return f"NVIDIA-{gpu.name}"


#: characters YAML (1.1) ends a line at besides LF and CR: a comment holding one would
#: start a new line of the document.
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029"}


def comment_text(text: object) -> str:
    """``text`` for inside a ``#`` comment of a shell or YAML snippet: control
    characters (LF, CR, ESC, ...), bidi overrides, lone surrogates and the Unicode line
    and paragraph separators as escapes (:func:`kvalign.sanitize.clean`), so a comment
    always stays one line and shows what it holds."""
    cleaned = clean(text, newlines=False)
    for char, escape in _LINE_BREAKS.items():
        cleaned = cleaned.replace(char, escape)
    return cleaned


def shell_word(word: str) -> str:
    """``word`` as one bash word, whatever it holds.

    Printable ASCII is quoted by :func:`shlex.quote` (``'...'``); any other word is an
    ANSI-C string (``$'...'``) in which everything but printable ASCII (and ``\\``,
    ``'``) is a ``\\xHH`` byte of its UTF-8 (a lone surrogate, from a name that is not
    UTF-8, as the byte it stands for): the snippet holds no raw control or bidi
    character, is ASCII whatever the encoding of the stdout it goes through, and bash
    passes the exact bytes."""
    if word.isascii() and word.isprintable():
        return shlex.quote(word)
    parts = ["$'"]
    try:
        data = word.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        data = word.encode("utf-8", "surrogatepass")
    for byte in data:
        # a backslash and a quote too as \xHH: tree-sitter-bash (kvalign's own reading
        # of the snippet) misreads \' and \\ inside $'...'
        if 0x20 <= byte < 0x7F and byte not in (0x5C, 0x27):
            parts.append(chr(byte))
        else:
            parts.append(f"\\x{byte:02x}")
    parts.append("'")
    return "".join(parts)


def model_word(plan: Plan) -> str:
    """The model as a ``vllm serve`` argument: a local path starting with ``-`` (a hub
    id never does) gets ``./``, so vLLM never reads it as an option."""
    return f"./{plan.model}" if plan.model.startswith("-") else plan.model


def _header(plan: Plan, file: str) -> list[str]:
    audit = f"kvalign audit {file} --vllm-version {plan.release_first}"
    if plan.settings.gpu:
        audit += f" --gpu {comment_text(plan.settings.gpu)}"
    where = ", ".join(plan.proven_on) or "every GPU class"
    return [
        f"# kvalign plan: {comment_text(plan.model)}, prefill TP {plan.prefill_tp}, decode TP "
        f"{plan.decode_tp}, vLLM {plan.release_first}",
        f"# common block size {plan.block_size} (holds on {comment_text(where)})",
        f"# check it: {audit}",
    ]


def _yaml(doc: Any) -> str:
    return dump_yaml(doc)


def _name(plan: Plan) -> str:
    """A Kubernetes object name (DNS-1123: ASCII lower-case letters, digits, ``-``)."""
    tail = plan.model.rstrip("/").rsplit("/", 1)[-1].lower()
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in tail).strip("-")
    return (cleaned or "model")[:40].strip("-")


def vllm_args(plan: Plan) -> str:
    """A bash script starting the prefill and decode ``vllm serve`` processes."""
    lines = ["#!/usr/bin/env bash", *_header(plan, "serve.sh"), "set -euo pipefail"]
    env = " ".join(f"{k}={shell_word(v)}" for k, v in _env(plan).items())
    for role in ("prefill", "decode"):
        words = ["vllm", "serve", model_word(plan), *serve_args(plan, role)]
        words += ["--port", str(PORTS[role])]
        command = " ".join(shell_word(w) for w in words)
        lines += [f"# {role}", (f"{env} " if env else "") + command + " &"]
    lines.append("wait")
    return "\n".join(lines) + "\n"


def compose(plan: Plan) -> str:
    """A Docker Compose file with one vLLM container per role (the image's entrypoint is
    ``vllm serve``)."""
    services: dict[str, Any] = {}
    for role in ("prefill", "decode"):
        service: dict[str, Any] = {
            "image": _image(plan),
            "command": [model_word(plan), *serve_args(plan, role), "--port", str(PORTS[role])],
            "ports": [f"{PORTS[role]}:{PORTS[role]}"],
            "ipc": "host",
        }
        if _env(plan):
            service["environment"] = _env(plan)
        service["deploy"] = {
            "resources": {
                "reservations": {
                    "devices": [
                        {
                            "driver": "nvidia",
                            "count": plan.prefill_tp if role == "prefill" else plan.decode_tp,
                            "capabilities": ["gpu"],
                        }
                    ]
                }
            }
        }
        services[f"vllm-{role}"] = service
    return "\n".join(_header(plan, "compose.yaml")) + "\n" + _yaml({"services": services})


def _container(plan: Plan, role: str, *, command: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "vllm" if command else "main", "image": _image(plan)}
    if command:
        container["command"] = ["vllm", "serve", model_word(plan)]
    container["args"] = serve_args(plan, role)
    if _env(plan):
        container["env"] = [{"name": k, "value": v} for k, v in _env(plan).items()]
    return container


def _node_selector(plan: Plan) -> dict[str, str]:
    product = _product(plan)
    return {"nvidia.com/gpu.product": product} if product else {}


def _epp(plan: Plan) -> dict[str, Any]:
    block = plan.block_size
    return {
        "apiVersion": "inference.networking.x-k8s.io/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {
                "type": "prefix-cache-scorer",
                "parameters": {"autoTune": False, "blockSizeTokens": block},
            },
            {
                "type": "precise-prefix-cache-scorer",
                "parameters": {"indexerConfig": {"tokenProcessorConfig": {"blockSize": block}}},
            },
        ],
        "schedulingProfiles": [
            {"name": "default", "plugins": [{"pluginRef": "precise-prefix-cache-scorer"}]}
        ],
    }


def llm_d_values(plan: Plan) -> str:
    """llm-d ModelService Helm values, then the EPP's ``EndpointPickerConfig`` (for the
    inference scheduler chart) carrying the prefix-cache scorers' block size."""
    values: dict[str, Any] = {
        "modelArtifacts": {"uri": f"hf://{plan.model}", "name": _name(plan)},
    }
    for role in ("decode", "prefill"):
        block: dict[str, Any] = {
            "create": True,
            "parallelism": {"tensor": plan.prefill_tp if role == "prefill" else plan.decode_tp},
        }
        container = _container(plan, role, command=False)
        container["name"] = "vllm"
        container["modelCommand"] = "vllmServe"
        block["containers"] = [container]
        if _node_selector(plan):
            block["nodeSelector"] = _node_selector(plan)
        values[role] = block
    header = "\n".join(_header(plan, "values.yaml"))
    return header + "\n" + _yaml(values) + "---\n" + _yaml(_epp(plan))


def kserve(plan: Plan) -> str:
    """A KServe ``LLMInferenceService``: ``spec.prefill`` the prefill pool, the top-level
    spec the decode pool, the router's scheduler config carrying the block size."""

    def workload(role: str) -> dict[str, Any]:
        tp = plan.prefill_tp if role == "prefill" else plan.decode_tp
        template: dict[str, Any] = {"containers": [_container(plan, role, command=False)]}
        if _node_selector(plan):
            template["nodeSelector"] = _node_selector(plan)
        return {"parallelism": {"tensor": tp}, "template": template}

    spec: dict[str, Any] = {"model": {"uri": f"hf://{plan.model}", "name": plan.model}}
    spec.update(workload("decode"))
    spec["prefill"] = workload("prefill")
    spec["router"] = {
        "scheduler": {"config": {"inline": _epp(plan)}},
    }
    doc = {
        "apiVersion": "serving.kserve.io/v1alpha1",
        "kind": "LLMInferenceService",
        "metadata": {"name": _name(plan)},
        "spec": spec,
    }
    return "\n".join(_header(plan, "llmisvc.yaml")) + "\n" + _yaml(doc)


def dynamo(plan: Plan) -> str:
    """An NVIDIA Dynamo ``DynamoGraphDeployment`` (v1beta1): the KV-routing frontend with
    ``--kv-cache-block-size`` and ``DYN_KV_CACHE_BLOCK_SIZE``, a prefill and a decode worker."""
    block = str(plan.block_size)
    image = "nvcr.io/nvidia/ai-dynamo/vllm-runtime"
    components: list[dict[str, Any]] = [
        {
            "name": "Frontend",
            "type": "frontend",
            "extraPodSpec": {
                "mainContainer": {
                    "image": image,
                    "command": ["python3", "-m", "dynamo.frontend"],
                    "args": ["--router-mode", "kv", "--kv-cache-block-size", block],
                    "env": [{"name": "DYN_KV_CACHE_BLOCK_SIZE", "value": block}],
                }
            },
        }
    ]
    for role in ("prefill", "decode"):
        args = ["--model", model_word(plan), *serve_args(plan, role)]
        args += ["--disaggregation-mode", role]
        main: dict[str, Any] = {
            "image": image,
            "command": ["python3", "-m", "dynamo.vllm"],
            "args": args,
        }
        if _env(plan):
            main["env"] = [{"name": k, "value": v} for k, v in _env(plan).items()]
        pod: dict[str, Any] = {"mainContainer": main}
        if _node_selector(plan):
            pod["nodeSelector"] = _node_selector(plan)
        components.append(
            {"name": f"Vllm{role.capitalize()}Worker", "type": role, "extraPodSpec": pod}
        )
    doc = {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": _name(plan)},
        "spec": {"components": components},
    }
    return "\n".join(_header(plan, "graph.yaml")) + "\n" + _yaml(doc)


def production_stack(plan: Plan) -> str:
    """production-stack Helm values: one ``modelSpec`` per role, ``enablePrefixCaching``
    explicit (the chart turns it off when absent), the block size in ``extraArgs``."""
    specs = []
    for role in ("prefill", "decode"):
        tp = plan.prefill_tp if role == "prefill" else plan.decode_tp
        extra = serve_args(plan, role)
        # the chart spells TP, prefix caching and the LMCache connector itself
        cut = extra.index("--kv-transfer-config")
        extra = extra[2:cut] + extra[cut + 2 :]
        extra = [
            a for a in extra if a not in ("--enable-prefix-caching", "--no-enable-prefix-caching")
        ]
        spec: dict[str, Any] = {
            "name": role,
            "repository": "vllm/vllm-openai",
            "tag": f"v{plan.release_first}",
            "modelURL": model_word(plan),
            "replicaCount": 1,
            "requestGPU": tp,
            "vllmConfig": {
                "tensorParallelSize": tp,
                "enablePrefixCaching": plan.prefix_caching,
                "extraArgs": extra,
            },
        }
        if plan.lmcache:
            spec["lmcacheConfig"] = {"enabled": True, "kvRole": ROLES[role]}
            spec["env"] = [{"name": k, "value": v} for k, v in _env(plan).items()]
        else:
            transfer = {"kv_connector": "NixlConnector", "kv_role": ROLES[role]}
            spec["vllmConfig"]["extraArgs"] += [
                "--kv-transfer-config",
                json.dumps(transfer, separators=(",", ":")),
            ]
        if _product(plan):
            spec["nodeSelectorTerms"] = [
                {
                    "matchExpressions": [
                        {
                            "key": "nvidia.com/gpu.product",
                            "operator": "In",
                            "values": [_product(plan)],
                        }
                    ]
                }
            ]
        specs.append(spec)
    doc = {
        "servingEngineSpec": {"modelSpec": specs},
        "routerSpec": {"routingLogic": "disaggregated_prefill"},
    }
    return "\n".join(_header(plan, "values.yaml")) + "\n" + _yaml(doc)


#: every ``--emit`` target, in help order.
EMITTERS: dict[str, Callable[[Plan], str]] = {
    "vllm-args": vllm_args,
    "llm-d-values": llm_d_values,
    "dynamo": dynamo,
    "kserve": kserve,
    "production-stack": production_stack,
    "compose": compose,
}
TARGETS = tuple(EMITTERS)
#: the stack whose router settings each target carries.
STACK_OF = {
    "vllm-args": "vllm",
    "compose": "vllm",
    "llm-d-values": "llm-d",
    "kserve": "kserve",
    "dynamo": "dynamo",
    "production-stack": "production-stack",
}


def emit(plan: Plan, target: str) -> str:
    """The ``target`` snippet for ``plan``.

    Raises:
        InvalidSettings: an unknown target, a plan with no common block size, or a YAML
            target for a model path that is not UTF-8.
    """
    if target not in EMITTERS:
        raise InvalidSettings(f"--emit: unknown target {target!r} (known: {', '.join(TARGETS)})")
    if plan.block_size is None:
        raise InvalidSettings(
            "--emit: no block size serves every pool on every GPU class, so there is no "
            "snippet to print (see the plan's proposals)"
        )
    if target != "vllm-args" and _not_unicode(plan.model):
        raise InvalidSettings(
            f"--emit {target}: the model path {clean(plan.model, newlines=False)!s} is not "
            "UTF-8, which a YAML document cannot hold: rename it, or use --emit vllm-args"
        )
    return EMITTERS[target](plan)


def _not_unicode(text: str) -> bool:
    """``text`` holds a lone surrogate (a file name whose bytes are not UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
