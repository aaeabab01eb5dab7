"""LMCache config files named by ``LMCACHE_CONFIG_FILE`` (next to the manifest, else
among the files of the run).

LMCache reads its settings from the YAML file named by ``LMCACHE_CONFIG_FILE``, then lets
``LMCACHE_*`` variables and ``kv_connector_extra_config`` override them, so the file's
``chunk_size`` is used only when neither of those sets one. The path in a manifest is
usually a path inside the container (a mounted ConfigMap); kvalign looks for the file in
the manifest's own folder: a relative path below that folder as written, any other path
(absolute, or climbing with ``..``) by its file name only, so a manifest can never make
kvalign read outside its folder. A file not found there is looked up by its name among
the other files of the same run (``audit deploy/`` with the config in ``deploy/lmcache/``
and the manifest in ``deploy/prefill/``): one such file is read (a note names it);
several are a warning (not checked). Reads go through :mod:`kvalign.safeio` (size cap, safe
YAML).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from kvalign.deploy.model import Pool, Problem
from kvalign.errors import KvalignError
from kvalign.numbers import quoted, try_int
from kvalign.safeio import confined, load_yaml, read_text
from kvalign.shell import UNRESOLVED, shown

VAR = "LMCACHE_CONFIG_FILE"


def candidate(base: Path, raw: str) -> Path | None:
    """Where to look for ``raw`` (the variable's value) next to a manifest in ``base``;
    ``None`` when ``raw`` names no file (empty, a folder, a NUL byte)."""
    if not raw.strip() or "\x00" in raw:
        return None
    path = PurePosixPath(raw.strip())
    if not path.name or path.name in (".", ".."):
        return None
    if path.is_absolute() or ".." in path.parts:
        return confined(base, path.name)
    return confined(base, str(path))


def _chunk(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    if isinstance(value, str):
        number = try_int(value.strip())
        return number if number is not None and number > 0 else None
    return None


def elsewhere(raw: str, run_files: Sequence[Path]) -> list[Path]:
    """The files of the run named like ``raw``'s file name (the config file of a manifest
    kept in another folder of the run: ``deploy/lmcache/prefill.yaml`` for a manifest in
    ``deploy/prefill/``)."""
    name = PurePosixPath(raw.strip()).name
    return [path for path in run_files if path.name == name] if name else []


def apply(
    pools: Iterable[Pool], base: Path | None, run_files: Sequence[Path] = ()
) -> tuple[list[Pool], list[Problem]]:
    """Fill ``lmcache_chunk_size`` from ``LMCACHE_CONFIG_FILE`` where nothing overrides it.

    Args:
        pools: the pools of one file.
        base: the manifest's folder (``None`` for stdin: the file is not looked up).
        run_files: every file of the run: a file not next to the manifest is looked up
            among them by its name (exactly one: read, with a note; several: not checked,
            a warning naming them).

    Returns:
        ``(pools, problems)``: pools with the file's ``chunk_size`` (source = the file's
        path), and problems. A file that is not there, or has no ``chunk_size``, is a
        non-blocking problem (``chunk_size`` not checked); a file that is there but cannot
        be read (too large, not UTF-8, invalid YAML, not a mapping) or whose ``chunk_size``
        is not a positive integer is blocking (the pool cannot be evaluated).
    """
    out: list[Pool] = []
    problems: list[Problem] = []
    for pool in pools:
        raw = pool.env_value(VAR)
        if raw is None or pool.args.lmcache_chunk_size is not None:
            out.append(pool)
            continue
        where = f"{pool.label}: {VAR} {shown(raw)}"
        refs = [m.group(1) for m in UNRESOLVED.finditer(raw)]
        if refs:
            problems.append(
                Problem(
                    pool.location,
                    f"{where}: path not resolved ({', '.join(dict.fromkeys(refs))}); LMCache "
                    "chunk_size not checked",
                    blocking=False,
                )
            )
            out.append(pool)
            continue
        path = candidate(base, raw) if base is not None else None
        if path is None or not (path.exists() or path.is_symlink()):
            others = elsewhere(raw, run_files) if base is not None else []
            if len(others) == 1:
                problems.append(
                    Problem(
                        pool.location,
                        f"{where}: read from {others[0]} (another file of this run)",
                        blocking=False,
                    )
                )
                path = others[0]
            else:
                looked = f" (looked for {path})" if path is not None else ""
                several = (
                    f"; several files of this run have its name ({', '.join(map(str, others))})"
                    if others
                    else ""
                )
                problems.append(
                    Problem(
                        pool.location,
                        f"{where}: not found next to the manifest{looked}{several}; LMCache "
                        "chunk_size not checked",
                        blocking=False,
                    )
                )
                out.append(pool)
                continue
        try:
            data = load_yaml(read_text(path), str(path))
        except KvalignError as exc:
            problems.append(Problem(pool.location, f"{where}: {exc}"))
            continue
        if not isinstance(data, Mapping):
            problems.append(Problem(pool.location, f"{where}: {path}: expected a YAML mapping"))
            continue
        if "chunk_size" not in data:
            problems.append(
                Problem(
                    pool.location,
                    f"{where}: {path} sets no chunk_size; LMCache chunk_size not checked",
                    blocking=False,
                )
            )
            out.append(pool)
            continue
        chunk = _chunk(data["chunk_size"])
        if chunk is None:
            problems.append(
                Problem(
                    pool.location,
                    f"{where}: {path}: chunk_size: expected a positive integer, "
                    f"got {quoted(data['chunk_size'])}",
                )
            )
            continue
        args = dataclasses.replace(
            pool.args, lmcache_chunk_size=chunk, lmcache_chunk_source=str(path)
        )
        out.append(dataclasses.replace(pool, args=args))
    return out, problems
