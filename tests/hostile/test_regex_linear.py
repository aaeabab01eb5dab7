"""Every regular expression in kvalign runs in linear time.

Every compiled pattern found in kvalign's modules (module attributes and class
attributes, and what a cached function of no arguments returns) is run with ``search``
and ``findall`` over 1 MB adversarial texts: long runs of each literal fragment of the
pattern (``image:``, ``dirname ``, ``# kvalign: ignore=A ``...), with and without
separators, and of each single character class a quantifier can loop over. A quadratic
pattern takes seconds on 1 MB; each call must finish in 0.1 s, or (on a loaded machine)
within 20 times what a plain linear two-way alternation (:data:`_REFERENCE`) takes on the
same text; a quadratic pattern takes minutes on 1 MB, so either bound catches it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
import time

import pytest

import kvalign

SIZE = 1_000_000
LIMIT = 0.1
#: a linear pattern that tries two alternatives at every position: the time unit
_REFERENCE = re.compile(r"\bxq\b|-yq")
#: modules that import optional heavy packages (vLLM) at import time
_SKIP = ("kvalign.__main__", "kvalign.vllm_probe.boot")


def _compiled_on_first_use(value: object) -> object:
    """The pattern a cached function of no arguments returns (kvalign.sanitize compiles its
    patterns on first use), else ``value`` itself."""
    if isinstance(value, functools._lru_cache_wrapper):
        try:
            if not inspect.signature(value).parameters:
                return value()
        except (TypeError, ValueError):
            return value
    return value


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    found: dict[tuple[str, int], tuple[str, re.Pattern[str]]] = {}
    for info in pkgutil.walk_packages(kvalign.__path__, "kvalign."):
        if info.name in _SKIP:
            continue
        module = importlib.import_module(info.name)
        spaces = [vars(module)] + [
            vars(v)
            for v in vars(module).values()
            if isinstance(v, type) and v.__module__.startswith("kvalign")
        ]
        for space in spaces:
            for name, value in list(space.items()):
                value = _compiled_on_first_use(value)
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                    found[(value.pattern, value.flags)] = (f"{info.name}.{name}", value)
    return sorted(found.values(), key=lambda item: item[0])


def _fragments(pattern: str) -> list[str]:
    """Literal pieces of ``pattern`` (escapes resolved) plus characters from classes."""
    text = re.sub(r"\\([^A-Za-z0-9])", r"\1", pattern)
    pieces = [p for p in re.split(r"[()\[\]|?*+{}^$\\]", text) if p]
    singles = {c for c in "aA0_ -./:@$'\"#=\n\t\ue000\ue001" if c in text}
    return sorted(set(pieces) | singles | {"a"})


def _texts(pattern: str) -> list[str]:
    """Runs of each single character a quantifier can loop over and of the two longest
    literal pieces (the texts that make a backtracking pattern blow up), then all pieces
    joined. Bounded per pattern so the sweep stays a few seconds on 1 MB texts."""
    texts: list[str] = []
    fragments = _fragments(pattern)
    singles = [f for f in fragments if len(f) == 1]
    longest = sorted((f for f in fragments if len(f) > 1), key=len, reverse=True)[:2]
    for fragment in singles:
        texts.append(fragment * SIZE)
    for fragment in longest:
        texts.append((fragment * (SIZE // len(fragment) + 1))[:SIZE])
        texts.append(((fragment + " ") * (SIZE // (len(fragment) + 1) + 1))[:SIZE])
    pieces = [p for p in _fragments(pattern) if len(p) > 1]
    if pieces:
        joined = " ".join(pieces) + " "
        texts.append((joined * (SIZE // len(joined) + 1))[:SIZE] + "!")
        texts.append(pieces[0] + "a" * SIZE + "!")
    return texts


PATTERNS = _patterns()


def test_the_known_patterns_are_found() -> None:
    names = {name.rsplit(".", 1)[1] for name, _ in PATTERNS}
    assert {"_IGNORE", "_IMAGE_TOKEN", "_DIRNAME", "_SELF_REF", "_PYDANTIC"} <= names


@pytest.mark.parametrize("item", PATTERNS, ids=lambda item: item[0])
def test_regex_is_linear_on_1mb_adversarial_text(item: tuple[str, re.Pattern[str]]) -> None:
    name, pattern = item
    for text in _texts(pattern.pattern):
        start = time.process_time()
        _REFERENCE.findall(text)
        limit = max(LIMIT, 20 * (time.process_time() - start))
        for run in (pattern.search, pattern.findall):
            start = time.process_time()
            run(text)
            spent = time.process_time() - start
            assert spent < limit, f"{name} took {spent:.2f} s on {text[:40]!r}…"


@pytest.mark.parametrize(
    "text",
    [
        "image:" * 200_000,
        "# kvalign: ignore=" + "A " * 400_000,
        "dirname " * 150_000,
        "Value error, " * 80_000,
        "serve:\n    echo " + "{{" * 500_000 + "\n",
    ],
    ids=["image", "ignore", "dirname", "pydantic", "justfile-interpolation"],
)
def test_the_formerly_quadratic_patterns_are_linear(text: str) -> None:
    from kvalign.deploy import _names_vllm_image
    from kvalign.deploy.common import ignores_in
    from kvalign.deploy.justfile import to_shell
    from kvalign.shell.expand import self_dir as _self_dir
    from kvalign.vllm_probe.run import _pydantic_message

    checks = (_names_vllm_image, _self_dir, lambda t: ignores_in(t, "f"), _pydantic_message)
    checks += (to_shell,)
    for check in checks:
        start = time.process_time()
        check(text)
        assert time.process_time() - start < LIMIT
