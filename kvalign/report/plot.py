"""SVG heatmaps of the prefill × decode grid (``kvalign survey --plot FILE.svg``).

One row of panels per model that has pairs, one panel per alignment (vLLM, TP-stable):
cells coloured by verdict, with the logical block sizes ``prefill→decode`` (tokens) and the
verdict written in them. Needs the optional extra ``plot`` (matplotlib; ``pip install
'.[plot]'`` from a checkout); text stays text (``svg.fonttype = none``) and the output is
byte-for-byte repeatable for a given matplotlib (fixed ``svg.hashsalt``, no date in the metadata).
"""

from __future__ import annotations

import io
from typing import Any

from kvalign.errors import MissingDependency
from kvalign.report.cells import VERDICT_LABELS
from kvalign.survey import ALIGNMENTS, AlignmentStats, ModelSurvey, Survey
from kvalign.versions import resolve

#: fill colour per verdict, and whether the cell text should be white.
VERDICT_COLOURS: dict[str, tuple[str, bool]] = {
    "ok": ("#7cc47f", False),
    "drift": ("#ffe082", False),
    "ratio": ("#ffb74d", False),
    "split": ("#e57373", False),
    "incompatible": ("#b71c1c", True),
    "invalid": ("#bdbdbd", False),
    "nothing-to-align": ("#eeeeee", False),
}

LEGEND = (
    ("ok", "OK: same block size"),
    ("drift", "DRIFT: prefix-cache drift only"),
    ("ratio", "RATIO: block_size_ratio ≠ 1"),
    ("split", "SPLIT: not divisible, gcd split"),
    ("incompatible", "FAIL: NIXL cannot pair"),
)

_INSTALL_HINT = (
    "--plot needs matplotlib, which is not installed: pip install '.[plot]' in a kvalign checkout"
)

CELL_INCHES = 0.95


def _import_matplotlib() -> tuple[Any, Any, Any]:
    try:
        import matplotlib
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch, Rectangle
    except ImportError:
        raise MissingDependency(_INSTALL_HINT) from None
    return matplotlib, Figure, (Patch, Rectangle)


def _panel(ax: Any, rectangle: Any, row: ModelSurvey, stats: AlignmentStats, release: str) -> None:
    """One grid; ``release`` names the profile of the ``vllm`` alignment (e.g. ``"0.33"``)."""
    tps = list(row.valid_tps)
    index = {tp: i for i, tp in enumerate(tps)}
    for pair in stats.grid:
        y, x = index[pair.prefill_tp], index[pair.decode_tp]
        colour, white = VERDICT_COLOURS[pair.verdict]
        ax.add_patch(rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white", linewidth=2))
        text = f"{pair.prefill_block_size}→{pair.decode_block_size}\n{VERDICT_LABELS[pair.verdict]}"
        ax.text(
            x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=8,
            color="white" if white else "black",
        )  # fmt: skip
    n = len(tps)
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_xticks([i + 0.5 for i in range(n)], [str(tp) for tp in tps])
    padding = dict(stats.padding_pct)
    ax.set_yticks(
        [i + 0.5 for i in range(n)],
        [f"{tp}\npad {padding[tp]:.1f}%" if tp in padding else str(tp) for tp in tps],
    )
    ax.tick_params(length=0)
    ax.set_xlabel("decode TP")
    ax.set_ylabel("prefill TP (Mamba page padding)")
    for spine in ax.spines.values():
        spine.set_visible(False)
    label = f"vLLM {release}" if stats.alignment == "vllm" else "TP-stable (PR 45575)"
    ax.set_title(f"{row.model_id}\n{label} alignment", fontsize=9)


def survey_svg(result: Survey) -> str:
    """SVG text of the survey's prefill × decode grids (block sizes in tokens).

    Raises:
        MissingDependency: matplotlib (the ``plot`` extra) is not installed.
        InvalidSettings: no model in the survey has a pair to draw.
    """
    from kvalign.errors import InvalidSettings

    matplotlib, figure_cls, (patch, rectangle) = _import_matplotlib()
    # the profile the survey ran under (--vllm-version, else the newest): not a literal
    release = resolve(result.settings.vllm_version).profile.name
    rows = [m for m in result.models if m.stats and m.stats[0].grid]
    if not rows:
        raise InvalidSettings("--plot: no model in the survey has prefill/decode pairs to draw")
    n = max(len(m.valid_tps) for m in rows)
    side = n * CELL_INCHES + 1.4
    rc = {
        "svg.fonttype": "none",
        "svg.hashsalt": "kvalign",
        "font.family": "DejaVu Sans",
        "font.size": 9,
    }
    with matplotlib.rc_context(rc):
        fig = figure_cls(figsize=(2 * side, len(rows) * (side + 0.3) + 0.6))
        axes = fig.subplots(len(rows), len(ALIGNMENTS), squeeze=False)
        for r, row in enumerate(rows):
            for c, alignment in enumerate(ALIGNMENTS):
                stats = row.by_alignment(alignment)
                assert stats is not None
                _panel(axes[r][c], rectangle, row, stats, release)
        handles = [patch(facecolor=VERDICT_COLOURS[v][0], label=text) for v, text in LEGEND]
        fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False, fontsize=8)
        fig.tight_layout(rect=(0, 0.6 / (len(rows) * (side + 0.3) + 0.6), 1, 1))
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": "kvalign"})
    return buffer.getvalue()
