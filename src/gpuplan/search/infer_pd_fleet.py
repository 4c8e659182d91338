"""What a prefill/decode-disaggregated fleet would cost on a part, in closed form (DistServe, Zhong et al. 2024;
Splitwise, Patel et al. 2024; SGLang and RTP-LLM serve DeepSeek-V3 this way).

A prompt is prefilled on a prefill instance and its KV cache moves to a decode instance over RDMA (Mooncake /
NIXL transfer engines), so only offers whose catalog entry states an RDMA fabric qualify; both pools run the
same weights on the same part, each on its own cheapest layout:

* decode pool (estimate/infer_pd.verify_step_s): the largest batch B per attention group whose step at the mean
  context I + O/2, times `tpot_p99_over_mean`, meets the TPOT SLO and whose KV cache holds B requests; a group
  then finishes B / (O x TPOT) requests per second, and the pool has whole expert-parallel groups for
  qps x (1 + headroom). A decode group never prefills, so wide-EP groups keep their pace (no lock-step stall).
* prefill pool: one prompt of mean length takes S (estimate/infer_perf.prefill_s); prompts queue at each
  instance as an M/D/1 queue whose p99 wait is Kingman's approximation with deterministic service,
  P(W > t) ~ rho exp(-2 (1 - rho) t / (rho S)), so W99 = rho S ln(100 rho) / (2 (1 - rho)) (Kingman 1961;
  Kleinrock, Queueing Systems vol. 1, sec. 5.6); the largest utilization rho whose TTFT, request overhead +
  W99 + the p99 prompt's prefill + its KV transfer, meets the TTFT SLO sizes the pool at
  qps x (1 + headroom) x S / rho attention groups.
* a pipeline-parallel layout (stages over nodes, for weights no node holds) keeps pp batches in flight
  (simulate.pipeline.pipeline_batch): a decode group serves pp batches of B, each within 1/pp of the KV cache, and
  a prefill group pp prompts at once.

A closed form is never a plan: the cheapest fleets are then simulated per pool (search/infer_pd_sim.py), the advisor
names one (`serve.pd_disaggregation`) when it saves enough against the recommended colocated fleet, and a simulated
one is recommended instead of the colocated fleet under the rule of search/infer_pd_choice.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.estimate.infer_pd import kv_transfer_s, verify_step_s
from gpuplan.estimate.infer_perf import prefill_s
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.estimate.links import Link
from gpuplan.search.infer_capacity import LengthMoments
from gpuplan.search.infer_fleet import Offer, priced_groups
from gpuplan.search.infer_load import InferSlo
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.simulate.pipeline import pipeline_batch
from gpuplan.workload.jobs import Layout

__all__ = ["PdFleet", "PdInput", "decode_pool", "kingman_wait_p99", "pd_fleet", "pool_price", "prefill_pool",
           "with_rdma_offers"]


@dataclass(frozen=True, slots=True)
class PdInput:
    """One replica layout of the planner's loop on a part: its weights, step model, offers and expert link."""

    weights: str
    layout: Layout
    offers: list[Offer]
    link: Link | None
    cost: StepCostModel


def kingman_wait_p99(rho: float, service_s: float) -> float:
    """p99 queueing wait of an M/D/1 queue at utilization `rho` (Kingman's exponential approximation)."""
    if rho <= 0.01:
        return 0.0
    if rho >= 1.0:
        return math.inf
    return rho * service_s * math.log(100.0 * rho) / (2.0 * (1.0 - rho))


def pool_price(x: PdInput, needed: float, max_devices: int) -> tuple[int, float, Offer, int] | None:
    """`infer_fleet.priced_groups` for `needed` groups of `x`'s layout on its offers."""
    return priced_groups(x.offers, x.layout, needed, max_devices=max_devices, span=x.link is not None)


