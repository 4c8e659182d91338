"""The finalists of a serving plan: the cheapest candidate fleets simulated into plans.

`plan_inference` (search/infer_search.py) sizes candidate fleets in closed form; this module simulates the cheapest
of them per replica, grows each to the p99 SLO (search/infer_verify.py), prices it and writes its plan record, and
simulates the cheapest disaggregated fleets per pool (search/infer_pd_sim.py). Past the plans wanted, every part
that has candidates gets its `PART_TRIES` cheapest tried, so a buyer sees each part's price or why it failed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.hardware import Accelerator
from gpuplan.search.infer_capacity import Capacity
from gpuplan.search.infer_cp import cp_flag
from gpuplan.search.infer_fleet import Offer, advice, attention_groups, price_layout, whole_groups
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_offload import PrefixTiers
from gpuplan.search.infer_pd_fleet import PdFleet
from gpuplan.search.infer_pd_sim import simulate_pd
from gpuplan.search.infer_route import DEFAULT_ROUTER, simulate_engines
from gpuplan.search.infer_verify import min_fleet, min_replicas, score
from gpuplan.search.parallel import Ahead
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.simulate.fleet_sim import Router
from gpuplan.simulate.lockstep import lockstep_cost
from gpuplan.simulate.metrics import SimMetrics, Slo
from gpuplan.simulate.pipeline import pipeline_batch
from gpuplan.workload.engines import EngineProfile
from gpuplan.workload.jobs import Layout

__all__ = ["PART_TRIES", "PD_SIMULATED", "PD_SIMULATED_MAX", "Candidate", "bump", "candidate_label",
           "plan_record_of", "simulated_pd", "verify_candidates"]

PD_SIMULATED = 2  # disaggregated fleets simulated per pool (the cheapest in closed form); the rest stay closed forms
PD_SIMULATED_MAX = 5  # ... and the closed forms cheaper than every simulated one, up to this many simulations
PART_TRIES = 2  # candidates tried per part that has no plan after the plans wanted (its cheapest fleet)


@dataclass(slots=True, kw_only=True)
class Candidate:
    acc: Accelerator
    layout: Layout
    weights: str
    cost: StepCostModel
    cap: Capacity
    ttft0: float
    tpot0: float
    replicas: int
    usd_per_hour: float
    offer: Offer
    instances: int
    offers: list[Offer]
    spans: bool = False  # its expert group spans instances (timed on their RDMA link)
    # the engine it is planned with where not the search's (a search across stacks: its stack's default engine)
    prof: EngineProfile | None = None
    cfg: EngineConfig | None = None
    # the load as this replica serves it where its cache tiers leave less of the stated prefix hit (infer_offload)
    load: InferLoad | None = None
    tiers: PrefixTiers | None = None


def _group(c: Candidate) -> tuple[str, str]:
    """A candidate's part and market: the finalists' variety counts per both."""
    return (c.acc.id, c.offer.market)


def candidate_label(c: Candidate) -> str:
    lay = c.layout
    return f"{c.acc.id} tp{lay.tp} pp{lay.pp} ep{lay.ep}{f' cp{lay.cp}' if lay.cp > 1 else ''} {c.weights}"


def bump(rejected: dict[str, int], why: str, n: int = 1) -> None:
    rejected[why] = rejected.get(why, 0) + n


def simulated_pd(pds: list[PdFleet], load: InferLoad, slo: InferSlo, cfg: EngineConfig, cal: Calibration,
                  max_devices: int, router: Router = DEFAULT_ROUTER) -> list[dict[str, Any]]:
    """The disaggregated fleets, cheapest first: the `PD_SIMULATED` cheapest in closed form simulated per pool (one
    that misses the SLO in simulation is dropped), and after them any closed form still cheaper than every simulated
    fleet, up to `PD_SIMULATED_MAX` in all (a simulated pool grows to its SLO, so a closed form left unsimulated
    would otherwise head the list on an unchecked figure); the rest as closed forms."""
    fleets = sorted(pds, key=lambda f: f.record["usd_per_hour"])

    def sim(i: int) -> dict[str, Any] | None:
        return simulate_pd(fleets[i], load=load, slo=slo, cfg=cfg, cal=cal, max_devices=max_devices, router=router)

    out: list[dict[str, Any]] = []
    tried = 0
    # the fleets that may be simulated are computed ahead in worker processes (search/parallel.py)
    with Ahead(sim) as ahead:
        ahead.hint(range(min(PD_SIMULATED_MAX, len(fleets))))
        for i, f in enumerate(fleets):
            cheapest_sim = min((r["usd_per_hour"] for r in out if r.get("simulated")), default=math.inf)
            if tried < PD_SIMULATED or (tried < PD_SIMULATED_MAX and f.record["usd_per_hour"] < cheapest_sim):
                tried += 1
                simmed = ahead.get(i)
                if simmed is not None:
                    out.append(simmed)
                continue
            out.append(f.record)
    return sorted(out, key=lambda r: r["usd_per_hour"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    """What verifying one candidate gave: its simulations (pure functions of the candidate, so computable ahead in
    another process: search/parallel.py) and the fleet they settle on."""

    sims: int  # simulations asked for (a repeat of one already run counts), as the planner's `simulated` counts
    tried: dict[int, SimMetrics]  # replicas -> the simulation at the headroom load
    found: tuple[int, SimMetrics] | None = None  # the fewest replicas meeting the SLO, figures at the headroom
    reject: str | None = None  # why it is no plan: simulated_slo, over_capacity, max_devices
    nominal: SimMetrics | None = None  # figures at the load itself


def verify_candidates(cands: list[Candidate], load: InferLoad, slo: InferSlo, cfg: EngineConfig, cal: Calibration,
            prof: EngineProfile, rejected: dict[str, int], max_devices: int,
            router: Router = DEFAULT_ROUTER) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    """Simulate the cheapest candidates behind `router`; add replicas where the p99 SLO is missed.

    The candidates the loop will probably verify next are simulated meanwhile in worker processes where
    `search.parallel.jobs()` allows; the loop's decisions and the plans are those of one process."""
    headroom = cal.value("load_headroom")
    finalists = int(cal.value("finalists"))
    wanted = int(cal.value("plans_wanted"))
    max_sims = int(cal.value("max_simulations"))
    growth_max = cal.value("queue_growth_max")
    sim_slo = Slo(ttft_s=slo.ttft_p99_s, tpot_s=slo.tpot_p99_s)
    plans: list[dict[str, Any]] = []
    per_acc: dict[tuple[str, str], int] = {}
    seen: set[tuple[object, ...]] = set()
    near_miss: dict[str, Any] = {}
    simulated = 0
    tried = 0

    def _simulate(c: Candidate, r: int, factor: float) -> SimMetrics:
        # a pipeline-parallel replica serves as pp batches in flight (simulate.pipeline): each is an engine
        pp = c.layout.pp
        c_cfg = c.cfg or cfg
        batch_cost, batch_cfg = pipeline_batch(c.cost, c_cfg, pp)
        # attention groups of one expert group step together: the others' prefills stretch this one's steps
        cost = lockstep_cost(batch_cost, groups=attention_groups(c.layout), group_qps=load.qps * factor / (r * pp),
                             input_len_mean=load.input_len.mean, output_len_mean=load.output_len.mean,
                             max_batched_tokens=c_cfg.max_batched_tokens,
                             chunked_prefill=c_cfg.chunked_prefill)
        return simulate_engines(c.load or load, cost, batch_cfg, engines=r * pp, load_factor=factor, router=router,
                                cal=cal, slo=sim_slo)

    def trial(i: int) -> Trial:
        """Simulate candidate i, grow it to the SLO and price it (no bookkeeping: it may run in a worker)."""
        c = cands[i]
        memo: dict[tuple[int, float], SimMetrics] = {}
        asked = 0

        def sim(r: int, factor: float) -> SimMetrics:
            nonlocal asked
            asked += 1
            if (r, factor) not in memo:
                memo[(r, factor)] = _simulate(c, r, factor)
            return memo[(r, factor)]

        def run(r: int) -> SimMetrics:
            return sim(r, 1.0 + headroom)

        tried_sims: dict[int, SimMetrics] = {}
        floor = min_fleet(load.qps, c.cap.requests_per_s)
        found = min_replicas(run, max(c.replicas, floor), slo, seen=tried_sims, floor=floor,
                             queue_growth_max=growth_max)
        if found is None:
            return Trial(sims=asked, tried=tried_sims, reject="simulated_slo")
        r, m_head = found
        if whole_groups(r, c.layout) != r:  # attention groups come in whole expert-parallel groups
            r = whole_groups(r, c.layout)
            m_head = run(r)
        if load.qps / (r * c.cap.requests_per_s) > 1.0:  # over 100% utilization: never a plan
            return Trial(sims=asked, tried=tried_sims, found=(r, m_head), reject="over_capacity")
        if r * c.layout.tp * c.layout.pp * c.layout.cp > max_devices:
            return Trial(sims=asked, tried=tried_sims, found=(r, m_head), reject="max_devices")
        m = sim(r, 1.0)  # priced by the caller: the offers differ between candidates that share this trial
        return Trial(sims=asked, tried=tried_sims, found=(r, m_head), nominal=m)

    def apply(c: Candidate, t: Trial) -> None:
        """The loop's bookkeeping for a verified candidate: its simulations, the rejection or the plan."""
        nonlocal simulated
        simulated += t.sims
        if t.found is None:
            bump(rejected, "simulated_slo")
            r_max = max(t.tried)
            m_max = t.tried[r_max]
            how_far = score(m_max, slo, growth_max)
            if how_far < near_miss.get("score", math.inf):
                near_miss.update(score=how_far, on=f"{r_max} x {candidate_label(c)}", ttft_p99_s=m_max.ttft_s.p99,
                                 tpot_p99_s=m_max.tpot_s.p99)
            return
        if t.reject is not None:
            bump(rejected, t.reject)
            return
        r, m_head = t.found
        assert t.nominal is not None
        priced = price_layout(c.offers, r, c.layout, span=c.spans)
        if priced is None:  # pragma: no cover - more replicas fit the same offers
            simulated -= 1  # the loop never simulated the nominal load of an unpriced fleet
            return
        usd, offer, n_inst = priced
        per_acc[_group(c)] = per_acc.get(_group(c), 0) + 1
        plans.append(plan_record_of(c, r, usd, offer, n_inst, t.nominal, m_head, load, cal, c.prof or prof, router))

    def fresh_key(c: Candidate) -> tuple[object, ...]:
        # formats with the same speed and size on a part (e.g. fp8 and int8 on H200) give one fleet
        return (c.acc.id, c.offer.market, c.layout, c.replicas, round(c.usd_per_hour, 6),
                round(c.cap.requests_per_s, 9), round(c.ttft0, 12), round(c.tpot0, 12))

    def fresh(c: Candidate) -> bool:
        key = fresh_key(c)
        if key in seen:
            return False
        seen.add(key)
        return True

    # a part offered in two markets is one fleet priced twice: its simulations are the same (they read the step
    # cost, layout, replicas and load, never the price), so its trial is run once for both
    same: dict[tuple[object, ...], int] = {}

    def trial_of(i: int) -> int:
        c = cands[i]
        return same.setdefault((id(c.cost), c.layout, c.replicas, c.cap.requests_per_s, id(c.cfg), id(c.load)), i)

    def verify(i: int, ahead: Ahead[int, Trial], upcoming: Iterator[int]) -> None:
        ahead.hint(chain([trial_of(i)], (trial_of(j) for j in upcoming)))  # this one first, then the likely next
        apply(cands[i], ahead.get(trial_of(i)))

    # the candidates the loop will probably verify after candidate i: its own filters, as if i and each of them
    # became a plan (most do); a wrong guess only costs a discarded result
    def first_pass_next(i: int) -> Iterator[int]:
        acc = dict(per_acc)
        acc[_group(cands[i])] = acc.get(_group(cands[i]), 0) + 1
        keys = set(seen)
        for j in range(i + 1, len(cands)):
            g, key = _group(cands[j]), fresh_key(cands[j])
            if acc.get(g, 0) >= 2 or key in keys:
                continue
            keys.add(key)
            acc[g] = acc.get(g, 0) + 1
            yield j

    def extra_next(i: int) -> Iterator[int]:
        have = set(per_acc) | {_group(cands[i])}
        keys = set(seen)
        for j in range(i + 1, len(cands)):
            g, key = _group(cands[j]), fresh_key(cands[j])
            if g in have or extra.get(g, 0) >= PART_TRIES or key in keys:
                continue
            keys.add(key)
            have.add(g)
            yield j

    extra: dict[tuple[str, str], int] = {}
    with Ahead(trial) as ahead:
        for i, c in enumerate(cands):
            if tried >= finalists or len(plans) >= wanted or (plans and simulated >= max_sims):
                break
            if per_acc.get(_group(c), 0) >= 2 or not fresh(c):  # variety: at most two plans per part and market
                continue
            tried += 1
            verify(i, ahead, first_pass_next(i))
        # every part that has candidates shows its cheapest fleet, even past the plans wanted: a buyer compares
        # parts (a domestic part at twice the price is an answer, not a miss); its PART_TRIES cheapest candidates
        # are tried, in each market it is offered in when no --market was given (the buyer rents in its own:
        # advise.trust)
        for i, c in enumerate(cands):
            if _group(c) in per_acc or extra.get(_group(c), 0) >= PART_TRIES or not fresh(c):
                continue
            extra[_group(c)] = extra.get(_group(c), 0) + 1
            verify(i, ahead, extra_next(i))
    return plans, simulated, near_miss



