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
    assert (
        parse_vllm_args(
            ["m", "--disable-prefix-caching", "--enable-prefix-caching"]
        ).enable_prefix_caching
        is True
    )
    # in a --config file, load_config_file turns "disable-prefix-caching: true" into the flag
    cfg = parse_vllm_args(
        ["m", "--config", "c.yaml"], config_files={"c.yaml": {"disable-prefix-caching": True}}
    )
    assert cfg.enable_prefix_caching is False


# ---- launch lines -------------------------------------------------------------------------
# The ``vllm`` console script is vllm.entrypoints.cli.main:main (vLLM 0.33.0's entry point);
# its ``serve`` subcommand takes the engine flags. The OpenAI server module and Dynamo's
# worker modules (kvalign's DYNAMO_VLLM_MODULES) take them directly.


@pytest.mark.parametrize(
    ("words", "rest"),
    [
        (["vllm", "serve", "m", "-tp", "2"], ["m", "-tp", "2"]),
        # the script by its path: only the last path part names it
        (["/opt/venv/bin/vllm", "serve", "m"], ["m"]),
        (["vllm", "serve"], []),
        (["vllm"], None),
        (["echo", "serve", "vllm"], None),  # "serve" before, not after, "vllm"
        (["python", "-m", "vllm.entrypoints.cli.main", "serve", "m"], ["m"]),
        (["python", "-m", "vllm.entrypoints.cli.main", "m"], ["m"]),
        (["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"],
         ["--model", "m"]),
        (["python3", "-m", "dynamo.vllm", "--model", "m"], ["--model", "m"]),
        (["python3", "-m", "dynamo.vllm.unified_main", "--model", "m"], ["--model", "m"]),
        (["python3", "-m", "dynamo.frontend", "--model", "m"], None),
        (["python3", "-m"], None),
        # the first launch found: an unrelated -m module, then vllm serve
        (["python", "-m", "pip", "vllm", "serve", "x"], ["x"]),
    ],
)  # fmt: skip
def test_serve_arguments_find_the_launch(words: list[str], rest: list[str] | None) -> None:
    assert serve_arguments(words) == rest


@pytest.mark.parametrize(
    ("words", "worker"),
    [
        (["python3", "-m", "dynamo.vllm", "--model", "m"], True),
        (["-m", "dynamo.vllm"], True),
        (["python3", "-m", "dynamo.vllm.unified_main"], True),
        (["python3", "-m", "dynamo.frontend"], False),
        (["python3", "-m"], False),
        (["dynamo.vllm", "-m", "x"], False),  # the module follows -m
        (["-m", "x", "dynamo.vllm"], False),
        (["python3", "-M", "dynamo.vllm"], False),
    ],
)
def test_dynamo_worker(words: list[str], worker: bool) -> None:
    assert dynamo_worker(words) is worker


def test_split_command_joins_continuations_and_drops_comments() -> None:
    # POSIX shell: backslash-newline continues the line, "#" starts a comment
    assert split_command("vllm serve m \\\n  --block-size 16 # the tuned size") == [
        "vllm", "serve", "m", "--block-size", "16",
    ]  # fmt: skip
    assert split_command("a \\\nb") == ["a", "b"]
    with pytest.raises(InvalidSettings, match=r"^cannot split command line: No closing quotation$"):
        split_command("vllm serve 'm")


# ---- words to flags -----------------------------------------------------------------------


def test_underscores_become_dashes_only_in_the_flag_name() -> None:
    # FlexibleArgumentParser.parse_args: "_" -> "-" between "--" and the first "."; the
    # value after "=" is kept as written, split at the first "="
    args = parse_vllm_args(
        ["m", "--kv_transfer_config.kv_connector_extra_config.chunk_size", "512",
         "--revision=a=b", "--mamba_backend=flash_infer"]
    )  # fmt: skip
    assert args.lmcache_chunk_size == 512
    assert args.lmcache_chunk_source == "kv_connector_extra_config.chunk_size"
    assert args.revision == "a=b"
    assert args.mamba_backend == "flash_infer"


