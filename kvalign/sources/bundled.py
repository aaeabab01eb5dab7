"""Bundled models' geometry, precomputed: a bundled ``check`` needs no transformers import.

``bundled_geometry.json`` (next to this module, generated) holds, per catalog hub id, the
sha256 of its ``config.json`` bytes and the :class:`~kvalign.geometry.ModelGeometry` that
:func:`kvalign.sources.build.geometry_from_dict` builds from it (through transformers'
config classes). :func:`lookup` answers from it when the bytes still match; an edited or
new config falls back to transformers. Regenerate with ``make geometry``
(``python -m kvalign.sources.bundled --write``); ``tests/sources/test_bundled_geometry.py``
recomputes every entry with transformers and compares.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from kvalign.geometry import ModelGeometry
from kvalign.sources.geometry_json import geometry_from_json, geometry_to_dict

if TYPE_CHECKING:
    from pathlib import Path

    #: the generated data file.
    DATA: Path

#: the data file's path as a string (what a check reads: no pathlib on the warm path).
_DATA = os.path.join(os.path.dirname(__file__), "bundled_geometry.json")


def __getattr__(name: str) -> Any:
    """:data:`DATA`, the data file as a :class:`~pathlib.Path`, made when first asked for."""
    if name == "DATA":
        from pathlib import Path

        return Path(_DATA)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: layout of :data:`DATA`; bump when it changes.
FORMAT = 1


def config_digest(config_bytes: bytes) -> str:
    """sha256 hex of a ``config.json``'s bytes (what an entry is valid for)."""
    return hashlib.sha256(config_bytes).hexdigest()


@functools.cache
def _table() -> dict[str, Any]:
    """The data file's ``models`` mapping (``{}`` when missing, unreadable or of another
    layout: every model then loads through transformers)."""
    try:
        with open(_DATA, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    models = data.get("models")
    return models if isinstance(models, dict) else {}


def lookup(model_id: str, config_bytes: bytes) -> ModelGeometry | None:
    """The precomputed geometry of bundled model ``model_id`` when ``config_bytes`` are the
    bytes it was computed from, else ``None``. ``model_id``, ``config_path`` and
    ``source`` are the caller's to fill in."""
    row = _table().get(model_id)
    if not isinstance(row, dict) or row.get("sha256") != config_digest(config_bytes):
        return None
    try:
        return geometry_from_json(row.get("geometry"))
    except ValueError:
        return None


def compute() -> dict[str, Any]:
    """The data file's content, computed from the catalog with transformers: every bundled
    model that loads (a model kvalign refuses is left out and keeps its error)."""
    from kvalign.errors import KvalignError
    from kvalign.sources import catalog
    from kvalign.sources.build import geometry_from_dict
    from kvalign.sources.config_file import parse_config_bytes, read_config_bytes

    models: dict[str, Any] = {}
    for entry in catalog.entries():
        data = read_config_bytes(entry.config_path)
        try:
            geometry = geometry_from_dict(
                parse_config_bytes(data, entry.config_path),
                model_id=entry.model_id,
                config_path="",
                source="catalog",
            )
        except KvalignError:
            continue
        models[entry.model_id] = {
            "sha256": config_digest(data),
            "geometry": geometry_to_dict(geometry),
        }
    return {"format": FORMAT, "models": models}


def render(content: dict[str, Any]) -> str:
    """The data file's text (sorted keys, one-space indent, trailing newline)."""
    return json.dumps(content, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``--write``: regenerate :data:`DATA`; ``--check``: exit 1 when it is stale."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the data file")
    parser.add_argument("--check", action="store_true", help="exit 1 when it is stale")
    args = parser.parse_args(argv)
    text = render(compute())
    from pathlib import Path

    data_file = Path(_DATA)
    if args.write:
        data_file.write_text(text, encoding="utf-8")
        print(f"wrote {data_file} ({len(json.loads(text)['models'])} models)")
        return 0
    current = data_file.read_text(encoding="utf-8") if data_file.is_file() else ""
    if current != text:
        print(f"{data_file} is stale: run `make geometry`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - `make geometry`
    raise SystemExit(main())
