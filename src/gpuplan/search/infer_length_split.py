"""A cheap part for short requests: route by prompt length to two fleets, each planned alone.

Where prompt lengths spread widely (a chat service with a tail of long documents), the long prompts set the
part (HBM for their KV cache, compute for their prefill within the TTFT limit) while most requests are short.
A router that sends each request by its prompt length to one of two fleets lets the short ones run on a cheaper
part. Production routers decide by prompt tokens: llm-d's inference scheduler (EPP) picks a scheduling profile
per request, and its `pd-profile-handler` does so by the prompt's token count against a `threshold`
(llm-d-inference-scheduler, docs/disagg_pd.md and its EndpointPickerConfig); the same hook with two pools
labelled by part routes `prompt_tokens <= T` to the short fleet and the rest to the long one.

The rule, for one load and SLO (all pure; the caller plans each side with the planner's own search):

1. tried only when the prompt lengths spread: p99 / p50 >= `SPREAD_MIN` (4; a fixed length, or the README's
   uniform:512-2048 at 1.6, is never split, so its plan costs nothing more);
2. thresholds: the prompt length's 50th and 90th percentiles and, where the lengths have two modes (an empty gap
   above the median whose far side is at least `GAP_RATIO` x its near side: chat turns and documents), the top of
   the lower mode; deduplicated, each leaving requests on both sides (at most three, six side plans);
3. each side: the requests at or below (above) T, their own length distribution (the bins truncated at T; a
   trace's own requests), at their share of the rate; output lengths as the load's (independent of the prompt);
   planned at the same SLO under the same router and constraints (the long side may take TP or CP the short
   side does not), its fleets simulated as every plan's are; the long side first: where its cheapest fleet alone
   costs what rule 5 asks of the whole split, the short side is not planned;
4. like for like: both sides at one weight format (one checkpoint for the service), each the cheapest eligible
   fleet at that format (the buyer's market, no blocking finding); the split's cost is the sum of the two;
5. recommended only when both sides met the SLO in simulation, it saves at least `length_split_min_saving` (10%,
   a planner term) of the recommended single fleet, and costs less than every eligible single fleet at its weight
   format (as `infer_pd_choice` rules); a cheaper split that saves less is shown, not recommended.

Assumptions: the router counts prompt tokens before it routes; no KV cache is reused across the two fleets (a
prefix cached on one is not found on the other); each fleet is sized alone for its own share (no overflow from
one to the other when a burst arrives); the p99 of each side meets the SLO, so the whole service's does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.simulate.arrivals import Workload
from gpuplan.simulate.lengths import LengthDist

__all__ = ["QUANTILES", "SPREAD_MIN", "SplitSide", "length_split", "prompt_spread", "split_load",
           "gap_threshold", "split_thresholds", "truncate"]

SPREAD_MIN = 4.0  # p99 / p50 prompt length at or above which a split is tried (gpuplan rule, stated in docs)
QUANTILES = (0.5, 0.9)  # the thresholds tried, with the gap below: a few, so the search costs at most 6 side plans
GAP_RATIO = 2.0  # an empty gap this wide (next length / previous) separates two modes of prompt lengths
ROUTER_RULE = ("route by prompt tokens: <= threshold to the short fleet, else the long fleet (llm-d inference "
               "scheduler: a profile handler choosing the pool by prompt length, as its pd-profile-handler's "
               "`threshold` does; two pools labelled by part)")
ASSUMPTION = ("router counts prompt tokens before routing; no KV cache reused across the two fleets; each fleet "
              "sized alone for its share of the rate; output lengths independent of the prompt's")

PlanSide = Callable[[InferLoad], Sequence[Mapping[str, Any]]]  # a side's load -> its eligible fleets


def _quantile(load: InferLoad, q: float) -> float:
    if load.trace is not None:
        return float(np.quantile(load.trace.input_len, q))
    return load.input_len.quantile(q)


def prompt_spread(load: InferLoad) -> float:
    """p99 / p50 of the prompt length (1 for a fixed length)."""
    return _quantile(load, 0.99) / max(_quantile(load, 0.5), 1.0)


def gap_threshold(load: InferLoad) -> int | None:
    """The bottom of the widest empty gap in the prompt lengths above their median where the next length is at
    least GAP_RATIO times the one below it (two modes: chat turns and long documents), else None."""
    if load.trace is not None:
        edges = sorted((int(v), int(v)) for v in np.unique(load.trace.input_len))
    else:
        d = load.input_len
        edges = sorted((lo, hi) for lo, hi, w in zip(d.low, d.high, d.weight, strict=True) if w > 0)
    median = _quantile(load, 0.5)
    best: tuple[float, int] | None = None
    top = edges[0][1]
    for lo, hi in edges[1:]:
        if lo > top and top >= median and lo >= GAP_RATIO * top and (best is None or lo / top > best[0]):
            best = (lo / top, top)
        top = max(top, hi)
    return None if best is None else best[1]


def split_thresholds(load: InferLoad) -> tuple[int, ...]:
    """The prompt lengths to split at (rule 2), ascending; () when the spread is below SPREAD_MIN (rule 1)."""
    if prompt_spread(load) < SPREAD_MIN:
        return ()
    out: list[int] = []
    gap = gap_threshold(load)
    for t in sorted({int(_quantile(load, q)) for q in QUANTILES} | ({gap} if gap is not None else set())):
        _, _, share = split_load(load, t)
        if 0.0 < share < 1.0:
            out.append(t)
    return tuple(out)


def truncate(dist: LengthDist, lo: int, hi: int) -> tuple[LengthDist | None, float]:
    """The part of `dist` with lengths in [lo, hi] as its own distribution, and its share of the weight; a bin
    is cut where it straddles a bound (its lengths are uniform over the bin, as `LengthDist.sample` draws them)."""
    low: list[int] = []
    high: list[int] = []
    weight: list[float] = []
    total = sum(dist.weight)
    for b_lo, b_hi, w in zip(dist.low, dist.high, dist.weight, strict=True):
        a, b = max(b_lo, lo), min(b_hi, hi)
        if b < a or w <= 0:
            continue
        low.append(a)
        high.append(b)
        weight.append(w * (b - a + 1) / (b_hi - b_lo + 1))
    share = sum(weight) / total
    if not weight:
        return None, 0.0
    label = f"{dist.label}[{lo}-{hi}]"
    if len(low) == 1 and low[0] == high[0]:
        return LengthDist.fixed(low[0]), share
    return LengthDist(kind="hist", low=tuple(low), high=tuple(high), weight=tuple(weight), label=label), share


def _sub_trace(tr: Workload, keep: np.ndarray, label: str) -> Workload | None:
    if int(keep.sum()) < 2:
        return None
    return Workload(arrival_s=tr.arrival_s[keep], input_len=tr.input_len[keep], output_len=tr.output_len[keep],
                    label=label)


def split_load(load: InferLoad, threshold: int) -> tuple[InferLoad | None, InferLoad | None, float]:
    """(short side, long side, the short side's share of requests) at `threshold` prompt tokens (rule 3): each
    side at its share of the rate; None for a side with no requests (or fewer than two in a trace)."""
    tr = load.trace
    if tr is not None:
        keep = tr.input_len <= threshold
        share = float(keep.mean())
        sides: list[InferLoad | None] = []
        for mask, tag in ((keep, f"<={threshold}"), (~keep, f">{threshold}")):
            sub = _sub_trace(tr, mask, f"{tr.label}:{tag}")
            sides.append(None if sub is None or not sub.duration_s > 0 else replace(
                InferLoad.from_trace(sub), prefix_hit=load.prefix_hit,
                shared_prefix_tokens=load.shared_prefix_tokens, prefix_set_tokens=load.prefix_set_tokens))
        return sides[0], sides[1], share
    short_d, share = truncate(load.input_len, 1, threshold)
    long_d, _ = truncate(load.input_len, threshold + 1, load.input_len.max)
    short = replace(load, qps=load.qps * share, input_len=short_d) if short_d is not None and share > 0 else None
    long = replace(load, qps=load.qps * (1.0 - share), input_len=long_d) if (
        long_d is not None and share < 1.0) else None
    return short, long, share


@dataclass(frozen=True, slots=True, kw_only=True)
class SplitSide:
    """One side of a split: its requests and the fleet that serves them (a plan row of `plan infer`)."""

    share: float  # of requests
    qps: float
    input_len: str  # the side's prompt-length distribution (label)
    input_len_mean: float
    fleet: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        f = self.fleet
        return {"share": self.share, "qps": self.qps, "input_len": self.input_len,
                "input_len_mean": self.input_len_mean,
                **{k: f.get(k) for k in ("accelerator", "instance", "instances", "replicas", "devices", "layout",
                                         "weights", "engine", "cost_usd_per_hour", "utilization")},
                "ttft_p99_s": f["ttft_s"]["p99"], "tpot_p99_s": f["tpot_s"]["p99"],
                "at_headroom": f.get("at_headroom"), "confidence": f.get("confidence"), "band": f.get("band")}


def _meets(fleet: Mapping[str, Any], slo: InferSlo) -> bool:
    """Simulated at the side's load (and at its headroom load) within the SLO."""
    head = fleet.get("at_headroom") or {}
    return (float(fleet["ttft_s"]["p99"]) <= slo.ttft_p99_s and float(fleet["tpot_s"]["p99"]) <= slo.tpot_p99_s
            and float(head.get("ttft_p99_s", 0.0)) <= slo.ttft_p99_s
            and float(head.get("tpot_p99_s", 0.0)) <= slo.tpot_p99_s)


def _cheapest_per_format(fleets: Sequence[Mapping[str, Any]], slo: InferSlo) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for f in fleets:
        w = str(f["weights"])
        if _meets(f, slo) and (w not in out or float(f["cost_usd_per_hour"]) < float(out[w]["cost_usd_per_hour"])):
            out[w] = f
    return out


def _side(load: InferLoad, share: float, fleet: Mapping[str, Any]) -> SplitSide:
    return SplitSide(share=share, qps=load.qps, input_len=load.input_len.label, input_len_mean=load.input_len.mean,
                     fleet=fleet)


def length_split(load: InferLoad, slo: InferSlo, plan_side: PlanSide, *, recommended: Mapping[str, Any] | None,
                 singles: Sequence[Mapping[str, Any]], min_saving: float = 0.10,
                 min_saving_term: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The `length_split` record of a `plan infer` run: the cheapest split over the thresholds (rules 1-5 of the
    module docstring), every threshold tried with its outcome, and whether it is recommended over
    `recommended` (the single-part fleet the run recommends; `singles`: the eligible single-part fleets).
    `plan_side` plans one side (InputError when no fleet meets the SLO for it); `min_saving`: the planner term
    length_split_min_saving (rule 5), `min_saving_term` its record for the output."""
    spread = prompt_spread(load)
    base: dict[str, Any] = {"spread_p99_over_p50": spread, "spread_min": SPREAD_MIN,
                            "quantiles": list(QUANTILES), "router_rule": ROUTER_RULE, "assumption": ASSUMPTION,
                            "min_saving": min_saving, **({"terms": {"length_split_min_saving": dict(min_saving_term)}}
                                                         if min_saving_term else {})}
    thresholds = split_thresholds(load)
    if not thresholds:
        return {**base, "tried": False, "split": None, "recommended": False, "thresholds": []}
    tried: list[dict[str, Any]] = []
    best: tuple[float, int, str, SplitSide, SplitSide] | None = None
    rec_usd = float(recommended["cost_usd_per_hour"]) if recommended else None
    # what a split must cost to be recommended (rule 5): a threshold whose long side alone reaches it stops there,
    # which halves the search where the long prompts carry the cost
    target = math.inf if rec_usd is None else rec_usd * (1.0 - min_saving)
    for t in thresholds:
        short, long, share = split_load(load, t)
        row: dict[str, Any] = {"threshold_tokens": t, "short_share": share}
        if short is None or long is None:
            tried.append({**row, "outcome": "empty_side"})
            continue
        try:
            l_best = _cheapest_per_format(plan_side(long), slo)
            l_usd = min((float(f["cost_usd_per_hour"]) for f in l_best.values()), default=math.inf)
            if l_usd >= target:  # the long side alone leaves no saving: the short side is not planned
                tried.append({**row, "outcome": "long_side_over_target", "long_usd_per_hour": l_usd})
                continue
            s_best = _cheapest_per_format(plan_side(short), slo)
        except InputError as exc:
            tried.append({**row, "outcome": "no_fleet", "field": exc.field})
            continue
        both = sorted(set(s_best) & set(l_best))
        if not both:
            tried.append({**row, "outcome": "no_common_weights"})
            continue
        w = min(both, key=lambda k: float(s_best[k]["cost_usd_per_hour"]) + float(l_best[k]["cost_usd_per_hour"]))
        usd = float(s_best[w]["cost_usd_per_hour"]) + float(l_best[w]["cost_usd_per_hour"])
        tried.append({**row, "outcome": "planned", "weights": w, "usd_per_hour": usd,
                      "short": s_best[w]["accelerator"], "long": l_best[w]["accelerator"]})
        if best is None or usd < best[0]:
            best = (usd, t, w, _side(short, share, s_best[w]), _side(long, 1.0 - share, l_best[w]))
    if best is None:
        return {**base, "tried": True, "split": None, "recommended": False, "thresholds": tried}
    usd, t, w, s_side, l_side = best
    same = [f for f in singles if f.get("weights") == w]
    best_same = min(same, key=lambda f: float(f["cost_usd_per_hour"])) if same else None
    cheaper = rec_usd is not None and usd <= rec_usd * (1.0 - min_saving) and usd < rec_usd and (
        best_same is None or usd < float(best_same["cost_usd_per_hour"]))
    bands = [(s.fleet.get("band") or {}).get("cost_usd_per_hour") for s in (s_side, l_side)]
    # the 80% band of the sum: the sides' bands added end to end (conservative: their errors taken as together)
    band = [sum(float(b[0]) for b in bands if b), sum(float(b[1]) for b in bands if b)] if all(bands) else None
    split = {"threshold_tokens": t, "weights": w, "usd_per_hour": usd, "band_usd_per_hour": band,
             "short": s_side.to_json(),
             "long": l_side.to_json(), "same_part": s_side.fleet["accelerator"] == l_side.fleet["accelerator"],
             "saving": None if rec_usd is None else 1.0 - usd / rec_usd,
             "instead_of": None if recommended is None else {k: recommended.get(k) for k in (
                 "accelerator", "instance", "replicas", "devices", "weights", "cost_usd_per_hour")},
             "single_same_format": None if best_same is None else {k: best_same.get(k) for k in (
                 "accelerator", "replicas", "devices", "weights", "cost_usd_per_hour")}}
    return {**base, "tried": True, "split": split, "recommended": cheaper, "thresholds": tried,
            "basis": "both fleets simulated to the SLO behind the run's router at their share of the rate (and its "
                     "headroom); saves at least length_split_min_saving of the recommended single fleet and costs "
                     "less than every single fleet listed at its weight format"}
