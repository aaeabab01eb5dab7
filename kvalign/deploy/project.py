"""Project-level audit inputs: ``.kvalign.yaml`` ignores and ``--baseline`` files."""

from __future__ import annotations

import json
from pathlib import Path

from kvalign.deploy.model import Ignore, Location
from kvalign.errors import InvalidConfig, KvalignError
from kvalign.safeio import load_yaml, read_text


def load_ignores(path: Path) -> tuple[Ignore, ...]:
    """``ignore:`` entries of a ``.kvalign.yaml`` (missing file → none).

    Each entry: ``{rule: KVA002, reason: "…", path: "glob"}`` (``path`` optional).

    Raises:
        InvalidConfig: unparsable file, or an entry without ``rule`` or ``reason``.
    """
    if not path.is_file():
        return ()
    data = load_yaml(read_text(path), str(path)) or {}
    entries = data.get("ignore", []) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise InvalidConfig(f"{path}: ignore: expected a list")
    out: list[Ignore] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("rule") or not entry.get("reason"):
            raise InvalidConfig(f"{path}: ignore[{index}]: needs rule and reason")
        glob = entry.get("path")
        out.append(
            Ignore(str(entry["rule"]), str(entry["reason"]), Location(str(path)),
                   None if glob is None else str(glob))
        )  # fmt: skip
    return tuple(out)


def load_baseline(path: Path) -> frozenset[str]:
    """Finding fingerprints recorded in a previous ``kvalign audit --format json`` output.

    Raises:
        InvalidConfig: missing, unreadable or not that JSON shape.
    """
    try:
        text = read_text(path)
    except KvalignError as exc:
        raise InvalidConfig(f"--baseline {exc}") from None
    try:
        data = json.loads(text)
        return frozenset(str(f["fingerprint"]) for f in data["findings"])
    except (ValueError, KeyError, TypeError, RecursionError):
        raise InvalidConfig(
            f"--baseline {path}: not a `kvalign audit --format json` output"
        ) from None