def test_boolean_flags_take_no_value_and_no_forms_turn_them_off() -> None:
    # argparse.BooleanOptionalAction (nargs=0): --X on, --no-X off, the next word is not
    # its value
    on = parse_vllm_args(["--enable-prefix-caching", "org/m"])
    assert (on.enable_prefix_caching, on.model) == (True, "org/m")
    off = parse_vllm_args(["--no-enable-prefix-caching", "org/m", "--use-replayssm"])
    assert (off.enable_prefix_caching, off.model, off.use_replayssm) == (False, "org/m", True)
    # a --no- form of a value flag takes no value either, and is refused (vLLM's argparse
    # has no --no-block-size: "unrecognized arguments")
    with pytest.raises(InvalidSettings, match=r"^--no-block-size: missing value$"):
        parse_vllm_args(["--no-block-size", "org/m"])


def test_negative_numbers_are_values_not_flags() -> None:
    # argparse: a word matching its negative-number pattern (-1, -0.5) is a value when the
    # parser defines no option that looks like a negative number (vLLM's does not)
    assert parse_vllm_args(["m", "--block-size", "-16"]).block_size == -16
    assert parse_vllm_args(["m", "--revision", "-1.5"]).revision == "-1.5"
    args = parse_vllm_args(["m", "--max-model-len", "-1", "-tp", "2"])
    assert (args.max_model_len, args.tensor_parallel_size) == (None, 2)
    # a negative number in MODEL's place is a positional word
    assert parse_vllm_args(["m", "-3", "x"]).unknown == ("-3", "x")


def test_short_flags_kvalign_does_not_read() -> None:
    # one word after a short flag is its value unless it is a flag itself
    assert parse_vllm_args(["m", "-r", "1", "-tp", "2"]).unknown == ("-r",)
    assert parse_vllm_args(["m", "-r", "1", "-tp", "2"]).tensor_parallel_size == 2
    assert parse_vllm_args(["m", "-x", "-tp", "2"]).unknown == ("-x",)
    assert parse_vllm_args(["m", "-x", "-tp", "2"]).tensor_parallel_size == 2
    assert parse_vllm_args(["m", "-x"]).unknown == ("-x",)
    # a lone "-" is a word, not a flag
    assert parse_vllm_args(["m", "-", "x"]).unknown == ("-", "x")


def test_list_flag_takes_every_word_up_to_the_next_flag() -> None:
    # --kv-cache-dtype-skip-layers is nargs="+" (a list field of CacheConfig)
    args = parse_vllm_args(
        ["m", "--kv-cache-dtype-skip-layers", "3", "sliding_window", "--block-size", "16"]
    )
    assert args.kv_cache_dtype_skip_layers == ("3", "sliding_window")
    assert args.block_size == 16 and args.model == "m"
    last = parse_vllm_args(["--kv-cache-dtype-skip-layers", "0", "7", "11"])
    assert last.kv_cache_dtype_skip_layers == ("0", "7", "11")
    assert parse_vllm_args(["m"]).kv_cache_dtype_skip_layers is None
    # nargs="+" needs one value at least: argparse refuses none
    with pytest.raises(InvalidSettings, match=r"^--kv-cache-dtype-skip-layers: missing value$"):
        parse_vllm_args(["m", "--kv-cache-dtype-skip-layers", "--block-size", "16"])
    assert settings_from_args(args).kv_cache_dtype_skip_layers == ("3", "sliding_window")


def test_missing_values_are_refused_with_the_flag_named() -> None:
    with pytest.raises(InvalidSettings, match=r"^--block-size: missing value$"):
        parse_vllm_args(["m", "--block-size"])
    with pytest.raises(InvalidSettings, match=r"^--speculative-config: missing JSON value$"):
        parse_vllm_args(["m", "--speculative-config"])
    with pytest.raises(
        InvalidSettings, match=r"^--config c\.yaml: file not found next to the deployment$"
    ):
        parse_vllm_args(["m", "--config", "c.yaml"])


