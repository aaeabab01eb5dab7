"""Plain-text cells shared by the table and markdown formatters (one source of columns)."""

from __future__ import annotations

from kvalign.alignment import RankResult
from kvalign.dtypes import resolve_model_dtype
from kvalign.errors import KvalignError
from kvalign.geometry import ModelGeometry
from kvalign.pd import PairResult, Report
from kvalign.settings import Settings

_ALIGNMENT_LABEL = {"vllm": "vLLM", "tp-stable": "TP-stable"}


def deployment_columns(alignment: str) -> tuple[str, ...]:
    """Deployments-table headers; kernel block and padding follow ``alignment``."""
    label = _ALIGNMENT_LABEL.get(alignment, alignment)
    return (
        "Role",
        "TP",
        "KV heads/rank",
        "Attn B/token",
        "Mamba page B",
        "Block (vLLM)",
        "Block (TP-stable)",
        f"Kernel block ({label})",
        f"Mamba pad % ({label})",
    )


def per_tp_columns(alignment: str) -> tuple[str, ...]:
    """Headers of the per-TP table under the matrix grid."""
    return ("TP", *deployment_columns(alignment)[5:])


def per_tp_rows(report: Report) -> list[list[str]]:
    """One row per requested TP: logical blocks (both algorithms), kernel block, padding."""
    align = report.settings.alignment
    rows = []
    for tp, rank in sorted(report.ranks.items()):
        if not rank.usable:
            rows.append([str(tp), "invalid: " + rank.problem, "", "", ""])
            continue
        cells = deployment_cells("", rank, align)
        rows.append([cells[1], *cells[5:]])
    return rows


PAIR_COLUMNS = (
    "Prefill TP",
    "Decode TP",
    "Blocks P→D",
    "Kernel P→D",
    "block_size_ratio",
    "Divides",
    "Prefix drift",
    "Verdict",
    "Why",
)

VERDICT_LABELS = {
    "ok": "OK",
    "drift": "DRIFT",
    "ratio": "RATIO",
    "split": "SPLIT",
    "incompatible": "FAIL",
    "invalid": "INVALID",
    "attention-free": "N/A",
}


def num(value: int | None) -> str:
    """Integer with thousands separators, or an en dash."""
    return "–" if value is None else f"{value:,}"


def pct(value: float | None) -> str:
    """Percentage with two decimals, or an en dash."""
    return "–" if value is None else f"{value:.2f}"


def deployment_cells(role: str, rank: RankResult, alignment: str) -> list[str]:
    """One deployments-table row."""
    if not rank.usable:
        return [role, str(rank.tp), "invalid: " + rank.problem, "", "", "", "", "", ""]
    chosen = rank.kernel(alignment)
    stable = num(rank.tp_stable_block_size)
    if rank.tp_stable_grown:
        stable += " (grown)"
    block = num(rank.block_size)
    if rank.block_size_overridden:
        block += " (overrides --block-size)"
    padding = rank.tp_stable_padding_pct if alignment == "tp-stable" else rank.mamba_padding_pct
    return [
        role,
        str(rank.tp),
        num(rank.kv_heads_per_rank),
        num(rank.attn_page_bytes_per_token),
        num(rank.mamba_page_bytes),
        block,
        stable,
        num(chosen),
        pct(padding),
    ]


def deployment_rows(report: Report) -> list[list[str]]:
    """Every deployments-table row: prefill TPs, then decode TPs."""
    align = report.settings.alignment
    rows = [deployment_cells("prefill", report.ranks[tp], align) for tp in report.prefill_tps]
    rows += [deployment_cells("decode", report.ranks[tp], align) for tp in report.decode_tps]
    return rows


def pair_cells(pair: PairResult) -> list[str]:
    """One pairs-table row."""

    def yes_no(flag: bool | None) -> str:
        return "–" if flag is None else ("yes" if flag else "no")

    return [
        str(pair.prefill_tp),
        str(pair.decode_tp),
        f"{num(pair.prefill_block_size)} → {num(pair.decode_block_size)}",
        f"{num(pair.prefill_kernel_block_size)} → {num(pair.decode_kernel_block_size)}",
        "–" if pair.block_size_ratio is None else str(pair.block_size_ratio),
        yes_no(pair.divisible),
        yes_no(pair.prefix_cache_drift),
        VERDICT_LABELS[pair.verdict],
        pair.reason,
    ]


MATRIX_LEGEND = (
    "Cells: logical blocks P→D and verdict (OK; DRIFT = prefix-cache drift; RATIO = "
    "block_size_ratio != 1; SPLIT = non-divisible, gcd split; FAIL = NIXL cannot pair; "
    "INVALID = TP the model rejects). Verdicts compare kernel blocks."
)


def matrix_cell(pair: PairResult) -> str:
    """Compact grid cell: ``P→D kernel blocks`` and the verdict label."""
    if pair.verdict in ("invalid", "attention-free"):
        return VERDICT_LABELS[pair.verdict]
    blocks = f"{num(pair.prefill_block_size)}→{num(pair.decode_block_size)}"
    return f"{blocks} {VERDICT_LABELS[pair.verdict]}"


def runtime_dtype(settings: Settings, geometry: ModelGeometry) -> str:
    """The dtype vLLM runs the model in for ``--dtype`` (float32 configs run in bfloat16)."""
    try:
        return resolve_model_dtype(settings.dtype, geometry.model_dtype)
    except KvalignError:
        return settings.dtype


def config_origin(geo: ModelGeometry) -> str:
    """Where the config came from, for the model line: ``config bundled`` for the catalog
    (its path is inside the installed package and says nothing), else the path read
    (``config local: PATH``, ``config hub: PATH`` in the Hugging Face cache)."""
    where = "bundled" if geo.source == "catalog" else f"{geo.source}: {geo.config_path}"
    return f"config {where}"


def prefix_caching_text(flag: bool | None, resolved: bool | None) -> str:
    """``on``/``off`` for a given flag; ``on (release default)`` when no flag was given."""
    if flag is not None:
        return "on" if flag else "off"
    if resolved is None:
        return "release default"
    return ("on" if resolved else "off") + " (release default)"


def header_lines(report: Report) -> list[str]:
    """Model and settings summary lines."""
    geo = report.geometry
    s = report.settings
    family = geo.state.family if geo.state else "none"
    kind = "hybrid" if geo.is_hybrid else ("attention-free" if geo.attention_free else "attention")
    mla = ", MLA" if geo.attention and geo.attention.use_mla else ""
    block = s.block_size if s.block_size is not None else "unset"
    prefix = prefix_caching_text(s.enable_prefix_caching, report.engine.prefix_caching)
    return [
        f"Model: {geo.model_id} ({geo.model_type}, {kind}, state family {family}{mla}; "
        f"{config_origin(geo)})",
        f"Settings: dtype={s.dtype} (config {geo.model_dtype}, runs in "
        f"{runtime_dtype(s, geo)}) kv-cache-dtype={s.kv_cache_dtype} "
        f"block-size={block} prefix-caching={prefix} "
        f"mamba-cache-dtype={s.mamba_cache_dtype} mamba-ssm-cache-dtype={s.mamba_ssm_cache_dtype} "
        f"spec-tokens={s.num_speculative_tokens} backend={s.attention_backend} "
        f"gpu={s.gpu or 'unspecified CUDA'} alignment={s.alignment} "
        f"vllm-version={s.vllm_version or 'newest profile'}",
    ]
