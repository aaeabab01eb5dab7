"""Survey: how often prefill/decode TP pairs disagree, under vLLM's and the TP-stable alignment.

Pure aggregation, no I/O. For each model it runs :func:`kvalign.pd.analyze` once per
alignment (``vllm``: vLLM 0.33 ``Platform._align_hybrid_block_size`` per rank;
``tp-stable``: the vLLM PR 45575 proposal) over every ordered prefill TP × decode
TP pair of the *valid* TP sizes (same-TP pairs included), and counts:

* pairs whose logical block sizes differ (prefix-cache granularity drift);
* pairs whose kernel (transfer) block sizes differ, i.e. ``block_size_ratio != 1``
  (divisible or not: NIXL needs heterogeneous-block handling either way);
* pairs whose kernel blocks do not divide (``decode % prefill != 0``; NIXL's gcd split
  path or a hard failure);

plus the Mamba page padding (percent, per valid TP) each alignment pays, and the common
``--block-size`` fix ``check`` recommends (docs/policy.md) with its worst padding. These counts
are nested: not divisible ⊆ ratio ≠ 1 ⊆ block sizes differ (the kernel block is a function
of the logical block).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from kvalign.errors import InvalidSettings, KvalignError, NotModelled, UnsupportedModel
from kvalign.fixes import Fix, FixPool, prove_fix
from kvalign.geometry import ModelGeometry
from kvalign.pd import CheckReport, PairResult, analyze
from kvalign.settings import Settings

#: the two alignments compared, in output order.
ALIGNMENTS: tuple[Literal["vllm", "tp-stable"], ...] = ("vllm", "tp-stable")

#: verdict names counted per alignment (pairs over valid TPs never get ``invalid``).
COUNTED_VERDICTS = ("ok", "drift", "ratio", "split", "incompatible")

ModelKind = Literal["hybrid", "attention-free", "attention"]


@dataclass(frozen=True)
class AlignmentStats:
    """Counts for one model (or the summary) under one alignment.

    Attributes:
        alignment: ``vllm`` or ``tp-stable``.
        pairs: ordered prefill × decode pairs counted (valid TPs only, same-TP included).
        block_size_differs: pairs with different logical block sizes (tokens).
        ratio_not_one: pairs with different kernel block sizes (``block_size_ratio != 1``
            or not divisible).
        not_divisible: pairs whose decode kernel block is not a multiple of the prefill one.
        verdicts: ``(verdict, count)`` for every name in :data:`COUNTED_VERDICTS`.
        padding_pct: Mamba page padding % per valid TP, ``(tp, pct)`` sorted by TP; for the
            summary, every model's values pooled (TP repeated across models).
        grid: the analysed pairs, prefill-major (empty for the summary).
    """

    alignment: str
    pairs: int
    block_size_differs: int
    ratio_not_one: int
    not_divisible: int
    verdicts: tuple[tuple[str, int], ...]
    padding_pct: tuple[tuple[int, float], ...]
    grid: tuple[PairResult, ...] = ()

    @property
    def padding_max_pct(self) -> float | None:
        """Largest Mamba padding % over the TPs, ``None`` when there is none."""
        values = [pct for _, pct in self.padding_pct]
        return max(values) if values else None

    @property
    def padding_median_pct(self) -> float | None:
        """Median Mamba padding % over the TPs (``statistics.median``), or ``None``."""
        values = [pct for _, pct in self.padding_pct]
        return statistics.median(values) if values else None


@dataclass(frozen=True)
class ModelSurvey:
    """One model's survey row.

    Attributes:
        model_id, model_type: from the geometry.
        family: state family (``mamba2``, ``gdn``, ...) or ``None``.
        kind: ``hybrid``, ``attention-free`` or ``attention`` (no state layers).
        valid_tps: requested TP sizes vLLM accepts for this model.
        invalid_tps: ``(tp, reason)`` for requested TP sizes vLLM rejects.
        stats: per alignment (:data:`ALIGNMENTS` order); empty when nothing was counted.
        fix_block_size: smallest common ``--block-size`` that makes every valid TP agree
            (``check``'s recommendation), tokens; ``None`` when none applies.
        fix_padding_pct: Mamba padding % per valid TP at ``fix_block_size``.
        note: why the row has no counts, or ``""``.
        fix_needed: whether some valid pair is at warning level or above under vLLM's
            alignment (the rule ``check`` uses before it prints a fix); when ``False`` the
            common block size is shown as "none needed", as ``check`` says.
    """

    model_id: str
    model_type: str
    family: str | None
    kind: ModelKind
    valid_tps: tuple[int, ...]
    invalid_tps: tuple[tuple[int, str], ...]
    stats: tuple[AlignmentStats, ...]
    fix_block_size: int | None
    fix_padding_pct: tuple[tuple[int, float], ...]
    note: str = ""
    fix_needed: bool = False

    def by_alignment(self, alignment: str) -> AlignmentStats | None:
        """The stats for ``alignment``, or ``None`` when the row has no counts."""
        return next((s for s in self.stats if s.alignment == alignment), None)

    @property
    def fix_padding_max_pct(self) -> float | None:
        """Worst Mamba padding % the common ``--block-size`` fix costs, or ``None``."""
        return max((pct for _, pct in self.fix_padding_pct), default=None)


@dataclass(frozen=True)
class Survey:
    """The whole survey: settings, requested TPs, one row per model and the summary.

    Attributes:
        settings: the settings shared by every model (``alignment`` is ignored: both run).
        tps: requested TP sizes, in the order given.
        models: one row per model, in the order given.
        summary: per alignment, the sums over every model's counts, and the padding
            values of every model pooled (so the summary median is over (model, TP)).
    """

    settings: Settings
    tps: tuple[int, ...]
    models: tuple[ModelSurvey, ...]
    summary: tuple[AlignmentStats, ...]

    def summary_for(self, alignment: str) -> AlignmentStats:
        """Summary stats for ``alignment``."""
        return next(s for s in self.summary if s.alignment == alignment)

    @property
    def models_with_pairs(self) -> int:
        """How many models had at least one pair counted."""
        return sum(1 for m in self.models if m.stats and m.stats[0].pairs)


def _kind(geometry: ModelGeometry) -> ModelKind:
    if geometry.is_hybrid:
        return "hybrid"
    return "attention-free" if geometry.attention_free else "attention"


def _stats(report: CheckReport, valid: set[int]) -> AlignmentStats:
    alignment = report.settings.alignment
    pairs = report.tp_stable_pairs if alignment == "tp-stable" else report.pairs
    assert pairs is not None  # analyze() adds the what-if pairs for tp-stable
    grid = tuple(p for p in pairs if p.prefill_tp in valid and p.decode_tp in valid)
    differs = sum(1 for p in grid if p.prefix_cache_drift)
    ratio_not_one = sum(
        1 for p in grid if p.prefill_kernel_block_size != p.decode_kernel_block_size
    )
    not_divisible = sum(1 for p in grid if p.divisible is False)
    verdicts = tuple((v, sum(1 for p in grid if p.verdict == v)) for v in COUNTED_VERDICTS)
    padding: list[tuple[int, float]] = []
    for tp in sorted(valid):
        rank = report.ranks[tp]
        pct = rank.tp_stable_padding_pct if alignment == "tp-stable" else rank.mamba_padding_pct
        if pct is not None:
            padding.append((tp, pct))
    return AlignmentStats(
        alignment, len(grid), differs, ratio_not_one, not_divisible, verdicts,
        tuple(padding), grid,
    )  # fmt: skip


def survey_model(geometry: ModelGeometry, settings: Settings, tps: Sequence[int]) -> ModelSurvey:
    """Survey one model over every ordered pair of its valid TP sizes in ``tps``.

    Args:
        geometry: the model.
        settings: shared settings; ``settings.alignment`` is replaced by each of
            :data:`ALIGNMENTS` in turn.
        tps: requested TP sizes (positive ints).

    Raises:
        InvalidSettings, NotModelled: settings this model cannot take (see
            :func:`kvalign.pd.analyze`).
    """
    tp_list = list(dict.fromkeys(tps))
    reports = [
        analyze(geometry, replace(settings, alignment=a), tp_list, tp_list) for a in ALIGNMENTS
    ]
    ranks = reports[0].ranks
    valid = {tp for tp in tp_list if ranks[tp].usable}
    invalid = tuple((tp, ranks[tp].problem) for tp in tp_list if not ranks[tp].usable)
    kind = _kind(geometry)
    family = geometry.state.family if geometry.state else None
    valid_tps = tuple(tp for tp in tp_list if tp in valid)
    if kind == "attention-free":
        return ModelSurvey(
            geometry.model_id, geometry.model_type, family, kind, valid_tps, invalid, (),
            None, (), "attention-free: vLLM does no block alignment, no pairs to count",
        )  # fmt: skip
    # the smallest common --block-size every valid TP keeps on every GPU class, needed or
    # not (kvalign.fixes: the proof check's recommendation uses)
    usable = sorted(valid)
    engine = reports[0].engine  # resolved under ALIGNMENTS[0], vLLM's own rule
    fix_pools = [FixPool(geometry, engine, tp, str(tp)) for tp in usable]
    every_pair = [(i, j) for i in range(len(usable)) for j in range(len(usable))]
    fix = prove_fix(fix_pools, every_pair, reports[0].engine.profile) if usable else Fix(None)
    note = "" if valid else "no valid TP size among those requested"
    vllm_grid = reports[0].pairs
    fix_needed = any(
        p.level in ("warning", "error")
        for p in vllm_grid
        if p.prefill_tp in valid and p.decode_tp in valid
    )
    return ModelSurvey(
        model_id=geometry.model_id,
        model_type=geometry.model_type,
        family=family,
        kind=kind,
        valid_tps=valid_tps,
        invalid_tps=invalid,
        stats=tuple(_stats(report, valid) for report in reports),
        fix_block_size=fix.block_size,
        fix_padding_pct=tuple(sorted((int(tp), pct) for tp, pct in fix.padding_pct)),
        note=note,
        fix_needed=fix_needed,
    )


def _total(alignment: str, rows: Sequence[ModelSurvey]) -> AlignmentStats:
    parts = [s for row in rows if (s := row.by_alignment(alignment)) is not None]
    verdicts = tuple((v, sum(dict(s.verdicts)[v] for s in parts)) for v in COUNTED_VERDICTS)
    return AlignmentStats(
        alignment=alignment,
        pairs=sum(s.pairs for s in parts),
        block_size_differs=sum(s.block_size_differs for s in parts),
        ratio_not_one=sum(s.ratio_not_one for s in parts),
        not_divisible=sum(s.not_divisible for s in parts),
        verdicts=verdicts,
        padding_pct=tuple(item for s in parts for item in s.padding_pct),
    )


def survey(geometries: Sequence[ModelGeometry], settings: Settings, tps: Sequence[int]) -> Survey:
    """Survey several models with the same settings and TP sizes.

    A model whose settings vLLM would reject (e.g. a KDA model with a float16 recurrent
    state) or that kvalign does not model (packed KV-cache dtypes) is kept as a row with
    the reason in ``note`` and no counts.

    Raises:
        InvalidSettings: ``tps`` is empty or has a non-positive size, or ``geometries`` is
            empty.
        KvalignError: the first model's error when *every* model failed the same way
            (the settings themselves are bad).
    """
    if not geometries:
        raise InvalidSettings("survey: no model to survey")
    if not tps or any(tp < 1 for tp in tps):
        raise InvalidSettings("--tp: give one or more positive TP sizes, e.g. 1,2,4,8")
    rows: list[ModelSurvey] = []
    errors: list[KvalignError] = []
    for geometry in geometries:
        try:
            rows.append(survey_model(geometry, settings, tps))
        except (InvalidSettings, NotModelled, UnsupportedModel) as exc:
            errors.append(exc)
            rows.append(
                ModelSurvey(
                    geometry.model_id,
                    geometry.model_type,
                    geometry.state.family if geometry.state else None,
                    _kind(geometry),
                    (),
                    (),
                    (),
                    None,
                    (),
                    f"skipped: {exc}",
                )
            )
    if len(errors) == len(rows):
        raise errors[0]
    return Survey(
        settings=settings,
        tps=tuple(dict.fromkeys(tps)),
        models=tuple(rows),
        summary=tuple(_total(a, rows) for a in ALIGNMENTS),
    )
