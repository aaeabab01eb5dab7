"""Parse a ``vllm serve`` argument list into the settings that move the block size.

The one parser every deployment reader uses. Mirrors vLLM 0.33's
``vllm/utils/argparse_utils.py`` ``FlexibleArgumentParser.parse_args`` (``_`` and ``-``
spellings, ``--k=v``, dotted JSON keys such as ``--speculative-config.num_speculative_tokens``,
``--config`` YAML with command-line flags overriding it) and the flag names of
``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args`` (``-tp``, ``-dp``, ``-sc``). No I/O:
``--config`` files are handed in by the caller as already-loaded mappings.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from kvalign.backends import AUTO_BACKEND
from kvalign.errors import InvalidSettings, NotModelled
from kvalign.numbers import MAX_DIGITS, parse_int, quoted
from kvalign.safeio import JsonProblem, parse_json
from kvalign.settings import Settings

#: flags that take no value (``--no-`` forms are derived).
BOOLEAN_FLAGS: frozenset[str] = frozenset(
    {"enable-prefix-caching", "trust-remote-code", "enforce-eager", "is-prefill-worker",
     "is-decode-worker", "enable-expert-parallel", "disable-log-requests",
     "disable-hybrid-kv-cache-manager", "use-replayssm"}
)  # fmt: skip
#: short aliases → long names (``EngineArgs.add_cli_args``).
ALIASES: Mapping[str, str] = {
    "-tp": "tensor-parallel-size",
    "-dp": "data-parallel-size",
    "-pp": "pipeline-parallel-size",
    "-sc": "speculative-config",
    "-q": "quantization",
}
#: long flags kvalign reads; everything else is listed in ``unknown``.
KNOWN: frozenset[str] = frozenset(
    {"model", "tensor-parallel-size", "data-parallel-size", "pipeline-parallel-size",
     "block-size", "kv-cache-dtype", "dtype", "mamba-cache-dtype", "mamba-ssm-cache-dtype",
     "enable-prefix-caching", "attention-backend", "speculative-config", "kv-transfer-config",
     "max-model-len", "revision", "config", "quantization", "disaggregation-mode",
     "is-prefill-worker", "is-decode-worker", "kv-cache-block-size", "hf-overrides",
     "mamba-cache-mode", "mamba-block-size", "disable-hybrid-kv-cache-manager",
     "use-replayssm", "replayssm-buffer-len", "mamba-backend", "kv-cache-dtype-skip-layers"}
)  # fmt: skip
#: ``EnableDisableAction`` (``vllm/utils/argparse_utils.py``, 0.33.0): a boolean flag
#: ``--enable-X`` is also turned off by ``--disable-X`` and ``--disable-X`` by ``--enable-X``.
_INVERSE_PREFIXES = (("enable-", "disable-"), ("disable-", "enable-"))
_READ_BOOLEANS = BOOLEAN_FLAGS & KNOWN


def _inverse(key: str) -> str:
    """``disable-X`` → ``no-enable-X`` (and ``enable-X`` → ``no-disable-X``) when the other
    spelling is a boolean flag kvalign reads; any other key unchanged."""
    for prefix, inverse in _INVERSE_PREFIXES:
        other = inverse + key.removeprefix(prefix)
        if key.startswith(prefix) and key not in BOOLEAN_FLAGS and other in _READ_BOOLEANS:
            return "no-" + other
    return key


#: flags that take one or more values (``nargs="+"`` in ``EngineArgs.add_cli_args``: a
#: ``list`` field of its config class): every word up to the next flag is a value.
LIST_FLAGS: frozenset[str] = frozenset({"kv-cache-dtype-skip-layers"})
#: an expansion kvalign could not resolve: Kubernetes ``$(VAR)`` left as written, or a
#: shell expansion :mod:`kvalign.shell` marked unresolved (``$1``, ``${A[@]}``, …).
_VAR = re.compile(r"\$\([A-Za-z_][A-Za-z0-9_]*\)|\ue000[^\ue000\ue001]*\ue001")
#: ``--kv-transfer-config`` fields that move sizing or the role; an unresolved value
#: anywhere else in it (``kv_ip``, ``kv_port``, buffer sizes) is noted, not fatal.
_TRANSFER_FIELDS = frozenset({"kv_role", "kv_connector", "chunk_size"})
#: joins the values of one :data:`LIST_FLAGS` occurrence into one token value.
LIST_SEPARATOR = "\n"
#: placeholder for an unresolved piece while a JSON value is parsed.
_HOLE = "\ue002"


def written(reference: str) -> str:
    """An unresolved reference as the user wrote it (``$(POD_IP)``, ``$2``, ``${X[@]}``)."""
    return reference.strip("\ue000\ue001")


def _refs(value: str) -> list[str]:
    return [written(m) for m in _VAR.findall(value)]


@dataclass(frozen=True)
class VllmArgs:
    """The settings of one ``vllm serve`` invocation that matter for KV-cache blocks.

    ``None`` means the flag was not given (vLLM's default applies). Sizes are tokens.

    Attributes:
        model: positional MODEL or ``--model``.
        tensor_parallel_size, data_parallel_size, pipeline_parallel_size: ``-tp`` / ``-dp`` /
            ``-pp``.
        block_size: ``--block-size``.
        kv_cache_dtype, dtype, mamba_cache_dtype, mamba_ssm_cache_dtype: dtype flags.
        enable_prefix_caching: ``--[no-]enable-prefix-caching``.
        attention_backend: ``--attention-backend``.
        num_speculative_tokens: ``--speculative-config`` ``num_speculative_tokens``.
        kv_connector, kv_role: ``--kv-transfer-config`` ``kv_connector`` / ``kv_role``.
        max_model_len: ``--max-model-len`` (vLLM's ``32k`` / ``32K`` suffixes; ``None`` for
            ``-1`` / ``auto``).
        revision: ``--revision``.
        hf_overrides: ``--hf-overrides`` as canonical JSON text (applied to the model's
            config before sizing, as ``check --hf-overrides`` does).
        disaggregation_mode: Dynamo ``--disaggregation-mode`` or ``--is-prefill-worker`` /
            ``--is-decode-worker`` folded to ``prefill`` / ``decode``.
        kv_cache_block_size: Dynamo ``--kv-cache-block-size`` (a router-side block size).
        lmcache_chunk_size: LMCache ``chunk_size`` (tokens).
        lmcache_chunk_source: where it came from (``kv_connector_extra_config.chunk_size``,
            ``LMCACHE_CHUNK_SIZE``, or the ``LMCACHE_CONFIG_FILE`` path, filled in by the
            reader that loads that file).
        config_file: ``--config`` path, if any.
        mamba_cache_mode: ``--mamba-cache-mode``.
        mamba_block_size: ``--mamba-block-size``.
        disable_hybrid_kv_cache_manager: ``--[no-]disable-hybrid-kv-cache-manager``.
        kv_transfer_config: ``--kv-transfer-config`` was given.
        use_replayssm, replayssm_buffer_len, mamba_backend: ``--use-replayssm``,
            ``--replayssm-buffer-len``, ``--mamba-backend``.
        kv_cache_dtype_skip_layers: ``--kv-cache-dtype-skip-layers`` entries (layer
            indices, ``sliding_window``).
        speculative_method: ``--speculative-config`` ``method``.
        eagle_aux_hidden_state_layer_ids: ``--speculative-config``
            ``draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids``.
        pp_layer_partition: the ``VLLM_PP_LAYER_PARTITION`` environment variable (layers
            per pipeline stage), ``None`` when unset.
        unknown: flags kvalign does not read (for ``--verbose``).
        unresolved: references kvalign cannot resolve in values it reads, as written
            (``--model: $(MODEL_ID)``, ``argument: ${EXTRA_ARGS[@]}``), each once.
        unresolved_noted: unresolved references in fields that cannot change sizing or
            the role (``--kv-transfer-config kv_ip: $(POD_IP)``): noted, not fatal.
    """

    model: str | None = None
    tensor_parallel_size: int | None = None
    data_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    block_size: int | None = None
    kv_cache_dtype: str | None = None
    dtype: str | None = None
    mamba_cache_dtype: str | None = None
    mamba_ssm_cache_dtype: str | None = None
    enable_prefix_caching: bool | None = None
    attention_backend: str | None = None
    num_speculative_tokens: int | None = None
    kv_connector: str | None = None
    kv_role: str | None = None
    max_model_len: int | None = None
    revision: str | None = None
    hf_overrides: str | None = None
    disaggregation_mode: str | None = None
    kv_cache_block_size: int | None = None
    lmcache_chunk_size: int | None = None
    lmcache_chunk_source: str | None = None
    config_file: str | None = None
    mamba_cache_mode: str | None = None
    mamba_block_size: int | None = None
    disable_hybrid_kv_cache_manager: bool | None = None
    kv_transfer_config: bool = False
    use_replayssm: bool | None = None
    replayssm_buffer_len: int | None = None
    mamba_backend: str | None = None
    pp_layer_partition: str | None = None
    kv_cache_dtype_skip_layers: tuple[str, ...] | None = None
    speculative_method: str | None = None
    eagle_aux_hidden_state_layer_ids: tuple[int, ...] | None = None
    unknown: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = field(default=())
    unresolved_noted: tuple[str, ...] = ()


def split_command(text: str) -> list[str]:
    """Split a shell command line (``\\`` continuations, quotes) into words.

    Raises:
        InvalidSettings: unbalanced quotes.
    """
    try:
        return shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError as exc:
        raise InvalidSettings(f"cannot split command line: {exc}") from None


#: Dynamo's vLLM worker launcher modules (``python -m dynamo.vllm``, and the unified entry
#: point ``python -m dynamo.vllm.unified_main``): their arguments are vLLM engine flags.
DYNAMO_VLLM_MODULES = frozenset({"dynamo.vllm", "dynamo.vllm.unified_main"})


def dynamo_worker(words: Sequence[str]) -> bool:
    """Whether ``words`` launch a Dynamo vLLM worker (:data:`DYNAMO_VLLM_MODULES`)."""
    return any(
        word == "-m" and i + 1 < len(words) and words[i + 1] in DYNAMO_VLLM_MODULES
        for i, word in enumerate(words)
    )


def serve_arguments(words: Sequence[str]) -> list[str] | None:
    """The arguments after ``vllm serve`` / ``python -m vllm.entrypoints.openai.api_server`` /
    ``python -m dynamo.vllm`` (:data:`DYNAMO_VLLM_MODULES`) in ``words`` (``None`` when no
    vLLM launch is found).
    """
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
            return list(words[i + 2 :])
        if word == "-m" and i + 1 < len(words):
            module = words[i + 1]
            if module == "vllm.entrypoints.cli.main":
                rest = list(words[i + 2 :])
                return rest[1:] if rest[:1] == ["serve"] else rest
            if module.startswith("vllm.entrypoints") or module in DYNAMO_VLLM_MODULES:
                return list(words[i + 2 :])
    return None


def config_to_args(config: Mapping[str, Any]) -> list[str]:
    """vLLM ``--config`` YAML (long-form keys) → argument words, as
    ``FlexibleArgumentParser.load_config_file`` does (``true`` → ``--k``,
    ``false`` → ``--no-k``, a list → ``--k`` then each item, an empty list → nothing,
    mappings → JSON)."""
    words: list[str] = []
    for key, value in config.items():
        flag = "--" + str(key)
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + str(key))
        elif isinstance(value, list):
            if value:
                words += [flag, *(str(item) for item in value)]
        elif isinstance(value, dict):
            words += [flag, json.dumps(value)]
        elif value is not None:
            words += [flag, str(value)]
    return words


def _normalise(word: str) -> str:
    if word in ALIASES:
        return "--" + ALIASES[word]
    flag, eq, value = word.partition("=")
    if eq and flag in ALIASES:  # -tp=4, as argparse reads it
        return "--" + ALIASES[flag] + eq + value
    if not word.startswith("--"):
        return word  # only the flag's name: the value stays as written
    head, dot, rest = flag[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + rest + eq + value


def _json(value: str, flag: str) -> dict[str, Any]:
    try:
        data = parse_json(value)
    except JsonProblem as exc:
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise InvalidSettings(f"--{flag}: {shown!r} is {exc}") from None
    if not isinstance(data, dict):
        raise InvalidSettings(f"--{flag}: expected a JSON object, got {value!r}")
    return data


def _scalar(text: str) -> Any:
    try:
        return parse_json(text)
    except JsonProblem:
        return text


def _int(value: Any, flag: str) -> int:
    return parse_int(str(value).strip().lower(), f"--{flag}", signed=True)


#: ``human_readable_int``'s suffixes (``vllm/utils/argparse_utils.py``, 0.33.0): lowercase
#: ones are decimal, uppercase ones binary (and take no decimals).
_DECIMAL_SUFFIX: Mapping[str, int] = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX: Mapping[str, int] = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])", re.ASCII)


def _max_model_len(value: Any) -> int | None:
    """``--max-model-len`` as vLLM's ``human_readable_int_or_auto`` reads it (``32k`` is
    32,000, ``32K`` 32,768, ``25.6k`` 25,600); ``-1`` / ``auto`` is ``None``: vLLM derives
    the length from the model's config, as when the flag is not given
    (``ModelConfig.max_model_len``, ``vllm/config/model.py``).

    Raises:
        InvalidSettings: no such integer, or below 1 (vLLM refuses it).
    """
    text = str(value).strip()
    if text == "-1" or text.lower() == "auto":
        return None
    shown = f"--max-model-len: {quoted(str(value)[:40])}"
    match = _HUMAN_INT.fullmatch(text) if len(text) <= MAX_DIGITS else None
    if match is None:
        tokens = parse_int(text, "--max-model-len", signed=True)
    elif match[2] in _DECIMAL_SUFFIX:
        tokens = int(float(match[1]) * _DECIMAL_SUFFIX[match[2]])
    elif "." in match[1]:
        raise InvalidSettings(f"{shown} has a decimal with a binary suffix (e.g. 32K)")
    else:
        tokens = int(match[1]) * _BINARY_SUFFIX[match[2]]
    if tokens < 1:
        raise InvalidSettings(f"{shown} is below 1 (give a length, or -1 / auto)")
    return tokens


def _tokens(words: Sequence[str]) -> list[tuple[str, str | None]]:
    """(long flag or positional, value) pairs in order."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words):
        word = _normalise(words[i])
        if word.startswith("--"):
            if "=" in word:
                key, value = word.split("=", 1)
                out.append((key[2:], value))
            else:
                key = _inverse(word[2:])
                bare = key.removeprefix("no-")
                takes_value = bare not in BOOLEAN_FLAGS and not key.startswith("no-")
                nxt = words[i + 1] if i + 1 < len(words) else None
                if key in LIST_FLAGS:
                    values = []
                    while i + 1 < len(words) and not _is_flag(words[i + 1]):
                        values.append(words[i + 1])
                        i += 1
                    out.append((key, LIST_SEPARATOR.join(values) if values else None))
                elif takes_value and nxt is not None and not _is_flag(nxt):
                    out.append((key, nxt))
                    i += 1
                else:
                    out.append((key, None))
        elif word.startswith("-") and len(word) > 1 and not _is_number(word):
            nxt = words[i + 1] if i + 1 < len(words) else None
            if nxt is not None and not _is_flag(nxt):
                out.append((word, nxt))
                i += 1
            else:
                out.append((word, None))
        else:
            out.append(("", word))
        i += 1
    return out


