"""kvalign.safeio: the bounded reader and the guarded YAML loader, unit by unit."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvalign import safeio
from kvalign.errors import ConfigNotFound, InvalidConfig


def test_read_bytes_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigNotFound, match=r"missing\.json: no such file"):
        safeio.read_bytes(tmp_path / "missing.json")
    long_name = tmp_path / ("a" * 300 + ".json")
    with pytest.raises(ConfigNotFound, match=r"cannot be read \(File name too long\)"):
        safeio.read_bytes(long_name)
    with pytest.raises(ConfigNotFound, match="is a directory"):
        safeio.read_bytes(tmp_path)
    small = tmp_path / "small.txt"
    small.write_bytes(b"12345")
    assert safeio.read_bytes(small, limit=5) == b"12345"
    with pytest.raises(InvalidConfig, match=r"small\.txt: larger than"):
        safeio.read_bytes(small, limit=4)


def test_decode_text_accepts_bom_and_rejects_other_encodings(tmp_path: Path) -> None:
    assert safeio.decode_text("\ufeffa: 1".encode(), "f") == "a: 1"
    with pytest.raises(InvalidConfig, match=r"^f: not UTF-8 text \(byte 3\)$"):
        safeio.decode_text(b"abc\xff", "f")
    path = tmp_path / "t.yaml"
    path.write_bytes("é: 1\n".encode())
    assert safeio.read_text(path) == "é: 1\n"


def test_read_stream_caps_and_reports_undecodable_input() -> None:
    assert safeio.read_stream(io.StringIO("abc"), limit=3) == "abc"
    with pytest.raises(InvalidConfig, match=r"^-: larger than"):
        safeio.read_stream(io.StringIO("abcd"), limit=3)
    broken = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\xfa"), encoding="utf-8")
    with pytest.raises(InvalidConfig, match=r"^-: cannot read \(UnicodeDecodeError\)$"):
        safeio.read_stream(broken)


def test_load_yaml_shapes() -> None:
    assert safeio.load_yaml("", "e.yaml") is None
    assert safeio.load_yaml("# only a comment\n", "e.yaml") is None
    assert safeio.load_yaml("[1, 2]", "e.yaml") == [1, 2]
    # an empty document is a null scalar that starts where the next document marker is
    assert safeio.load_yaml_documents("---\n---\na: 1\n", "e.yaml") == [(2, None), (3, {"a": 1})]
    with pytest.raises(InvalidConfig, match=r"^e\.yaml:3: not valid YAML"):
        safeio.load_yaml("a: 1\nb: [\n", "e.yaml")


def test_node_budget_counts_expanded_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    # 3 list nodes of 4 aliases each to a 4-scalar list: 1 + 3 * (1 + 4 * 5) + ... nodes
    text = "a: &a [1, 2, 3, 4]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n"
    # expanded: a = 5 nodes, b = 1 + 4*5 = 21, c = 1 + 4*21 = 85; plus 3 keys and the root
    monkeypatch.setattr(safeio, "MAX_YAML_NODES", 5 + 21 + 85 + 3 + 1)
    assert safeio.load_yaml(text, "t.yaml")["c"][3][3] == [1, 2, 3, 4]
    monkeypatch.setattr(safeio, "MAX_YAML_NODES", 5 + 21 + 85 + 3)
    with pytest.raises(InvalidConfig, match="alias/anchor bomb"):
        safeio.load_yaml(text, "t.yaml")


def _checked(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What the checked path (check_yaml_node, then PyYAML's constructor) gives for
    ``text``: the documents, or the error's type and message."""
    with monkeypatch.context() as m:  # undone on return: later calls take the tree build

        def refuse(root: Any, loader: Any) -> Any:
            raise safeio._NotPlain

        m.setattr(safeio, "_build_tree", refuse)
        return _outcome(text)


def _outcome(text: str) -> Any:
    try:
        return safeio.load_yaml_documents(text, "t.yaml")
    except InvalidConfig as exc:
        return type(exc).__name__, str(exc)


#: alias-free documents at every turn of the one-walk build: each scalar kind, keys that
#: are the same value spelled two ways, merge and value keys, tagged collections,
#: duplicate keys (in one mapping and in two siblings: the checked path reports the
#: last sibling's first), a timestamp that is no date, a key that is a list.
TREE_DOCUMENTS = [
    "a: 1\nb: -0x1f\nc: 1.5e3\nd: .inf\ne: ~\nf: true\ng: No\nh: '1'\ni: !!str 2\n",
    "t: 2001-12-14t21:59:43.10-05:00\nd: 2002-12-14\nb: !!binary aGVsbG8=\n",
    "1: a\n0x1: b\ntrue: c\nTrue: d\n",
    "base: &b {x: 1}\nother:\n  <<: {y: 2}\n  z: 3\n",
    "=: v\n",
    "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\np: !!pairs [{a: 1}]\n",
    "a: 1\nb: 2\na: 3\n",
    "x: {k: 1, k: 2}\ny: {j: 1, j: 2}\n",
    "when: 2001-13-45\n",
    "? [a, b]\n: c\n",
    "? {a: 1}\n: c\n",
    "a: !custom 1\n",
    "- [1, [2, [3, {}]]]\n- []\n- {}\n- ''\n",
    "---\na: 1\n---\n- 2\n...\n---\nplain\n",
    "a: &x 1\nb: 2\n",
]


