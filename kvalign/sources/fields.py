"""Field access over a config (transformers config object or raw JSON dict).

:class:`ConfigFields` implements :class:`kvalign.families.base.FieldReader`: it validates
each value a formula needs (positive integer, finite number) and remembers which config
key it came from, so errors and ``explain`` output can name the exact field.
"""

from __future__ import annotations

import math
from typing import Any

from kvalign.errors import InvalidConfig

_MISSING = object()
#: :meth:`ConfigFields._required`'s answer when the key is absent and a default applies.
_DEFAULT = object()

#: largest value accepted for a head count or dimension (real models stay far below).
MAX_FIELD_VALUE = 1 << 24
#: largest layer count, layer list or layer pattern accepted (real models: < 200 layers).
MAX_LAYERS = 10_000


def check_config_sizes(raw: Any, path: str) -> None:
    """Refuse layer counts, layer lists and layer patterns above :data:`MAX_LAYERS`
    before anything (transformers' config classes, kvalign's readers) builds a list from
    them: ``num_hidden_layers: 10**9`` is one line, not a hang.

    Every key that names layers or a pattern (``num_hidden_layers``, ``layer_types``,
    ``hybrid_override_pattern``, ``linear_attn_config.kda_layers``, ...) is checked, at
    any nesting level (``text_config``).

    Raises:
        InvalidConfig: the budget named (``layers``), the file and the field.
    """
    stack: list[tuple[str, Any]] = [("", raw)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, list):
            stack.extend((where, child) for child in node if isinstance(child, (dict, list)))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            name = f"{where}{key}"
            lowered = str(key).lower()
            if isinstance(value, (dict, list)):
                stack.append((f"{name}.", value))
            if "layer" not in lowered and "pattern" not in lowered:
                continue
            size: float | None = None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                size = value
            elif isinstance(value, (list, str)):
                size = len(value)
            if size is not None and not size <= MAX_LAYERS:  # also NaN
                raise InvalidConfig(
                    f"{path}: field '{name}' = {_short(value)} is over the layer budget "
                    f"(at most {MAX_LAYERS:,} layers)"
                )


def _short(value: Any) -> str:
    if isinstance(value, (list, str)):
        return f"<{type(value).__name__} of {len(value):,}>"
    text = repr(value)
    return text if len(text) <= 30 else f"{text[:20]}… ({len(text):,} digits)"


class ConfigFields:
    """Typed, provenance-recording reads from one (text) config.

    Args:
        config: a ``transformers.PretrainedConfig`` or a plain ``dict`` (raw JSON).
        path: config file path, used in error messages.
        prefix: key prefix shown to users (``"text_config."`` for VL wrappers).
    """

    def __init__(self, config: Any, *, path: str, prefix: str = "") -> None:
        self._config = config
        self._path = path
        self._prefix = prefix
        self.provenance: dict[str, str] = {}

    def _lookup(self, key: str) -> Any:
        node: Any = self._config
        for part in key.split("."):
            if isinstance(node, dict):
                node = node.get(part, _MISSING)
            else:
                node = getattr(node, part, _MISSING)
            if node is _MISSING or node is None:
                return _MISSING
        return node

    def raw(self, key: str) -> object:
        """The raw value at dotted ``key`` or ``None`` when absent/null."""
        value = self._lookup(key)
        return None if value is _MISSING else value

    def has(self, key: str) -> bool:
        """Whether dotted ``key`` is present and not null."""
        return self._lookup(key) is not _MISSING

    def where(self, key: str) -> str:
        """User-facing name of ``key`` (with the text-config prefix)."""
        return f"{self._prefix}{key}"

    def fail(self, key: str, problem: str) -> InvalidConfig:
        """An :class:`InvalidConfig` naming the file and field."""
        return InvalidConfig(f"{self._path}: field '{self.where(key)}' {problem}")

    def _first(self, keys: tuple[str, ...]) -> tuple[str, Any]:
        for key in keys:
            value = self._lookup(key)
            if value is not _MISSING:
                return key, value
        return keys[0], _MISSING

    def _required(self, keys: tuple[str, ...], default: object) -> tuple[str, Any]:
        """:meth:`_first`, with an absent key refused when ``default`` is ``None``
        (:class:`InvalidConfig`) and answered with :data:`_DEFAULT` otherwise."""
        key, value = self._first(keys)
        if value is not _MISSING:
            return key, value
        if default is None:
            raise self.fail(key, "is missing (needed for the KV-cache arithmetic)")
        return key, _DEFAULT

    def int(self, symbol: str, *keys: str, default: int | None = None) -> int:
        """First present key among ``keys`` as a positive int (bytes/elements/heads).

        Raises:
            InvalidConfig: missing with no default, or not a positive integer.
        """
        key, value = self._required(keys, default)
        if value is _DEFAULT:
            return default  # type: ignore[return-value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"must be a positive integer, got {value!r}")
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise self.fail(key, f"must be a positive integer, got {value!r}")
            value = int(value)
        if value <= 0:
            raise self.fail(key, f"must be a positive integer, got {value!r}")
        if value > MAX_FIELD_VALUE:
            raise self.fail(key, f"= {value} is implausibly large (limit {MAX_FIELD_VALUE})")
        self.provenance.setdefault(symbol, self.where(key))
        return int(value)

    def number(self, symbol: str, *keys: str, default: float | None = None) -> float:
        """First present key among ``keys`` as a finite positive number.

        Raises:
            InvalidConfig: missing with no default, or not a finite positive number.
        """
        key, value = self._required(keys, default)
        if value is _DEFAULT:
            return default  # type: ignore[return-value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"must be a number, got {value!r}")
        if not math.isfinite(value) or value <= 0:
            raise self.fail(key, f"must be a finite positive number, got {value!r}")
        if value > MAX_FIELD_VALUE:
            raise self.fail(key, f"= {value} is implausibly large (limit {MAX_FIELD_VALUE})")
        self.provenance.setdefault(symbol, self.where(key))
        return float(value)
