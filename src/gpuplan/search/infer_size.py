"""Size one serving candidate in closed form: memory, unloaded latency, SLO-bound capacity, replicas, price.

The planner's candidate loop (`infer_search.plan_inference`) and the RDMA what-if (`infer_whatif`) take
the same steps on a per-step cost model; this is them, once:

1. the KV cache must hold the longest request (`kv_too_small`; none at all: `out_of_memory`);
2. the unloaded p99-prompt TTFT and the lone TPOT must meet the SLO (`ttft_slo`, `tpot_slo`);
3. replicas = ceil(qps x (1 + headroom) / the replica's SLO-bound capacity), in whole expert-parallel
   groups, within the device limit (`max_devices`);
4. the fleet is priced on the cheapest offer that hosts it (`no_instance_fits`); steps 3-4 are
   `infer_fleet.priced_groups`, which the disaggregated pools (`infer_pd_fleet`) use too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.search.infer_capacity import Capacity, LengthMoments, capacity, unloaded_latency
from gpuplan.search.infer_fleet import Offer, priced_groups, whole_groups
from gpuplan.search.infer_load import InferSlo
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.simulate.pipeline import pipeline_batch
from gpuplan.workload.jobs import Layout

__all__ = ["Sized", "priced_on", "size_fleet"]


@dataclass(frozen=True, slots=True)
class Sized:
    """A candidate sized in closed form; `rejected` names the first step it failed (None: a priced fleet)."""

    rejected: str | None
    ttft0: float = math.inf  # unloaded p99-prompt TTFT, s
    tpot0: float = math.inf  # lone TPOT, s
    cap: Capacity | None = None
    replicas: int = 0
    usd_per_hour: float = 0.0
    offer: Offer | None = None
    instances: int = 0


def size_fleet(cm: StepCostModel, layout: Layout, offers: list[Offer], *, cfg: EngineConfig,
               moments: LengthMoments, slo: InferSlo, qps: float, headroom: float, tpot_p99_over_mean: float,
               need_tokens: float, max_devices: int, span: bool) -> Sized:
    """Steps 1-4 of the module docstring for one replica layout on `offers` (`span`: its expert group may span
    instances, timed on their RDMA link)."""
    if cm.kv_capacity_tokens <= 0:
        return Sized("out_of_memory")
    if cm.kv_capacity_tokens < need_tokens:
        return Sized("kv_too_small")
    ttft0, tpot0 = unloaded_latency(cm, cfg, moments)
    if ttft0 > slo.ttft_p99_s:
        return Sized("ttft_slo", ttft0, tpot0)
    # a pipeline-parallel replica serves as pp batches in flight (simulate.pipeline.pipeline_batch)
    batch_cost, batch_cfg = pipeline_batch(cm, cfg, layout.pp)
    cap = capacity(batch_cost, batch_cfg, moments, slo.tpot_p99_s, tpot_p99_over_mean=tpot_p99_over_mean)
    cap = replace(cap, requests_per_s=cap.requests_per_s * layout.pp)
    if tpot0 > slo.tpot_p99_s or cap.requests_per_s <= 0:
        return Sized("tpot_slo", ttft0, tpot0, cap)
    return priced_on(Sized(None, ttft0, tpot0, cap), layout, offers, qps=qps, headroom=headroom,
                     max_devices=max_devices, span=span)


def priced_on(sized: Sized, layout: Layout, offers: list[Offer], *, qps: float, headroom: float, max_devices: int,
              span: bool) -> Sized:
    """Step 4 alone: a replica sized in closed form (`sized.cap`) priced on `offers` (the cheapest whole groups that
    carry the load with its headroom); the same replica on another market's offers is priced again, not re-sized."""
    cap = sized.cap
    assert cap is not None and cap.requests_per_s > 0
    needed = qps * (1.0 + headroom) / cap.requests_per_s
    priced = priced_groups(offers, layout, needed, max_devices=max_devices, span=span)
    if priced is None:
        replicas = whole_groups(max(1, math.ceil(needed)), layout)
        why = "max_devices" if replicas * layout.tp * layout.pp * layout.cp > max_devices else "no_instance_fits"
        return Sized(why, sized.ttft0, sized.tpot0, cap, replicas)
    replicas, usd, offer, instances = priced
    return Sized(None, sized.ttft0, sized.tpot0, cap, replicas, usd, offer, instances)
