"""When no fleet meets the SLO with the engine asked: would another engine that runs on the same parts?

Engines differ most where the software is young: on Ascend, vLLM-Ascend pays about 1 ms of host-bound launches
per layer and iteration where MindIE pays half (workload/data/engines.yaml, `layer_overhead_s`), so a TPOT that no
vLLM-Ascend fleet reaches may be an ordinary MindIE plan. A buyer told "infeasible" would stop there; this module
re-plans with every other shipped engine (its default terms, no what-ifs) and names the cheapest that meets the
SLO, so the error can say "with --engine mindie: ...". Only the failing path pays for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpuplan.errors import InputError
from gpuplan.search.infer_fleet import layout_shape
from gpuplan.workload.engines import EngineProfile, engine, load_engines

__all__ = ["engine_that_meets", "with_engine_hint"]

# the errors of plan_inference that another engine can cure (not a model too large, a policy or a missing price)
SLO_FIELDS = frozenset({"ttft-p99", "tpot-p99", "slo", "max-devices"})

Replan = Callable[[EngineProfile], list[dict[str, Any]]]


def engine_that_meets(asked: str, replan: Replan) -> tuple[str, dict[str, Any]] | None:
    """(engine id, its cheapest plan) of the cheapest other engine whose plans meet the SLO, or None.

    `replan` plans with one engine profile and returns its plans (empty, or InputError, when none meets)."""
    best: tuple[str, dict[str, Any]] | None = None
    for eid, prof in sorted(load_engines().items()):
        if eid == asked or prof.baseline:
            continue
        try:
            plans = replan(engine(eid))
        except InputError:
            continue
        if plans and (best is None or plans[0]["cost_usd_per_hour"] < best[1]["cost_usd_per_hour"]):
            best = (eid, plans[0])
    return best


def with_engine_hint(exc: InputError, asked: str, replan: Replan) -> InputError:
    """`exc` with the cheapest fleet another engine offers appended to its hint (unchanged if none does)."""
    if exc.field not in SLO_FIELDS:
        return exc
    found = engine_that_meets(asked, replan)
    if found is None:
        return exc
    eid, p = found
    fleet = (f"{p['accelerator']} {layout_shape(p['layout'], 'en')} {p['weights']}, {p['replicas']} replicas on "
             f"{p['instances']} x {p['instance']}, {p['cost_usd_per_hour']:.2f} USD/h, p99 TTFT "
             f"{p['ttft_s']['p99']:.2f} s, TPOT {p['tpot_s']['p99'] * 1000:.0f} ms")
    hint = (exc.hint + "; " if exc.hint else "") + f"with --engine {eid} the SLO is met: {fleet}"
    return InputError(field=exc.field, value=exc.value, allowed=exc.allowed, hint=hint)
