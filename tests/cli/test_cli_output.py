"""kvalign.cli.output: one format registry per result type, one renderer signature."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

import pytest

from kvalign.cli import app
from kvalign.cli.output import REGISTRIES, Formats, View


class _Two(str, Enum):
    text = "text"
    json = "json"


def test_every_command_has_a_registry() -> None:
    commands = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert commands <= set(REGISTRIES) and set(REGISTRIES) - commands == {"rule"}


def test_a_registry_names_exactly_its_choices() -> None:
    with pytest.raises(ValueError, match="_Two"):
        Formats(_Two, {"text": lambda result, view: str(result)})


def test_text_gets_one_final_newline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    formats = Formats(_Two, {"text": lambda r, v: f"{r}", "json": lambda r, v: f'"{r}"\n'})
    formats.emit(7, "text")
    formats.emit(7, _Two.json, View())
    assert capsys.readouterr().out == '7\n"7"\n'
    formats.emit(7, "text", View(), output=str(tmp_path / "out.txt"))
    assert (tmp_path / "out.txt").read_text() == "7\n"
