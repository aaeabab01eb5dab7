"""The one interface every deployment reader implements.

A reader answers two questions about one input file, given as a :class:`Source`: does it
take this file (:meth:`Reader.matches`), and what pools does the file hold, each with its
source line (:meth:`Reader.read`, a :class:`~kvalign.deploy.model.Deployment`). The
readers are tried in the order of :data:`kvalign.deploy.registry.READERS`; the first that
matches reads the file. What follows a read (LMCache config files, ignore comments, the
"launches vLLM but no pool" check) is the same for every reader and lives in
:mod:`kvalign.deploy`.

To add a layout: write a module with a class that has ``kind``, ``matches`` and ``read``
as below, and put an instance in :data:`~kvalign.deploy.registry.READERS` before any
reader that would also take its files.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from kvalign.deploy.model import Deployment
from kvalign.errors import InvalidConfig, InvalidSettings, KvalignError
from kvalign.safeio import YamlRefused, confined, load_yaml, load_yaml_documents
from kvalign.safeio import read_text as read_file_text

__all__ = ["OneDocumentReader", "Reader", "Source"]

#: file names read as YAML (besides stdin, which may be YAML or a command line).
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Source:
    """One input file as every reader sees it.

    Attributes:
        text: the file's contents (already size-capped and decoded, :mod:`kvalign.safeio`).
        file: its display name (the path as given, ``-`` for stdin).
        base: the file's folder, where ``--config`` files and ``LMCACHE_CONFIG_FILE`` files
            are looked up; ``None`` (stdin) looks up nothing.
        stdin_command_line: whether stdin text that is no YAML may still be a command line
            (then its YAML error is not raised, :attr:`documents` is empty).
        references: what other files of the same run define for this one to refer to:
            KServe ``LLMInferenceServiceConfig`` specs by ``metadata.name``, each with the
            file it is in (``baseRefs`` across files).
        parsed: the YAML documents of :attr:`text`, when the run has parsed them already
            (its references pass, :func:`kvalign.deploy.read_paths`); ``None``: parsed on
            first use of :attr:`documents`.
    """

    text: str
    file: str
    base: Path | None = None
    stdin_command_line: bool = False
    references: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None
    parsed: tuple[tuple[int, Any], ...] | None = None

    @property
    def is_yaml(self) -> bool:
        """Whether the file is read as YAML (a ``.yaml`` / ``.yml`` name in any case, or
        stdin)."""
        return self.file == "-" or self.file.lower().endswith(YAML_SUFFIXES)

    @cached_property
    def documents(self) -> tuple[tuple[int, Any], ...]:
        """The YAML documents as ``(first line, value)`` pairs, parsed on first use
        (``()`` for a file that is not read as YAML).

        Raises:
            InvalidConfig: YAML that does not parse (unless :attr:`stdin_command_line`).
            YamlRefused: valid YAML refused (duplicate key, alias bomb): never a script.
        """
        if not self.is_yaml:
            return ()
        if self.parsed is not None:
            return self.parsed
        try:
            return tuple(load_yaml_documents(self.text, self.file))
        except YamlRefused:
            raise
        except InvalidConfig:
            if self.stdin_command_line:
                return ()
            raise

    @property
    def values(self) -> list[Any]:
        """The YAML documents' values, in file order."""
        return [value for _, value in self.documents]

    def load_config(self, path: str) -> Mapping[str, Any] | None:
        """A vLLM ``--config`` YAML named in the file, loaded (relative paths from
        :attr:`base`; an absolute path is taken when it resolves inside :attr:`base`);
        ``None`` when it is missing, unreadable or not a mapping.

        Raises:
            InvalidSettings: the path resolves outside :attr:`base` (the deployment file's
                folder): it is reported (that launch not evaluated), never read from the host.
        """
        if self.base is None:
            return None
        found = confined(self.base, _inside(self.base, path))
        if found is None:
            raise InvalidSettings(
                f"--config {path}: outside the audited folder {self.base}; not read from "
                "this host (put the file next to the deployment)"
            )
        candidate = found
        try:
            data = load_yaml(read_file_text(candidate), str(candidate))
        except KvalignError:
            return None
        return data if isinstance(data, Mapping) else None


def _inside(base: Path, path: str) -> str:
    """An absolute ``path`` that resolves inside ``base`` as a path relative to it (then
    :func:`~kvalign.safeio.confined` checks it like any relative one); else ``path``."""
    if not os.path.isabs(path) or "\x00" in path:
        return path
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except (OSError, ValueError, RuntimeError):
        return path


class Reader(Protocol):
    """A deployment reader (one per input layout).

    Attributes:
        kind: the input kind it reads, as :attr:`Deployment.kind` (``kvalign``,
            ``kubernetes``, ``command-line``, ...).
    """

    kind: str

    def matches(self, source: Source) -> bool:
        """Whether this reader takes ``source`` (cheap: the file's name, text or YAML
        documents; never reads another file).

        Raises:
            InvalidConfig: the file is YAML that does not parse (from
                :attr:`Source.documents`).
        """
        ...

    def read(self, source: Source) -> Deployment:
        """Read ``source`` into pools, each with its :class:`~kvalign.deploy.model.Location`.

        What cannot be read or resolved is a :class:`~kvalign.deploy.model.Problem` of the
        result, never an exception, except:

        Raises:
            InvalidConfig: a field of the wrong type in a schema kvalign owns.
        """
        ...


@dataclass
class OneDocumentReader:
    """A :class:`Reader` for layouts that are one YAML document: ``test`` says whether the
    document is this layout, ``parse(document, text, file)`` reads it."""

    kind: str
    test: Callable[[Any], bool]
    parse: Callable[[Any, str, str], Deployment]

    def matches(self, source: Source) -> bool:
        """One YAML document that ``test`` accepts."""
        values = source.values
        return len(values) == 1 and self.test(values[0])

    def read(self, source: Source) -> Deployment:
        """``parse`` of the file's one document."""
        return self.parse(source.values[0], source.text, source.file)
