"""kvalign.report.indented_json: the audit report's JSON text is ``json.dumps(value,
indent=2)``'s, byte for byte, for any data (what it does not write itself it leaves to
``json.dumps``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvalign.report.indented_json import dumps_indented


def _both(value: Any) -> tuple[str, str]:
    def outcome(write: Any) -> str:
        try:
            return str(write(value))
        except (TypeError, ValueError, RecursionError) as exc:
            return f"{type(exc).__name__}: {exc}"

    return outcome(dumps_indented), outcome(lambda v: json.dumps(v, indent=2))


#: each turn of the writer: scalars at the top, empty containers (written "{}" / "[]"
#: inside flat ones and mixed ones), escapes and non-ASCII text, the float spellings,
#: keys that are not strings (json.dumps converts or refuses them), tuples (written as
#: lists), integers json.dumps cannot write, a container nested in itself.
CASES: list[Any] = [
    {},
    [],
    1,
    "x",
    None,
    True,
    1.5,
    float("nan"),
    {"a": []},
    {"a": {}},
    {"a": [1, {"b": []}], "c": 'é\n"\x00', "d": [[]], "e": [{}], "f": -0.0, "g": 1e300},
    {"inf": float("inf"), "-inf": float("-inf"), "big": 10**20, "t": True, "n": None},
    [[[[1]]]],
    [[1], 2, [], {}, "s"],
    {1: 2, "a": 1},
    {"a": {1: 2}},
    {None: 1, True: 2, 1.5: 3},
    (1, 2),
    {"t": (1, [2])},
    {"t": ()},
    {(1,): 2},
    {"a": [1], "b": ()},
    {"a": 10**5000},
    [[1], 10**5000],
    {"a": {"b": {"c": [{"d": [1, 2]}, {"e": {}}]}}},
]


@pytest.mark.parametrize("value", CASES)
def test_the_text_of_json_dumps_indent_2(value: Any) -> None:
    ours, theirs = _both(value)
    assert ours == theirs


def test_a_container_nested_in_itself_is_refused_as_json_dumps_refuses_it() -> None:
    loop: list[Any] = [1]
    loop.append([loop])
    assert _both(loop) == ("ValueError: Circular reference detected",) * 2


def test_the_known_shape() -> None:
    # written out by hand: what json.dumps(indent=2) writes for a small report-like value
    value = {"files": [{"file": "a.yaml", "pools": [], "n": 1}], "summary": {"error": 0}}
    assert dumps_indented(value) == (
        "{\n"
        '  "files": [\n'
        "    {\n"
        '      "file": "a.yaml",\n'
        '      "pools": [],\n'
        '      "n": 1\n'
        "    }\n"
        "  ],\n"
        '  "summary": {\n'
        '    "error": 0\n'
        "  }\n"
        "}"
    )


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_JSON)
def test_generated_data_writes_as_json_dumps_writes_it(value: Any) -> None:
    ours, theirs = _both(value)
    assert ours == theirs
