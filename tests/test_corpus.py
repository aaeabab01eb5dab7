"""The hostile-input corpus (tests/corpus/): every case exits 2 with one line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from tests.corpus.generate import OUT, cases

runner = CliRunner()
FILES = sorted(OUT.iterdir())


def test_corpus_is_committed_and_current() -> None:
    expected = cases()
    assert len(expected) >= 300
    assert sorted(p.name for p in FILES) == sorted(expected)
    for path in FILES:
        assert path.read_bytes() == expected[path.name], f"stale corpus file {path.name}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_hostile_config_is_rejected_cleanly(path: Path) -> None:
    result = runner.invoke(app, ["check", str(path)])
    err = result.stderr.strip()
    assert result.exit_code == 2, result.stdout[:300]
    assert err.startswith("kvalign: error: ")
    assert len(err.splitlines()) == 1
    assert path.name in err
    assert "Traceback" not in err + result.stdout
    # a field-level problem names the field
    if "--" in path.stem and path.stem.count("--") == 2:
        field = path.stem.split("--")[1]
        if not field.startswith(("truncated", "text_config-")):
            assert field.split(".")[-1] in err, err
