"""Bad values of the speculative-decoding and skip-layer options: one line on stderr and
exit 2 from every command and both entry points (the fast path and typer), a JSON error
document with ``--format json``; never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from kvalign.cli import app  # noqa: F401  (first: ``kvalign.cli.app`` stays typer's app)
from kvalign.cli.app import main as typer_main
from kvalign.cli.fast import main as fast_main
from tests.cli.entry import outcome

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
AUX = "--eagle-aux-hidden-state-layer-ids"


@pytest.mark.parametrize(
    "value",
    [
        "1.5",  # not an integer
        "-1",  # a negative index (and click reads it as a value, not an option)
        "²",  # str.isdigit() is true, int() refuses it
        "٣",  # int() reads it as 3; kvalign takes ASCII digits only
        "1,x",  # one bad entry among good ones
        "1234567890",  # ten digits: beyond any layer count
    ],
)
@pytest.mark.parametrize("entry", [fast_main, typer_main], ids=["fast", "typer"])
def test_bad_aux_layer_id_is_one_line_exit_2(
    value: str, entry: Callable[[list[str]], None], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", NANO, "--speculative-method", "extract_hidden_states", AUX, value]
    out, err, code = outcome(entry, args, capsys)
    assert out == ""
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"kvalign: error: {AUX}: ")
    assert "is not a layer index" in err


@pytest.mark.parametrize(
    "command", [["check", NANO], ["matrix", NANO], ["explain", NANO, "--tp", "1"], ["survey"]]
)
def test_bad_aux_layer_id_with_format_json_prints_an_error_document(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*command, AUX, "1.5", "--format", "json"]
    out, err, code = outcome(typer_main, args, capsys)
    assert code == 2
    document = json.loads(out)
    assert document["error"] == {
        "message": f"{AUX}: '1.5' is not a layer index (ASCII digits 0-9, e.g. 1,20,39)",
        "exit_code": 2,
    }
    assert err == f"kvalign: error: {document['error']['message']}\n"


@pytest.mark.parametrize("release", ["0.25.0", "0.27.1", "0.28.0", "0.33.0"])
def test_extract_hidden_states_without_layer_ids_fails_at_start_up_with_the_proposer_error(
    release: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # vllm/v1/spec_decode/extract_hidden_states.py (0.25.0, 0.27.1, 0.28.0, 0.33.0):
    # ExtractHiddenStatesProposer.__init__ raises ValueError when
    # eagle_aux_hidden_state_layer_ids is empty or missing, and GPUModelRunner.__init__
    # builds that proposer before any KV-cache spec is grouped: no ZeroDivisionError
    args = ["check", NANO, "--speculative-method", "extract_hidden_states",
            "--vllm-version", release, "--format", "json"]  # fmt: skip
    out, _err, code = outcome(fast_main, args, capsys)
    assert code == 1
    (pair,) = json.loads(out)["pairs"]
    assert pair["verdict"] == "invalid"
    assert (
        f"vLLM {release[:4]} fails at start-up: speculative method extract_hidden_states "
        "needs draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids"
    ) in pair["reason"]
    assert "proposer raises ValueError without them" in pair["reason"]
    assert "ZeroDivisionError" not in out


@pytest.mark.parametrize("entry", [fast_main, typer_main], ids=["fast", "typer"])
def test_settings_line_names_the_skip_list_and_speculative_method(
    entry: Callable[[list[str]], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """The settings the answer was computed with are echoed when given (and only then), an
    entry that is not a layer index quoted: ``'\\x1b[31m'`` stays visible text."""
    given = ["check", NANO, "--prefill-tp", "2", "--decode-tp", "1", "--kv-cache-dtype", "fp8",
             "--kv-cache-dtype-skip-layers", "0,5,\x1b[31m", "--num-speculative-tokens", "1",
             "--speculative-method", "extract_hidden_states", AUX, "1,2,3"]  # fmt: skip
    out, _, _ = outcome(entry, given, capsys)
    line = next(x for x in out.splitlines() if "vllm-version=" in x)
    assert line.endswith(
        "vllm-version=newest profile kv-cache-dtype-skip-layers=0,5,'\\x1b[31m' "
        "speculative-method=extract_hidden_states eagle-aux-hidden-state-layer-ids=1,2,3"
    )
    out, _, _ = outcome(entry, ["check", NANO, "--prefill-tp", "2", "--decode-tp", "1"], capsys)
    line = next(x for x in out.splitlines() if "vllm-version=" in x)
    assert line.endswith("vllm-version=newest profile")
