"""Reading one ``config.json`` safely: size cap, UTF-8, JSON object, special floats.

Hugging Face configs may contain ``Infinity``/``NaN`` literals (``time_step_limit``) and
transformers' own ``{"__float__": "Infinity"}`` encoding; both load.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from kvalign.errors import InvalidConfig
from kvalign.safeio import MAX_FILE_BYTES, JsonProblem, decode_text, parse_json, read_bytes

if TYPE_CHECKING:
    from pathlib import Path

#: largest config file kvalign reads (real configs are < 100 KiB; this guards against junk).
MAX_CONFIG_BYTES = MAX_FILE_BYTES
_SPECIAL_FLOATS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def _decode_special(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and "__float__" in obj and obj["__float__"] in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[obj["__float__"]]
    return obj


def parse_config_bytes(data: bytes, path: Path | str) -> dict[str, Any]:
    """Parse the bytes of a Hugging Face ``config.json`` (already read with a size cap).

    Raises:
        InvalidConfig: not UTF-8, not JSON, too deeply nested, or not a JSON object; the
            message names the file.
    """
    text = decode_text(data, str(path))
    try:
        parsed = parse_json(text, object_hook=_decode_special)
    except JsonProblem as exc:
        raise InvalidConfig(f"{path}: {exc}") from None
    if not isinstance(parsed, dict):
        raise InvalidConfig(f"{path}: expected a JSON object, got {type(parsed).__name__}")
    return parsed


def read_config_bytes(path: Path | str) -> bytes:
    """The bytes of ``config.json`` at ``path`` (read-only, at most ``MAX_CONFIG_BYTES``).

    Raises:
        ConfigNotFound: missing, a directory, a symlink loop, or unreadable.
        InvalidConfig: not a regular file, or larger than ``MAX_CONFIG_BYTES``.
    """
    return read_bytes(path, limit=MAX_CONFIG_BYTES)


def read_config_json(path: Path | str) -> dict[str, Any]:
    """Parse ``path`` as a Hugging Face ``config.json`` (read-only).

    Returns:
        The JSON object as a dict.

    Raises:
        ConfigNotFound: the file does not exist or cannot be opened.
        InvalidConfig: too large (> ``MAX_CONFIG_BYTES``), not UTF-8, not JSON, too deeply
            nested, or not a JSON object; the message names the file.
    """
    return parse_config_bytes(read_config_bytes(path), path)
