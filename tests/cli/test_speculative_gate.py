"""The speculative-decoding gate: vLLM refuses a ``--speculative-config`` method its
``SpeculativeMethod`` Literal does not hold, and a method without ``num_speculative_tokens``
(``vllm/config/speculative.py``, read per release in /root/vllm-env and the published wheels;
line numbers below are 0.33.0's unless named)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.alignment import analyze_rank
from kvalign.cli import app
from kvalign.cli.app import main as typer_main
from kvalign.cli.fast import main as fast_main
from kvalign.engine import create_engine_config
from kvalign.settings import Settings
from kvalign.sources import load_model
from kvalign.versions import speculative_methods
from tests.audit.test_audit_speculative import _pair
from tests.cli.entry import outcome

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
LFM2 = "LiquidAI/LFM2-1.2B"


# ---- the names per release (versions.SPECULATIVE_METHOD_CHANGES) -----------------------
def test_0_33_drops_medusa_and_adds_step5_mtp() -> None:
    # 0.32.0 SpeculativeMethod (lines 73-82) holds "medusa" (line 75) and "mlp_speculator";
    # 0.33.0's (lines 74-82) holds neither; 0.33.0 MTPModelTypes adds "step5_mtp" (line 61)
    old, new = speculative_methods("0.32.0"), speculative_methods("0.33.0")
    assert {"medusa", "mlp_speculator"} <= old.names and "step5_mtp" not in old.names
    assert not {"medusa", "mlp_speculator"} & new.names and "step5_mtp" in new.names
    # 0.33.0: 10 names of its own (ngram, draft_model, suffix, custom_class, eagle, eagle3,
    # extract_hidden_states, dflash, ngram_gpu, dspark) and 28 MTPModelTypes (lines 38-67)
    assert len(new.names) == 38 and sum(n.endswith("mtp") for n in new.names) == 28


def test_extract_hidden_states_is_a_name_from_0_17() -> None:
    # 0.14.0: EagleModelTypes = Literal["eagle", "eagle3", MTPModelTypes] (line 42);
    # 0.17.0: Literal["eagle", "eagle3", "extract_hidden_states", MTPModelTypes] (line 49)
    assert "extract_hidden_states" not in speculative_methods("0.14.0").names
    assert "extract_hidden_states" in speculative_methods("0.17.0").names


def test_a_release_not_read_takes_the_nearest_read_release_below() -> None:
    assert speculative_methods("0.13.0").basis == "0.11.1"
    assert speculative_methods("0.21.0").basis == "0.20.0"
    assert speculative_methods("0.10.2").basis == "0.11.1"  # 0.10.x not read
    assert speculative_methods("0.33.0").basis == "0.33.0"


# ---- check: an unknown name is exit 2 --------------------------------------------------
@pytest.mark.parametrize("entry", [fast_main, typer_main], ids=["fast", "typer"])
def test_an_unknown_method_is_one_line_exit_2(
    entry: Callable[[list[str]], None], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", LFM2, "--speculative-method", "bogus", "--num-speculative-tokens", "1",
            "--vllm-version", "0.33.0"]  # fmt: skip
    out, err, code = outcome(entry, args, capsys)
    assert code == 2 and out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "--speculative-method" in err and "'bogus'" in err and "vLLM 0.33 refuses" in err


@pytest.mark.parametrize(
    ("method", "release", "refused"),
    [
        ("medusa", "0.33.0", True),
        ("medusa", "0.32.0", False),
        ("extract_hidden_states", "0.14.0", True),  # was "not modelled" (0.17-0.21)
        # deprecated *_mtp names are in the Literal (line 39); __post_init__ renames them
        # to mtp only after pydantic has checked it (lines 1246-1250)
        ("deepseek_mtp", "0.33.0", False),
        ("[ngram]", "0.33.0", True),  # __post_init__ reads it (line 1276), the Literal not
    ],
)
def test_method_names_follow_the_release(method: str, release: str, refused: bool) -> None:
    args = ["check", LFM2, "--speculative-method", method, "--num-speculative-tokens", "1",
            "--vllm-version", release]  # fmt: skip
    done = runner.invoke(app, args)
    assert (done.exit_code == 2) is refused, done.output
    assert ("refuses it at start-up" in done.output) is refused


# ---- the count: only suffix supplies one -----------------------------------------------
def test_a_method_without_a_count_fails_at_start_up() -> None:
    # _verify_args (lines 1946-1951): "num_speculative_tokens must be provided"; without a
    # draft model __post_init__ reads no n_predict (line 1252 needs the count to be given)
    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings(speculative_method="mtp"))
    rank = analyze_rank(geometry, engine, 1)
    assert not rank.usable and "needs num_speculative_tokens" in rank.problem
    given = create_engine_config(geometry, Settings(speculative_method="mtp",
                                                    num_speculative_tokens=1))  # fmt: skip
    assert analyze_rank(geometry, given, 1).usable


def test_suffix_takes_the_tree_depth_as_its_count() -> None:
    # _validate_suffix_decoding (lines 1732-1735): the count defaults to
    # suffix_decoding_max_tree_depth, 24 (line 538; also 0.11.1 lines 130 and 473)
    geometry = load_model(NANO)
    engine = create_engine_config(geometry, Settings(speculative_method="suffix"))
    assert engine.num_speculative_tokens == 24
    # nemotron_h's conv state takes one row per speculative token on 0.33
    assert engine.state_spec_tokens == 24
    assert analyze_rank(geometry, engine, 1).usable


# ---- audit ------------------------------------------------------------------------------
def test_audit_does_not_evaluate_an_unknown_method(tmp_path: Path) -> None:
    script = _pair(tmp_path, '{"method": "bogus", "num_speculative_tokens": 1}')
    done = runner.invoke(app, ["audit", str(script), "--vllm-version", "0.33.0"])
    assert done.exit_code == 3, done.output
    assert done.output.count("'bogus': vLLM 0.33 refuses it at start-up") == 2


def test_audit_a_method_without_a_count_is_invalid(tmp_path: Path) -> None:
    script = _pair(tmp_path, '{"method": "ngram"}')
    done = runner.invoke(app, ["audit", str(script), "--vllm-version", "0.33.0"])
    assert done.exit_code != 0, done.output
    assert "method ngram needs num_speculative_tokens" in done.output


def test_audit_a_draft_model_without_a_count_is_not_evaluated(tmp_path: Path) -> None:
    # with a draft model, __post_init__ takes the count from its n_predict (lines 1600-1603)
    script = _pair(tmp_path, '{"method": "mtp", "model": "org/draft"}')
    done = runner.invoke(app, ["audit", str(script)])
    assert done.exit_code == 3, done.output
    assert done.output.count("n_predict, which kvalign does not read") == 2


# ---- layer ids without extract_hidden_states --------------------------------------------
def test_layer_ids_without_extract_hidden_states_get_a_note() -> None:
    base = ["check", LFM2, "--eagle-aux-hidden-state-layer-ids", "1,2"]
    alone = runner.invoke(app, base)
    assert "size nothing without speculative method extract_hidden_states" in alone.output
    used = runner.invoke(app, [*base, "--speculative-method", "extract_hidden_states",
                               "--num-speculative-tokens", "1"])  # fmt: skip
    assert "size nothing" not in used.output
