"""How sure an estimate is: 80% bands from the cross-validated errors on published runs.

benchmarks/cross_validate.py holds out each source (and each accelerator) of the ground truth,
refits the calibration terms tuned on it without those rows, and records for every row the
error ratio of the held-out prediction (`estimate/data/accuracy.json`). An estimate belongs to a
class (training, serving or memory; part validated by rows or on default terms; dense or MoE;
one node or several; throughput, campaign or latency figure); its band is the 10th to 90th
percentile of the ratios of that class: a rate r is given as [q10 x r, q90 x r], a time or cost t
as [t / q90, t / q10] (ratios are measured / predicted in rate orientation). Quantiles weigh every
source the same (`source_quantiles`): a new user's run is a new source.
A class with fewer than `MIN_ROWS` rows borrows from the next coarser class (dimensions are
dropped from the last: framework or engine stated, scale, architecture, family). A part on the default
efficiency gets at
least the band of a validated part of its class (the parts cross-validation could hold out were
measured ones).
The band then widens with what is new about the figure (`novelty_factor`): both ends by a factor learned from
the held-out folds (validate/fold_bands.py; accuracy.json `novelty_scale`): a new source always (a user's run is
one), a part without rows (leave one part out), an engine version or framework without rows (leave one engine
version out), whichever is widest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any, Literal

import numpy as np

__all__ = ["MIN_ROWS", "NOVELTY", "Band", "ClassStats", "EstimateClass", "accuracy_data", "band", "class_stats",
           "novelty_factor", "part_accuracy", "source_accuracy", "source_quantiles", "summarize"]

MIN_ROWS = 12
Orientation = Literal["rate", "time"]


@dataclass(frozen=True, slots=True)
class EstimateClass:
    """The class of an estimate whose cross-validated errors set its band."""

    kind: Literal["train", "serve", "memory"]
    efficiency: Literal["validated", "default", "measured"] = "validated"
    family: str = "throughput"
    arch: Literal["dense", "moe"] = "dense"
    scale: Literal["single", "multi"] = "single"
    stack: Literal["stated", "unstated"] = "unstated"  # the framework (training) or engine (serving) named

    def levels(self) -> list[str]:
        """From the finest to the coarsest class key (a measured part borrows the validated errors)."""
        eff = "validated" if self.efficiency == "measured" else self.efficiency
        dims = [self.kind, eff, self.family, self.arch, self.scale, self.stack]
        return ["/".join(dims[:k]) for k in range(len(dims), 1, -1)]


@dataclass(frozen=True, slots=True)
class ClassStats:
    key: str
    n: int
    q10: float
    q50: float
    q90: float
    median_ape: float
    sources: int

    def band(self, value: float, orientation: Orientation) -> tuple[float, float]:
        if orientation == "rate":
            return value * self.q10, value * self.q90
        return value / self.q90, value / self.q10


@dataclass(frozen=True, slots=True)
class Band:
    """An 80% interval for one figure and the class of rows it came from."""

    low: float
    high: float
    basis: dict[str, Any]  # class key, rows, sources, and the class it was widened to (if any)

    def as_list(self) -> list[float]:
        return [self.low, self.high]


def source_quantiles(ratios: Sequence[float], sources: Sequence[str], qs: Sequence[float]) -> list[float]:
    """Quantiles of the ratios with every source weighing the same in total (each of its rows 1/n).

    The question a band answers is how far a new run, from a team and software stack the ground truth
    has not seen, lands from the estimate: a publication with 60 rows is one such draw, not 60. The
    weighted quantile interpolates the cumulative weight at each sorted value's midpoint.
    """
    count: dict[str, int] = {}
    for s in sources:
        count[s] = count.get(s, 0) + 1
    order = np.argsort(np.asarray(ratios, dtype=float))
    values = np.asarray(ratios, dtype=float)[order]
    w = np.asarray([1.0 / count[s] for s in sources], dtype=float)[order]
    w /= w.sum()
    mid = np.cumsum(w) - w / 2
    return [float(np.interp(q, mid, values)) for q in qs]


def summarize(key: str, ratios: Sequence[float], sources: Sequence[str]) -> ClassStats:
    """The band quantiles (source-weighted, `source_quantiles`) and the median error of one class."""
    r = np.asarray(ratios, dtype=float)
    q10, q50, q90 = source_quantiles(ratios, sources, (0.1, 0.5, 0.9))
    ape = float(np.median(np.abs(1.0 / r - 1.0)))  # |predicted - measured| / measured in rate orientation
    return ClassStats(key=key, n=len(r), q10=q10, q50=q50, q90=q90, median_ape=ape, sources=len(set(sources)))


@cache
def accuracy_data() -> dict[str, Any]:
    """The shipped cross-validation result (benchmarks/cross_validate.py writes it)."""
    path = resources.files("gpuplan.estimate") / "data" / "accuracy.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@cache
def _classes() -> Mapping[str, ClassStats]:
    groups: dict[str, tuple[list[float], list[str]]] = {}
    for row in accuracy_data()["rows"]:
        ratio = row.get("cv_ratio")
        if ratio is None or not math.isfinite(ratio) or ratio <= 0:
            continue
        cls = EstimateClass(kind=row["kind"], efficiency=row["efficiency"], family=row["family"],
                            arch=row["arch"], scale=row["scale"], stack=row.get("stack", "unstated"))
        for key in cls.levels():
            rs, ss = groups.setdefault(key, ([], []))
            rs.append(ratio)
            ss.append(row["source"])
    return {k: summarize(k, rs, ss) for k, (rs, ss) in groups.items()}


@cache  # classes are frozen records and the table is the shipped file: one lookup per class per process
def class_stats(cls: EstimateClass) -> ClassStats | None:
    """The finest class with at least MIN_ROWS rows, None if even the coarsest has none."""
    table = _classes()
    found = None
    for key in cls.levels():
        st = table.get(key)
        if st is not None:
            found = st
            if st.n >= MIN_ROWS:
                return st
    return found


# What can be new about a figure, as the fold that measured it: "source" (always: a user's run is a new source),
# "accelerator" (a part, or a part's format, without rows), "stack" (an engine version or framework without rows).
NOVELTY = ("source", "accelerator", "stack")


def novelty_factor(cls: EstimateClass, novel: frozenset[str] = frozenset()) -> tuple[float, list[str]]:
    """The factor both ends of the band widen by, and the novelties that set it: the widest of a new source's, a
    part's without rows (a `default` efficiency, or "accelerator" in `novel`) and those named in `novel`."""
    table: dict[str, float] = accuracy_data().get("novelty_scale", {}).get(cls.kind, {})
    why = {"source"} | set(novel) | ({"accelerator"} if cls.efficiency == "default" else set())
    unknown = why - set(NOVELTY)
    if unknown:
        raise ValueError(f"novelty must be among {NOVELTY}, got {sorted(unknown)}")
    factors = {k: float(table.get(k, 1.0)) for k in why}
    top = max(factors.values())
    return top, sorted(k for k, v in factors.items() if v == top and v > 1.0)


