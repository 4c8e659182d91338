"""Plan inference: the cheapest fleet of catalog instances that meets a p99 TTFT/TPOT SLO under a load.

For every accelerator that passes the policy filters (the training planner's `policy_rejection`:
market, vendor, provider, domestic-only), every weight format it runs (bf16, fp8 where the
part has 8-bit float tensor cores, int8, int4) and every replica layout inside one node (TP, PP
only where TP cannot grow because the heads do not divide, EP over the TP ranks for MoE models):

1. memory: weights must fit and the KV cache must hold the longest request;
2. closed forms (`infer_capacity`): the unloaded p99-prompt TTFT and lone TPOT must meet
   the SLO; the replica's SLO-bound capacity sizes the replica count for qps x (1 +
   load_headroom); the fleet is priced on the cheapest catalog instance that hosts it;
3. the cheapest fleets (at most `finalists`) are simulated per replica at
   qps x (1 + headroom) / replicas; a fleet that misses the p99 SLO, or whose simulated queue
   does not drain (queueing delay growing over the run by more than `queue_growth_max` of the
   TTFT limit), gets more replicas. A fleet is never smaller than qps / the replica's capacity:
   utilization above 100% is rejected, whatever a finite simulation shows.
Verified plans are then simulated at the requested load for the figures they report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.infer_step import node_devices, step_cost_model
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.estimate.memory_infer import matrix_bytes_per_param
from gpuplan.hardware import Accelerator, Catalog
from gpuplan.search import progress
from gpuplan.search.infer_capacity import Capacity, length_moments
from gpuplan.search.infer_engines import with_engine_hint
from gpuplan.search.infer_fleet import Offer, advice, attention_groups, fleet_offers, price_layout, whole_groups
from gpuplan.search.infer_layouts import placements
from gpuplan.search.infer_load import InferLoad, InferSlo, planner_terms, slo_unit_warning
from gpuplan.search.infer_misses import parts_without_plan
from gpuplan.search.infer_pd_fleet import PdFleet, PdInput, pd_fleet
from gpuplan.search.infer_pd_sim import simulate_pd
from gpuplan.search.infer_size import size_fleet
from gpuplan.search.infer_verify import min_fleet, min_replicas, score
from gpuplan.search.infer_whatif import rdma_what_if
from gpuplan.search.plan_trust import meets_trust, serving_bands, serving_confidence
from gpuplan.search.train_search import PlanConstraints, policy_rejection
from gpuplan.simulate.engine_sim import EngineConfig, simulate_engine
from gpuplan.simulate.lockstep import lockstep_cost
from gpuplan.simulate.metrics import SimMetrics, Slo, summarize
from gpuplan.simulate.pipeline import pipeline_batch
from gpuplan.units import GIB
from gpuplan.workload.engines import EngineProfile, engine
from gpuplan.workload.jobs import SERVED_WEIGHTS, InferenceJob, Layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["InferConstraints", "InferPlanResult", "plan_inference", "plan_record"]

WEIGHTS = SERVED_WEIGHTS
PD_SIMULATED = 2  # disaggregated fleets simulated per pool (the cheapest in closed form); the rest stay closed forms
PD_SIMULATED_MAX = 5  # ... and the closed forms cheaper than every simulated one, up to this many simulations
PART_TRIES = 2  # candidates tried per part that has no plan after the plans wanted (its cheapest fleet)
KV_DTYPES = ("bf16", "fp16", "fp8", "int8")
TERMS_USED = ("load_headroom", "tpot_p99_over_mean", "max_simulations", "dedicated_utilization",
              "dedicated_p99_growth", "sim_requests", "sim_warmup_fraction", "finalists", "plans_wanted",
              "queue_growth_max")


@dataclass(frozen=True, slots=True, kw_only=True)
class InferConstraints:
    market: str | None = None
    vendor: str | None = None
    provider: str | None = None
    domestic_only: bool = False
    max_devices: int = 1024
    accelerators: tuple[str, ...] = ()
    weights: tuple[str, ...] = WEIGHTS
    kv_dtype: str = "bf16"
    trust: str = "low"  # plan_trust.LEVELS: keep fleets whose confidence is at least this

    def __post_init__(self) -> None:
        if self.max_devices < 1:
            raise InputError(field="max-devices", value=self.max_devices, allowed="a positive integer")
        bad = [w for w in self.weights if w not in WEIGHTS]
        if bad or not self.weights:
            raise InputError(field="weights", value=",".join(bad) or "(none)", allowed=", ".join(WEIGHTS))
        if self.kv_dtype not in KV_DTYPES:
            raise InputError(field="kv-dtype", value=self.kv_dtype, allowed=", ".join(KV_DTYPES))

    def policy(self) -> PlanConstraints:
        return PlanConstraints(market=self.market, vendor=self.vendor, provider=self.provider,
                               domestic_only=self.domestic_only, accelerators=self.accelerators)


@dataclass(frozen=True, slots=True, kw_only=True)
class InferPlanResult:
    plans: list[dict[str, Any]]
    candidates_evaluated: int
    simulated: int
    rejected: dict[str, int]
    hardware_considered: list[str]
    best_unloaded: dict[str, Any]
    terms: dict[str, dict[str, object]] = field(default_factory=dict)
    what_if_rdma: dict[str, Any] | None = None  # infer_whatif: the cheapest wide-EP fleet if an offer had RDMA
    what_if_rdma_all: list[dict[str, Any]] = field(default_factory=list)  # one per part, cheapest first
    what_if_pd_all: list[dict[str, Any]] = field(default_factory=list)  # infer_pd_fleet: disaggregated, per part
    # each part searched that has no fleet in `plans`, and why: its best unloaded TTFT/TPOT against the SLO, else the
    # load, memory or cost (infer_misses.parts_without_plan)
    parts_without_plan: list[dict[str, Any]] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class _Cand:
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


def _label(c: _Cand) -> str:
    lay = c.layout
    return f"{c.acc.id} tp{lay.tp} pp{lay.pp} ep{lay.ep} {c.weights}"


def _bump(rejected: dict[str, int], why: str, n: int = 1) -> None:
    rejected[why] = rejected.get(why, 0) + n





def plan_inference(spec: ModelSpec, load: InferLoad, slo: InferSlo, catalog: Catalog,
                   cons: InferConstraints | None = None, *, engine_profile: EngineProfile | None = None,
                   terms: Calibration | None = None, alternatives: bool = True,
                   suggest_engines: bool | None = None) -> InferPlanResult:
    """Cheapest verified fleets first; raises InputError (with the nearest feasible alternative) if none.
    `alternatives=False` skips what RDMA would buy and the disaggregated fleets (a re-plan that reads only the
    plans: the growth re-plan, `compare`, the other engines of advise.report_infer.named_engine). `suggest_engines`
    (default: as `alternatives`) re-plans with the other engines when nothing meets the SLO, to name one that does:
    `compare` asks for it, the growth re-plan (whose failure is an ordinary finding) does not."""
    prof = engine_profile or engine("vllm")
    cons = cons or InferConstraints()
    try:
        return _plan(spec, load, slo, catalog, cons, prof, terms, alternatives)
    except InputError as exc:
        if not (alternatives if suggest_engines is None else suggest_engines):
            raise
        # another engine on the same parts may meet the SLO (MindIE where vLLM-Ascend cannot): say so
        raise with_engine_hint(exc, prof.id, lambda other: _plan(
            spec, load, slo, catalog, cons, other, terms, False).plans) from None


def plan_record(spec: ModelSpec, load: InferLoad, slo: InferSlo, res: InferPlanResult, prof: EngineProfile,
                kv_dtype: str, *, slo_names: tuple[str, str] = ("--ttft-p99", "--tpot-p99")) -> dict[str, Any]:
    """The `plan infer --json` document of one search, built once for the CLI and the API: the SLO carries a
    warning when it reads like milliseconds (`slo_names`: the options or fields it came from)."""
    warning = slo_unit_warning(slo.ttft_p99_s, slo.tpot_p99_s, names=slo_names)
    return {"model": spec.name, "load": load.to_json(),
            "slo": {"ttft_p99_s": slo.ttft_p99_s, "tpot_p99_s": slo.tpot_p99_s,
                    **({"warning": warning} if warning else {})},
            "engine": prof.id, "candidates_evaluated": res.candidates_evaluated,
            "simulated": res.simulated, "plans": res.plans, "rejected": res.rejected,
            "hardware_considered": res.hardware_considered, "best_unloaded": res.best_unloaded,
            "what_if_rdma": res.what_if_rdma, "what_if_rdma_all": res.what_if_rdma_all,
            "what_if_pd_all": res.what_if_pd_all, "parts_without_plan": res.parts_without_plan,
            "terms": res.terms, "engine_terms": prof.used(),
            "kv_dtype": kv_dtype}


def _plan(spec: ModelSpec, load: InferLoad, slo: InferSlo, catalog: Catalog, cons: InferConstraints,
          prof: EngineProfile, terms: Calibration | None, alternatives: bool) -> InferPlanResult:
    cal = terms or planner_terms()
    cfg = EngineConfig.from_profile(prof)
    headroom = cal.value("load_headroom")
    ratio = cal.value("tpot_p99_over_mean")
    moments = length_moments(load.input_len, load.output_len)
    counts = count_params(spec)
    need_tokens = load.max_request_tokens
    rejected: dict[str, int] = {}
    considered: list[str] = []
    cands: list[_Cand] = []
    best: dict[str, Any] = {}
    per_part: dict[str, dict[str, Any]] = {}  # the same, per accelerator (parts_without_plan)
    unsupported: dict[str, list[str]] = {}  # weight formats a part cannot run (no fp8 peak), per accelerator
    largest: tuple[float, str] = (0.0, "")  # usable bytes of the largest allowed device
    evaluated = 0
    alts: list[dict[str, Any]] = []
    pds: list[PdFleet] = []
    policy = cons.policy()
    for acc in progress.each(catalog.accelerators.values()):
        why = policy_rejection(acc, policy)
        if why:
            _bump(rejected, why)
            continue
        if not prof.runs_on(acc):  # TensorRT-LLM on Ascend, MindIE on NVIDIA, SGLang on a V100: no such fleet
            _bump(rejected, "engine_unsupported")
            continue
        offers = fleet_offers(catalog, acc.id, market=cons.market, provider=cons.provider)
        if not offers:
            _bump(rejected, "no_price")
            continue
        considered.append(acc.id)
        alt = rdma_what_if(spec, acc, offers, weights=cons.weights, kv_dtype=cons.kv_dtype, engine=prof, cfg=cfg,
                           moments=moments, load=load, slo=slo, headroom=headroom, tpot_p99_over_mean=ratio,
                           need_tokens=need_tokens, max_devices=cons.max_devices,
                           catalog=catalog) if alternatives else None
        if alt is not None:
            alts.append(alt)
        # an attention group lives in one instance and one node (infer_step.node_devices)
        node = node_devices(acc)
        max_node = min(max(o.host_devices for o in offers), node)
        mem = float(acc.memory_gib or 0.0) * GIB * prof.gpu_memory_fraction
        largest = max(largest, (mem, acc.id))
        pd_inputs: list[PdInput] = []
        for weights in cons.weights:
            if weights == "fp8" and acc.dense_tflops("fp8") is None:
                _bump(rejected, "weights_unsupported")
                unsupported.setdefault(acc.id, []).append(weights)
                continue
            mb = matrix_bytes_per_param(spec, InferenceJob(weights=weights))
            for lay, lay_offers, link in placements(spec, max_node, offers, node=node):
                if lay.tp * lay.pp > node and counts.total * mb / node <= mem:
                    continue  # a node holds the weights: pipeline stages across nodes only add devices and hops
                evaluated += 1
                if max(lay.tp, lay.ep) * lay.pp > cons.max_devices:
                    _bump(rejected, "max_devices")
                    continue
                split = max(lay.tp, lay.ep) * lay.pp
                lower = counts.total * mb / split  # weights per device can be no less
                if lower > mem:
                    _bump(rejected, "out_of_memory")
                    continue
                try:
                    cm = step_cost_model(spec, accelerator=acc, layout=lay, weights=weights, kv_dtype=cons.kv_dtype,
                                         engine=prof, catalog=catalog, scale_out=link)
                except GpuplanError as exc:  # an incomplete catalog entry, or a layout the model cannot split
                    _bump(rejected, "missing_data" if getattr(exc, "field", "") == "accelerator" else "layout_invalid")
                    continue
                pd_inputs.append(PdInput(weights=weights, layout=lay, offers=lay_offers, link=link, cost=cm))
                sz = size_fleet(cm, lay, lay_offers, cfg=cfg, moments=moments, slo=slo, qps=load.qps,
                                headroom=headroom, tpot_p99_over_mean=ratio, need_tokens=need_tokens,
                                max_devices=cons.max_devices, span=link is not None)
                label = f"{acc.id} tp{lay.tp} pp{lay.pp} ep{lay.ep} {weights}"
                mine = per_part.setdefault(acc.id, {})
                if sz.ttft0 < mine.get("ttft_s", math.inf):
                    mine.update(ttft_s=sz.ttft0, ttft_on=label)
                if sz.tpot0 < mine.get("tpot_s", math.inf):
                    mine.update(tpot_s=sz.tpot0, tpot_on=label)
                if sz.ttft0 < best.get("ttft_s", math.inf):
                    best.update(ttft_s=sz.ttft0, ttft_on=label)
                if sz.tpot0 < best.get("tpot_s", math.inf):
                    best.update(tpot_s=sz.tpot0, tpot_on=label)
                if sz.rejected == "max_devices":
                    devices = sz.replicas * lay.tp * lay.pp
                    if "devices_needed" not in best or devices < best["devices_needed"][0]:
                        best["devices_needed"] = (devices, label)
                if sz.rejected is not None or sz.cap is None or sz.offer is None:
                    _bump(rejected, sz.rejected or "no_instance_fits")
                    continue
                cands.append(_Cand(acc=acc, layout=lay, weights=weights, cost=cm, cap=sz.cap, ttft0=sz.ttft0,
                                   tpot0=sz.tpot0, replicas=sz.replicas, usd_per_hour=sz.usd_per_hour,
                                   offer=sz.offer, instances=sz.instances, offers=lay_offers,
                                   spans=link is not None))
        # the disaggregated fleet is launched with SGLang (emit sglang --disaggregated): only on parts it runs on
        pd = pd_fleet(pd_inputs, accelerator=acc.id, moments=moments, slo=slo, qps=load.qps, headroom=headroom, cfg=cfg,
                      tpot_p99_over_mean=ratio, max_devices=cons.max_devices) if (
            alternatives and engine("sglang").runs_on(acc)) else None
        if pd is not None:
            pds.append(pd)
    pd_records = _simulated_pd(pds, load, slo, cfg, cal, cons.max_devices)
    if not cands:
        int4_bytes = counts.total * matrix_bytes_per_param(spec, InferenceJob(weights="int4"))
        _no_plan(spec, slo, cons, rejected, best, int4_bytes, largest, considered, prof)
    cands.sort(key=lambda c: (c.usd_per_hour, c.replicas * c.layout.tp * c.layout.pp, c.tpot0))
    plans, simulated, near = _verify(cands, load, slo, cfg, cal, prof, rejected, cons.max_devices)
    if not plans:
        closest = (f"the closest simulated fleet, {near['on']}, reached p99 TTFT {near['ttft_p99_s']:.3f} s and "
                   f"TPOT {near['tpot_p99_s']:.4f} s at the headroom load" if near else "no fleet fit --max-devices")
        raise InputError(field="slo", value=f"ttft-p99={slo.ttft_p99_s:g}s tpot-p99={slo.tpot_p99_s:g}s",
                         allowed="an SLO that a simulated fleet meets under the load",
                         hint=f"nearest feasible: {closest}; unloaded, the best p99-prompt TTFT is "
                              f"{best.get('ttft_s', math.nan):.3f} s on {best.get('ttft_on')}; relax the SLO")
    plans.sort(key=lambda p: (p["cost_usd_per_hour"], p["devices"]))
    plans = _with_trust(plans, catalog, prof, spec, cons, rejected)
    # one per part, cheapest first: the advisor names the cheapest whose part draws no blocking finding in its
    # market (as the recommendation does) and saves enough against the recommended fleet
    alts.sort(key=lambda a: a["usd_per_hour"])
    cheapest = alts[0] if alts and alts[0]["usd_per_hour"] < plans[0]["cost_usd_per_hour"] else None
    return InferPlanResult(plans=plans, candidates_evaluated=evaluated, simulated=simulated, rejected=rejected,
                           hardware_considered=considered, best_unloaded=best, terms=cal.used(*TERMS_USED),
                           what_if_rdma=cheapest, what_if_rdma_all=alts,
                           what_if_pd_all=pd_records,
                           parts_without_plan=parts_without_plan(considered, plans, per_part, slo,
                                                                 unsupported=unsupported))


def _simulated_pd(pds: list[PdFleet], load: InferLoad, slo: InferSlo, cfg: EngineConfig, cal: Calibration,
                  max_devices: int) -> list[dict[str, Any]]:
    """The disaggregated fleets, cheapest first: the `PD_SIMULATED` cheapest in closed form simulated per pool (one
    that misses the SLO in simulation is dropped), and after them any closed form still cheaper than every simulated
    fleet, up to `PD_SIMULATED_MAX` in all (a simulated pool grows to its SLO, so a closed form left unsimulated
    would otherwise head the list on an unchecked figure); the rest as closed forms."""
    out: list[dict[str, Any]] = []
    tried = 0
    for f in sorted(pds, key=lambda f: f.record["usd_per_hour"]):
        cheapest_sim = min((r["usd_per_hour"] for r in out if r.get("simulated")), default=math.inf)
        if tried < PD_SIMULATED or (tried < PD_SIMULATED_MAX and f.record["usd_per_hour"] < cheapest_sim):
            tried += 1
            sim = simulate_pd(f, load=load, slo=slo, cfg=cfg, cal=cal, max_devices=max_devices)
            if sim is not None:
                out.append(sim)
            continue
        out.append(f.record)
    return sorted(out, key=lambda r: r["usd_per_hour"])


def _verify(cands: list[_Cand], load: InferLoad, slo: InferSlo, cfg: EngineConfig, cal: Calibration,
            prof: EngineProfile, rejected: dict[str, int],
            max_devices: int) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
    """Simulate the cheapest candidates; add replicas where the p99 SLO is missed."""
    headroom = cal.value("load_headroom")
    n_sim = int(cal.value("sim_requests"))
    warm = cal.value("sim_warmup_fraction")
    finalists = int(cal.value("finalists"))
    wanted = int(cal.value("plans_wanted"))
    max_sims = int(cal.value("max_simulations"))
    growth_max = cal.value("queue_growth_max")
    sim_slo = Slo(ttft_s=slo.ttft_p99_s, tpot_s=slo.tpot_p99_s)
    plans: list[dict[str, Any]] = []
    per_acc: dict[str, int] = {}
    seen: set[tuple[object, ...]] = set()
    near_miss: dict[str, Any] = {}
    simulated = 0
    tried = 0

    def sim(c: _Cand, r: int, factor: float) -> SimMetrics:
        nonlocal simulated
        simulated += 1
        # a pipeline-parallel replica serves as pp batches in flight (simulate.pipeline): one is simulated
        pp = c.layout.pp
        w = load.replica_workload(r * pp, load_factor=factor, num_requests=n_sim)
        batch_cost, batch_cfg = pipeline_batch(c.cost, cfg, pp)
        # attention groups of one expert group step together: the others' prefills stretch this one's steps
        cost = lockstep_cost(batch_cost, groups=attention_groups(c.layout), group_qps=load.qps * factor / (r * pp),
                             input_len_mean=load.input_len.mean, output_len_mean=load.output_len.mean,
                             max_batched_tokens=cfg.max_batched_tokens,
                             chunked_prefill=cfg.chunked_prefill)
        return summarize(simulate_engine(w, cost, batch_cfg), sim_slo, warmup_fraction=warm)

    def verify(c: _Cand) -> bool:
        """Simulate `c`, grow it to the SLO and price it; True when it became a plan."""
        tried_sims: dict[int, SimMetrics] = {}

        def run(r: int) -> SimMetrics:
            return sim(c, r, 1.0 + headroom)

        floor = min_fleet(load.qps, c.cap.requests_per_s)
        found = min_replicas(run, max(c.replicas, floor), slo, seen=tried_sims, floor=floor,
                              queue_growth_max=growth_max)
        if found is None:
            _bump(rejected, "simulated_slo")
            r_max = max(tried_sims)
            m_max = tried_sims[r_max]
            how_far = score(m_max, slo, growth_max)
            if how_far < near_miss.get("score", math.inf):
                near_miss.update(score=how_far, on=f"{r_max} x {_label(c)}", ttft_p99_s=m_max.ttft_s.p99,
                                 tpot_p99_s=m_max.tpot_s.p99)
            return False
        r, m_head = found
        if whole_groups(r, c.layout) != r:  # attention groups come in whole expert-parallel groups
            r = whole_groups(r, c.layout)
            m_head = run(r)
        if load.qps / (r * c.cap.requests_per_s) > 1.0:  # over 100% utilization: never a plan
            _bump(rejected, "over_capacity")
            return False
        if r * c.layout.tp * c.layout.pp > max_devices:
            _bump(rejected, "max_devices")
            return False
        priced = price_layout(c.offers, r, c.layout, span=c.spans)
        if priced is None:  # pragma: no cover - more replicas fit the same offers
            return False
        usd, offer, n_inst = priced
        m = sim(c, r, 1.0)
        per_acc[c.acc.id] = per_acc.get(c.acc.id, 0) + 1
        plans.append(_plan_record(c, r, usd, offer, n_inst, m, m_head, load, cal, prof))
        return True

    def fresh(c: _Cand) -> bool:
        # formats with the same speed and size on a part (e.g. fp8 and int8 on H200) give one fleet
        key = (c.acc.id, c.layout, c.replicas, round(c.usd_per_hour, 6), round(c.cap.requests_per_s, 9),
               round(c.ttft0, 12), round(c.tpot0, 12))
        if key in seen:
            return False
        seen.add(key)
        return True

    for c in cands:
        if tried >= finalists or len(plans) >= wanted or (plans and simulated >= max_sims):
            break
        if per_acc.get(c.acc.id, 0) >= 2 or not fresh(c):  # variety: at most two plans per accelerator
            continue
        tried += 1
        verify(c)
    # every part that has candidates shows its cheapest fleet, even past the plans wanted: a buyer compares parts
    # (a domestic part at twice the price is an answer, not a miss); its PART_TRIES cheapest candidates are tried
    extra: dict[str, int] = {}
    for c in cands:
        if c.acc.id in per_acc or extra.get(c.acc.id, 0) >= PART_TRIES or not fresh(c):
            continue
        extra[c.acc.id] = extra.get(c.acc.id, 0) + 1
        verify(c)
    return plans, simulated, near_miss



def _plan_record(c: _Cand, r: int, usd: float, offer: Offer, n_inst: int, m: SimMetrics, m_head: SimMetrics,
                 load: InferLoad, cal: Calibration, prof: EngineProfile) -> dict[str, Any]:
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
        "price_kind": offer.kind, "devices": r * lay.tp * lay.pp, "replicas": r,
        "layout": {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep}, "weights": c.weights, "engine": prof.id,
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
        "provenance": "estimated: per-step cost model + discrete-event simulation per replica; "
                      "prices from the catalog (see the instance's source)",
    }


def _with_trust(plans: list[dict[str, Any]], catalog: Catalog, prof: EngineProfile, spec: ModelSpec,
                cons: InferConstraints, rejected: dict[str, int]) -> list[dict[str, Any]]:
    """Each fleet with its confidence and 80% bands (search/plan_trust.py); fleets below --trust are dropped."""
    overridden = any(t.overridden for t in prof.terms.values())
    kept = []
    for p in plans:
        p["confidence"] = serving_confidence(catalog, p, overridden)
        if not meets_trust(p["confidence"], cons.trust):
            _bump(rejected, "trust")
            continue
        p["band"], p["band_basis"] = serving_bands(p, efficiency=p["confidence"]["efficiency"]["provenance"],
                                                   moe=spec.moe is not None)
        kept.append(p)
    if not kept:
        raise InputError(field="trust", value=cons.trust, allowed="a level some verified fleet reaches",
                         hint="every fleet rests on a default efficiency or a low-confidence price; use --trust low "
                              "and read the caveats, or add a quote / calibrate the part")
    return kept


def _no_plan(spec: ModelSpec, slo: InferSlo, cons: InferConstraints, rejected: dict[str, int],
             best: dict[str, Any], int4_bytes: float, largest: tuple[float, str], considered: list[str],
             prof: EngineProfile) -> None:
    if not considered and rejected.get("engine_unsupported"):
        raise InputError(field="engine", value=prof.id, allowed=f"an engine that runs on the allowed parts' stacks "
                         f"({prof.name} runs on {', '.join(prof.stacks)})",
                         hint=f"choose another --engine or relax --market/--vendor (rejected: {rejected})")
    if not considered:
        raise InputError(field="hardware", value=rejected, allowed="at least one accelerator with a priced instance "
                         "under the policy filters", hint="relax --market/--vendor/--provider/--domestic-only")
    if "ttft_s" not in best:
        mem, acc = largest
        n = 1
        while n * mem < int4_bytes * 1.1:  # weights plus room for the KV cache
            n *= 2
        raise InputError(field="model", value=spec.name,
                         allowed=f"a model that fits the allowed hardware within --max-devices={cons.max_devices}",
                         hint=f"even at int4 its weights take {int4_bytes / GIB:.0f} GiB per replica; nearest "
                              f"feasible: about {n} x {acc} per replica (raise --max-devices, allow more "
                              f"hardware or shorten requests; rejected: {rejected})")
    if best["ttft_s"] > slo.ttft_p99_s:
        raise InputError(field="ttft-p99", value=slo.ttft_p99_s, allowed="a TTFT that some hardware reaches",
                         hint=f"nearest feasible: the best achievable p99 TTFT is {best['ttft_s']:.3f} s "
                              f"on {best['ttft_on']}")
    if best["tpot_s"] > slo.tpot_p99_s:
        raise InputError(field="tpot-p99", value=slo.tpot_p99_s, allowed="a TPOT that some hardware reaches",
                         hint=f"nearest feasible: the best achievable TPOT is {best['tpot_s']:.4f} s "
                              f"on {best['tpot_on']}")
    if "devices_needed" in best:
        n, on = best["devices_needed"]
        raise InputError(field="max-devices", value=cons.max_devices, allowed=f"at least {n}",
                         hint=f"nearest feasible: {n} devices ({on}); raise --max-devices or lower --qps")
    raise InputError(field="slo", value=f"ttft-p99={slo.ttft_p99_s:g}s tpot-p99={slo.tpot_p99_s:g}s",
                     allowed="an SLO that one candidate meets on its own and under load",
                     hint=f"no candidate meets both limits at once (rejected: {rejected}); best TTFT "
                          f"{best['ttft_s']:.3f} s on {best['ttft_on']}, best TPOT {best['tpot_s']:.4f} s "
                          f"on {best['tpot_on']}")

