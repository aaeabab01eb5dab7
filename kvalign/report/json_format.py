"""The stable JSON contract of ``--format json`` (documented in docs/json.md).

Top-level keys: ``schema_version``, ``kvalign_version``, ``model``, ``settings``,
``deployments``, ``pairs``, ``recommendation``, ``tp_stable_pairs``, ``tp_stable``,
``answer``, ``notes``, ``fail_on``, ``exit_code``, ``flagged``.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from kvalign import __version__
from kvalign.alignment import RankResult
from kvalign.pd import CheckReport, PairResult
from kvalign.policy import fails
from kvalign.report.cells import answer_lines
from kvalign.settings import Settings
from kvalign.versions import resolve

SCHEMA_VERSION = 1


def _pct(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _deployment(role: str, rank: RankResult) -> dict[str, Any]:
    data = _deployment_fields(role, rank)
    if rank.kv_cache_groups:  # hybrids whose config names the per-layer pattern
        data["kv_cache_groups"] = [
            {"kind": group.kind, "layers": group.layers, "block_size": group.block_size}
            for group in rank.kv_cache_groups
        ]
    if rank.pp_stages:  # only with --pipeline-parallel-size > 1
        data["pp_stages"] = [
            {
                "rank": stage.rank,
                "layers": [stage.start, stage.end],
                "attention_layers": stage.attention_layers,
                "state_layers": stage.state_layers,
                "block_size": stage.block_size,
                "aligned": stage.aligned,
                "problem": stage.problem or None,
            }
            for stage in rank.pp_stages
        ]
    return data


def _deployment_fields(role: str, rank: RankResult) -> dict[str, Any]:
    return {
        "role": role,
        "tp": rank.tp,
        "valid": rank.valid,
        "reason": rank.problem or None,
        "load_error": rank.load_error or None,
        "attention_free": rank.attention_free,
        "attention_backend": rank.backend or None,
        "use_mla": rank.use_mla,
        "kv_heads_per_rank": rank.kv_heads_per_rank,
        "attn_page_bytes_per_token": rank.attn_page_bytes_per_token,
        "mamba_page_bytes": rank.mamba_page_bytes,
        "mamba_state_shapes": [list(s) for s in rank.mamba_state_shapes],
        "mamba_state_dtypes": list(rank.mamba_state_dtypes),
        "block_size": rank.block_size,
        "block_size_overridden": rank.block_size_overridden,
        "kernel_block_size": rank.kernel_block_size,
        "mamba_page_size_padded": rank.mamba_page_size_padded,
        "mamba_padding_pct": _pct(rank.mamba_padding_pct),
        "prefix_caching": rank.prefix_caching,
        "tp_stable_block_size": rank.tp_stable_block_size,
        "tp_stable_kernel_block_size": rank.tp_stable_kernel_block_size,
        "tp_stable_padding_pct": _pct(rank.tp_stable_padding_pct),
        "tp_stable_grown": rank.tp_stable_grown,
    }


def _pair(pair: PairResult, fail_on: str) -> dict[str, Any]:
    return {**pair._asdict(), "level": pair.level, "flagged": fails(pair.level, fail_on)}


def report_to_dict(report: CheckReport, fail_on: str = "error") -> dict[str, Any]:
    """The JSON-ready dict for one report (keys in docs/json.md).

    ``pairs`` follow vLLM's rules and decide ``exit_code`` (:mod:`kvalign.policy` at
    ``fail_on``); ``tp_stable_pairs`` is the vLLM PR 45575 what-if (``null`` unless
    ``--alignment tp-stable``), never gated."""
    geo = report.geometry
    model = {
        "id": geo.model_id,
        "model_type": geo.model_type,
        "architecture": geo.architecture,
        "source": geo.source,
        "config_path": geo.config_path,
        "loader": geo.loader,
        "family": geo.state.family if geo.state else None,
        "hybrid": geo.is_hybrid,
        "attention_free": geo.attention_free,
        "use_mla": bool(geo.attention and geo.attention.use_mla),
        "dtype": geo.model_dtype,
    }
    deployments = [_deployment("prefill", report.ranks[tp]) for tp in report.prefill_tps]
    deployments += [_deployment("decode", report.ranks[tp]) for tp in report.decode_tps]
    pairs = [_pair(pair, fail_on) for pair in report.pairs]
    what_if = report.tp_stable_pairs
    rec = report.recommendation
    code = report.exit_code(fail_on)
    fix = {
        "block_size": rec.block_size,
        "needed": rec.needed,
        "padding_pct": {str(tp): _pct(v) for tp, v in sorted(rec.padding_pct.items())},
        "text": rec.text,
        "change": rec.change or None,
        "proven_on": list(rec.proven_on),
        "blockers": list(rec.blockers),
        "raised": list(rec.raised),
        "only_tps": list(rec.only_tps),
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "kvalign_version": __version__,
        "model": model,
        "settings": _settings_json(report.settings),
        "vllm_profile": _profile_json(report),
        "deployments": deployments,
        "pairs": pairs,
        # the fix: one key, ``fix``, in check, matrix, audit (per group) and survey;
        # ``recommendation`` is its former name, kept until schema_version 2
        "fix": fix,
        "recommendation": fix,
        "tp_stable_pairs": (
            None if what_if is None else [_pair(pair, fail_on) for pair in what_if]
        ),
        "tp_stable": {"proposal": "vLLM PR 45575", "in_release": False, "gated": False},
        "answer": answer_lines(report, fail_on),
        "notes": list(report.notes),
        "fail_on": fail_on,
        "exit_code": code,
        "flagged": code == 1,
    }


#: settings added with the release profiles; shown in JSON only when not at their default.
_OPTIONAL_SETTINGS = (
    "mamba_cache_mode",
    "mamba_block_size",
    "max_model_len",
    "use_replayssm",
    "replayssm_buffer_len",
    "mamba_backend",
    "transformers_version",
    "pipeline_parallel_size",
    "pp_layer_partition",
    "kv_cache_dtype_skip_layers",
    "speculative_method",
    "eagle_aux_hidden_state_layer_ids",
)


def _profile_json(report: CheckReport) -> dict[str, object]:
    """The release profile the numbers used: its ``name``, the ``release`` asked for (or the
    profile's first release) and ``beyond_newest`` (asked for a release newer than every
    profile: the newest one's rules were used)."""
    chosen = resolve(report.settings.vllm_version)
    return {
        "name": chosen.profile.name,
        "release": chosen.release,
        "beyond_newest": chosen.beyond_newest,
    }


def _settings_json(settings: Settings) -> dict[str, object]:
    """The settings as JSON: every flag, the newer optional ones only when given."""
    data = asdict(settings)
    defaults = asdict(Settings())
    for key in _OPTIONAL_SETTINGS:
        if data.get(key) == defaults[key]:
            data.pop(key, None)
    return data


def error_to_json(message: str, exit_code: int) -> str:
    """The JSON document every command but ``audit`` prints with ``--format json`` when
    it stops on bad input (exit 2): ``schema_version``, ``kvalign_version`` and ``error``
    (the one-line message and the exit code)."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "kvalign_version": __version__,
        "error": {"message": " ".join(message.split()), "exit_code": exit_code},
    }
    return json.dumps(document, indent=2)


def to_json(report: CheckReport, fail_on: str = "error") -> str:
    """``report`` as indented JSON text."""
    return json.dumps(report_to_dict(report, fail_on), indent=2)
