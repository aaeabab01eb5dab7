"""The headline of ``check`` matches the lines below it (words that match the
verdict): a --block-size vLLM raises is not a plain PASS."""

from __future__ import annotations

from typer.testing import CliRunner

from kvalign.cli import app

runner = CliRunner()
# Qwen3.5-397B at TP 8 / TP 1 with --block-size 2096: both pools keep 2096 on an unspecified
# CUDA GPU (A100-like, checkpoint alignment 1), but on H100 the FlashInfer GDN prefill
# aligns to lcm(2096, 64) = 8384 (see tests/analysis/test_policy.py), so vLLM raises the flag.
QWEN = ["check", "Qwen/Qwen3.5-397B-A17B", "--prefill-tp", "8", "--decode-tp", "1",
        "--block-size", "2096"]  # fmt: skip


def test_raised_on_the_named_gpu_is_a_warning_that_fail_on_warning_fails() -> None:
    passed = runner.invoke(app, [*QWEN, "--gpu", "H100"])
    assert passed.exit_code == 0
    head = passed.stdout.splitlines()[0]
    assert head.startswith("PASS with a warning (exit 0, --fail-on error): every pair works")
    assert "vLLM raises your --block-size" in head and "--fail-on warning fails it" in head
    assert "raises --block-size 2096 to 8,384" in passed.stdout
    failed = runner.invoke(app, [*QWEN, "--gpu", "H100", "--fail-on", "warning"])
    assert failed.exit_code == 1 and failed.stdout.startswith("FAIL (exit 1, --fail-on warning)")


def test_raised_only_on_other_gpu_classes_is_a_warning_too() -> None:
    # without --gpu, 2096 is kept on A100 but raised to 8,384 on H100/H200/B200;
    # that is a warning as audit's KVA004 (formerly "PASS with a note" that never gated)
    result = runner.invoke(app, QWEN)
    assert result.exit_code == 0
    head = result.stdout.splitlines()[0]
    assert head.startswith("PASS with a warning (exit 0, --fail-on error): every pair works")
    assert "vLLM raises your --block-size" in head and "--fail-on warning fails it" in head
    assert runner.invoke(app, [*QWEN, "--fail-on", "warning"]).exit_code == 1


def test_nixl_rule_is_stated_as_nixl_applies_it() -> None:
    # Nemotron 3 Nano: kernel block 2096 at TP 1, 528 at TP 8 (tests/snapshots/check-nano-8-1-*)
    import json

    nano = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
    result = runner.invoke(
        app, ["check", nano, "--prefill-tp", "1", "--decode-tp", "8", "--format", "json"]
    )
    (pair,) = json.loads(result.stdout)["pairs"]
    assert pair["divisible"] is False  # the decode block (528) must be the multiple
    assert pair["reason"].startswith(
        "NIXL needs the decode kernel block to be a multiple of the prefill one: "
        "528 is not a multiple of 2096 (here prefill's is the larger)"
    )
