"""An unknown option gets a suggestion that fits (click's own compared the names with
their dashes, so ``check --output`` suggested ``--gpu``)."""

from __future__ import annotations

import pytest

from kvalign.cli.app import main

MODEL = "tiiuae/Falcon-H1-0.5B-Base"


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    return line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # check has no --output (audit has): say so, and how to write a file; no --gpu
        (["check", MODEL, "--output", "x"],
         "No such option: --output (--output is an option of kvalign audit; this command "
         "writes to stdout: redirect it (> FILE))"),
        (["check", MODEL, "--prefil-tp", "1"],
         "No such option: --prefil-tp (did you mean --prefill-tp?)"),
        (["check", MODEL, "--gpus", "H100"], "No such option: --gpus (did you mean --gpu?)"),
        (["check", MODEL, "--zzz"], "No such option: --zzz (see"),
    ],
)  # fmt: skip
def test_unknown_options_get_sensible_suggestions(
    capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    line = _error(capsys, *args)
    assert line.startswith(f"kvalign: error: {expected}"), line
