"""Plain-text cells shared by the table and markdown formatters (one source of columns)."""

from __future__ import annotations

from kvalign.alignment import RankResult
from kvalign.dtypes import resolve_model_dtype
from kvalign.errors import KvalignError
from kvalign.geometry import ModelGeometry
from kvalign.numbers import is_digits, quoted
from kvalign.pd import CheckReport, PairResult
from kvalign.policy import VERDICTS, fails
from kvalign.settings import Settings

#: how the TP-stable alignment is named wherever it appears.
TP_STABLE_LABEL = "TP-stable (vLLM PR 45575 proposal)"


def deployment_columns(alignment: str) -> tuple[str, ...]:
    """Deployments-table headers: vLLM's block, kernel block and padding; with
    ``--alignment tp-stable`` also the proposal's block and padding."""
    columns: tuple[str, ...] = (
        "Role",
        "TP",
        "KV heads/rank",
        "Attn B/token",
        "Mamba page B",
        "Block",
        "Kernel block",
        "Mamba pad %",
    )
    if alignment == "tp-stable":
        columns += ("Block (PR 45575)", "Mamba pad % (PR 45575)")
    return columns


def per_tp_columns(alignment: str) -> tuple[str, ...]:
    """Headers of the per-TP table under the matrix grid."""
    return ("TP", *deployment_columns(alignment)[5:])


def per_tp_rows(report: CheckReport) -> list[list[str]]:
    """One row per requested TP: logical blocks (both algorithms), kernel block, padding."""
    align = report.settings.alignment
    rows = []
    for tp, rank in sorted(report.ranks.items()):
        if not rank.usable:
            width = len(per_tp_columns(align)) - 2
            rows.append([str(tp), "invalid: " + rank.problem, *([""] * width)])
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
    "Decode multiple of prefill",
    "Prefix drift",
    "Verdict",
    "Why",
)

#: the verdict words of :mod:`kvalign.policy`, the same in every output format.
VERDICT_LABELS = {verdict: verdict for verdict in VERDICTS}


def num(value: int | None) -> str:
    """Integer with thousands separators, or an en dash."""
    return "–" if value is None else f"{value:,}"


def pct(value: float | None) -> str:
    """Percentage with two decimals, or an en dash."""
    return "–" if value is None else f"{value:.2f}"


def deployment_cells(role: str, rank: RankResult, alignment: str) -> list[str]:
    """One deployments-table row."""
    if not rank.usable:
        blank = [""] * (len(deployment_columns(alignment)) - 3)
        return [role, str(rank.tp), "invalid: " + rank.problem, *blank]
    block = num(rank.block_size)
    if rank.block_size_overridden:
        block += " (raises --block-size)"
    cells = [
        role,
        str(rank.tp),
        num(rank.kv_heads_per_rank),
        num(rank.attn_page_bytes_per_token),
        num(rank.mamba_page_bytes),
        block,
        num(rank.kernel_block_size),
        pct(rank.mamba_padding_pct),
    ]
    if alignment == "tp-stable":
        stable = num(rank.tp_stable_block_size)
        if rank.tp_stable_grown:
            stable += " (grown)"
        cells += [stable, pct(rank.tp_stable_padding_pct)]
    return cells


def deployment_rows(report: CheckReport) -> list[list[str]]:
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
    "Cells: logical blocks P→D and verdict (ok; drift = prefix-cache drift; ratio = "
    "block_size_ratio != 1; split = non-divisible, gcd split; incompatible = NIXL cannot "
    "pair; invalid = TP the model rejects; nothing-to-align = no hybrid alignment). "
    "Verdicts compare kernel blocks; see docs/policy.md for which fail the gate."
)


def matrix_cell(pair: PairResult) -> str:
    """Compact grid cell: ``P→D logical blocks`` and the verdict."""
    if pair.verdict in ("invalid", "nothing-to-align") and pair.prefill_block_size is None:
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


def header_lines(report: CheckReport) -> list[str]:
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
        f"vllm-version={s.vllm_version or 'newest profile'}{_speculative_and_skip(s)}",
    ]


def _speculative_and_skip(s: Settings) -> str:
    """The settings shown only when given: ``--kv-cache-dtype-skip-layers`` (an entry that
    is not a plain layer index is quoted), ``--speculative-method`` and
    ``--eagle-aux-hidden-state-layer-ids``; ``""`` when none is."""
    parts = []
    if s.kv_cache_dtype_skip_layers:
        entries = (e if is_digits(e) else quoted(e) for e in s.kv_cache_dtype_skip_layers)
        parts.append(f"kv-cache-dtype-skip-layers={','.join(entries)}")
    if s.speculative_method is not None:
        parts.append(f"speculative-method={quoted(s.speculative_method)[1:-1]}")
    if s.eagle_aux_hidden_state_layer_ids:
        ids = ",".join(str(i) for i in s.eagle_aux_hidden_state_layer_ids)
        parts.append(f"eagle-aux-hidden-state-layer-ids={ids}")
    return "".join(f" {p}" for p in parts)


