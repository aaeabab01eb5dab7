"""``--hf-overrides``: parse the JSON object and apply it to a raw ``config.json`` dict.

Mirrors how vLLM 0.33 applies a dict ``hf_overrides`` (``vllm/config/model.py``
``ModelConfig.__post_init__`` / ``_apply_dict_overrides`` / ``_update_nested``): a
non-dict value replaces the field; a dict value merges recursively into a nested config
(``text_config`` and other sub-configs) and replaces a plain dict-valued field. kvalign
applies it to the raw dict *before* the config class parses it, so fields a config class
derives (e.g. Nemotron-H's ``layers_block_type`` from ``hybrid_override_pattern``) follow
the override. Pure: no I/O, the input dict is not modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kvalign.errors import InvalidSettings

#: raw-config keys that transformers turns into nested config objects (merged, not replaced).
_SUB_CONFIG_KEYS = frozenset(
    {"text_config", "vision_config", "audio_config", "llm_config", "language_config"}
)


def parse_hf_overrides(text: str | None) -> dict[str, object] | None:
    """``--hf-overrides`` text → a dict (``None`` when not given).

    Raises:
        InvalidSettings: not JSON, or not a JSON object; the message names the flag.
    """
    if text is None:
        return None
    from kvalign.safeio import JsonProblem, parse_json

    try:
        value = parse_json(text)
    except JsonProblem as exc:
        raise InvalidSettings(
            f"--hf-overrides: {exc}; " """expected an object such as '{"n_groups": 4}'"""
        ) from None
    if not isinstance(value, dict):
        raise InvalidSettings(
            f"--hf-overrides: expected a JSON object, got {type(value).__name__} "
            """(e.g. '{"text_config": {"mamba_ssm_dtype": "bfloat16"}}')"""
        )
    return value


def _merge(target: dict[str, Any], updates: Mapping[str, object]) -> None:
    for key, value in updates.items():
        current = target.get(key)
        if isinstance(value, Mapping) and isinstance(current, dict):
            _merge(current, value)
        else:
            target[key] = copy.deepcopy(value)


def apply_hf_overrides(
    raw: dict[str, Any], overrides: Mapping[str, object] | None
) -> dict[str, Any]:
    """A copy of ``raw`` with ``overrides`` applied as vLLM applies a dict ``hf_overrides``.

    Top level: a dict value merges recursively into a nested config (a sub-config key
    such as ``text_config``, or any dict carrying a ``model_type``); any other value,
    including a dict for a plain dict-valued field (``linear_attn_config``), replaces it.
    Below the top level, dicts merge recursively.
    """
    if not overrides:
        return raw
    result = copy.deepcopy(raw)
    for key, value in overrides.items():
        current = result.get(key)
        if (
            isinstance(value, Mapping)
            and isinstance(current, dict)
            and (key in _SUB_CONFIG_KEYS or "model_type" in current)
        ):
            _merge(current, value)
        else:
            result[key] = copy.deepcopy(value)
    return result
