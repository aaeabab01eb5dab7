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