def _is_number(word: str) -> bool:
    return re.fullmatch(r"-?\d+(\.\d+)?", word) is not None


def _is_flag(word: str) -> bool:
    return word.startswith("-") and not _is_number(word)


def parse_vllm_args(
    args: Sequence[str] | str,
    *,
    config_files: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
) -> VllmArgs:
    """Parse ``vllm serve`` arguments (a word list, or a string split with shlex).

    Args:
        args: the words after ``vllm serve`` (a leading ``vllm serve`` is skipped).
        config_files: ``--config`` path → loaded YAML mapping; flags given on the command
            line override the file, as in vLLM.
        env: the process environment (``VLLM_ATTENTION_BACKEND``, ``LMCACHE_CHUNK_SIZE``,
            ``VLLM_PP_LAYER_PARTITION``).

    Returns:
        A :class:`VllmArgs`; the last occurrence of a flag wins.

    Raises:
        InvalidSettings: a value kvalign reads is malformed (non-integer size, bad JSON),
            or ``--config`` names a file that was not provided.
    """
    if not config_files:  # the result depends on the words and the environment only
        key = (args if isinstance(args, str) else tuple(args), tuple((env or {}).items()))
        try:
            return _parse_once(key)
        except TypeError:  # pragma: no cover - an unhashable word or value: parsed below
            pass
    return _parse(args, config_files, env)