def decode_pool(x: PdInput, *, moments: LengthMoments, slo: InferSlo, qps: float, cfg: EngineConfig,
                 tpot_p99_over_mean: float, max_devices: int) -> tuple[dict[str, Any], PdInput] | None:
    lay, pp = x.layout, x.layout.pp
    # a pipeline-parallel group keeps pp batches in flight, each with 1/pp of the KV cache (simulate.pipeline)
    cm, lane_cfg = pipeline_batch(x.cost, cfg, pp)
    context = moments.in_mean + moments.out_mean / 2.0
    fits = min(int(cm.kv_capacity_tokens // (moments.in_p99 + moments.out_p99)), lane_cfg.max_num_seqs)

    def ok(b: int) -> bool:
        return verify_step_s(cm, b, context, 0) * tpot_p99_over_mean <= slo.tpot_p99_s

    if fits < 1 or not ok(1):
        return None
    lo, hi = 1, fits  # the largest batch that meets the TPOT SLO (the step grows with the batch)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    tpot = verify_step_s(cm, lo, context, 0)
    per_group = pp * lo / (moments.out_mean * tpot)
    priced = pool_price(x, qps / per_group, max_devices)
    if priced is None:
        return None
    groups, usd, offer, instances = priced
    return {"layout": {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep}, "groups": groups, "batch": lo,
            "batches_in_flight": pp, "devices": groups * lay.tp * lay.pp, "tpot_s": tpot, "instance": offer.instance,
            "instances": instances, "usd_per_hour": usd}, x


def prefill_pool(x: PdInput, transfer_p99_s: float, *, moments: LengthMoments, slo: InferSlo, qps: float,
                 cfg: EngineConfig, max_devices: int) -> tuple[dict[str, Any], PdInput] | None:
    """The cheapest prefill pool of `x`'s layout whose p99 TTFT, with `transfer_p99_s` for the p99 prompt's KV
    cache to reach its decode instance, meets the SLO; None when none does."""
    cm, lay, pp = x.cost, x.layout, x.layout.pp
    if cm.kv_capacity_tokens // pp < moments.in_p99:  # each of the pp prompts in flight holds its own KV cache
        return None
    service = prefill_s(cm, 1, moments.in_mean, cfg.max_batched_tokens, cfg.chunked_prefill)
    fixed = (cm.request_overhead + prefill_s(cm, 1, moments.in_p99, cfg.max_batched_tokens, cfg.chunked_prefill)
             + transfer_p99_s)
    if fixed > slo.ttft_p99_s:
        return None
    lo, hi = 0.0, 0.95  # the largest utilization whose p99 TTFT meets the SLO
    for _ in range(40):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if fixed + kingman_wait_p99(mid, service) <= slo.ttft_p99_s else (lo, mid)
    rho = lo
    if rho <= 0.0:
        return None
    # a pipeline-parallel group prefills pp prompts at once, one per stage: pp servers of S each
    priced = pool_price(x, qps * service / rho / pp, max_devices)
    if priced is None:
        return None
    groups, usd, offer, instances = priced
    util = qps * service / (groups * pp)
    return {"layout": {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep}, "groups": groups, "batches_in_flight": pp,
            "devices": groups * lay.tp * lay.pp, "prefill_s": service, "utilization": util,
            "ttft_p99_s": fixed + kingman_wait_p99(util, service), "instance": offer.instance,
            "instances": instances, "usd_per_hour": usd}, x


@dataclass(frozen=True, slots=True)
class PdFleet:
    """A disaggregated fleet: its JSON record and the layouts of its two pools (for `infer_pd_sim` to simulate)."""

    record: dict[str, Any]
    prefill: PdInput
    decode: PdInput
    kv_link: Link
    # prefill and decode on different parts (search/infer_pd_mixed.py): seconds per prompt token to move the KV
    # cache, the slower of the prefill device sending its shard and the decode device receiving its own; None: one
    # part, the prefill shard over `kv_link`
    pair_s_per_token: float | None = None


def pd_fleet(inputs: Sequence[PdInput], *, accelerator: str, moments: LengthMoments, slo: InferSlo, qps: float,
             headroom: float, cfg: EngineConfig, tpot_p99_over_mean: float, max_devices: int) -> PdFleet | None:
    """The cheapest disaggregated fleet on one part from the layouts the planner evaluated (`inputs`); None when
    no offer of the part states an RDMA fabric or no pair of pools meets the SLO."""
    rdma = next((o.scale_out for x in inputs for o in x.offers if o.scale_out is not None), None)
    if rdma is None:
        return None
    load = qps * (1.0 + headroom)
    best: PdFleet | None = None
    for w in sorted({x.weights for x in inputs}):
        mine = [with_rdma_offers(x) for x in inputs if x.weights == w and any(o.scale_out for o in x.offers)]
        pre = [r for x in mine if (r := prefill_pool(x, kv_transfer_s(x.cost, moments.in_p99, rdma), moments=moments,
                                                     slo=slo, qps=load, cfg=cfg, max_devices=max_devices))]
        dec = [r for x in mine if (r := decode_pool(x, moments=moments, slo=slo, qps=load, cfg=cfg,
                                                     tpot_p99_over_mean=tpot_p99_over_mean, max_devices=max_devices))]
        if not pre or not dec:
            continue
        p, px = min(pre, key=lambda r: (r[0]["usd_per_hour"], r[0]["devices"]))
        d, dx = min(dec, key=lambda r: (r[0]["usd_per_hour"], r[0]["devices"]))
        if p["devices"] + d["devices"] > max_devices:
            continue
        usd = p["usd_per_hour"] + d["usd_per_hour"]
        if best is None or usd < best.record["usd_per_hour"]:
            best = PdFleet(record={
                "accelerator": accelerator, "weights": w, "prefill": p, "decode": d, "usd_per_hour": usd,
                "devices": p["devices"] + d["devices"], "kv_link": rdma.label, "simulated": False,
                "ttft_p99_s": p["ttft_p99_s"], "tpot_p99_s": d["tpot_s"] * tpot_p99_over_mean,
                "basis": "closed form (not simulated): prefill pool as an M/D/1 queue at the TTFT SLO (Kingman), "
                         f"decode pool at the largest batch within the TPOT SLO, {headroom:.0%} headroom; the KV cache "
                         f"moves over {rdma.label}"}, prefill=px, decode=dx, kv_link=rdma)
    return best


def with_rdma_offers(x: PdInput) -> PdInput:
    """`x` on the offers that can move a prompt's KV cache between instances (an RDMA fabric)."""
    return replace(x, offers=[o for o in x.offers if o.scale_out is not None])

