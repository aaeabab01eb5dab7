"""One builder of a pool's ``Settings``: the CLI options, the ``vllm serve`` argument reader
and ``Settings`` name the same settings, one to one."""

from __future__ import annotations

import dataclasses

import typer.main

from kvalign.cli import app
from kvalign.deploy.common import PoolInput, build_pool
from kvalign.deploy.model import Location
from kvalign.deploy.vllm_args import (
    KNOWN,
    NOT_SERVE_ARGUMENTS,
    VllmArgs,
    parse_vllm_args,
    settings_from_args,
)
from kvalign.settings import Settings

SETTINGS = {f.name for f in dataclasses.fields(Settings)}


def _command_params(name: str) -> set[str]:
    group = typer.main.get_command(app)
    command = group.commands[name]  # type: ignore[attr-defined]
    return {p.name for p in command.params if p.name is not None}


def test_every_setting_is_a_check_and_matrix_option() -> None:
    for command in ("check", "matrix"):
        assert _command_params(command) >= SETTINGS, command


def test_every_setting_is_a_vllm_serve_argument_or_named_as_none() -> None:
    read = {f.name for f in dataclasses.fields(VllmArgs)}
    assert read >= SETTINGS - NOT_SERVE_ARGUMENTS
    assert NOT_SERVE_ARGUMENTS <= SETTINGS
    for name in SETTINGS - NOT_SERVE_ARGUMENTS:
        # the speculative settings are --speculative-config fields
        speculative = ("num_speculative_tokens", "speculative_method",
                       "eagle_aux_hidden_state_layer_ids")  # fmt: skip
        assert name.replace("_", "-") in KNOWN or name in speculative, name


def test_every_serve_argument_reaches_the_settings() -> None:
    # every flag away from its default; the expected values are the flags as written
    # (backend upper-cased, as vLLM's AttentionBackendEnum names it)
    args = parse_vllm_args(
        "vllm serve M --dtype float16 --kv-cache-dtype fp8 --block-size 64 "
        "--no-enable-prefix-caching --mamba-cache-dtype float32 "
        "--mamba-ssm-cache-dtype float16 --speculative-config "
        """'{"method":"mtp","num_speculative_tokens":2,"draft_model_config":{"hf_config":"""
        """{"eagle_aux_hidden_state_layer_ids":[1,20]}}}' --attention-backend flashinfer """
        "--mamba-cache-mode align --mamba-block-size 256 --max-model-len 32768 "
        "--use-replayssm --replayssm-buffer-len 8 --mamba-backend flashinfer "
        "--kv-cache-dtype-skip-layers 5 12"
    )
    assert settings_from_args(args, gpu="H100", vllm_version="0.31.0") == Settings(
        dtype="float16",
        kv_cache_dtype="fp8",
        block_size=64,
        enable_prefix_caching=False,
        mamba_cache_dtype="float32",
        mamba_ssm_cache_dtype="float16",
        num_speculative_tokens=2,
        attention_backend="FLASHINFER",
        gpu="H100",
        vllm_version="0.31.0",
        mamba_cache_mode="align",
        mamba_block_size=256,
        max_model_len=32768,
        use_replayssm=True,
        replayssm_buffer_len=8,
        mamba_backend="flashinfer",
        kv_cache_dtype_skip_layers=("5", "12"),
        speculative_method="mtp",
        eagle_aux_hidden_state_layer_ids=(1, 20),
    )


def test_no_flags_are_vllms_defaults_and_the_backend_is_vllms_choice() -> None:
    # --attention-backend unset: "auto" (the backend vLLM picks for the GPU and release),
    # in the reader as in audit and check; audit --attention-backend fills it in
    args = parse_vllm_args("vllm serve M")
    assert settings_from_args(args) == Settings()
    assert settings_from_args(args, attention_backend="triton_attn").attention_backend == (
        "TRITON_ATTN"
    )
    own = parse_vllm_args("vllm serve M --attention-backend FLASH_ATTN")
    assert settings_from_args(own, attention_backend="TRITON_ATTN").attention_backend == (
        "FLASH_ATTN"
    )
    found = PoolInput(
        role="prefill", role_source="test", name="p", args="vllm serve M",
        location=Location("x.sh", 1), env={},
    )  # fmt: skip
    pool, problems = build_pool(found)
    assert pool is not None and problems == []
    assert pool.settings == Settings()
