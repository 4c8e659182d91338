"""Refit the calibration terms that were tuned on ground-truth rows, on any subset of those rows.

Cross-validation (benchmarks/cross_validate.py) holds out one source or one accelerator, refits
every term whose `tuned_on` names that file on the remaining rows, and predicts the held-out
rows with the refitted terms. The refit:
- works on the error ratio of each row in "rate" orientation (`error_ratio`: measured / predicted
  for throughput, FLOP/s, MFU and memory; predicted / measured for times), and minimises the
  weighted mean of min(|log ratio|, `FIT_CAP`) over the rows a term was tuned on (one value per group of
  terms with equal `tuned_on`), by golden-section search over the term's `bounds` (Kiefer 1953);
  latencies measured at a stated request rate weigh nothing (`fit_weight`: near capacity they measure the queue),
  and in training fits each source weighs as one, however many rows it published (`SOURCE_BALANCE`);
- fits terms in order: shared terms (no accelerator), then each part's terms, then the pooled
  defaults (fitted with every part's own term removed: the value a part without rows gets);
- removes a part's own terms when no row left moves them, so the part falls back to the default for
  those terms, exactly as a part without ground truth does in a plan; its other terms are still refitted on
  the rows that move them (a TP8 batch-1 latency row held out leaves the part's throughput rows to fit its
  bandwidth and GEMM terms: they no longer fall back with the all-reduce term);
- re-derives the default efficiencies of parts without rows (`DEFAULT_RULES`: set by rule from the tuned parts'
  values, so the rule is applied again to the parts left in the fold: a held-out H100 no longer gets the 0.55 its
  own rows set as "the lowest tuned part").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, CalibrationTerm, TunedOn
from gpuplan.validate.cases import Row, model_for_row
from gpuplan.validate.memory_cases import CaseResult
from gpuplan.validate.row_notes import row_weight
from gpuplan.validate.sources import row_source

__all__ = ["DEFAULT_RULES", "FIT_CAP", "QUEUE_METRICS", "SOURCE_BALANCE", "TIME_METRICS", "Evaluator", "Group",
           "affected_ids", "capped_abs_log", "derive_defaults", "error_ratio", "fit_weight", "part_terms", "refit",
           "row_matches", "source_weights", "term_groups", "without_part_terms"]

TIME_METRICS = frozenset({"step_time_s", "device_hours", "time_to_train_days", "ttft_ms", "tpot_ms",
                          "e2e_latency_s"})

Evaluator = Callable[[Row, Calibration], CaseResult]


def error_ratio(metric: str, measured: float, predicted: float) -> float:
    """measured / predicted in rate orientation: > 1 means the run was faster (or larger) than predicted."""
    if measured <= 0 or predicted <= 0:
        raise GpuplanError(f"{metric}: measured {measured} and predicted {predicted} must be > 0")
    return predicted / measured if metric in TIME_METRICS else measured / predicted


# A row off by more than e^0.5 = 1.65x weighs in the fit as if it were off by 1.65x: a robust (truncated L1)
# loss, so that a run the model misses for a reason of its own cannot drag a term every row shares, while every
# other row's error counts (Huber 1964; Hampel et al. 1986, redescending and truncated losses).
FIT_CAP = 0.5


def capped_abs_log(ratios: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """The refit objective: the (weighted) mean of min(|ln(ratio)|, FIT_CAP).

    Weights: vendor-published rows count `vendor_weight` (validate/data/row_notes.yaml), unmodelled rows 0,
    others 1. A mean moves with every row, where a median of a few rows jumps from one row to the next and a
    golden-section search on it lands wherever a step happens to be (the fold refits of cross-validation fit
    many terms on a handful of rows).
    """
    if not ratios:
        return 0.0
    w = list(weights) if weights is not None and sum(weights) > 0 else [1.0] * len(ratios)
    total = sum(w)
    return sum(wi * min(abs(math.log(r)), FIT_CAP) for r, wi in zip(ratios, w, strict=True)) / total


@dataclass(frozen=True, slots=True)
class Group:
    """Terms fitted as one value on the same rows."""

    names: tuple[str, ...]
    tuned_on: TunedOn

    @property
    def order(self) -> int:
        if self.tuned_on.pooled:
            return 2
        return 1 if self.tuned_on.accelerator else 0


def term_groups(cal: Calibration, file: str) -> list[Group]:
    """The groups of terms of `cal` tuned on `file`, in fitting order."""
    by: dict[TunedOn, list[str]] = {}
    for name, term in cal.terms.items():
        if term.tuned_on is not None and term.tuned_on.file == file:
            by.setdefault(term.tuned_on, []).append(name)
    groups = [Group(tuple(names), t) for t, names in by.items()]
    return sorted(groups, key=lambda g: (g.order, g.names))


@cache
def _is_moe(model: str, experts: str) -> bool:
    if experts:
        return True
    try:
        return model_for_row({"model": model}).moe is not None
    except GpuplanError:
        return False


@cache
def _stack_of(accelerator: str) -> str:
    """The catalog's software stack of a row's part ("" when the part is not in the catalog)."""
    from gpuplan.hardware import load_catalog

    acc = load_catalog().accelerators.get(accelerator)
    return acc.software_stack if acc is not None else ""


def row_matches(t: TunedOn, row: Row) -> bool:
    """Whether `row` is one of the rows a term with `t` was tuned on."""
    if t.accelerator and row.get("accelerator", "") not in t.accelerator:
        return False
    precision = row.get("precision") or "bf16"
    if t.precision and precision not in t.precision:
        return False
    if t.engine and row.get("engine", "") not in t.engine:
        return False
    if t.stack and _stack_of(row.get("accelerator", "")) not in t.stack:
        return False
    return t.moe is None or _is_moe(row.get("model", ""), row.get("moe_experts", "")) == t.moe


def part_terms(cal: Calibration, accelerators: Iterable[str]) -> set[str]:
    """Names of the terms of these parts: tuned on a part's rows and named `<term>.<accelerator>.<suffix>`."""
    accs = set(accelerators)
    return {n for n, t in cal.terms.items()
            if t.tuned_on and t.tuned_on.accelerator and n.split(".")[1:2] and n.split(".")[1] in accs}


