"""Formatters for ``kvalign survey``: table (rich), Markdown, CSV and JSON.

All four read the same :class:`~kvalign.survey.Survey` and share one list of columns.
"""

from __future__ import annotations

import csv
import io
import json
import textwrap
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kvalign import __version__
from kvalign.report.cells import prefix_caching_text
from kvalign.survey import ALIGNMENTS, AlignmentStats, ModelSurvey, Survey
from kvalign.versions import resolve

SURVEY_SCHEMA_VERSION = 1

#: (column header, short header for the terminal table, meaning) in output order.
SURVEY_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Model", "Model", "bundled hub id or the MODEL given"),
    ("Valid TPs", "TPs", "requested TP sizes vLLM accepts for the model"),
    ("Pairs", "Pairs", "ordered prefill TP × decode TP pairs over the valid TPs (same TP too)"),
    (
        "vLLM: blocks differ",
        "vLLM\ndiffer",
        "pairs whose logical block sizes differ (prefix-cache drift)",
    ),
    (
        "vLLM: ratio≠1",
        "vLLM\nratio≠1",
        "pairs whose kernel blocks differ (block_size_ratio != 1, divisible or not)",
    ),
    (
        "vLLM: not divisible",
        "vLLM\nnot div",
        "pairs whose decode kernel block is not a multiple of the prefill one",
    ),
    (
        "vLLM: pad max %",
        "vLLM\npad max%",
        "largest Mamba page padding over the valid TPs, vLLM's per-rank alignment",
    ),
    (
        "TP-stable: blocks differ",
        "stable\ndiffer",
        "as above, under the TP-stable alignment (vLLM PR 45575)",
    ),
    ("TP-stable: ratio≠1", "stable\nratio≠1", "as above, TP-stable alignment"),
    ("TP-stable: not divisible", "stable\nnot div", "as above, TP-stable alignment"),
    (
        "TP-stable: pad max %",
        "stable\npad max%",
        "largest Mamba page padding the TP-stable alignment pays",
    ),
    ("TP-stable: pad median %", "stable\npad med%", "median of that padding over the valid TPs"),
    (
        "Fix --block-size",
        "fix\n--block-size",
        "smallest common --block-size that makes every valid TP agree (check's recommendation; "
        "none when every pair already works)",
    ),
    ("Fix: pad max %", "fix\npad max%", "largest Mamba page padding that fix costs"),
    ("Note", "Note", "why a row has no counts; TP sizes vLLM rejects"),
)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _count(stats: AlignmentStats | None, value: int | None) -> str:
    return "–" if stats is None or value is None else str(value)


def _note(row: ModelSurvey) -> str:
    parts = [row.note] if row.note else []
    parts += [f"TP {tp} invalid: {reason}" for tp, reason in row.invalid_tps]
    return "; ".join(parts)


def _alignment_cells(stats: AlignmentStats | None, median: bool) -> list[str]:
    cells = [
        _count(stats, stats.block_size_differs if stats else None),
        _count(stats, stats.ratio_not_one if stats else None),
        _count(stats, stats.not_divisible if stats else None),
        _pct(stats.padding_max_pct if stats else None),
    ]
    if median:
        cells.append(_pct(stats.padding_median_pct if stats else None))
    return cells


def _tps(values: tuple[int, ...]) -> str:
    return ",".join(map(str, values)) if values else "–"


def model_cells(row: ModelSurvey) -> list[str]:
    """One model's cells, in :data:`SURVEY_COLUMNS` order."""
    vllm, stable = row.by_alignment("vllm"), row.by_alignment("tp-stable")
    return [
        row.model_id,
        _tps(row.valid_tps),
        _count(vllm, vllm.pairs if vllm else None),
        *_alignment_cells(vllm, median=False),
        *_alignment_cells(stable, median=True),
        _fix_cell(row),
        _pct(row.fix_padding_max_pct) if row.fix_needed else "–",
        _note(row),
    ]