def test_json_flags_refuse_what_is_no_json_object() -> None:
    with pytest.raises(
        InvalidSettings, match=r"^--speculative-config: expected a JSON object, got '\[1\]'$"
    ):
        parse_vllm_args(["m", "--speculative-config", "[1]"])
    with pytest.raises(InvalidSettings, match=r"^--hf-overrides: '\{oops' is "):
        parse_vllm_args(["m", "--hf-overrides", "{oops"])
    # a long value is shown cut to 77 characters and "...": 80 are shown whole
    exact = "{" + "x" * 79
    with pytest.raises(InvalidSettings, match=r"^--kv-transfer-config: '\{x{79}' is "):
        parse_vllm_args(["m", "--kv-transfer-config", exact])
    longer = "{" + "x" * 80
    with pytest.raises(InvalidSettings, match=r"^--kv-transfer-config: '\{x{76}\.\.\.' is "):
        parse_vllm_args(["m", "--kv-transfer-config", longer])


def test_hf_overrides_are_kept_as_canonical_json() -> None:
    # sorted keys, json.dumps' separators: one text per override whatever its key order
    args = parse_vllm_args(["m", "--hf-overrides", '{"b": 1, "a": {"d": 2, "c": 3}}'])
    assert args.hf_overrides == '{"a": {"c": 3, "d": 2}, "b": 1}'
    assert parse_vllm_args(["m", "--hf-overrides", "{}"]).hf_overrides is None
    dotted = parse_vllm_args(["m", "--hf-overrides.text_config.num_layers", "2"])
    assert dotted.hf_overrides == '{"text_config": {"num_layers": 2}}'
    assert parse_vllm_args(["m"]).hf_overrides is None


def test_every_other_read_flag_reaches_its_field() -> None:
    args = parse_vllm_args(
        ["--model", "org/m", "--revision", "abc123", "--kv-cache-block-size", "64",
         "--config", "c.yaml", "--dtype", "bfloat16", "--mamba-cache-dtype", "float32",
         "--mamba-ssm-cache-dtype", "float16", "-pp", "2"],
        config_files={"c.yaml": {}},
    )  # fmt: skip
    assert (args.model, args.revision, args.kv_cache_block_size) == ("org/m", "abc123", 64)
    assert (args.config_file, args.dtype) == ("c.yaml", "bfloat16")
    assert (args.mamba_cache_dtype, args.mamba_ssm_cache_dtype) == ("float32", "float16")
    assert args.pipeline_parallel_size == 2
    assert settings_from_args(args).pipeline_parallel_size == 2


def test_dynamo_worker_roles() -> None:
    # Dynamo's vLLM worker: --is-prefill-worker / --is-decode-worker name the role and win
    # over --disaggregation-mode
    assert parse_vllm_args(["m", "--is-decode-worker"]).disaggregation_mode == "decode"
    assert (
        parse_vllm_args(
            ["m", "--disaggregation-mode", "decode", "--is-prefill-worker"]
        ).disaggregation_mode
        == "prefill"
    )
    assert (
        parse_vllm_args(
            ["m", "--disaggregation-mode", "prefill", "--is-decode-worker"]
        ).disaggregation_mode
        == "decode"
    )
    assert parse_vllm_args(["m", "--no-is-decode-worker"]).disaggregation_mode is None


def test_lmcache_chunk_size_from_the_connector_config_then_the_environment() -> None:
    # LMCache's chunk_size: kv_connector_extra_config.chunk_size first, else the
    # LMCACHE_CHUNK_SIZE variable (kvalign/deploy/vllm_args.py VllmArgs docstring)
    transfer = json.dumps(
        {"kv_connector": "LMCacheConnectorV1", "kv_connector_extra_config": {"chunk_size": 512}}
    )
    env = {"LMCACHE_CHUNK_SIZE": "256"}
    both = parse_vllm_args(["m", "--kv-transfer-config", transfer], env=env)
    assert (both.lmcache_chunk_size, both.lmcache_chunk_source) == (
        512, "kv_connector_extra_config.chunk_size"
    )  # fmt: skip
    envonly = parse_vllm_args(["m"], env=env)
    assert (envonly.lmcache_chunk_size, envonly.lmcache_chunk_source) == (256, "LMCACHE_CHUNK_SIZE")
    other = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_connector_extra_config": {}})
    fallback = parse_vllm_args(["m", "--kv-transfer-config", other], env=env)
    assert fallback.lmcache_chunk_size == 256
    none = parse_vllm_args(["m"])
    assert (none.lmcache_chunk_size, none.lmcache_chunk_source) == (None, None)
    with pytest.raises(InvalidSettings, match=r"^--LMCACHE_CHUNK_SIZE: 'big' is not an integer"):
        parse_vllm_args(["m"], env={"LMCACHE_CHUNK_SIZE": "big"})
    bad = json.dumps({"kv_connector_extra_config": {"chunk_size": "big"}})
    with pytest.raises(
        InvalidSettings, match=r"^--kv-transfer-config\.chunk_size: 'big' is not an integer"
    ):
        parse_vllm_args(["m", "--kv-transfer-config", bad])


