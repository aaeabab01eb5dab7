"""The one `vllm serve` argument parser (kvalign.deploy.vllm_args)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvalign.cli import app
from kvalign.deploy.vllm_args import parse_vllm_args
from kvalign.errors import InvalidSettings

runner = CliRunner()


def test_spellings_aliases_and_json() -> None:
    args = parse_vllm_args(
        "vllm serve org/model -tp 4 --data_parallel_size=2 --block-size 64 "
        "--kv-cache-dtype=fp8 --no-enable-prefix-caching --max-model-len 32k "
        '--speculative-config \'{"method":"mtp","num_speculative_tokens":2}\' '
        '--kv-transfer-config \'{"kv_connector":"NixlConnector","kv_role":"kv_producer"}\' '
        "--port 8000 --enforce-eager"
    )
    assert args.model == "org/model"
    assert (args.tensor_parallel_size, args.data_parallel_size, args.block_size) == (4, 2, 64)
    assert args.kv_cache_dtype == "fp8"
    assert args.enable_prefix_caching is False
    assert args.max_model_len == 32_000  # vLLM reads 32k as 32 * 1000
    assert args.num_speculative_tokens == 2
    assert (args.kv_connector, args.kv_role) == ("NixlConnector", "kv_producer")
    assert args.unknown == ("--port", "--enforce-eager")


def test_dotted_keys_and_model_flag() -> None:
    args = parse_vllm_args(
        ["--model", "m", "--speculative-config.num_speculative_tokens", "3",
         "--kv-transfer-config.kv_role", "kv_consumer"]
    )  # fmt: skip
    assert (args.model, args.num_speculative_tokens, args.kv_role) == ("m", 3, "kv_consumer")


def test_config_file_is_overridden_by_flags() -> None:
    config = {"model": "m", "tensor-parallel-size": 1, "block_size": 800,
              "enable-prefix-caching": False}  # fmt: skip
    args = parse_vllm_args(["--config", "c.yaml", "-tp", "2"], config_files={"c.yaml": config})
    assert (args.model, args.tensor_parallel_size, args.block_size) == ("m", 2, 800)
    assert args.enable_prefix_caching is False


def test_env_backend_and_lmcache_chunk() -> None:
    args = parse_vllm_args(
        ["m"], env={"VLLM_ATTENTION_BACKEND": "FLASHINFER", "LMCACHE_CHUNK_SIZE": "256"}
    )
    assert (args.attention_backend, args.lmcache_chunk_size) == ("FLASHINFER", 256)
    # the flag wins over the environment variable
    assert parse_vllm_args(["m", "--attention-backend", "TRITON_ATTN"], env={
        "VLLM_ATTENTION_BACKEND": "FLASHINFER"}).attention_backend == "TRITON_ATTN"  # fmt: skip


def test_dynamo_worker_flags() -> None:
    assert (
        parse_vllm_args("python3 -m dynamo.vllm --model m --is-prefill-worker").disaggregation_mode
        == "prefill"
    )
    assert parse_vllm_args("--disaggregation-mode decode").disaggregation_mode == "decode"


def test_unresolved_variables_are_reported() -> None:
    args = parse_vllm_args(["$(MODEL)", "--block-size", "$(BS)"])
    assert args.model is None
    assert args.unresolved == ("MODEL: $(MODEL)", "--block-size: $(BS)")


@pytest.mark.parametrize(
    "words",
    [["m", "--block-size", "big"], ["m", "--kv-transfer-config", "{oops"], ["--config", "x.yaml"]],
)
def test_malformed_values_raise(words: list[str]) -> None:
    with pytest.raises(InvalidSettings):
        parse_vllm_args(words)


def test_release_profile_flags() -> None:
    args = parse_vllm_args(
        "vllm serve m --mamba-cache-mode align --mamba_block_size 256 "
        "--no-disable-hybrid-kv-cache-manager --kv-transfer-config "
        """'{"kv_connector": "NixlConnector"}' --max-model-len 32k"""
    )
    assert (args.mamba_cache_mode, args.mamba_block_size) == ("align", 256)
    assert args.disable_hybrid_kv_cache_manager is False
    assert args.kv_transfer_config is True
    assert args.max_model_len == 32_000
    assert not args.unknown
    plain = parse_vllm_args("vllm serve m --disable-hybrid-kv-cache-manager")
    assert plain.disable_hybrid_kv_cache_manager is True and plain.kv_transfer_config is False


def test_replayssm_flags() -> None:
    args = parse_vllm_args(
        "vllm serve m --use-replayssm --replayssm-buffer-len 8 --mamba-backend flashinfer"
    )
    assert (args.use_replayssm, args.replayssm_buffer_len, args.mamba_backend) == (
        True,
        8,
        "flashinfer",
    )
    assert not args.unknown


def test_equals_form_keeps_the_json_value_as_written() -> None:
    # `--kv-transfer-config='{"kv_role":"kv_consumer"}'` is one word after quote removal:
    # --kv-transfer-config={"kv_role":...}. Only the flag name is normalised (_ → -); the
    # value used to become {"kv-role":"kv-consumer", ...} and the decode pool lost its role
    # (audit then checked no pair and exited 0). A dot inside the value ("10.0.0.1") must not
    # be read as a dotted flag either; -tp=4 is argparse's alias form.
    args = parse_vllm_args(
        [
            "vllm", "serve", "M", "-tp=4", "--max_model_len=8k", "--block_size=32",
            '--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_consumer",'
            '"kv_ip":"10.0.0.1"}',
        ]
    )  # fmt: skip
    assert args.kv_role == "kv_consumer" and args.kv_connector == "NixlConnector"
    assert args.tensor_parallel_size == 4
    assert args.max_model_len == 8000 and args.block_size == 32


def test_equals_form_script_is_paired_and_gated_like_check(tmp_path: Path) -> None:
    # Falcon-H1-0.5B, bf16: TP 1 -> 800 (public report), TP 4 -> 400
    # (tests/cli/test_cli.py matrix); 400 is not a multiple of 800 -> split, an error: check
    # exits 1, so must audit on the same two pools written with `=`.
    model = "tiiuae/Falcon-H1-0.5B-Base"
    script = tmp_path / "pd.sh"
    script.write_text(
        f"vllm serve {model} -tp=1 "
        '--kv-transfer-config=\'{"kv_connector":"NixlConnector","kv_role":"kv_producer"}\' &\n'
        f"vllm serve {model} --tensor-parallel-size=4 "
        '--kv-transfer-config=\'{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}\' &\n'
    )
    audit = runner.invoke(app, ["audit", str(script), "--format", "json"])
    check = runner.invoke(app, ["check", model, "--prefill-tp", "1", "--decode-tp", "4"])
    assert audit.exit_code == check.exit_code == 1, audit.stderr
    pools = json.loads(audit.stdout)["files"][0]["pools"]
    assert [(p["role"], p["tp"], p["block_size"]) for p in pools] == [
        ("prefill", 1, 800),
        ("decode", 4, 400),
    ]


def test_a_repeated_launch_is_parsed_once_and_the_same() -> None:
    # parse_vllm_args keeps one result per (words, environment): a folder of copies of
    # one manifest parses each distinct launch once. The kept result is what parsing
    # gives (the uncached _parse), errors are raised every time, and a --config file
    # (whose contents the words do not show) is never taken from the cache.
    from kvalign.deploy import vllm_args

    vllm_args._parse_once.cache_clear()
    line = 'vllm serve org/m --block-size 64 --kv-transfer-config \'{"kv_role":"kv_producer"}\''
    env = {"VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    first = parse_vllm_args(line, env=env)
    assert first == vllm_args._parse(line, None, env)
    assert first.block_size == 64 and first.kv_role == "kv_producer"
    assert first.attention_backend == "FLASHINFER"
    assert parse_vllm_args(line, env=dict(env)) is first
    assert parse_vllm_args(line).attention_backend is None  # another environment
    assert vllm_args._parse_once.cache_info().misses == 2
    for _ in range(2):
        with pytest.raises(InvalidSettings, match="--block-size"):
            parse_vllm_args("vllm serve org/m --block-size big")
    with_config = ["org/m", "--config", "c.yaml"]
    a = parse_vllm_args(with_config, config_files={"c.yaml": {"block-size": 32}})
    b = parse_vllm_args(with_config, config_files={"c.yaml": {"block-size": 16}})
    assert (a.block_size, b.block_size) == (32, 16)
