"""Simulate the two pools of a disaggregated fleet (`infer_pd_fleet`) and size each to the SLO.

The closed forms of `infer_pd_fleet` are the first guess; as for colocated fleets (`infer_verify.min_replicas`),
each pool is then simulated per attention group at qps x (1 + headroom) / groups and grown or shrunk to the
fewest groups that meet its share of the SLO with a queue that drains:

1. decode pool: requests arrive with their KV cache (`simulate.decode_instance.DecodeInstanceCost`), so its
   simulated TTFT is the wait for a batch slot and its TPOT the fleet's; it must meet the TPOT SLO.
2. prefill pool: the same arrivals with one output token each; its p99 TTFT must fit what the TTFT SLO leaves
   after the p99 prompt's KV transfer and the decode pool's p99 wait.

The fleet's p99 TTFT is then the sum of those three p99s (conservative: they do not peak together) and its
TPOT the decode pool's. Both pools are re-priced at their simulated sizes.
"""

from __future__ import annotations

from typing import Any

from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.infer_pd import kv_transfer_s
from gpuplan.search.infer_fleet import whole_groups
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_pd_fleet import PdFleet, PdInput, pool_price
from gpuplan.search.infer_route import DEFAULT_ROUTER, simulate_engines
from gpuplan.search.infer_verify import min_replicas
from gpuplan.simulate.decode_instance import DecodeInstanceCost
from gpuplan.simulate.engine_sim import EngineConfig, StepCost
from gpuplan.simulate.fleet_sim import Router
from gpuplan.simulate.metrics import SimMetrics, Slo
from gpuplan.simulate.pipeline import pipeline_batch
from gpuplan.units import GB

__all__ = ["simulate_pd"]


def _pool(x: PdInput, cost: StepCost, groups0: int, slo: InferSlo, *, load: InferLoad, cfg: EngineConfig,
          cal: Calibration, one_token: bool, router: Router) -> tuple[int, SimMetrics] | None:
    """The fewest groups of `x`'s layout that meet `slo`, simulated behind `router`; `cost` and `cfg` are those of
    one of the pp batches a pipeline-parallel group keeps in flight (simulate.pipeline), which takes 1/pp of a
    group's load."""
    lanes = x.layout.pp
    headroom = cal.value("load_headroom")
    sim_slo = Slo(ttft_s=slo.ttft_p99_s, tpot_s=slo.tpot_p99_s)

    def run(groups: int) -> SimMetrics:
        # a prefill instance hands each request on with its first token
        return simulate_engines(load, cost, cfg, engines=groups * lanes, load_factor=1.0 + headroom, router=router,
                                cal=cal, slo=sim_slo, one_token=one_token)

    found = min_replicas(run, groups0, slo, queue_growth_max=cal.value("queue_growth_max"))
    if found is None:
        return None
    groups, m = found
    whole = whole_groups(groups, x.layout)  # attention groups come in whole expert-parallel groups
    return (whole, run(whole)) if whole != groups else (groups, m)


def simulate_pd(f: PdFleet, *, load: InferLoad, slo: InferSlo, cfg: EngineConfig, cal: Calibration,
                max_devices: int, router: Router = DEFAULT_ROUTER) -> dict[str, Any] | None:
    """`f`'s record with both pools simulated and re-sized to the SLO; None when a pool cannot meet it."""
    rec = f.record
    link_bw = float(f.kv_link.bandwidth_gbyte_s) * GB
    dec_lane, dec_cfg = pipeline_batch(f.decode.cost, cfg, f.decode.layout.pp)
    # two parts (infer_pd_mixed): the slower of the prefill side sending and the decode side receiving, per token
    per_token = f.pair_s_per_token if f.pair_s_per_token is not None else f.decode.cost.kv_bytes_per_token / link_bw
    dec_cost = DecodeInstanceCost(dec_lane, transfer_s_per_token=per_token)
    dec = _pool(f.decode, dec_cost, int(rec["decode"]["groups"]), slo, load=load, cfg=dec_cfg, cal=cal,
                one_token=False, router=router)
    if dec is None:
        return None
    g_dec, m_dec = dec
    p99_prompt = float(load.input_len.quantile(0.99))
    transfer = (kv_transfer_s(f.prefill.cost, p99_prompt, f.kv_link) if f.pair_s_per_token is None
                else float(f.kv_link.latency_s) + f.pair_s_per_token * p99_prompt)
    budget = slo.ttft_p99_s - transfer - m_dec.ttft_s.p99
    if budget <= 0.0:
        return None
    pre_lane, pre_cfg = pipeline_batch(f.prefill.cost, cfg, f.prefill.layout.pp)
    pre = _pool(f.prefill, pre_lane, int(rec["prefill"]["groups"]),
                InferSlo(ttft_p99_s=budget, tpot_p99_s=slo.tpot_p99_s), load=load, cfg=pre_cfg, cal=cal,
                one_token=True, router=router)
    if pre is None:
        return None
    g_pre, m_pre = pre
    p_priced, d_priced = pool_price(f.prefill, g_pre, max_devices), pool_price(f.decode, g_dec, max_devices)
    if p_priced is None or d_priced is None:
        return None
    pools = {}
    for name, x, priced, m in (("prefill", f.prefill, p_priced, m_pre), ("decode", f.decode, d_priced, m_dec)):
        groups, usd, offer, instances = priced
        extra = ({"utilization": load.qps * (1.0 + cal.value("load_headroom")) * rec[name]["prefill_s"]
                  / (groups * x.layout.pp)} if name == "prefill" else {})
        pools[name] = {**rec[name], **extra, "groups": groups, "devices": groups * x.layout.tp * x.layout.pp,
                       "instance": offer.instance, "instances": instances, "usd_per_hour": usd,
                       "simulated": ({"ttft_p99_s": m.ttft_s.p99} if name == "prefill" else
                                     {"wait_p99_s": m.ttft_s.p99, "tpot_p99_s": m.tpot_s.p99})
                       | {"queue_s_mean": m.queue_s.mean, "batch_mean": m.batch_mean}}
    devices = pools["prefill"]["devices"] + pools["decode"]["devices"]
    if devices > max_devices:
        return None
    return {**rec, **pools, "devices": devices,
            "usd_per_hour": pools["prefill"]["usd_per_hour"] + pools["decode"]["usd_per_hour"],
            "ttft_p99_s": m_pre.ttft_s.p99 + transfer + m_dec.ttft_s.p99, "tpot_p99_s": m_dec.tpot_s.p99,
            "simulated": True, "router": router,
            "basis": f"simulated per pool at {cal.value('load_headroom'):.0%} headroom (the closed forms as the first "
                     "guess): p99 TTFT = prefill pool p99 + the p99 prompt's KV transfer + the decode pool's p99 wait "
                     f"for a slot; the KV cache moves over {f.kv_link.label}; not a plan"}