def plan_record_of(c: Candidate, r: int, usd: float, offer: Offer, n_inst: int, m: SimMetrics, m_head: SimMetrics,
                 load: InferLoad, cal: Calibration, prof: EngineProfile,
                 router: Router = DEFAULT_ROUTER) -> dict[str, Any]:
    lay = c.layout
    util = load.qps / (r * c.cap.requests_per_s)
    in_h = load.qps * load.input_len.mean * 3600.0
    out_h = load.qps * load.output_len.mean * 3600.0
    share_in = c.cap.prefill_share
    growth = m_head.e2e_s.p99 / m.e2e_s.p99 - 1.0 if m.e2e_s.p99 > 0 else 0.0
    pct = {"mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0}

    def p(x: Any) -> dict[str, float]:
        return {k: float(getattr(x, k)) for k in pct}

    return {
        "accelerator": c.acc.id, "instance": offer.instance, "instances": n_inst, "instance_tenancy": offer.tenancy,
        "per_card": offer.cards_per_host is not None,
        "price_kind": offer.kind, "devices": r * lay.tp * lay.pp * lay.cp, "replicas": r,
        "layout": {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep, **({"cp": lay.cp} if lay.cp > 1 else {})},
        "weights": c.weights, "engine": prof.id,
        "router": router,
        "cost_usd_per_hour": usd,
        "cost_usd_per_million_input_tokens": usd * share_in / in_h * 1e6,
        "cost_usd_per_million_output_tokens": usd * (1.0 - share_in) / out_h * 1e6,
        "cost_usd_per_million_tokens": usd / (in_h + out_h) * 1e6,
        "utilization": util,
        "capacity_requests_per_s_per_replica": c.cap.requests_per_s, "capacity_limited_by": c.cap.limited_by,
        "kv_capacity_tokens_per_replica": c.cost.kv_capacity_tokens,
        "unloaded": {"ttft_p99_prompt_s": c.ttft0, "tpot_s": c.tpot0},
        "ttft_s": p(m.ttft_s), "tpot_s": p(m.tpot_s), "e2e_s": p(m.e2e_s), "queue_s_mean": m.queue_s.mean,
        "goodput_fraction": m.goodput_fraction, "kv_used_mean_fraction": m.kv_used_mean_fraction,
        "batch_mean": m.batch_mean, "preemptions": m.preemptions,
        "at_headroom": {"qps": load.qps * (1.0 + cal.value("load_headroom")), "ttft_p99_s": m_head.ttft_s.p99,
                        "tpot_p99_s": m_head.tpot_s.p99, "e2e_p99_s": m_head.e2e_s.p99},
        "advice": advice(util, growth, offer, cal),
        **({"prefix_tiers": c.tiers.to_json()} if c.tiers is not None else {}),
        **({"context_parallel": {"cp": lay.cp, "launch": cp_flag(prof.id, c.acc, lay.cp)}} if lay.cp > 1 else {}),
        "provenance": f"estimated: per-step cost model + discrete-event simulation of the replicas behind a {router} "
                      "router; prices from the catalog (see the instance's source)",
    }
