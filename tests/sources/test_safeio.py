"""kvalign.safeio: the bounded reader and the guarded YAML loader, unit by unit."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

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