@lru_cache(maxsize=4096)
def _parse_once(key: tuple[str | tuple[str, ...], tuple[tuple[str, str], ...]]) -> VllmArgs:
    """:func:`_parse` of ``(args, env items)`` with no ``--config`` files, once per run
    for each distinct launch (a folder of copies of one manifest repeats its flags;
    :class:`VllmArgs` is immutable, so the pools share it)."""
    args, env = key
    return _parse(args, None, dict(env))


def _parse(
    args: Sequence[str] | str,
    config_files: Mapping[str, Mapping[str, Any]] | None,
    env: Mapping[str, str] | None,
) -> VllmArgs:
    """:func:`parse_vllm_args` itself (uncached)."""
    words = split_command(args) if isinstance(args, str) else list(args)
    launched = serve_arguments(words)
    if launched is not None:
        words = launched
    tokens = _tokens(words)
    config_path = next((v for k, v in tokens if k == "config" and v), None)
    if config_path is not None:
        loaded = (config_files or {}).get(config_path)
        if loaded is None:
            raise InvalidSettings(f"--config {config_path}: file not found next to the deployment")
        tokens = _tokens(config_to_args(loaded)) + tokens
    env = env or {}
    values: dict[str, Any] = {}
    unknown: list[str] = []
    unresolved: list[str] = []
    noted: list[str] = []
    for key, value in tokens:
        if key == "" and value is not None:
            if "model" in values:
                if _VAR.search(value):  # e.g. an unset $COMMON: flags kvalign cannot see
                    unresolved += [f"argument: {m}" for m in _refs(value)]
                else:
                    unknown.append(value)  # vLLM takes one positional (MODEL)
                continue
            if _VAR.search(value):
                unresolved += [f"MODEL: {m}" for m in _refs(value)]
                values["model"] = None
            else:
                values["model"] = value
            continue
        head, _, dotted = key.partition(".")
        bare = head.removeprefix("no-")
        if bare not in KNOWN:
            unknown.append("--" + key if not key.startswith("-") else key)
            if value is not None and _VAR.search(value):  # e.g. --port $PORT
                noted += [f"--{key}: {m}" for m in _refs(value)]
            continue
        if value is not None and _VAR.search(value):
            if head == "kv-transfer-config" and not dotted:
                tolerated = _tolerable_json(value)
                if tolerated is not None:
                    values[head], ignored = tolerated
                    noted += [f"--{key} {path}: {ref}" for path, ref in ignored]
                    continue
            unresolved += [f"--{key}: {m}" for m in _refs(value)]
            continue
        if dotted:
            nested = values.setdefault(head, {})
            if isinstance(nested, dict):
                cursor = nested
                parts = dotted.split(".")
                for part in parts[:-1]:
                    cursor = cursor.setdefault(part, {})
                cursor[parts[-1]] = _scalar(value) if value is not None else True
            continue
        if bare in BOOLEAN_FLAGS:
            values[bare] = not head.startswith("no-") if value is None else _truthy(value)
        elif head in ("speculative-config", "kv-transfer-config", "hf-overrides"):
            if value is None:
                raise InvalidSettings(f"--{head}: missing JSON value")
            values[head] = _json(value, head)
        else:
            if value is None:
                raise InvalidSettings(f"--{head}: missing value")
            values[head] = value
    parsed = _build(values, env, tuple(unknown), tuple(dict.fromkeys(unresolved)))
    if noted:
        parsed = replace(parsed, unresolved_noted=tuple(dict.fromkeys(noted)))
    return parsed