def without_part_terms(cal: Calibration, accelerators: Iterable[str]) -> Calibration:
    """`cal` without the terms of these parts (`part_terms`): they get the defaults."""
    drop = part_terms(cal, accelerators)
    return _without(cal, drop) if drop else cal


def _without(cal: Calibration, names: Iterable[str]) -> Calibration:
    """`cal` without these terms: the defaults apply in their place; a term with a prior (TunedOn.prior, from a
    source other than its rows) takes that value instead, since the default describes other hardware."""
    drop = set(names)
    terms: dict[str, CalibrationTerm] = {}
    for n, t in cal.terms.items():
        if n not in drop:
            terms[n] = t
        elif t.tuned_on is not None and t.tuned_on.prior is not None:
            terms[n] = t.model_copy(update={"value": t.tuned_on.prior})
    return cal.model_copy(update={"terms": terms})


# Terms set by rule from tuned part terms (calibration.yaml notes): each is the shipped value times the lowest of
# the rule's part terms left in the fold over the lowest shipped one (16-bit: the lowest of the tuned flagships,
# H100 0.55; fp8: 0.45 against the lowest tuned fp8 part, B200 0.43).
DEFAULT_RULES: dict[str, tuple[str, ...]] = {
    "compute_efficiency.default.bf16": tuple(f"compute_efficiency.{p}.bf16" for p in (
        "a100-sxm4-80gb", "h100-sxm5-80gb", "b200-sxm-180gb", "ascend-910b")),
    "compute_efficiency.default.fp8": tuple(f"compute_efficiency.{p}.fp8" for p in (
        "h100-sxm5-80gb", "b200-sxm-180gb")),
    # fp4 is set equal to the fp8 default (calibration.yaml), so it moves with the same part terms
    "compute_efficiency.default.fp4": tuple(f"compute_efficiency.{p}.fp8" for p in (
        "h100-sxm5-80gb", "b200-sxm-180gb")),
}


def derive_defaults(cal: Calibration, shipped: Calibration) -> Calibration:
    """`cal` with each rule-set default (DEFAULT_RULES) re-derived from the part terms `cal` still has."""
    for name, parts in DEFAULT_RULES.items():
        if name not in cal.terms or name not in shipped.terms:
            continue
        left = [cal.terms[p].value for p in parts if p in cal.terms]
        base = min(shipped.terms[p].value for p in parts if p in shipped.terms)
        if left and base > 0:
            cal = _with_value(cal, (name,), shipped.terms[name].value * min(left) / base)
    return cal