def test_pp_layer_partition_comes_from_the_environment() -> None:
    # vllm/envs.py: VLLM_PP_LAYER_PARTITION, a string (layers per stage), unset by default;
    # an empty value partitions nothing
    args = parse_vllm_args(["m", "-pp", "2"], env={"VLLM_PP_LAYER_PARTITION": "10,14"})
    assert args.pp_layer_partition == "10,14"
    assert settings_from_args(args).pp_layer_partition == "10,14"
    assert parse_vllm_args(["m"], env={"VLLM_PP_LAYER_PARTITION": ""}).pp_layer_partition is None


def test_speculative_token_count_is_an_integer() -> None:
    with pytest.raises(
        InvalidSettings,
        match=r"^--speculative-config\.num_speculative_tokens: 'x' is not an integer",
    ):
        parse_vllm_args(["m", "--speculative-config", '{"num_speculative_tokens": "x"}'])


# ---- --speculative-config -----------------------------------------------------------------


def test_a_draft_model_without_a_token_count_is_not_modelled() -> None:
    # SpeculativeConfig.__post_init__ (vllm/config/speculative.py, 0.33.0): with a draft
    # model and no num_speculative_tokens the count is the draft config's n_predict; for
    # "suffix" it is suffix_decoding_max_tree_depth (no draft model read)
    spec = json.dumps({"method": "eagle", "model": "org/draft"})
    with pytest.raises(NotModelled) as error:
        parse_vllm_args(["m", "--speculative-config", spec])
    assert str(error.value) == (
        "--speculative-config: method 'eagle' with a draft model and no "
        "num_speculative_tokens: vLLM takes the count from the draft model's n_predict, "
        "which kvalign does not read; give num_speculative_tokens"
    )
    counted = json.dumps({"method": "eagle", "model": "org/draft", "num_speculative_tokens": 3})
    assert parse_vllm_args(["m", "-sc", counted]).num_speculative_tokens == 3
    suffix = json.dumps({"method": "suffix", "model": "org/draft"})
    assert parse_vllm_args(["m", "-sc", suffix]).speculative_method == "suffix"
    no_draft = json.dumps({"method": "ngram"})
    assert parse_vllm_args(["m", "-sc", no_draft]).num_speculative_tokens is None
    no_method = json.dumps({"model": "org/draft"})
    assert parse_vllm_args(["m", "-sc", no_method]).speculative_method is None


def test_speculative_method_must_be_a_name() -> None:
    # SpeculativeConfig.method is a SpeculativeMethod name: a string
    with pytest.raises(InvalidSettings) as error:
        parse_vllm_args(["m", "-sc", '{"method": 3, "num_speculative_tokens": 1}'])
    assert str(error.value) == (
        "--speculative-config.method: expected a method name (a JSON string), got '3'"
    )
    assert parse_vllm_args(["m", "-sc", '{"method": null}']).speculative_method is None