def _pair_name(pair: PairResult) -> str:
    return f"prefill TP {pair.prefill_tp} → decode TP {pair.decode_tp}"


def _in_words(pair: PairResult, fail_on: str) -> str:
    if pair.level is None:
        return "works"
    if fails(pair.level, fail_on):
        return "fails"
    return "passes with a warning" if pair.level == "warning" else "passes (info only)"


#: most pairs ``check``'s answer names one by one (the pair table below has them all).
ANSWER_PAIRS = 6
#: most failing pairs ``matrix``'s answer names: the grid right below shows every cell,
#: so at 80×24 the count, the fix and the grid come first.
MATRIX_ANSWER_PAIRS = 1


def answer_lines(report: CheckReport, fail_on: str = "error", grid: bool = False) -> list[str]:
    """The first lines of ``check``: whether each pair works, in words, and the one
    command-line change that fixes it (proven on every GPU class), before any detail.

    With ``grid`` (``matrix``) only failing pairs are named, at most
    :data:`MATRIX_ANSWER_PAIRS`, since the grid below shows every cell. Any "… and N more"
    line counts only failing pairs not named."""
    code = report.exit_code(fail_on)
    failing = [p for p in report.pairs if fails(p.level, fail_on)]
    total = len(report.pairs)
    if code:
        head = f"FAIL (exit 1, --fail-on {fail_on}): "
        head += (
            f"{len(failing)} of {total} pair(s) fail"
            if failing
            else "a --block-size is raised by vLLM"
        )
    elif "warning" in report.levels():  # e.g. a --block-size vLLM raises on some GPU class
        head = f"PASS with a warning (exit 0, --fail-on {fail_on}): every pair works"
        raised = report.recommendation.raised
        if raised or any(rank.block_size_overridden for rank in report.ranks.values()):
            head += ", but vLLM raises your --block-size"
        head += " (--fail-on warning fails it)"
    else:
        head = f"PASS (exit 0, --fail-on {fail_on}): every pair works"
    lines = [head]
    if grid:
        shown = failing[:MATRIX_ANSWER_PAIRS]
    else:
        failing_ids = {id(p) for p in failing}  # not list membership: 64 × 64 TPs is 4,096 pairs
        shown = sorted(report.pairs, key=lambda p: id(p) not in failing_ids)[:ANSWER_PAIRS]
    for pair in shown:
        lines.append(f"  {_pair_name(pair)}: {_in_words(pair, fail_on)} ({pair.verdict}): "
                     f"{pair.reason}")  # fmt: skip
    hidden = sum(1 for pair in failing if all(pair is not s for s in shown))
    if hidden:
        lines.append(f"  … and {hidden} more failing pair(s) below")
    rec = report.recommendation
    for line in rec.raised:
        lines.append(f"Your --block-size: {line}")
    if rec.block_size is not None:
        at = f" at TP {', '.join(map(str, rec.only_tps))}" if rec.only_tps else ""
        lines.append(
            f"Fix: {rec.change} on every prefill and decode pool{at} (holds on "
            f"{', '.join(rec.proven_on)})" + "".join(f"; {b}" for b in rec.blockers)
        )
    elif rec.blockers:
        lines.append("Fix: no --block-size can fix this; " + "; ".join(rec.blockers))
    elif code or rec.needed:
        lines.append(f"Fix: {rec.text}")
    else:
        lines.append(
            f"Fix: none needed ({rec.text})"
            if rec.text != "no change needed"
            else "Fix: none needed"
        )
    if report.tp_stable_pairs is not None:
        stable = report.tp_stable_pairs
        if len(stable) <= ANSWER_PAIRS:
            verdicts = ", ".join(
                f"TP {p.prefill_tp} → TP {p.decode_tp} {p.verdict}" for p in stable
            )
        else:
            counts: dict[str, int] = {}
            for pair in stable:
                counts[pair.verdict] = counts.get(pair.verdict, 0) + 1
            verdicts = ", ".join(f"{n} {v}" for v, n in counts.items()) + f" of {len(stable)}"
        lines.append(f"What-if {TP_STABLE_LABEL}, in no vLLM release, not gated: {verdicts}")
    return lines