def _with_value(cal: Calibration, names: Sequence[str], value: float) -> Calibration:
    terms = dict(cal.terms)
    for n in names:
        terms[n] = terms[n].model_copy(update={"value": float(value)})
    return cal.model_copy(update={"terms": terms})


# Latencies at a stated request rate (TTFT, TPOT, end-to-end of a `server` row) are queueing figures: a
# submitter runs at the highest rate its latency limits pass (MLPerf server), where the queue turns a 3% error
# in capacity into a 2-4x error in latency (M/G/1: waiting time ~ 1 / (1 - load), Kleinrock 1975, vol. 1
# ch. 5). A fit that scores them chases the queue instead of the term (a TensorRT-LLM fold moved the KV read
# efficiency from 0.80 to 0.54 to make two such rows saturate); they are predicted and reported, never fitted.
QUEUE_METRICS = frozenset({"ttft_ms", "tpot_ms", "e2e_latency_s"})


def fit_weight(row: Row) -> float:
    """A row's weight in a fit: `row_weight` (unmodelled 0, vendor-published less), and 0 for a latency
    measured at a stated request rate (QUEUE_METRICS of a `server` row)."""
    if row.get("scenario") == "server" and row.get("metric") in QUEUE_METRICS:
        return 0.0
    return row_weight(row.get("id", ""))


# In a training fit each source counts once, however many rows it published: a row's weight is divided by the number
# of rows of its source among the rows fitting the term (n ** -balance). The rows of one publication share its
# framework, kernels and way of measuring, so they err together: 43 rows of one benchmark table are one observation
# of how that stack runs on a part, not 43 (clustered data: weight the clusters, not the rows; Cameron & Miller 2015,
# "A Practitioner's Guide to Cluster-Robust Inference", sec. II). With rows weighed alike, LLM Foundry's A100 rows set
# the A100 efficiency of every fold that held out another A100 source. Chosen per family on the folds, among 0, 0.5
# and 1 (training held out by source: 11.74% / 28.85%, 10.17% / 26.39%, 9.14% / 24.80% median / p90), and disclosed
# as such in docs/validation.md: serving keeps rows alike (balanced, its part held out p90 went from 38.1% to 43.4%,
# GPUStack's 910B rows refitting the shared per-sequence and per-layer overheads toward the small sources), memory
# too (no change either way).
SOURCE_BALANCE: dict[str, float] = {"training": 1.0, "inference": 0.0, "memory": 0.0}


def source_weights(rows: Sequence[Row], balance: float) -> list[float]:
    """Per row, 1 / (rows of its source among `rows`) ** balance (`SOURCE_BALANCE`; 0: every row alike)."""
    keys = [row_source(r) for r in rows]
    n = Counter(keys)
    return [n[k] ** -balance for k in keys]


def _objective(rows: Sequence[Row], cal: Calibration, evaluate: Evaluator,
               source_w: Sequence[float] | None = None) -> float:
    """The fit's loss on `rows` under `cal`; `source_w`: each row's source weight (`source_weights`), 1 if None."""
    ratios, weights = [], []
    for row, w in zip(rows, source_w if source_w is not None else [1.0] * len(rows), strict=True):
        try:
            res = evaluate(row, cal)
            ratios.append(error_ratio(res.metric, res.measured, res.predicted))
            weights.append(fit_weight(row) * w)
        except (GpuplanError, ValueError):
            continue
    return capped_abs_log(ratios, weights) if ratios else math.inf


def _golden(f: Callable[[float], float], lo: float, hi: float, evals: int) -> float:
    """Minimise f over [lo, hi] (log scale when lo > 0) with `evals` evaluations of golden-section search."""
    log = lo > 0
    a, b = (math.log(lo), math.log(hi)) if log else (lo, hi)
    g = (math.sqrt(5) - 1) / 2
    x = (lambda u: math.exp(u)) if log else (lambda u: u)
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(x(c)), f(x(d))
    for _ in range(max(evals - 2, 0)):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(x(c))
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(x(d))
    return x(c) if fc <= fd else x(d)