def _tolerable_json(value: str) -> tuple[dict[str, Any], list[tuple[str, str]]] | None:
    """``--kv-transfer-config`` JSON whose unresolved pieces sit only in fields that
    cannot change sizing or the role (not :data:`_TRANSFER_FIELDS`): the parsed object
    and ``(field path, reference)`` pairs; ``None`` when a piece sits in such a field or
    the text is no JSON object even with the pieces filled in."""
    if _HOLE in value:
        return None
    refs = _refs(value)
    numbers = iter(range(len(refs)))
    filled = _VAR.sub(lambda _: f"{_HOLE}{next(numbers)}{_HOLE}", value)  # the i-th piece
    try:
        data = parse_json(filled)
    except JsonProblem:
        try:  # an unquoted piece, e.g. "kv_port": $PORT
            data = parse_json(re.sub(f"{_HOLE}[0-9]+{_HOLE}", lambda m: f'"{m[0]}"', filled))
        except JsonProblem:
            return None
    if not isinstance(data, dict):
        return None
    notes: list[tuple[str, str]] = []

    def walk(node: Any, path: str) -> bool:
        if isinstance(node, dict):
            if any(_HOLE in str(k) for k in node):  # the field could be any (kv_role)
                return False
            return all(walk(v, f"{path}.{k}" if path else str(k)) for k, v in node.items())
        if isinstance(node, list):
            return all(walk(v, f"{path}[{i}]") for i, v in enumerate(node))
        if isinstance(node, str) and _HOLE in node:
            if path.rsplit(".", 1)[-1] in _TRANSFER_FIELDS:
                return False
            pieces = re.findall(f"{_HOLE}([0-9]+){_HOLE}", node)
            notes.extend((path, refs[int(i)]) for i in pieces)
        return True

    if not walk(data, "") or not notes:
        return None
    return data, notes


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def _aux_layer_ids(spec: Mapping[str, Any]) -> tuple[int, ...] | None:
    """``draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids`` of a
    ``--speculative-config`` object (``None`` when absent).

    Raises:
        InvalidSettings: not a list of layer indices.
    """
    draft = spec.get("draft_model_config")
    hf = draft.get("hf_config") if isinstance(draft, dict) else None
    ids = hf.get("eagle_aux_hidden_state_layer_ids") if isinstance(hf, dict) else None
    if ids is None:
        return None
    flag = "speculative-config.draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids"
    if not isinstance(ids, list):
        raise InvalidSettings(f"--{flag}: expected a list of layer indices")
    return tuple(_int(i, flag) for i in ids)