def band(cls: EstimateClass, value: float | None, orientation: str,
         novel: frozenset[str] = frozenset()) -> Band | None:
    """The 80% band of `value` ("rate" or "time" orientation) for an estimate of class `cls` (None if no
    value or no data), widened by `novelty_factor` (`novel`: what else is new about it, NOVELTY)."""
    if orientation not in ("rate", "time"):
        raise ValueError(f"orientation must be 'rate' or 'time', got {orientation!r}")
    if value is None or not math.isfinite(value):
        return None
    basis = _band_basis(cls, novel)
    if basis is None:
        return None
    st, wider, factor, why = basis
    how: Orientation = "rate" if orientation == "rate" else "time"
    lo, hi = st.band(value, how)
    info: dict[str, Any] = {"class": st.key, "rows": st.n, "sources": st.sources}
    if wider is not None:
        vlo, vhi = wider.band(value, how)
        if vlo < lo or vhi > hi:
            lo, hi = min(lo, vlo), max(hi, vhi)
            info["widened_to"] = wider.key
    if factor > 1.0:
        lo, hi = lo / factor, hi * factor
        info["novelty_factor"] = round(factor, 4)
        info["novelty"] = list(why)
    return Band(low=lo, high=hi, basis=info)


@cache  # a plan's figures ask for the bands of a few classes thousands of times (plan train: one per figure)
def _band_basis(cls: EstimateClass, novel: frozenset[str]) -> tuple[
        ClassStats, ClassStats | None, float, tuple[str, ...]] | None:
    """What the band of any value of class `cls` rests on: its class's quantiles, the validated class a part
    without rows is widened to (a part without rows is at least as uncertain as a part with rows: the parts held
    out in cross-validation were all measured ones, NVIDIA and Ascend flagships, never the parts that lack rows),
    the novelty factor and the novelties that set it."""
    st = class_stats(cls)
    if st is None:
        return None
    wider = class_stats(replace(cls, efficiency="validated")) if cls.efficiency == "default" else None
    factor, why = novelty_factor(cls, novel)
    return st, wider, factor, tuple(why)


def part_accuracy(kind: str, accelerator: str) -> dict[str, Any] | None:
    """Ground-truth rows of a part for `kind` and their cross-validated median error, None if it has none."""
    parts: dict[str, Any] = accuracy_data().get("parts", {}).get(kind, {})
    found = parts.get(accelerator)
    return dict(found) if found else None


def source_accuracy(data: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per kind, each source's rows held out together (leave one source out) and how far off they came:
    median and 90th-percentile error of the held-out prediction, and of the in-sample one, most rows first."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for e in data.get("entries", []):
        if e.get("fold") == "source" and e.get("cv_ratio"):
            groups.setdefault((e["kind"], e["source"]), []).append(e)
    out: dict[str, list[dict[str, Any]]] = {}
    for (kind, source), rows in groups.items():
        cv = [abs(1.0 / float(r["cv_ratio"]) - 1.0) for r in rows]
        ins = [abs(1.0 / float(r["in_sample_ratio"]) - 1.0) for r in rows if r.get("in_sample_ratio")]
        out.setdefault(kind, []).append({
            "source": source, "rows": len(rows), "parts": sorted({str(r["accelerator"]) for r in rows}),
            "cv_median_ape": float(np.median(cv)), "cv_p90_ape": float(np.percentile(cv, 90)),
            "in_sample_median_ape": float(np.median(ins)) if ins else None})
    return {k: sorted(v, key=lambda r: (-r["rows"], r["source"])) for k, v in sorted(out.items())}