def test_eagle_aux_hidden_state_layer_ids() -> None:
    # SpeculativeConfig reads draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids
    spec = {
        "method": "eagle3",
        "num_speculative_tokens": 2,
        "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [2, 15, 28]}},
    }
    args = parse_vllm_args(["m", "-sc", json.dumps(spec)])
    assert args.eagle_aux_hidden_state_layer_ids == (2, 15, 28)
    assert settings_from_args(args).eagle_aux_hidden_state_layer_ids == (2, 15, 28)
    flag = "--speculative-config.draft_model_config.hf_config.eagle_aux_hidden_state_layer_ids"
    for ids, message in ((5, f"{flag}: expected a list of layer indices"),
                         (["a"], f"{flag}: 'a' is not an integer")):  # fmt: skip
        bad = {"draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": ids}}}
        with pytest.raises(InvalidSettings) as error:
            parse_vllm_args(["m", "-sc", json.dumps(bad)])
        assert str(error.value).startswith(message)
    for spec_without in ({"draft_model_config": "x"}, {"draft_model_config": {"hf_config": 1}},
                         {"draft_model_config": {"hf_config": {}}}):  # fmt: skip
        assert (
            parse_vllm_args(["m", "-sc", json.dumps(spec_without)]).eagle_aux_hidden_state_layer_ids
            is None
        )


# ---- references kvalign cannot resolve ----------------------------------------------------
# kvalign's rule (VllmArgs.unresolved / unresolved_noted): a reference left unresolved in a
# value kvalign reads is reported as "<where>: <reference as written>"; in a flag it does not
# read, or a --kv-transfer-config field that moves neither sizing nor the role (not kv_role,
# kv_connector, chunk_size), it is only noted.


def test_unresolved_model_and_extra_arguments() -> None:
    args = parse_vllm_args(["$(M)", "$(EXTRA)", "--block-size", "$(BS)"])
    assert args.model is None
    assert args.unresolved == ("MODEL: $(M)", "argument: $(EXTRA)", "--block-size: $(BS)")
    later = parse_vllm_args(["--block-size", "$(BS)", "$(M)"])
    assert later.unresolved == ("--block-size: $(BS)", "MODEL: $(M)")
    # MODEL was given (unresolved): a second word is no MODEL
    second = parse_vllm_args(["$(M)", "other", "-tp", "2"])
    assert (second.model, second.unknown, second.tensor_parallel_size) == (None, ("other",), 2)
    extra = parse_vllm_args(["m", "extra", "-tp", "2"])
    assert (extra.unknown, extra.tensor_parallel_size) == (("extra",), 2)
    # a shell expansion kvalign.shell marked unresolved is shown as the user wrote it
    shell = parse_vllm_args(["m", "--block-size", "\ue000${A[@]}\ue001", "\ue000$1\ue001"])
    assert shell.unresolved == ("--block-size: ${A[@]}", "argument: $1")
    # each reference once
    twice = parse_vllm_args(["m", "--block-size", "$(BS)", "--block-size", "$(BS)"])
    assert twice.unresolved == ("--block-size: $(BS)",)


def test_unresolved_values_of_flags_kvalign_does_not_read_are_noted() -> None:
    args = parse_vllm_args(["m", "--port", "$(PORT)", "--api-key", "$(KEY)", "-tp", "2"])
    assert args.unknown == ("--port", "--api-key")
    assert args.unresolved == ()
    assert args.unresolved_noted == ("--port: $(PORT)", "--api-key: $(KEY)")
    assert args.tensor_parallel_size == 2
    assert parse_vllm_args(["m", "--port", "8000"]).unresolved_noted == ()


def test_kv_transfer_config_pieces_outside_the_sizing_fields_are_noted() -> None:
    quoted_ip = (
        '{"kv_connector": "NixlConnector", "kv_role": "kv_producer", "kv_ip": "$(POD_IP)", '
        '"extra": {"hosts": ["$(A)", "b"]}}'
    )
    args = parse_vllm_args(["m", "--kv-transfer-config", quoted_ip, "-tp", "2"])
    assert (args.kv_connector, args.kv_role, args.tensor_parallel_size) == (
        "NixlConnector", "kv_producer", 2
    )  # fmt: skip
    assert args.unresolved == ()
    assert args.unresolved_noted == (
        "--kv-transfer-config kv_ip: $(POD_IP)",
        "--kv-transfer-config extra.hosts[0]: $(A)",
    )
    # an unquoted piece (a number in the JSON)
    port = parse_vllm_args(
        ["m", "--kv-transfer-config", '{"kv_role": "kv_consumer", "kv_port": $(PORT)}']
    )
    assert port.kv_role == "kv_consumer"
    assert port.unresolved_noted == ("--kv-transfer-config kv_port: $(PORT)",)
    # with a noted flag before it: both kept
    both = parse_vllm_args(["m", "--port", "$(P)", "--kv-transfer-config", '{"kv_ip": "$(IP)"}'])
    assert both.unresolved_noted == ("--port: $(P)", "--kv-transfer-config kv_ip: $(IP)")


