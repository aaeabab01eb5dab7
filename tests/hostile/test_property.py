"""Property: arbitrary bytes as a model's config.json, as a deployment YAML and
as a shell script give exit 0, 1, 2 or 3 — never 70 (internal error), never a traceback.

Runs in-process (``CliRunner``; a bug surfaces as exit 70 with "internal error" on
stderr, or as an exception other than ``SystemExit``). Inputs mix raw bytes, text and
mutations of real files, so the parsers get past their first byte.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from kvalign.cli import app
from tests.hostile.cases import GOOD_SCRIPT, GOOD_YAML, MODELS, NANO

runner = CliRunner()
PROPERTY = settings(
    max_examples=int(os.environ.get("KVALIGN_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
CONFIG = (MODELS / NANO / "config.json").read_bytes()


def _mutated(seed: bytes) -> st.SearchStrategy[bytes]:
    """``seed`` with a slice replaced by arbitrary bytes (or cut short)."""
    return st.tuples(st.integers(0, len(seed)), st.integers(0, 64), st.binary(max_size=64)).map(
        lambda t: seed[: t[0]] + t[2] + seed[t[0] + t[1] :]
    )


def _inputs(seed: bytes) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=512),
        st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass")),
        _mutated(seed),
    )


def _invoke(name: str, data: bytes, argv: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        result = runner.invoke(
            app, [argv[0], str(path.parent if name.endswith("config.json") else path), *argv[1:]],
            env={"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(Path(tmp) / "cache")},
        )  # fmt: skip
    assert result.exit_code in (0, 1, 2, 3), (result.exit_code, result.stderr[-500:])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


@PROPERTY
@given(data=_inputs(CONFIG))
def test_any_bytes_as_config_json(data: bytes) -> None:
    _invoke("model/config.json", data, ["check", "--no-cache"])


@PROPERTY
@given(data=_inputs(GOOD_YAML.encode()))
def test_any_bytes_as_deployment_yaml(data: bytes) -> None:
    _invoke("deploy.yaml", data, ["audit", "--no-cache"])


@PROPERTY
@given(data=_inputs(GOOD_SCRIPT.encode()))
def test_any_bytes_as_shell_script(data: bytes) -> None:
    _invoke("run.sh", data, ["audit", "--no-cache"])
