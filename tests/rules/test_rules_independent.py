"""Rules are independent: no rule imports another, none keeps a module-level cache; the
fix they name comes from the group (``GroupResult.fix``, proven once per group)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

RULES = sorted((ROOT / "kvalign" / "rules").glob("kva*.py"))


def test_every_rule_module() -> None:  # KVA013 is the thirteenth
    assert [p.stem for p in RULES] == [f"kva{n:03d}" for n in range(1, 14)]


@pytest.mark.parametrize("path", RULES, ids=lambda p: p.stem)
def test_no_rule_imports_another(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert not [m for m in imported if m.startswith("kvalign.rules.kva")]


@pytest.mark.parametrize("path", RULES, ids=lambda p: p.stem)
def test_no_module_level_mutable_state(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mutable = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        assert not isinstance(value, mutable), f"{path.name}:{node.lineno}"
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            assert value.func.id not in ("list", "dict", "set"), f"{path.name}:{node.lineno}"


def test_every_rule_has_its_own_test_file() -> None:
    """Tests are laid out one file per rule: ``kvalign/rules/kva0NN.py`` is tested in
    ``tests/rules/test_kva0NN.py``, and no such file names a rule that does not exist."""
    rules = {p.stem for p in (ROOT / "kvalign" / "rules").glob("kva[0-9][0-9][0-9].py")}
    tests = {p.stem.removeprefix("test_") for p in Path(__file__).parent.glob("test_kva*.py")}
    assert len(rules) == 13 and tests == rules