@pytest.mark.parametrize(
    "value",
    [
        '{"kv_connector": "NixlConnector", "kv_role": "$(ROLE)"}',
        '{"kv_connector": "$(C)"}',
        '{"kv_connector_extra_config": {"chunk_size": "$(CHUNK)"}}',
        '["$(X)"]',  # no JSON object
        '{"kv_ip": "$(A)", "kv_port": $(B)}',  # quoted and unquoted: no JSON either way
        "$(WHOLE)",
    ],
)
def test_kv_transfer_config_pieces_that_move_sizing_or_the_role_are_unresolved(value: str) -> None:
    args = parse_vllm_args(["m", "--kv-transfer-config", value])
    assert args.unresolved and all(
        u.startswith("--kv-transfer-config: $(") for u in args.unresolved
    )
    assert args.unresolved_noted == ()
    assert args.kv_role is None


def test_only_the_whole_kv_transfer_config_is_tolerated() -> None:
    dotted = parse_vllm_args(["m", "--kv-transfer-config.kv_ip", "$(IP)"])
    assert dotted.unresolved == ("--kv-transfer-config.kv_ip: $(IP)",)
    assert dotted.unresolved_noted == ()
    other = parse_vllm_args(["m", "--hf-overrides", '{"a": "$(X)"}'])
    assert other.unresolved == ("--hf-overrides: $(X)",)
    assert other.hf_overrides is None and other.unresolved_noted == ()


def test_each_noted_kv_transfer_config_field_names_its_own_references() -> None:
    # kv_ip holds two references, kv_port one: each note shows the field's own reference,
    # in the order written (kv_port's is $(C), not kv_ip's second one)
    value = '{"kv_ip": "$(A):$(B)", "kv_port": "$(C)", "kv_role": "kv_producer"}'
    args = parse_vllm_args(["m", "--kv-transfer-config", value])
    assert args.kv_role == "kv_producer"
    assert args.unresolved_noted == (
        "--kv-transfer-config kv_ip: $(A)",
        "--kv-transfer-config kv_ip: $(B)",
        "--kv-transfer-config kv_port: $(C)",
    )
    # a reference in a key: the field could be any, kv_role too: unresolved
    keyed = parse_vllm_args(["m", "--kv-transfer-config", '{"kv_$(K)": "x", "y": "$(W)"}'])
    assert keyed.unresolved == ("--kv-transfer-config: $(K)", "--kv-transfer-config: $(W)")
    assert keyed.unresolved_noted == ()


def test_only_enable_and_disable_prefixes_are_inverted() -> None:
    # --hybrid-kv-cache-manager is no vLLM flag (EnableDisableAction pairs --enable-X with
    # --disable-X only): unknown, the setting untouched
    args = parse_vllm_args(["m", "--hybrid-kv-cache-manager"])
    assert args.unknown == ("--hybrid-kv-cache-manager",)
    assert args.disable_hybrid_kv_cache_manager is None


