"""Project-level audit inputs: ``.kvalign.yaml`` ignores and ``--baseline`` files."""

from __future__ import annotations

from pathlib import Path

from kvalign.deploy.model import Ignore, Location, Problem
from kvalign.errors import InvalidConfig, KvalignError
from kvalign.safeio import JsonProblem, load_yaml, parse_json, read_text

#: most ``ignore:`` entries a project file may list (counted before any is read). Projects
#: list a few; each finding is checked against the entries of its rule, so 1,000 keeps
#: that check well under a second for the largest run. Past it: one line, exit 2.
MAX_IGNORES = 1_000


def load_ignores(path: Path) -> tuple[tuple[Ignore, ...], list[Problem]]:
    """``ignore:`` entries of a ``.kvalign.yaml`` (missing file → none).

    Each entry: ``{rule: KVA002, reason: "…", path: "glob"}`` (``path`` optional). As for
    in-file comments, an entry without ``reason`` is not honoured (a non-blocking problem,
    i.e. a warning); unknown rule ids are reported by :func:`kvalign.audit.run_audit`.

    Returns:
        ``(ignores, problems)``.

    Raises:
        InvalidConfig: unparsable file, ``ignore`` not a list or longer than
            :data:`MAX_IGNORES`, an entry that is not a
            mapping with a ``rule``, or a FIFO, socket or device at ``path`` (never read, and
            never silently passed over; a folder is no project file).
    """
    if not path.exists() or path.is_dir():
        return (), []
    if not path.is_file():
        raise InvalidConfig(
            f"{path}: not a regular file (a FIFO, socket or device): the project file is not read"
        )
    data = load_yaml(read_text(path), str(path)) or {}
    entries = data.get("ignore", []) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise InvalidConfig(f"{path}: ignore: expected a list")
    if len(entries) > MAX_IGNORES:
        raise InvalidConfig(
            f"{path}: ignore: {len(entries):,} entries, more than {MAX_IGNORES:,} (budget: "
            "ignores per project file)"
        )
    out: list[Ignore] = []
    problems: list[Problem] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("rule"):
            raise InvalidConfig(f"{path}: ignore[{index}]: needs rule and reason")
        rule = str(entry["rule"])
        where = Location(str(path))
        if not entry.get("reason"):
            problems.append(
                Problem(where, f"ignore[{index}] ({rule}) without reason is not honoured",
                        blocking=False)
            )  # fmt: skip
            continue
        glob = entry.get("path")
        out.append(Ignore(rule, str(entry["reason"]), where, None if glob is None else str(glob)))
    return tuple(out), problems


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
        data = parse_json(text)
        return frozenset(str(f["fingerprint"]) for f in data["findings"])
    except (JsonProblem, KeyError, TypeError):
        raise InvalidConfig(
            f"--baseline {path}: not a `kvalign audit --format json` output"
        ) from None