def _fix_cell(row: ModelSurvey) -> str:
    """The fix ``--block-size`` cell: "none" when no pair needs one (``check`` then says
    "Fix: none needed"), "–" when no block size applies."""
    if row.fix_block_size is None:
        return "–"
    return str(row.fix_block_size) if row.fix_needed else "none"


def _fix_max(result: Survey) -> float | None:
    values = [
        m.fix_padding_max_pct
        for m in result.models
        if m.fix_needed and m.fix_padding_max_pct is not None
    ]
    return max(values) if values else None


def summary_cells(result: Survey) -> list[str]:
    """The all-models row, in :data:`SURVEY_COLUMNS` order."""
    vllm, stable = result.summary_for("vllm"), result.summary_for("tp-stable")
    return [
        f"All models ({len(result.models)})",
        # the TP sizes some model accepts (in request order), not merely the requested ones
        _tps(tuple(tp for tp in result.tps if any(tp in m.valid_tps for m in result.models))),
        str(vllm.pairs),
        *_alignment_cells(vllm, median=False),
        *_alignment_cells(stable, median=True),
        "–",
        _pct(_fix_max(result)),
        f"{result.models_with_pairs} of {len(result.models)} models have pairs to count",
    ]


def settings_line(result: Survey) -> str:
    """One line naming the settings every model was surveyed with."""
    s = result.settings
    block = s.block_size if s.block_size is not None else "unset"
    return (
        f"Settings: dtype={s.dtype} kv-cache-dtype={s.kv_cache_dtype} block-size={block} "
        f"prefix-caching={prefix_caching_text(s.enable_prefix_caching, None)} "
        f"mamba-cache-dtype={s.mamba_cache_dtype} mamba-ssm-cache-dtype={s.mamba_ssm_cache_dtype} "
        f"spec-tokens={s.num_speculative_tokens} backend={s.attention_backend} "
        f"gpu={s.gpu or 'unspecified CUDA'}; {resolve(s.vllm_version).note}; "
        f"TP sizes {_tps(result.tps)}"
    )


def _table_width(rows: list[list[str]]) -> int:
    """Characters the full table needs (rich's heavy-head box: one border per column plus
    one, one space of padding each side); cells are never cut, so below this width the
    stacked layout is used."""
    columns = SURVEY_COLUMNS[:-1]
    total = 1
    for index, (_, short, _) in enumerate(columns):
        longest = max([len(line) for line in short.split("\n")] + [len(r[index]) for r in rows])
        total += longest + 3
    return total


def _pct_cell(cell: str) -> str:
    return cell if cell == "–" else f"{cell}%"


#: indent of the values in the stacked layout ("  TP-stable " = 12 characters).
_LABEL_WIDTH = 12


def _stacked_block(cells: list[str], width: int, style: str = "bold") -> Text:
    """One model (or the all-models row) as a name line and up to five ``label value``
    lines; values wrap at ``width`` under themselves (hanging indent), nothing is cut."""
    (model, tps, pairs, v_differ, v_ratio, v_notdiv, v_pad,
     s_differ, s_ratio, s_notdiv, s_pad, s_med, fix, fix_pad, note) = cells  # fmt: skip
    lines = [("TPs", f"{tps}, pairs {pairs}")]
    if pairs != "–":
        lines.append(("vLLM", f"differ {v_differ}, ratio≠1 {v_ratio}, not div {v_notdiv}, "
                              f"pad max {_pct_cell(v_pad)}"))  # fmt: skip
        lines.append(("TP-stable", f"differ {s_differ}, ratio≠1 {s_ratio}, not div "
                                   f"{s_notdiv}, pad max {_pct_cell(s_pad)}, "
                                   f"med {_pct_cell(s_med)}"))  # fmt: skip
        if fix == "none":
            lines.append(("fix", "none needed"))
        else:
            fix_text = "" if fix == "–" else f"--block-size {fix}, "
            lines.append(("fix", f"{fix_text}pad max {_pct_cell(fix_pad)}"))
    if note:
        lines.append(("note", note))
    text = Text(model, style=style)
    for label, value in lines:
        head = f"  {label}".ljust(_LABEL_WIDTH)
        wrapped = textwrap.wrap(
            value, max(20, width - _LABEL_WIDTH), break_long_words=False, break_on_hyphens=False
        )
        text.append("\n" + head + ("\n" + " " * _LABEL_WIDTH).join(wrapped))
    return text


