"""Simulate a fleet's engines under the router it runs: the planner's one call into the simulator.

`random` routing splits a Poisson stream into Poisson streams of qps / engines each, so one engine is
simulated on its share (what `plan infer` did before routers; for a trace, its round-robin share). Any
other router couples the engines: the fleet is simulated whole (`simulate.fleet_sim`), up to
`fleet_sim_replicas_max` engines; a larger fleet is simulated as that many engines at their share of the
load, which leaves out the pooling a router gains beyond them (conservative: never fewer replicas).
An engine is a replica, one of the batches a pipeline-parallel replica keeps in flight, or an attention group.
"""

from __future__ import annotations

import numpy as np

from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.search.infer_load import InferLoad
from gpuplan.simulate.arrivals import Workload
from gpuplan.simulate.engine_sim import EngineConfig, StepCost, simulate_engine
from gpuplan.simulate.fleet_sim import ROUTERS, Router, simulate_fleet
from gpuplan.simulate.metrics import SimMetrics, Slo, summarize

__all__ = ["DEFAULT_ROUTER", "ROUTERS", "check_router", "simulate_engines"]

DEFAULT_ROUTER: Router = "least-load"  # production routers balance load (llm-d, SGLang model gateway, vllm-router)


def check_router(router: str) -> Router:
    """`router` if it is one the simulator runs, else InputError naming the choices."""
    for r in ROUTERS:
        if r == router:
            return r
    raise InputError(field="router", value=router, allowed=", ".join(ROUTERS),
                     hint="least-load (least outstanding tokens) is what production routers run")


def _hit(w: Workload, share: float, shared: int = 0) -> Workload:
    """`w` with `share` of each prompt, or its first `shared` tokens where more, found in the prefix cache (at
    least one token computed)."""
    if share <= 0.0 and shared <= 0:
        return w
    cached = np.minimum(np.maximum(np.floor(w.input_len * share).astype(np.int64), shared), w.input_len - 1)
    return Workload(arrival_s=w.arrival_s, input_len=w.input_len, output_len=w.output_len, label=w.label,
                    cached_len=cached)


def simulate_engines(load: InferLoad, cost: StepCost, cfg: EngineConfig, *, engines: int, load_factor: float,
                     router: Router, cal: Calibration, slo: Slo, one_token: bool = False) -> SimMetrics:
    """The figures of `engines` engines serving `load` x `load_factor` behind `router` (`one_token`: each request
    ends with its first token, a prefill pool's view)."""
    n_sim = int(cal.value("sim_requests"))
    warm = cal.value("sim_warmup_fraction")
    if router == "random" or engines == 1:
        w = load.replica_workload(engines, load_factor=load_factor, num_requests=n_sim)
        return summarize(simulate_engine(_hit(_one(w, one_token), load.prefix_hit, load.shared_prefix_tokens), cost,
                                         cfg), slo,
                         warmup_fraction=warm)
    most = int(cal.value("fleet_sim_replicas_max"))
    k = min(engines, most)
    # k engines at their share of the load: the whole fleet when it has at most `most`
    w = load.fleet_workload(load_factor=load_factor * k / engines, num_requests=max(n_sim, 100 * k))
    run = simulate_fleet(_hit(_one(w, one_token), load.prefix_hit, load.shared_prefix_tokens), cost, cfg, replicas=k,
                         router=router)
    return summarize(run.merged, slo, warmup_fraction=warm)


def _one(w: Workload, one_token: bool) -> Workload:
    if not one_token:
        return w
    return Workload(arrival_s=w.arrival_s, input_len=w.input_len, output_len=np.ones_like(w.output_len),
                    label=f"{w.label} (prefill only)")
