"""Layout of the terminal output at 80×24: what a new user sees first."""

from __future__ import annotations

from typer.testing import CliRunner

from kvalign.cli import app

runner = CliRunner()
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"


def test_matrix_gives_the_count_and_fix_then_the_grid_at_80_columns() -> None:
    # Nemotron-3-Nano sizes blocks 2096 / 2096 / 1056 / 528 at TP 1 / 2 / 4 / 8 (the
    # survey's vectors), so of the 16 pairs only equal blocks pair: (1,1) (1,2) (2,1) (2,2)
    # (4,4) (8,8) are ok and the other 10 fail.
    done = runner.invoke(app, ["matrix", NANO], env={"COLUMNS": "80", "LINES": "24"})
    assert done.exit_code == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "FAIL (exit 1, --fail-on error): 10 of 16 pair(s) fail"
    # one failing pair named; the "more" line counts failing pairs only (10 - 1), not ok ones
    assert sum("… and" in line for line in lines) == 1
    assert "  … and 9 more failing pair(s) below" in lines
    grid = next(i for i, line in enumerate(lines) if line.startswith("Prefill TP ↓ × decode TP"))
    fix = next(i for i, line in enumerate(lines) if line.startswith("Fix: --block-size 2096"))
    assert fix < grid < 12  # count, fix, grid: all within the first screen of 24 lines
    assert all(len(line) <= 80 for line in lines)


def test_check_names_at_most_six_pairs_and_counts_only_failing_ones_beyond() -> None:
    # --prefill-tp 1,2,4,8 --decode-tp 1,2,4,8: the same 10 failing pairs as above; check
    # names six (failing first) and says 4 more fail
    done = runner.invoke(
        app, ["check", NANO, "--prefill-tp", "1,2,4,8", "--decode-tp", "1,2,4,8"],
        env={"COLUMNS": "80"},
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert "  … and 4 more failing pair(s) below" in lines


def test_help_fits_80_columns_with_panels_and_metavars() -> None:
    top = runner.invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout
    commands = top.split("Commands:")[1].splitlines()
    names = ["check", "matrix", "plan", "models", "rules", "audit", "survey", "explain"]
    assert [line.split()[0] for line in commands if line.strip()][: len(names)] == names
    assert not any("..." in line for line in commands)
    assert all(len(line) <= 80 for line in top.splitlines())
    sub = runner.invoke(app, ["check", "--help"], env={"COLUMNS": "80"}).stdout
    for panel in ("P/D:", "vLLM flags:", "Model loading:", "Output:"):
        assert f"\n{panel}\n" in sub
    assert "--prefill-tp LIST" in sub and "--block-size N" in sub
    assert "--hf-overrides JSON" in sub and "--gpu GPU" in sub
    # the P/D panel comes before the vLLM flags, the flags before model loading
    assert sub.index("P/D:") < sub.index("vLLM flags:") < sub.index("Model loading:")


def test_explain_takes_the_format_values_of_check() -> None:
    for fmt in ("table", "json", "markdown"):
        done = runner.invoke(app, ["explain", NANO, "--format", fmt])
        assert done.exit_code == 0, (fmt, done.stdout)
    assert runner.invoke(app, ["explain", NANO, "--format", "text"]).exit_code == 2


def test_models_and_check_show_the_same_model_type() -> None:
    # Qwen3.5-397B's config.json is a vision-language wrapper (model_type qwen3_5_moe)
    # whose text_config is qwen3_5_moe_text; check sizes (and names) the text config
    import json

    rows = json.loads(runner.invoke(app, ["models", "--format", "json"]).stdout)
    listed = {row["id"]: row["model_type"] for row in rows}
    for model in ("Qwen/Qwen3.5-397B-A17B", NANO):
        check = json.loads(runner.invoke(app, ["check", model, "--format", "json"]).stdout)
        assert listed[model] == check["model"]["model_type"]
    assert listed["Qwen/Qwen3.5-397B-A17B"] == "qwen3_5_moe_text"


def test_rules_id_is_wrapped_to_the_terminal_width() -> None:
    for columns in (50, 80):
        page = runner.invoke(app, ["rules", "KVA004"], env={"COLUMNS": str(columns)}).stdout
        lines = page.splitlines()
        assert lines[0].startswith("# KVA004") and max(map(len, lines[1:])) <= columns
        # the fix paragraph (108 characters) fills the lines rather than keeping 88 columns
        assert max(map(len, lines[1:])) > columns - 15
