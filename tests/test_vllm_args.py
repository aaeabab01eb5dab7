"""The one `vllm serve` argument parser (kvalign.deploy.vllm_args)."""

from __future__ import annotations

import pytest

from kvalign.deploy.vllm_args import parse_vllm_args
from kvalign.errors import InvalidSettings


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
