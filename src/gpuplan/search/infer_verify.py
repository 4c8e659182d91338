"""The fewest replicas whose simulation meets a p99 SLO with a draining queue (the planner's verification step).

`min_replicas` brackets the replica count geometrically from a closed-form guess and bisects; `meets` and
`score` judge one simulation (docs/inference_planner.md, step 4). Used by the colocated planner
(`infer_search`) and the disaggregated fleets (`infer_pd_fleet`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gpuplan.search.infer_load import InferSlo, planner_terms
from gpuplan.simulate.metrics import SimMetrics

__all__ = ["meets", "min_fleet", "min_replicas", "score"]


def meets(m: SimMetrics, slo: InferSlo, queue_growth_max: float) -> bool:
    """The p99 TTFT and TPOT meet the SLO and the queue drains (its delay does not grow over the run)."""
    return (m.ttft_s.p99 <= slo.ttft_p99_s and m.tpot_s.p99 <= slo.tpot_p99_s
            and m.queue_growth_s <= queue_growth_max * slo.ttft_p99_s)


def min_fleet(qps: float, capacity_rps: float) -> int:
    """The fewest replicas at or under 100% utilization: ceil(qps / the replica's SLO-bound capacity)."""
    return max(1, math.ceil(qps / capacity_rps - 1e-9))


def score(m: SimMetrics, slo: InferSlo, queue_growth_max: float) -> float:
    """How far a simulation is from the SLO and from a draining queue (<= 1: met)."""
    return max(m.ttft_s.p99 / slo.ttft_p99_s, m.tpot_s.p99 / slo.tpot_p99_s,
               m.queue_growth_s / (queue_growth_max * slo.ttft_p99_s))


def min_replicas(run: Callable[[int], SimMetrics], r0: int, slo: InferSlo, max_sims: int = 7,
                  seen: dict[int, SimMetrics] | None = None, *, floor: int = 1,
                  queue_growth_max: float | None = None,
                  tolerance: float | None = None) -> tuple[int, SimMetrics] | None:
    """The fewest replicas (near r0, never under `floor`) whose simulation meets the SLO with a queue that
    drains, to within `tolerance` of the count (term replica_tolerance: below the simulation's own noise): bracket
    geometrically (x1.25 per try, x2 while the p99s are over 1.5 x the limits; down from a passing r0 first by
    its margin under the limits, then /1.25), then bisect until the failing and passing counts are that close.

    `seen` (if given) receives every simulation by replica count.
    """
    seen = {} if seen is None else seen
    floor = max(1, floor)
    if queue_growth_max is None:  # the shipped terms (search/data/infer_plan.yaml)
        queue_growth_max = planner_terms().value("queue_growth_max")
    if tolerance is None:
        tolerance = planner_terms().value("replica_tolerance")
    r0 = max(r0, floor)

    def close(lo: int, hi: int) -> bool:
        return hi - lo <= max(1, math.ceil(tolerance * hi))

    def ok(r: int) -> bool:
        if r not in seen:
            seen[r] = run(r)
        return meets(seen[r], slo, queue_growth_max)

    lo = floor - 1  # largest count known to fail (counts under the floor are over 100% utilization)
    if ok(r0):
        hi = r0
        first = True
        while hi > floor and len(seen) < max_sims:
            # the first step down: a fleet that passes by a margin s (< 1) has about that share of replicas to spare
            # (try hi * s, at least the tolerance below hi, at most /1.25); later ones /1.25 (a TPOT near its
            # unloaded floor keeps s near 1 however many replicas are spare)
            s = max(score(seen[hi], slo, queue_growth_max), 0.8) if first else 0.8
            first = False
            r = max(floor, min(hi - max(1, math.ceil(tolerance * hi)), int(hi * s)))
            if ok(r):
                hi = r
            else:
                lo = r
                break
    else:
        lo, hi = r0, 0
        while len(seen) < max_sims:
            far = score(seen[lo], slo, queue_growth_max)
            r = max(lo + 1, math.ceil(lo * (2.0 if far > 1.5 else 1.25)))  # far from the SLO: double
            if ok(r):
                hi = r
                break
            if score(seen[r], slo, queue_growth_max) > 0.95 * far:  # more replicas barely help: a latency floor
                return None
            lo = r
        if not hi:
            return None
    while not close(lo, hi) and len(seen) < max_sims:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi, seen[hi]
