"""Typed errors. Every error kvalign raises on bad input derives from :class:`KvalignError`.

The CLI catches these once (``kvalign.cli``) and turns them into a one-line message on
stderr with exit code 2. Nothing below the CLI prints or exits.
"""

from __future__ import annotations

from kvalign.exitcodes import ExitCode


class KvalignError(Exception):
    """Base class: a problem with the user's input that kvalign can explain in one line."""

    exit_code: int = ExitCode.USAGE


class ConfigNotFound(KvalignError):
    """The MODEL argument names no bundled model, local path or reachable hub repo."""


class InvalidConfig(KvalignError):
    """A config file is unreadable, not JSON, or lacks/garbles a field a formula needs."""


class UnsupportedModel(KvalignError):
    """The config parses, but its ``model_type``/architecture is not one kvalign models."""


class InvalidSettings(KvalignError):
    """A flag value (dtype, backend, TP, block size, ...) is not one vLLM would accept."""


class NotModelled(KvalignError):
    """A setting vLLM accepts but whose page layout kvalign does not model (packed KV dtypes)."""


class MissingDependency(KvalignError):
    """An optional extra is not installed (e.g. matplotlib for ``--plot``: the ``plot`` extra)."""