@pytest.mark.parametrize("text", TREE_DOCUMENTS)
def test_tree_build_gives_what_the_checked_path_gives(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "*" not in text
    assert _outcome(text) == _checked(text, monkeypatch)


def test_tree_build_keeps_the_depth_and_node_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    # MAX_YAML_DEPTH levels pass, one more is refused, by both paths alike
    deepest = "[" * safeio.MAX_YAML_DEPTH + "]" * safeio.MAX_YAML_DEPTH
    assert _outcome(deepest) == _checked(deepest, monkeypatch)
    assert isinstance(_outcome(deepest), list)
    too_deep = "[" * (safeio.MAX_YAML_DEPTH + 1) + "]" * (safeio.MAX_YAML_DEPTH + 1)
    assert _outcome(too_deep) == _checked(too_deep, monkeypatch)
    assert _outcome(too_deep) == (
        "YamlRefused",
        f"t.yaml: YAML nested deeper than {safeio.MAX_YAML_DEPTH} levels",
    )
    # {a: [1, 2, 3]}: the root, one key, the list, 3 items = 6 nodes
    text = "a: [1, 2, 3]\n"
    monkeypatch.setattr(safeio, "MAX_YAML_NODES", 6)
    assert _outcome(text) == [(1, {"a": [1, 2, 3]})]
    monkeypatch.setattr(safeio, "MAX_YAML_NODES", 5)
    assert _outcome(text) == _checked(text, monkeypatch)
    assert _outcome(text)[1].endswith("(alias/anchor bomb?)")


def test_only_an_alias_free_text_skips_the_separate_check(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    check = safeio.check_yaml_node

    def counting(root: Any, name: str) -> None:
        calls.append(name)
        check(root, name)

    monkeypatch.setattr(safeio, "check_yaml_node", counting)
    assert safeio.load_yaml("a: [1, 2]\n", "plain.yaml") == {"a": [1, 2]}
    assert calls == []
    assert safeio.load_yaml("a: &x [1, 2]\nb: *x\n", "alias.yaml") == {
        "a": [1, 2],
        "b": [1, 2],
    }
    assert calls == ["alias.yaml"]
    # a duplicate key is left to the checked path, which refuses it
    with pytest.raises(safeio.YamlRefused, match="duplicate YAML key 'a'"):
        safeio.load_yaml("a: 1\na: 2\n", "dup.yaml")
    assert calls == ["alias.yaml", "dup.yaml"]


_KEYS = st.sampled_from(["a", "b", "1", "0x1", "true", "~", "=", "<<", "2001-01-01", "x y"])
_SCALARS = st.sampled_from(
    ["1", "-2", "0o7", "1.5", ".nan", "null", "yes", "'q'", "s", "2001-01-01"]
)


def _yaml_text(value: Any, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(value, list):
        return "".join(f"{pad}-\n{_yaml_text(item, indent + 2)}" for item in value) or f"{pad}[]\n"
    if isinstance(value, tuple):  # a mapping as (key, value) pairs: keys may repeat
        return (
            "".join(f"{pad}{key}:\n{_yaml_text(item, indent + 2)}" for key, item in value)
            or f"{pad}{{}}\n"
        )
    return f"{pad}{value}\n"


_TREES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.lists(st.tuples(_KEYS, inner), max_size=4).map(tuple)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_TREES)
def test_tree_build_matches_the_checked_path_on_generated_documents(tree: Any) -> None:
    text = _yaml_text(tree)
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _outcome(text) == _checked(text, monkeypatch)


def test_kept_tag_resolution_is_pyyamls(monkeypatch: pytest.MonkeyPatch) -> None:
    # the loader keeps each (kind, value, implicit) → tag answer; the data is what
    # PyYAML's own safe loader builds, on a first read and on a second (answers kept),
    # and with a store so small it starts again on every node
    import yaml

    plain = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    texts = [t for t in TREE_DOCUMENTS if "a: 1\nb: 2\na" not in t and "{k: 1, k: 2}" not in t]
    texts += ["a: &x [1, 2]\nb: *x\n", "'1': 1\n\"2\": 2\n3: '3'\n? !!str 4\n: 5\n"]
    for size in (safeio._MAX_TAGS, 1):
        monkeypatch.setattr(safeio, "_MAX_TAGS", size)
        for _ in range(2):
            for text in texts:
                try:
                    expected: Any = list(yaml.load_all(text, Loader=plain))
                except (yaml.YAMLError, ValueError) as exc:
                    expected = type(exc)
                try:
                    got: Any = [v for _, v in safeio.load_yaml_documents(text, "t.yaml")]
                except InvalidConfig:
                    got = expected if isinstance(expected, type) else None
                assert got == expected, text