def _draft_count_check(spec: Mapping[str, Any], method: str | None) -> None:
    """A ``--speculative-config`` naming a ``method`` and a draft ``model`` but no
    ``num_speculative_tokens``: vLLM takes the count from the draft model's config
    (``n_predict``, ``SpeculativeConfig.__post_init__``, ``vllm/config/speculative.py``,
    read in 0.11.1 → 0.33.0), which kvalign does not read.

    Raises:
        NotModelled: that combination (the launch is not evaluated).
    """
    if method is None or spec.get("num_speculative_tokens") is not None:
        return
    if spec.get("model") is None or method == "suffix":
        return
    raise NotModelled(
        "--speculative-config: method "
        f"{quoted(method)} with a draft model and no num_speculative_tokens: vLLM takes "
        "the count from the draft model's n_predict, which kvalign does not read; give "
        "num_speculative_tokens"
    )


def _spec_method(spec: Mapping[str, Any]) -> str | None:
    """``method`` of a ``--speculative-config`` object (``None`` when absent or ``null``).

    vLLM validates it as one of its ``SpeculativeMethod`` names, a string
    (``SpeculativeConfig.method``, ``vllm/config/speculative.py``).

    Raises:
        InvalidSettings: not a string (a number, list or object).
    """
    method = spec.get("method")
    if method is None or isinstance(method, str):
        _draft_count_check(spec, method)
        return method
    raise InvalidSettings(
        f"--speculative-config.method: expected a method name (a JSON string), got "
        f"{quoted(json.dumps(method))}"
    )


