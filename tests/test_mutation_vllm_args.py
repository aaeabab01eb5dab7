"""The ``vllm serve`` argument reader (kvalign/deploy/vllm_args.py) pinned at the inputs
where a wrong rule changes the answer, for its mutants (tests/mutation/run.py vllm_args).

Expected values come from vLLM 0.33.0's own argument handling (read from the released
wheel, vllm-0.33.0):

- ``vllm/engine/arg_utils.py`` ``EngineArgs.add_cli_args``: the short aliases ``-tp``
  (``--tensor-parallel-size``), ``-dp`` (``--data-parallel-size``), ``-pp``
  (``--pipeline-parallel-size``), ``-sc`` (``--speculative-config``), ``-q``
  (``--quantization``); ``--max-model-len`` is typed ``human_readable_int_or_auto``.
- ``vllm/utils/argparse_utils.py``: ``human_readable_int`` (``k/m/g/t`` decimal,
  ``K/M/G/T`` binary, no decimals with a binary suffix), ``human_readable_int_or_auto``
  (``-1`` / ``auto``), ``FlexibleArgumentParser.parse_args`` (``_`` → ``-`` only between
  the leading ``--`` and the first ``.``; ``--k=v`` split at the first ``=``) and
  ``load_config_file`` (``true`` → ``--k``, ``false`` → ``--no-k``, a list → ``--k`` then
  each item as ``str``, an empty list → nothing, a mapping → ``--k`` and ``json.dumps``).

Where kvalign reads something vLLM does not define (Dynamo's worker flags, LMCache's chunk
size, unresolved ``$(VAR)`` references), the expectation is derived by hand from the
documented rule in kvalign/deploy/vllm_args.py's docstrings, written out beside it.
"""

from __future__ import annotations

import json

import pytest

from kvalign.deploy.vllm_args import (
    config_to_args,
    dynamo_worker,
    parse_vllm_args,
    serve_arguments,
    settings_from_args,
    split_command,
)
from kvalign.errors import InvalidSettings, NotModelled
from kvalign.settings import Settings


def test_short_aliases_are_the_long_flags() -> None:
    # EngineArgs.add_cli_args (0.33.0): -tp, -dp, -pp, -sc, -q
    args = parse_vllm_args(
        ["m", "-tp", "4", "-dp", "2", "-pp", "3", "-q", "fp8", "-sc",
         '{"method": "ngram", "num_speculative_tokens": 5}']
    )  # fmt: skip
    assert (args.tensor_parallel_size, args.data_parallel_size) == (4, 2)
    assert args.pipeline_parallel_size == 3
    assert args.num_speculative_tokens == 5 and args.speculative_method == "ngram"
    # --quantization is read (KNOWN), so nothing is left unknown
    assert args.unknown == ()
    # argparse's -tp=4 form: the alias with its value after "="
    assert parse_vllm_args(["m", "-pp=2", "-dp=8"]).pipeline_parallel_size == 2
    assert parse_vllm_args(["m", "-pp=2", "-dp=8"]).data_parallel_size == 8


def test_config_file_words_follow_load_config_file() -> None:
    # load_config_file: true -> --k, false -> --no-k, list -> --k then str(item) each,
    # empty list -> nothing, mapping -> --k json.dumps(mapping), scalar -> --k str(value)
    config = {
        "enable-prefix-caching": True,
        "enforce-eager": False,
        "kv-cache-dtype-skip-layers": [3, "sliding_window"],
        "api-keys": [],
        "speculative-config": {"method": "mtp", "num_speculative_tokens": 1},
        "block-size": 64,
    }
    assert config_to_args(config) == [
        "--enable-prefix-caching",
        "--no-enforce-eager",
        "--kv-cache-dtype-skip-layers", "3", "sliding_window",
        "--speculative-config", json.dumps({"method": "mtp", "num_speculative_tokens": 1}),
        "--block-size", "64",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("written", "tokens"),
    [
        # human_readable_int (vllm/utils/argparse_utils.py, 0.33.0): lowercase suffixes
        # are decimal (k 10**3, m 10**6, g 10**9, t 10**12), uppercase binary (K 2**10,
        # M 2**20, G 2**30, T 2**40); a decimal number only with a decimal suffix
        ("32k", 32 * 10**3),
        ("32K", 32 * 2**10),  # 32,768
        ("1m", 10**6),
        ("1M", 2**20),  # 1,048,576
        ("25.6k", 25_600),  # the docstring's own example
        ("2g", 2 * 10**9),
        ("1G", 2**30),
        ("1t", 10**12),
        ("1T", 2**40),
        ("4096", 4096),
        (" 8k ", 8000),  # value.strip() first
    ],
)
def test_max_model_len_reads_human_readable_int(written: str, tokens: int) -> None:
    assert parse_vllm_args(["m", "--max-model-len", written]).max_model_len == tokens


@pytest.mark.parametrize("written", ["-1", "auto", "AUTO"])
def test_max_model_len_auto_is_the_models_own_length(written: str) -> None:
    # human_readable_int_or_auto: "-1" or "auto" (any case) -> -1, which ModelConfig
    # (vllm/config/model.py, max_model_len's docstring and _get_and_verify_max_len) reads
    # as "derive it from the model config", as when the flag is not given: None here
    args = parse_vllm_args(["m", "--max-model-len", written])
    assert args.max_model_len is None
    assert settings_from_args(args).max_model_len is None


@pytest.mark.parametrize("written", ["1.5K", "2.0M", "k", "32kk", "3x", "-2"])
def test_max_model_len_refuses_what_vllm_refuses(written: str) -> None:
    # binary suffixes take no decimals ("Decimals are not allowed with binary suffixes");
    # anything else that is no plain int is refused by int(); -2 is below ModelConfig's
    # ge=-1 bound
    with pytest.raises(InvalidSettings, match="--max-model-len"):
        parse_vllm_args(["m", "--max-model-len", written])


def test_enable_and_disable_spellings_of_one_boolean_flag() -> None:
    # vllm/utils/argparse_utils.py (0.33.0): FlexibleArgumentParser registers
    # EnableDisableAction for argparse.BooleanOptionalAction, which pairs --enable-X with
    # --disable-X: the inverse spelling sets the flag off. EngineArgs.add_cli_args declares
    # --enable-prefix-caching and --disable-hybrid-kv-cache-manager that way.
    off = parse_vllm_args(["m", "--disable-prefix-caching"])
    assert off.enable_prefix_caching is False and off.unknown == ()
    assert settings_from_args(off).enable_prefix_caching is False
    on = parse_vllm_args(["m", "--enable-hybrid-kv-cache-manager"])
    assert on.disable_hybrid_kv_cache_manager is False and on.unknown == ()
    # the flag takes no value: the next word is the model, not the flag's value
    first = parse_vllm_args(["--disable_prefix_caching", "org/m"])
    assert (first.enable_prefix_caching, first.model) == (False, "org/m")
    # last one wins, as for any argparse flag
    assert parse_vllm_args(
        ["m", "--disable-prefix-caching", "--enable-prefix-caching"]
    ).enable_prefix_caching is True
    # in a --config file, load_config_file turns "disable-prefix-caching: true" into the flag
    cfg = parse_vllm_args(
        ["m", "--config", "c.yaml"], config_files={"c.yaml": {"disable-prefix-caching": True}}
    )
    assert cfg.enable_prefix_caching is False
