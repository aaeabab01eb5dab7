"""CLI through typer's CliRunner: every command, format and exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign import __version__
from kvalign.cli import app, parse_tp_list
from kvalign.errors import InvalidSettings
from tests.conftest import CATALOG

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    code, out, _ = run("--version")
    assert (code, out.strip()) == (0, f"kvalign {__version__}")


def test_check_flags_the_demo_pair() -> None:
    code, out, err = run("check", NANO, "--prefill-tp", "8", "--decode-tp", "1")
    assert code == 1, err
    assert "528 → 2,096" in out  # TP 8 block 528, TP 1 block 2096
    assert "FAIL" in out
    assert "--block-size 2096" in out
    assert err == ""


def test_check_ok_pair_exits_zero() -> None:
    # LFM2: the short-conv state fits a 16-token block at every TP -> 16 everywhere
    code, out, _ = run("check", "LiquidAI/LFM2-2.6B", "--prefill-tp", "1,2", "--decode-tp", "4")
    assert code == 0
    assert out.count("works (ok)") == 2 and out.startswith("PASS (exit 0")


def test_check_json_contract() -> None:
    code, out, _ = run(
        "check", NANO, "--prefill-tp", "1", "--decode-tp", "4", "--kv-cache-dtype", "fp8_e4m3",
        "--block-size", "32", "--attention-backend", "FLASHINFER", "--format", "json",
    )  # fmt: skip
    assert code == 1
    data = json.loads(out)
    assert set(data) >= {"model", "settings", "deployments", "pairs", "recommendation"}
    prefill, decode = data["deployments"]
    for item in (prefill, decode):
        assert set(item) >= {
            "role", "tp", "kv_heads_per_rank", "attn_page_bytes_per_token", "mamba_page_bytes",
            "block_size", "tp_stable_block_size", "kernel_block_size", "mamba_padding_pct",
            "valid",
        }  # fmt: skip
    assert (prefill["role"], prefill["block_size"], prefill["kernel_block_size"]) == (
        "prefill", 4192, 32,
    )  # fmt: skip
    assert (decode["block_size"], decode["kernel_block_size"]) == (2112, 64)
    assert prefill["mamba_page_bytes"] == 2_134_016 and decode["mamba_page_bytes"] == 533_504
    (pair,) = data["pairs"]
    assert set(pair) >= {
        "prefill_tp", "decode_tp", "block_size_ratio", "divisible", "prefix_cache_drift", "verdict",
    }  # fmt: skip
    assert (pair["block_size_ratio"], pair["divisible"], pair["prefix_cache_drift"]) == (
        2,
        True,
        True,
    )
    assert pair["verdict"] == "ratio"
    assert data["recommendation"]["block_size"] == 4176
    assert data["settings"]["block_size"] == 32


def test_check_markdown() -> None:
    code, out, _ = run(
        "check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "markdown"
    )
    assert code == 1
    assert "| prefill | 8 | 1 | 512 | 266,752 | 528 |" in out


def test_tp_stable_is_a_labelled_what_if_that_never_changes_the_gate() -> None:
    # Nano 8 -> 1 (bf16 KV): vLLM's rule gives 528 -> 2096, a 16-token split of 131 > 128
    # units (incompatible, exit 1); the PR 45575 proposal gives 2096 on both sides (ok)
    # -- shown as a what-if, the exit stays vLLM's
    args = ("check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--alignment", "tp-stable")
    code, out, _ = run(*args, "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1
    assert data["pairs"][0]["verdict"] == "incompatible"
    assert data["tp_stable_pairs"][0]["verdict"] == "ok"
    assert data["tp_stable"] == {"proposal": "vLLM PR 45575", "in_release": False, "gated": False}
    code, out, _ = run(*args)
    assert code == 1
    assert "What-if TP-stable (vLLM PR 45575 proposal), in no vLLM release, not gated" in out
    code, out, _ = run(*args, "--format", "markdown")
    assert code == 1 and "What-if: TP-stable (vLLM PR 45575 proposal)" in out
    # without --alignment tp-stable there is no what-if at all
    code, out, _ = run("check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "json")
    assert json.loads(out)["tp_stable_pairs"] is None


def test_matrix_table_and_json() -> None:
    code, out, _ = run("matrix", NANO, "--tp", "1,2,4,8")
    assert code == 1
    assert "TP 8" in out and "Per TP" in out
    code, out, _ = run("matrix", NANO, "--tp", "1,2", "--format", "json")
    data = json.loads(out)
    assert len(data["pairs"]) == 4
    assert [p["verdict"] for p in data["pairs"]] == ["ok", "ok", "ok", "ok"]  # 2096 at TP 1 and 2
    assert code == 0


def test_matrix_marks_invalid_tp_and_gates_on_it() -> None:
    # Falcon-H1-0.5B has 8 attention heads: TP 16 is invalid, and invalid fails the gate
    # (docs/policy.md) in matrix as in check and audit
    code, out, _ = run(
        "matrix", "tiiuae/Falcon-H1-0.5B-Base", "--tp", "1,16", "--format", "markdown"
    )
    assert code == 1
    assert "| TP 1 | 800→800 ok | invalid |" in out


def test_models_lists_catalog() -> None:
    code, out, _ = run("models", "--format", "json")
    assert code == 0
    ids = {m["id"] for m in json.loads(out)}
    assert NANO in ids and len(ids) == 24
    code, out, _ = run("models")
    assert code == 0 and "moonshotai/Kimi-K3" in out


def test_attention_free_model_exits_zero() -> None:
    code, out, _ = run("check", "tiiuae/falcon-mamba-7b", "--prefill-tp", "1", "--decode-tp", "2")
    assert code == 0
    assert "attention-free" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("check", "/nonexistent/config.json"), "no such file"),
        (
            ("check", NANO, "--prefill-tp", "x"),
            "--prefill-tp: 'x' is not a tensor parallel size from 1 to 4096",
        ),
        (("check", NANO, "--decode-tp", "0"), "--decode-tp: '0'"),
        (("check", NANO, "--attention-backend", "BOGUS"), "unknown backend 'BOGUS'"),
        (("check", NANO, "--kv-cache-dtype", "nvfp4"), "not modelled"),
        (("check", NANO, "--mamba-cache-dtype", "int3"), "--mamba-cache-dtype"),
        (("check", NANO, "--gpu", "Z80"), "unknown GPU"),
        (("check", "some-org/unknown-model"), "not in the Hugging Face cache"),
        (("matrix", NANO, "--tp", "1,,2"), "--tp"),
    ],
)
def test_bad_input_exit_2_one_line(args: tuple[str, ...], message: str) -> None:
    code, out, err = run(*args)
    assert code == 2
    assert message in err
    assert err.startswith("kvalign: error: ")
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def _write(tmp_path: Path, content: str | bytes) -> str:
    path = tmp_path / "config.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"model_type": "nemotron_h", ', "not valid JSON"),
        (
            '{"model_type": "bert", "num_attention_heads": 12}',
            "model_type 'bert' is not a hybrid",
        ),
        ('{"model_type": "mystery_arch"}', "'mystery_arch' is not a hybrid"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
    ],
)
def test_bad_config_files_exit_2(tmp_path: Path, content: str | bytes, message: str) -> None:
    code, out, err = run("check", _write(tmp_path, content))
    assert code == 2
    assert message in err and "config.json" in err
    assert "Traceback" not in err + out


def test_missing_field_names_file_and_field(tmp_path: Path) -> None:
    # Kimi-K3 is read as raw JSON (no transformers defaults): a missing field is an error
    data = json.loads((CATALOG / "moonshotai" / "Kimi-K3" / "config.json").read_text())
    del data["text_config"]["linear_attn_config"]["head_dim"]
    code, _, err = run("check", _write(tmp_path, json.dumps(data)))
    assert code == 2
    assert "field 'text_config.linear_attn_config.head_dim' is missing" in err


def test_wrong_type_rejected_by_transformers_names_the_field(tmp_path: Path) -> None:
    data = json.loads((CATALOG / "tiiuae" / "Falcon-H1-0.5B-Base" / "config.json").read_text())
    data["mamba_d_state"] = "many"
    code, _, err = run("check", _write(tmp_path, json.dumps(data)))
    assert code == 2
    assert "mamba_d_state" in err


def test_directory_without_config(tmp_path: Path) -> None:
    code, _, err = run("check", str(tmp_path))
    assert code == 2 and "no config.json" in err


def test_local_directory_works(tmp_path: Path) -> None:
    shutil.copy(CATALOG / "tiiuae" / "Falcon-H1-0.5B-Base" / "config.json", tmp_path)
    code, out, _ = run("check", str(tmp_path), "--format", "json")
    assert code == 0
    assert json.loads(out)["deployments"][0]["block_size"] == 800


def test_parse_tp_list() -> None:
    assert parse_tp_list("8, 1,8", "--tp") == [8, 1]
    with pytest.raises(InvalidSettings):
        parse_tp_list("-1", "--tp")


def test_invalid_tp_is_a_failing_verdict_with_a_valid_tp_as_the_fix() -> None:
    # Nano at TP 16 loads no MambaMixer2 (n_groups 8): verdict invalid, exit 1 (audit's
    # KVA010 is an error too); no --block-size is offered, valid TPs are
    code, out, err = run("check", NANO, "--prefill-tp", "16", "--format", "json")
    data = json.loads(out)
    assert code == 1 and err == ""
    assert data["pairs"][0]["verdict"] == "invalid"
    assert "n_groups G = 8" in data["pairs"][0]["reason"]
    rec = data["recommendation"]
    assert rec["block_size"] is None and rec["change"] is None
    assert rec["blockers"] == [
        "prefill TP 16: TP 16 is invalid for nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 "
        f"({data['deployments'][0]['reason'] or data['deployments'][0]['load_error']}): "
        "use a valid TP (1, 2, 4, 8)"
    ]
    code, out, _ = run("check", "tiiuae/Falcon-H1-0.5B-Base", "--decode-tp", "16")
    answer = out.split("Model:")[0]
    assert code == 1 and "heads not divisible" in answer
    assert "Fix: no --block-size can fix this; decode TP 16: TP 16 is invalid" in answer
    assert "use a valid TP (1, 2, 4, 8)" in answer


def test_docs_json_example_has_exactly_the_real_keys() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text("utf-8")
    section = page.split("## `check` and `matrix`", 1)[1]
    example = json.loads(section.split("```json", 1)[1].split("```", 1)[0])
    code, out, _ = run("check", NANO, "--prefill-tp", "8", "--decode-tp", "1", "--format", "json")
    assert code == 1
    real = json.loads(out)
    assert set(example) == set(real)
    for key in ("model", "settings", "recommendation"):
        assert set(example[key]) == set(real[key]), key
    for key in ("deployments", "pairs"):
        assert set(example[key][0]) == set(real[key][0]), key


def test_closed_stdout_exits_141_quietly() -> None:
    # `kvalign check ... | head -c 0`: the reader goes away before anything is written
    import subprocess
    import sys

    for fmt in ("table", "json"):
        proc = subprocess.run(
            f"{sys.executable} -m kvalign check LiquidAI/LFM2-2.6B --format {fmt} | head -c 0; "
            "exit ${PIPESTATUS[0]}",
            shell=True,
            executable="/bin/bash",
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 141, (fmt, proc.stderr)
        assert proc.stderr == ""


@pytest.mark.parametrize("command", ["check", "matrix", "explain"])
def test_model_line_says_bundled_for_a_catalog_config(command: str) -> None:
    args = {"check": ["--prefill-tp", "8"], "matrix": ["--tp", "1,8"], "explain": ["--tp", "8"]}
    _, out, _ = run(command, NANO, *args[command])
    # check and matrix print the answer first; the model line opens the detail
    first = next(line for line in out.splitlines() if line.startswith("Model: "))
    assert first.startswith(f"Model: {NANO} (nemotron_h, ") and first.endswith("config bundled)")
    assert "config.json" not in first and "site-packages" not in first


def test_model_line_gives_the_path_of_a_local_config(tmp_path: Path) -> None:
    shutil.copy(CATALOG / NANO / "config.json", tmp_path / "config.json")
    _, out, _ = run("check", str(tmp_path), "--prefill-tp", "8")
    assert f"; config local: {tmp_path / 'config.json'})" in " ".join(out.split())
