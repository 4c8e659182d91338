"""How well the 80% bands hold on what is new: nested coverage per fold type, and the novelty scales.

benchmarks/cross_validate.py holds out, in turn, one source (publication), one part (accelerator) and one engine
version (serving; the framework for training and memory rows) and predicts the held-out rows with every tuned term
refitted without them. Each held-out row gets the band the planner would show it, built as the planner builds it
(estimate/uncertainty: the source-weighted 10th-90th percentiles of the error ratios of its class) from the
other rows only: none of its own source, and, in the part and engine-version folds, none of its part or engine
version either ("nested"). The share of rows inside is the band's coverage on a new source, part or engine version.

Where that coverage falls short of 80% the band must widen with what is new about a figure. The band is widened
at both ends by one factor f >= 1 per kind of estimate and kind of novelty: [q10 / f, q90 x f] in ratio terms. Each
row needs the least f that puts it inside (1 when it already is); f of a fold type is the 80th percentile of those
over the fold's held-out rows (one number per kind and fold type learned from all of its rows, never per row), and
1 where the plain band already holds 80%. A multiplicative margin rather than a scale of the band's width: a class
of one source can have a band a few percent wide, which no scale widens enough without blowing up the others.
The coverage reported with the margin is itself held out: each source's rows are scored with the factor learned
from the other sources' rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from gpuplan.estimate.uncertainty import MIN_ROWS, EstimateClass, source_quantiles

__all__ = ["FOLD_KEYS", "TARGET", "fold_summary", "min_scale", "nested_band", "novelty_scales", "scaled_band"]

TARGET = 0.8  # an 80% band
# The row attribute each fold type holds out together (besides the source, which every fold excludes).
FOLD_KEYS = {"source": "source", "accelerator": "accelerator", "stack": "stack_key"}
_TIME = frozenset({"step_time_s", "device_hours", "time_to_train_days", "ttft_ms", "tpot_ms", "e2e_latency_s"})


def _cls(e: Mapping[str, Any]) -> EstimateClass:
    return EstimateClass(kind=e["kind"], efficiency=e["efficiency"], family=e["family"], arch=e["arch"],
                         scale=e["scale"], stack=e.get("stack", "unstated"))


def nested_band(e: Mapping[str, Any], pool_by_level: Mapping[str, Sequence[Mapping[str, Any]]],
                fold: str) -> tuple[float, float, float] | None:
    """(q10, q50, q90) of the band the planner would give `e`, from `pool_by_level` (class key -> rows) less every
    row of e's source and, for the part and engine-version folds, of e's part or engine version."""
    key = FOLD_KEYS[fold]
    found: list[Mapping[str, Any]] = []
    for level in _cls(e).levels():
        others = [o for o in pool_by_level.get(level, ()) if o["source"] != e["source"] and o.get(key) != e.get(key)]
        if others:
            found = others
            if len(others) >= MIN_ROWS:
                break
    if not found:
        return None
    q10, q50, q90 = source_quantiles([o["cv_ratio"] for o in found], [o["source"] for o in found], (0.1, 0.5, 0.9))
    return q10, q50, q90


def min_scale(ratio: float, q: tuple[float, float, float]) -> float:
    """The least factor f >= 1 that puts `ratio` inside the band [q10 / f, q90 x f]."""
    q10, _, q90 = q
    return max(1.0, q10 / ratio, ratio / q90)


def scaled_band(q: tuple[float, float, float], f: float) -> tuple[float, float]:
    """The ratio band [q10 / f, q90 x f]."""
    return q[0] / f, q[2] * f


def _scale_for(need: Sequence[float]) -> float:
    return max(1.0, float(np.quantile(np.asarray(need, dtype=float), TARGET, method="inverted_cdf"))) if need else 1.0


def _width(metric: str, lo: float, hi: float) -> float:
    """The band's width as a share of the estimate (rate: [r lo, r hi]; time: [t / hi, t / lo])."""
    return 1.0 / lo - 1.0 / hi if metric in _TIME else hi - lo


def _ape(ratio: float) -> float:
    return abs(1.0 / ratio - 1.0)


def fold_summary(entries: Iterable[Mapping[str, Any]], pool: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per fold type and kind: rows, median and p90 error, nested coverage of the plain band and of the band
    widened by the fold's novelty factor (learned without the row's own source), that factor (`scale`), and the
    median width of the widened band as a share of the estimate. `pool`: the rows the planner's classes are built
    from."""
    by_level: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for o in pool:
        for level in _cls(o).levels():
            by_level[level].append(o)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for e in entries:
        if e.get("cv_ratio") and e["fold"] in FOLD_KEYS:
            groups[(e["fold"], e["kind"])].append(e)
    out: dict[str, Any] = {}
    for (fold, kind), rows in sorted(groups.items()):
        scored = [(e, q) for e in rows if (q := nested_band(e, by_level, fold)) is not None]
        need = [min_scale(e["cv_ratio"], q) for e, q in scored]
        scale = _scale_for(need)
        inside, widths = [], []
        for source in {e["source"] for e, _ in scored}:
            s = _scale_for([n for (e, _), n in zip(scored, need, strict=True) if e["source"] != source])
            for (e, q), n in zip(scored, need, strict=True):
                if e["source"] == source:
                    inside.append(n <= s)
                    widths.append(_width(e["metric"], *scaled_band(q, s)))
        apes = [_ape(e["cv_ratio"]) for e in rows]
        out.setdefault(fold, {})[kind] = {
            "rows": len(rows), "sources": len({e["source"] for e in rows}),
            "median_ape": float(np.median(apes)), "p90_ape": float(np.percentile(apes, 90)),
            "coverage_plain": float(np.mean([n <= 1.0 for n in need])) if need else None,
            "coverage": float(np.mean(inside)) if inside else None,
            "scale": scale,
            "median_band_width": float(np.median(widths)) if widths else None,
        }
    return out


def novelty_scales(summary: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, float]]:
    """kind -> fold type -> the band's widening factor for a figure new in that way (from `fold_summary`)."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for fold, kinds in summary.items():
        for kind, s in kinds.items():
            out[kind][fold] = float(s["scale"])
    return dict(out)