def _build(
    values: dict[str, Any], env: Mapping[str, str], unknown: tuple[str, ...], unres: tuple[str, ...]
) -> VllmArgs:
    def opt_int(flag: str) -> int | None:
        return _int(values[flag], flag) if flag in values else None

    def opt_str(flag: str) -> str | None:
        return str(values[flag]) if values.get(flag) is not None else None

    spec = values.get("speculative-config") or {}
    transfer = values.get("kv-transfer-config") or {}
    spec_tokens = spec.get("num_speculative_tokens")
    mode = opt_str("disaggregation-mode")
    if values.get("is-prefill-worker"):
        mode = "prefill"
    elif values.get("is-decode-worker"):
        mode = "decode"
    chunk: int | None = None
    chunk_source: str | None = None
    extra = transfer.get("kv_connector_extra_config")
    if isinstance(extra, dict) and "chunk_size" in extra:
        chunk = _int(extra["chunk_size"], "kv-transfer-config.chunk_size")
        chunk_source = "kv_connector_extra_config.chunk_size"
    elif "LMCACHE_CHUNK_SIZE" in env:
        chunk = _int(env["LMCACHE_CHUNK_SIZE"], "LMCACHE_CHUNK_SIZE")
        chunk_source = "LMCACHE_CHUNK_SIZE"
    backend = opt_str("attention-backend") or env.get("VLLM_ATTENTION_BACKEND") or None
    return VllmArgs(
        model=opt_str("model"),
        tensor_parallel_size=opt_int("tensor-parallel-size"),
        data_parallel_size=opt_int("data-parallel-size"),
        pipeline_parallel_size=opt_int("pipeline-parallel-size"),
        block_size=opt_int("block-size"),
        kv_cache_dtype=opt_str("kv-cache-dtype"),
        dtype=opt_str("dtype"),
        mamba_cache_dtype=opt_str("mamba-cache-dtype"),
        mamba_ssm_cache_dtype=opt_str("mamba-ssm-cache-dtype"),
        enable_prefix_caching=values.get("enable-prefix-caching"),
        attention_backend=backend,
        num_speculative_tokens=(
            _int(spec_tokens, "speculative-config.num_speculative_tokens")
            if spec_tokens is not None
            else None
        ),
        kv_connector=str(transfer["kv_connector"]) if "kv_connector" in transfer else None,
        kv_role=str(transfer["kv_role"]) if "kv_role" in transfer else None,
        max_model_len=(
            _max_model_len(values["max-model-len"]) if "max-model-len" in values else None
        ),
        revision=opt_str("revision"),
        hf_overrides=(
            json.dumps(values["hf-overrides"], sort_keys=True)
            if values.get("hf-overrides")
            else None
        ),
        disaggregation_mode=mode,
        kv_cache_block_size=opt_int("kv-cache-block-size"),
        lmcache_chunk_size=chunk,
        lmcache_chunk_source=chunk_source,
        config_file=opt_str("config"),
        mamba_cache_mode=opt_str("mamba-cache-mode"),
        mamba_block_size=opt_int("mamba-block-size"),
        disable_hybrid_kv_cache_manager=values.get("disable-hybrid-kv-cache-manager"),
        kv_transfer_config="kv-transfer-config" in values,
        use_replayssm=values.get("use-replayssm"),
        replayssm_buffer_len=opt_int("replayssm-buffer-len"),
        mamba_backend=opt_str("mamba-backend"),
        pp_layer_partition=env.get("VLLM_PP_LAYER_PARTITION") or None,
        kv_cache_dtype_skip_layers=(
            tuple(str(values["kv-cache-dtype-skip-layers"]).split(LIST_SEPARATOR))
            if values.get("kv-cache-dtype-skip-layers") is not None
            else None
        ),
        speculative_method=_spec_method(spec),
        eagle_aux_hidden_state_layer_ids=_aux_layer_ids(spec),
        unknown=unknown,
        unresolved=unres,
    )