def test_max_model_len_edges_and_messages() -> None:
    # 1 is the least length ModelConfig accepts (validate_model_config_after: >= 1)
    assert parse_vllm_args(["m", "--max-model-len", "1"]).max_model_len == 1
    with pytest.raises(InvalidSettings) as error:
        parse_vllm_args(["m", "--max-model-len", "0"])
    assert str(error.value) == "--max-model-len: '0' is below 1 (give a length, or -1 / auto)"
    with pytest.raises(InvalidSettings) as error:
        parse_vllm_args(["m", "--max-model-len", "-2"])
    assert str(error.value) == "--max-model-len: '-2' is below 1 (give a length, or -1 / auto)"
    with pytest.raises(InvalidSettings) as error:
        parse_vllm_args(["m", "--max-model-len", "1.5K"])
    assert str(error.value) == (
        "--max-model-len: '1.5K' has a decimal with a binary suffix (e.g. 32K)"
    )
    with pytest.raises(InvalidSettings, match=r"^--max-model-len: '3x' is not an integer"):
        parse_vllm_args(["m", "--max-model-len", "3x"])
    # kvalign reads at most 18 characters of digits and suffix (MAX_DIGITS,
    # kvalign/numbers.py, its bound on hostile input): 17 digits and "k" are read,
    # 10**16 * 10**3 = 10**19 (exact in a float, as human_readable_int computes it);
    # one digit more is refused
    assert parse_vllm_args(["m", "--max-model-len", "1" + "0" * 16 + "k"]).max_model_len == (10**19)
    with pytest.raises(InvalidSettings, match=r"^--max-model-len: "):
        parse_vllm_args(["m", "--max-model-len", "1" + "0" * 17 + "k"])


def test_a_short_flag_takes_the_last_word_as_its_value() -> None:
    assert parse_vllm_args(["m", "-r", "1"]).unknown == ("-r",)


def test_a_sizing_piece_next_to_a_noted_piece_is_unresolved() -> None:
    # kv_role's piece moves the role: the whole value is unresolved although kv_ip's alone
    # would only be noted; a kv_role nested deeper is the same field
    args = parse_vllm_args(["m", "--kv-transfer-config", '{"kv_role": "$(R)", "kv_ip": "$(IP)"}'])
    assert args.unresolved == ("--kv-transfer-config: $(R)", "--kv-transfer-config: $(IP)")
    assert args.unresolved_noted == ()
    deep = parse_vllm_args(
        ["m", "--kv-transfer-config", '{"a": {"b": {"kv_role": "$(R)"}}, "kv_ip": "$(IP)"}']
    )
    assert deep.unresolved == ("--kv-transfer-config: $(R)", "--kv-transfer-config: $(IP)")


def test_config_files_keep_the_environment() -> None:
    args = parse_vllm_args(
        ["m", "--config", "c.yaml"],
        config_files={"c.yaml": {"block-size": 32}},
        env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"},
    )
    assert (args.block_size, args.attention_backend) == (32, "FLASHINFER")


def test_a_word_list_launch_is_parsed_once() -> None:
    # parse_vllm_args keeps one result per distinct launch, a word list as a string
    words = ["m", "-tp", "2"]
    assert parse_vllm_args(words) is parse_vllm_args(list(words))


def test_serve_arguments_edges() -> None:
    # the module is the last word: no arguments
    assert serve_arguments(["python", "-m", "vllm.entrypoints.openai.api_server"]) == []
    # words before the launcher are not arguments
    assert serve_arguments(
        ["env", "A=1", "python", "-m", "vllm.entrypoints.cli.main", "serve", "m"]
    ) == ["m"]


def test_a_shell_reference_is_shown_as_written() -> None:
    args = parse_vllm_args(["m", "--block-size", "\ue000$X\ue001"])
    assert args.unresolved == ("--block-size: $X",)


def test_a_sizing_piece_after_a_noted_piece_or_in_a_nested_key_is_unresolved() -> None:
    # the order of the fields does not matter: kv_ip's note does not excuse kv_role's piece
    args = parse_vllm_args(["m", "--kv-transfer-config", '{"kv_ip": "$(IP)", "kv_role": "$(R)"}'])
    assert args.unresolved == ("--kv-transfer-config: $(IP)", "--kv-transfer-config: $(R)")
    assert args.unresolved_noted == ()
    # a piece in a nested key could name any field (kv_role too)
    nested = parse_vllm_args(
        ["m", "--kv-transfer-config", '{"extra": {"$(K)": "x"}, "kv_ip": "$(IP)"}']
    )
    assert nested.unresolved == ("--kv-transfer-config: $(K)", "--kv-transfer-config: $(IP)")
    assert nested.unresolved_noted == ()