def _affected(g: Group, rows: Sequence[Row], cal: Calibration, evaluate: Evaluator,
              seen: dict[str, float | None] | None = None) -> list[Row]:
    """The rows whose prediction moves when the group's value moves by 10%: the rows that can tune it. A row of
    weight 0 in a fit (`fit_weight`: unmodelled, or a latency at a stated request rate) tunes nothing.
    `seen`: predictions under `cal` itself by row id, kept between groups (the same calibration every time)."""
    pooled = g.tuned_on.pooled
    base = without_part_terms(cal, {r["accelerator"] for r in rows}) if pooled else cal
    moved = _with_value(base, g.names, cal.terms[g.names[0]].value * 1.1 + 1e-3)
    memo = {} if seen is None or pooled else seen
    out = []
    for row in (r for r in rows if fit_weight(r) > 0):
        key = row.get("id", "")
        try:
            if key not in memo:
                memo[key] = None
                memo[key] = evaluate(row, base).predicted
            a = memo[key]
            if a is None:
                continue
            b = evaluate(row, moved).predicted
        except (GpuplanError, ValueError):
            continue
        if abs(a - b) > 1e-3 * abs(a):
            out.append(row)
    return out


def affected_ids(rows: Sequence[Row], cal: Calibration, evaluate: Evaluator, *, file: str) -> dict[
        tuple[str, ...], frozenset[str]]:
    """Per group of terms tuned on `file`, the ids of the rows that move it under `cal` (`_affected`): computed
    once for all rows and passed to every fold's `refit`, which keeps those of its own rows."""
    seen: dict[str, float | None] = {}
    return {g.names: frozenset(r["id"] for r in _affected(g, [r for r in rows if row_matches(g.tuned_on, r)], cal,
                                                          evaluate, seen))
            for g in term_groups(cal, file)}


def refit(rows: Sequence[Row], cal: Calibration, evaluate: Evaluator, *, file: str,
          drop_accelerators: Iterable[str] = (), evals: int = 10,
          groups: Sequence[Group] | None = None,
          affected: dict[tuple[str, ...], frozenset[str]] | None = None,
          source_balance: float | None = None) -> tuple[Calibration, dict[str, float]]:
    """Terms tuned on `file` refitted on `rows`; (the calibration, the refitted values by term name).

    `drop_accelerators`: parts treated as having no rows (leave-one-accelerator-out). The rule-set defaults
    (`DEFAULT_RULES`) are re-derived from the refitted part terms. `affected` (`affected_ids` over a superset of
    `rows` under the same `cal`): the rows that move each group, instead of finding them again. `source_balance`:
    each row weighs 1 / (its source's rows in the group) ** source_balance (default `SOURCE_BALANCE` of `file`).
    """
    balance = SOURCE_BALANCE.get(file, 0.0) if source_balance is None else source_balance
    shipped = cal
    cal = without_part_terms(cal, drop_accelerators)
    todo = [g for g in (groups if groups is not None else term_groups(cal, file))
            if all(n in cal.terms for n in g.names)]
    fitted: dict[str, float] = {}
    live: list[tuple[Group, list[Row]]] = []
    seen: dict[str, float | None] = {}  # predictions under `cal` as it stands (reset when a group is dropped)
    for g in todo:
        if not all(n in cal.terms for n in g.names):  # dropped with another group of the same part
            continue
        matching = [r for r in rows if row_matches(g.tuned_on, r)]
        if affected is not None and g.names in affected:
            sel = [r for r in matching if r.get("id", "") in affected[g.names]]
        else:
            sel = _affected(g, matching, cal, evaluate, seen)
        if sel:
            live.append((g, sel))
        elif g.tuned_on.accelerator:  # no row left that moves this group: its terms fall back to the defaults
            cal = _without(cal, g.names)
            seen = {}
    for g, sel in live:
        if not all(n in cal.terms for n in g.names):
            continue
        names = g.names
        sw = source_weights(sel, balance)  # the group's rows are fixed during its search: weighed once

        def score(v: float, names: tuple[str, ...] = names, sel: list[Row] = sel, sw: list[float] = sw,
                  pooled: bool = g.tuned_on.pooled, base: Calibration = cal) -> float:
            trial = _with_value(base, names, v)
            return _objective(sel, without_part_terms(trial, {r["accelerator"] for r in sel})
                              if pooled else trial, evaluate, sw)

        best = _golden(score, *g.tuned_on.bounds, evals=evals)
        cal = _with_value(cal, names, best)
        fitted.update({n: best for n in names})
    return derive_defaults(cal, shipped), fitted