#: :class:`~kvalign.settings.Settings` fields that are no ``vllm serve`` argument: what a
#: deployment runs on (the GPU, the vLLM release of its image) and kvalign's own choices
#: (``--alignment``; the GDN prefill backend, set through vLLM's ``additional_config``,
#: which kvalign reads only from ``check --gdn-prefill-backend``; the transformers release
#: the image installed, ``--transformers-version``; the ``VLLM_PP_LAYER_PARTITION``
#: environment variable, ``--pp-layer-partition``).
NOT_SERVE_ARGUMENTS = frozenset(
    {
        "gpu",
        "vllm_version",
        "alignment",
        "gdn_prefill_backend",
        "transformers_version",
        "pp_layer_partition",
    }
)


def settings_from_args(
    args: VllmArgs,
    *,
    gpu: str | None = None,
    vllm_version: str | None = None,
    attention_backend: str | None = None,
) -> Settings:
    """The one place a pool's :class:`~kvalign.settings.Settings` are built from its
    ``vllm serve`` arguments (every deployment reader and ``audit`` use it).

    A flag not given keeps vLLM's default: ``--attention-backend`` unset (and no
    ``VLLM_ATTENTION_BACKEND``) is ``attention_backend`` (``audit --attention-backend``)
    when given, else ``auto``: the backend vLLM picks for the GPU and release
    (:func:`kvalign.backends.resolve_backend`). ``gpu`` and ``vllm_version`` are what the
    deployment runs on (node label or ``--gpu``; image tag or ``--vllm-version``), not
    arguments (:data:`NOT_SERVE_ARGUMENTS`). Mirrors the ``EngineArgs`` defaults
    (``vllm/engine/arg_utils.py``).
    """
    backend = args.attention_backend or attention_backend
    return Settings(
        dtype=args.dtype or "auto",
        kv_cache_dtype=args.kv_cache_dtype or "auto",
        block_size=args.block_size,
        enable_prefix_caching=args.enable_prefix_caching,
        mamba_cache_dtype=args.mamba_cache_dtype or "auto",
        mamba_ssm_cache_dtype=args.mamba_ssm_cache_dtype or "auto",
        num_speculative_tokens=args.num_speculative_tokens or 0,
        attention_backend=backend.strip().upper() if backend else AUTO_BACKEND,
        gpu=gpu,
        vllm_version=vllm_version,
        mamba_cache_mode=args.mamba_cache_mode,
        mamba_block_size=args.mamba_block_size,
        max_model_len=args.max_model_len,
        use_replayssm=bool(args.use_replayssm),
        replayssm_buffer_len=args.replayssm_buffer_len or Settings.replayssm_buffer_len,
        mamba_backend=args.mamba_backend,
        pipeline_parallel_size=args.pipeline_parallel_size or 1,
        pp_layer_partition=args.pp_layer_partition,
        kv_cache_dtype_skip_layers=args.kv_cache_dtype_skip_layers or (),
        speculative_method=args.speculative_method,
        eagle_aux_hidden_state_layer_ids=args.eagle_aux_hidden_state_layer_ids or (),
    )