def _stacked(result: Survey, needed: int, width: int) -> list[RenderableType]:
    """The survey as one block per model, then the all-models block and the legend."""
    title = (
        "P/D pair survey: vLLM alignment vs TP-stable alignment (one block per model: "
        f"the table needs {needed} columns)"
    )
    meaning: dict[str, str] = {}
    for _, short, text in SURVEY_COLUMNS:
        meaning.setdefault(short.split("\n")[-1], text)
    legend = [
        "vLLM: vLLM's per-rank alignment; TP-stable: the TP-stable proposal (vLLM PR 45575, "
        "in no release); fix: smallest common --block-size that makes every valid TP agree "
        "(check's recommendation; none when every pair already works)",
        f"differ: {meaning['differ']}; ratio≠1: {meaning['ratio≠1']}; not div: "
        f"{meaning['not div']}",
        "pad max / med: largest / median Mamba page padding over the valid TPs",
    ]
    return [
        Text(_fill(title, width), style="italic"),
        *(_stacked_block(model_cells(row), width) for row in result.models),
        _stacked_block(summary_cells(result), width),
        *(Text(_fill(line, width), style="dim") for line in legend),
    ]


def _fill(text: str, width: int) -> str:
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def survey_table(result: Survey, width: int | None = None) -> RenderableType:
    """Rich table: one row per model, the all-models row, notes and a legend.

    ``width``: the console width (characters). When the table's cells do not fit in it
    (e.g. at 80 columns), each model is printed as a block of lines instead
    (:func:`_stacked`), so no number is cut; ``None`` = always the table.
    """
    rows = [model_cells(row) for row in result.models] + [summary_cells(result)]
    needed = _table_width(rows)
    if width is not None and needed > width:
        return Group(Text(_fill(settings_line(result), width)), *_stacked(result, needed, width))
    table = Table(
        title="P/D pair survey: vLLM alignment vs TP-stable alignment", title_justify="left"
    )
    columns = SURVEY_COLUMNS[:-1]  # notes go below the table
    for i, (_, short, _) in enumerate(columns):
        table.add_column(short, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for row in result.models:
        table.add_row(*model_cells(row)[:-1])
    table.add_section()
    table.add_row(*summary_cells(result)[:-1], style="bold")
    notes = [Text(f"{row.model_id}: {_note(row)}") for row in result.models if _note(row)]
    notes.append(Text(summary_cells(result)[-1]))
    legend = [
        Text(f"{short.replace(chr(10), ' ')}: {meaning}", style="dim")
        for _, short, meaning in columns[1:]
    ]
    return Group(Text(settings_line(result)), table, *notes, *legend)


def _escape(cell: str) -> str:
    """One Markdown cell: controls escaped, one line, ``|`` escaped."""
    from kvalign.sanitize import markdown_cell

    return markdown_cell(cell)


def _csv_text(text: str) -> str:
    """A CSV field from input (a model id or type): controls, line breaks and bidi
    overrides as escapes (a CSV viewer or terminal shows what the name holds)."""
    from kvalign.sanitize import clean

    return clean(text, newlines=False)


def survey_markdown(result: Survey) -> str:
    """Markdown: settings line, one table (models then a bold all-models row), legend."""
    headers = [name for name, _, _ in SURVEY_COLUMNS]
    lines = [settings_line(result), ""]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("|---|---|" + "---:|" * (len(headers) - 3) + "---|")
    for row in result.models:
        lines.append("| " + " | ".join(_escape(c) for c in model_cells(row)) + " |")
    total = [f"**{c}**" if c else c for c in summary_cells(result)]
    lines.append("| " + " | ".join(_escape(c) for c in total) + " |")
    lines.append("")
    lines += [f"- **{name}**: {meaning}" for name, _, meaning in SURVEY_COLUMNS[1:-1]]
    return "\n".join(lines) + "\n"


CSV_FIELDS = (
    "model", "model_type", "family", "kind", "valid_tps", "invalid_tps", "pairs",
    *(f"{a.replace('-', '_')}_{f}" for a in ALIGNMENTS for f in (
        "block_size_differs", "ratio_not_1", "not_divisible", "pad_max_pct", "pad_median_pct",
    )),
    "fix_block_size", "fix_pad_max_pct", "note",
)  # fmt: skip


def _csv_pct(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _csv_stats(stats: AlignmentStats | None) -> list[str]:
    if stats is None:
        return ["", "", "", "", ""]
    return [
        str(stats.block_size_differs),
        str(stats.ratio_not_one),
        str(stats.not_divisible),
        _csv_pct(stats.padding_max_pct),
        _csv_pct(stats.padding_median_pct),
    ]


def survey_csv(result: Survey) -> str:
    """CSV (RFC 4180, ``\\n`` line ends): header, one row per model, then a row ``ALL``.

    TP lists are space-separated; percentages have four decimals; empty = not applicable.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row in result.models:
        first = row.stats[0] if row.stats else None
        writer.writerow([
            _csv_text(row.model_id), _csv_text(row.model_type), row.family or "", row.kind,
            " ".join(map(str, row.valid_tps)),
            " ".join(str(tp) for tp, _ in row.invalid_tps),
            "" if first is None else str(first.pairs),
            *(c for a in ALIGNMENTS for c in _csv_stats(row.by_alignment(a))),
            "" if row.fix_block_size is None or not row.fix_needed else str(row.fix_block_size),
            _csv_pct(row.fix_padding_max_pct if row.fix_needed else None), _csv_text(_note(row)),
        ])  # fmt: skip
    writer.writerow([
        "ALL", "", "", "", " ".join(map(str, result.tps)), "",
        str(result.summary[0].pairs),
        *(c for a in ALIGNMENTS for c in _csv_stats(result.summary_for(a))),
        "", "", f"{result.models_with_pairs} of {len(result.models)} models have pairs to count",
    ])  # fmt: skip
    return buffer.getvalue()


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _stats_dict(stats: AlignmentStats, per_tp: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "pairs": stats.pairs,
        "block_size_differs": stats.block_size_differs,
        "block_size_ratio_not_1": stats.ratio_not_one,
        "not_divisible": stats.not_divisible,
        "verdicts": dict(stats.verdicts),
        "padding_max_pct": _round(stats.padding_max_pct),
        "padding_median_pct": _round(stats.padding_median_pct),
    }
    if per_tp:
        out["padding_pct"] = {str(tp): _round(pct) for tp, pct in stats.padding_pct}
    return out


def survey_to_dict(result: Survey) -> dict[str, Any]:
    """JSON-ready dict (``schema_version`` 1, documented in docs/json.md)."""
    settings = {k: v for k, v in vars(result.settings).items() if k != "alignment"}
    models = [
        {
            "id": row.model_id,
            "model_type": row.model_type,
            "family": row.family,
            "kind": row.kind,
            "valid_tps": list(row.valid_tps),
            "invalid_tps": [{"tp": tp, "reason": reason} for tp, reason in row.invalid_tps],
            "alignments": {s.alignment: _stats_dict(s, per_tp=True) for s in row.stats},
            "fix": {
                "block_size": row.fix_block_size,
                "needed": row.fix_needed,
                "padding_pct": {str(tp): _round(p) for tp, p in row.fix_padding_pct},
                "padding_max_pct": _round(row.fix_padding_max_pct),
            },
            "note": row.note or None,
        }
        for row in result.models
    ]
    return {
        "schema_version": SURVEY_SCHEMA_VERSION,
        "kvalign_version": __version__,
        "settings": settings,
        "tps": list(result.tps),
        "models": models,
        "summary": {
            "models": len(result.models),
            "models_with_pairs": result.models_with_pairs,
            "alignments": {s.alignment: _stats_dict(s, per_tp=False) for s in result.summary},
        },
    }


def survey_json(result: Survey) -> str:
    """``result`` as indented JSON text."""
    return json.dumps(survey_to_dict(result), indent=2)
