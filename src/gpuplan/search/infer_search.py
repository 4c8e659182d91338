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

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.infer_step import node_devices, step_cost_model
from gpuplan.estimate.memory_infer import matrix_bytes_per_param
from gpuplan.hardware import Catalog
from gpuplan.search import progress
from gpuplan.search.infer_capacity import length_moments
from gpuplan.search.infer_cp import cp_layouts
from gpuplan.search.infer_engines import with_engine_hint
from gpuplan.search.infer_finalists import Candidate, bump, simulated_pd, verify_candidates
from gpuplan.search.infer_fleet import Offer, fleet_offers
from gpuplan.search.infer_kv_tp import annotate as annotate_kv_tp
from gpuplan.search.infer_kv_tp import note as note_tp
from gpuplan.search.infer_layouts import placements
from gpuplan.search.infer_load import InferLoad, InferSlo, planner_terms, slo_unit_warning
from gpuplan.search.infer_misses import parts_without_plan
from gpuplan.search.infer_offload import KV_OFFLOAD_MODES, OFFLOAD_TERMS, prefix_tiers
from gpuplan.search.infer_pd_fleet import PdFleet, PdInput, pd_fleet
from gpuplan.search.infer_pd_mixed import mixed_pd_fleets
from gpuplan.search.infer_route import DEFAULT_ROUTER, check_router
from gpuplan.search.infer_size import Sized, priced_on, size_fleet
from gpuplan.search.infer_whatif import rdma_what_if
from gpuplan.search.plan_trust import meets_trust, serving_bands, serving_confidence
from gpuplan.search.train_search import PlanConstraints, policy_rejection
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.units import DTYPE_BYTES, GIB
from gpuplan.workload.engines import EngineProfile, engine
from gpuplan.workload.jobs import SERVED_WEIGHTS, InferenceJob, Layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["InferConstraints", "InferPlanResult", "plan_inference", "plan_record"]

WEIGHTS = SERVED_WEIGHTS
KV_DTYPES = ("bf16", "fp16", "fp8", "int8")
TERMS_USED = ("load_headroom", "tpot_p99_over_mean", "max_simulations", "dedicated_utilization",
              "dedicated_p99_growth", "sim_requests", "sim_warmup_fraction", "finalists", "plans_wanted",
              "queue_growth_max", "fleet_sim_replicas_max", "replica_tolerance")


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
    router: str = DEFAULT_ROUTER  # how requests reach the replicas (simulate.fleet_sim): sized under this router
    kv_offload: str = "auto"  # a host-memory tier for the prefix set where the engine runs one (infer_offload)
    context_parallel: bool = True  # try prefill context-parallel layouts for long prompts (infer_cp)

    def __post_init__(self) -> None:
        check_router(self.router)
        if self.kv_offload not in KV_OFFLOAD_MODES:
            raise InputError(field="kv-offload", value=self.kv_offload, allowed=", ".join(KV_OFFLOAD_MODES),
                             hint="auto: use the engine's host tier when the prefix set outgrows HBM; off: never")
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
    router: str = DEFAULT_ROUTER  # the router the fleets were sized under


def _per_market(sz: Sized, layout: Layout, offers: list[Offer], cons: InferConstraints, qps: float,
                headroom: float, span: bool) -> list[tuple[Sized, list[Offer]]]:
    """The sized replica priced in each market that has offers for it when no --market was given (a buyer rents in
    its own market: advise.trust.in_buyer_market, so each market's cheapest fleet must be a candidate), else as
    sized; each with the offers its replicas may be priced on later (search/infer_finalists.verify_candidates)."""
    markets = sorted({o.market for o in offers})
    if cons.market is not None or len(markets) < 2 or sz.cap is None or sz.cap.requests_per_s <= 0 or (
            sz.rejected not in (None, "no_instance_fits", "max_devices")):
        return [(sz, offers)]
    out = []
    for m in markets:
        mine = [o for o in offers if o.market == m]
        out.append((priced_on(sz, layout, mine, qps=qps, headroom=headroom, max_devices=cons.max_devices, span=span),
                    mine))
    return out


def plan_inference(spec: ModelSpec, load: InferLoad, slo: InferSlo, catalog: Catalog,
                   cons: InferConstraints | None = None, *, engine_profile: EngineProfile | None = None,
                   terms: Calibration | None = None, alternatives: bool = True,
                   suggest_engines: bool | None = None,
                   stack_engines: Mapping[str, EngineProfile] | None = None) -> InferPlanResult:
    """Cheapest verified fleets first; raises InputError (with the nearest feasible alternative) if none.
    `alternatives=False` skips what RDMA would buy and the disaggregated fleets (a re-plan that reads only the
    plans: the growth re-plan, `compare`, the other engines of advise.report_infer.named_engine). `suggest_engines`
    (default: as `alternatives`) re-plans with the other engines when nothing meets the SLO, to name one that does:
    `compare` asks for it, the growth re-plan (whose failure is an ordinary finding) does not. `stack_engines`
    (software stack -> profile): the parts of those stacks are planned with that engine instead of
    `engine_profile` (a search across stacks with no --engine: MindIE on CANN beside vLLM on CUDA, engines.yaml
    stack_default_engines); each plan names its engine."""
    prof = engine_profile or engine("vllm")
    cons = cons or InferConstraints()
    by_stack = dict(stack_engines or {})
    try:
        return _plan(spec, load, slo, catalog, cons, prof, terms, alternatives, by_stack)
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
            "engine": prof.id, "router": res.router, "candidates_evaluated": res.candidates_evaluated,
            "simulated": res.simulated, "plans": res.plans, "rejected": res.rejected,
            "hardware_considered": res.hardware_considered, "best_unloaded": res.best_unloaded,
            "what_if_rdma": res.what_if_rdma, "what_if_rdma_all": res.what_if_rdma_all,
            "what_if_pd_all": res.what_if_pd_all, "parts_without_plan": res.parts_without_plan,
            "terms": res.terms, "engine_terms": prof.used(),
            "kv_dtype": kv_dtype}


def _plan(spec: ModelSpec, load: InferLoad, slo: InferSlo, catalog: Catalog, cons: InferConstraints,
          prof: EngineProfile, terms: Calibration | None, alternatives: bool,
          by_stack: Mapping[str, EngineProfile] | None = None) -> InferPlanResult:
    cal = terms or planner_terms()
    main_prof = prof
    # an engine documented for some models and weight formats only (MindIE SplitFuse): refuse the others at once
    prof.check_serves(spec.name, None if not prof.weights or any(w in prof.weights for w in cons.weights)
                      else cons.weights[0])
    cfg = EngineConfig.from_profile(prof)
    main_cfg = cfg
    cfgs = {p.id: EngineConfig.from_profile(p) for p in (by_stack or {}).values()}
    headroom = cal.value("load_headroom")
    ratio = cal.value("tpot_p99_over_mean")
    moments = length_moments(load.input_len, load.output_len, hit=load.cached_share)
    counts = count_params(spec)
    need_tokens = load.max_request_tokens
    rejected: dict[str, int] = {}
    considered: list[str] = []
    cands: list[Candidate] = []
    best: dict[str, Any] = {}
    per_part: dict[str, dict[str, Any]] = {}  # the same, per accelerator (parts_without_plan)
    unsupported: dict[str, list[str]] = {}  # weight formats a part cannot run (no fp8 peak), per accelerator
    largest: tuple[float, str] = (0.0, "")  # usable bytes of the largest allowed device
    evaluated = 0
    alts: list[dict[str, Any]] = []
    pds: list[PdFleet] = []
    floors: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}  # (part, weights) -> TP -> KV outcome
    pd_parts: dict[str, list[PdInput]] = {}  # each part's layouts, for the heterogeneous pairs
    policy = cons.policy()
    for acc in progress.each(catalog.accelerators.values()):
        why = policy_rejection(acc, policy)
        if why:
            bump(rejected, why)
            continue
        # the part's own stack's engine where the search spans stacks with no --engine (stack_engines)
        prof = (by_stack or {}).get(acc.software_stack, main_prof)
        cfg = cfgs.get(prof.id, main_cfg)
        if not prof.runs_on(acc):  # TensorRT-LLM on Ascend, MindIE on NVIDIA, SGLang on a V100: no such fleet
            bump(rejected, "engine_unsupported")
            continue
        offers = fleet_offers(catalog, acc.id, market=cons.market, provider=cons.provider)
        if not offers:
            bump(rejected, "no_price")
            continue
        considered.append(acc.id)
        alt = rdma_what_if(spec, acc, offers, weights=cons.weights, kv_dtype=cons.kv_dtype, engine=prof, cfg=cfg,
                           moments=moments, load=load, slo=slo, headroom=headroom, tpot_p99_over_mean=ratio,
                           need_tokens=need_tokens, max_devices=cons.max_devices,
                           catalog=catalog) if alternatives and not prof.single_node_only else None
        if alt is not None:
            alts.append(alt)
        # an attention group lives in one instance and one node (infer_step.node_devices)
        node = node_devices(acc)
        max_node = min(max(o.host_devices for o in offers), node)
        mem = float(acc.memory_gib or 0.0) * GIB * prof.gpu_memory_fraction
        largest = max(largest, (mem, acc.id))
        pd_inputs: list[PdInput] = []
        for weights in cons.weights:
            # no fp8 peak on the part, or a format the engine does not serve (MindIE SplitFuse: float or W8A8)
            if (weights == "fp8" and acc.dense_tflops("fp8") is None) or (
                    prof.weights and weights not in prof.weights):
                bump(rejected, "weights_unsupported")
                unsupported.setdefault(acc.id, []).append(weights)
                continue
            mb = matrix_bytes_per_param(spec, InferenceJob(weights=weights))
            # every layout of one node (placements), then, where none of them prefills the p99 prompt within the
            # TTFT limit, their prefill context-parallel variants (infer_cp): long prompts split over cp ranks
            items: list[tuple[Layout, list[Offer], Any, Any]] = [
                (lay, lay_offers, link, None)
                for lay, lay_offers, link in placements(spec, max_node, offers, node=node)]
            ttft_met, n_base = False, len(items)
            cp_bases: list[tuple[Layout, list[Offer], Any]] = []
            for i in itertools.count():
                # every base layout seen (no context parallelism where the engine serves one node: SplitFuse)
                if i == n_base and not ttft_met and cons.context_parallel and not prof.single_node_only:
                    added = cp_layouts(cp_bases, engine_id=prof.id, acc=acc, node=max_node,
                                       prompt_p99=moments.in_p99, layers=spec.num_layers,
                                       max_devices=cons.max_devices)
                    evaluated += len(added)
                    items += [(lay, lay_offers, None, cpm) for lay, lay_offers, cpm in added]
                if i == len(items):
                    break
                lay, lay_offers, link, cm_cp = items[i]
                if cm_cp is not None:
                    cm = cm_cp
                else:
                    if lay.tp * lay.pp > node and counts.total * mb / node <= mem:
                        continue
                    if prof.single_node_only and (link is not None or lay.tp * lay.pp > node):
                        bump(rejected, "engine_unsupported")  # MindIE SplitFuse: no multi-node inference
                        continue  # a node holds the weights: pipeline stages across nodes only add devices and hops
                    evaluated += 1
                    if max(lay.tp, lay.ep) * lay.pp > cons.max_devices:
                        bump(rejected, "max_devices")
                        continue
                    split = max(lay.tp, lay.ep) * lay.pp
                    lower = counts.total * mb / split  # weights per device can be no less
                    if lower > mem:
                        bump(rejected, "out_of_memory")
                        continue
                    try:
                        cm = step_cost_model(spec, accelerator=acc, layout=lay, weights=weights, kv_dtype=cons.kv_dtype,
                                             engine=prof, catalog=catalog, scale_out=link)
                    except GpuplanError as exc:  # an incomplete catalog entry, or a layout the model cannot split
                        bump(rejected,
                             "missing_data" if getattr(exc, "field", "") == "accelerator" else "layout_invalid")
                        continue
                    pd_inputs.append(PdInput(weights=weights, layout=lay, offers=lay_offers, link=link, cost=cm))
                sz = size_fleet(cm, lay, lay_offers, cfg=cfg, moments=moments, slo=slo, qps=load.qps,
                                headroom=headroom, tpot_p99_over_mean=ratio, need_tokens=need_tokens,
                                max_devices=cons.max_devices, span=link is not None)
                tiers, c_load = None, None
                if load.prefix_set_tokens and load.prefix_hit:  # the hit the replica's cache tiers leave
                    tiers = prefix_tiers(cost=cm, cfg=cfg, acc=acc, catalog=catalog,
                                         instance=sz.offer.instance if sz.offer else None,
                                         devices=max(lay.tp, lay.ep) * lay.pp * lay.cp, engine_id=prof.id,
                                         mla=spec.mla is not None, hit=load.prefix_hit,
                                         prefix_set=load.prefix_set_tokens, mode=cons.kv_offload, cal=cal)
                    if tiers.hit_effective < load.prefix_hit:
                        c_load = replace(load, prefix_hit=tiers.hit_effective)
                        sz = size_fleet(cm, lay, lay_offers, cfg=cfg,
                                        moments=length_moments(load.input_len, load.output_len,
                                                               hit=c_load.cached_share),
                                        slo=slo, qps=load.qps, headroom=headroom, tpot_p99_over_mean=ratio,
                                        need_tokens=need_tokens, max_devices=cons.max_devices,
                                        span=link is not None)
                if lay.cp == 1 and lay.pp == 1 and link is None:  # the smallest TP that holds the weights
                    note_tp(floors, accelerator=acc.id, weights=weights, tp=lay.tp, rejected=sz.rejected,
                            limited_by=sz.cap.limited_by if sz.cap is not None else None,
                            kv_tokens=cm.kv_capacity_tokens, weights_bytes_per_device=cm.weights_bytes_per_device)
                ttft_met = ttft_met or sz.ttft0 <= slo.ttft_p99_s
                if sz.rejected == "ttft_slo" and link is None and lay.pp == 1 and lay.ep == 1 and lay.cp == 1:
                    cp_bases.append((lay, lay_offers, cm))
                label = f"{acc.id} tp{lay.tp} pp{lay.pp} ep{lay.ep}{f' cp{lay.cp}' if lay.cp > 1 else ''} {weights}"
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
                    devices = sz.replicas * lay.tp * lay.pp * lay.cp
                    if "devices_needed" not in best or devices < best["devices_needed"][0]:
                        best["devices_needed"] = (devices, label)
                for sm, sm_offers in _per_market(sz, lay, lay_offers, cons, load.qps, headroom, link is not None):
                    if sm.rejected is not None or sm.cap is None or sm.offer is None:
                        bump(rejected, sm.rejected or "no_instance_fits")
                        continue
                    cands.append(Candidate(acc=acc, layout=lay, weights=weights, cost=cm, cap=sm.cap,
                                           ttft0=sm.ttft0, tpot0=sm.tpot0, replicas=sm.replicas,
                                           usd_per_hour=sm.usd_per_hour, offer=sm.offer,
                                           instances=sm.instances, offers=sm_offers,
                                           spans=link is not None, prof=prof, cfg=cfg, load=c_load,
                                           tiers=tiers))
        # the disaggregated fleet is launched with SGLang (emit sglang --disaggregated): only on parts it runs on
        pd = pd_fleet(pd_inputs, accelerator=acc.id, moments=moments, slo=slo, qps=load.qps, headroom=headroom,
                      cfg=main_cfg, tpot_p99_over_mean=ratio, max_devices=cons.max_devices) if (
            alternatives and engine("sglang").runs_on(acc) and not prof.single_node_only) else None
        if pd is not None:
            pds.append(pd)
        if alternatives and engine("sglang").runs_on(acc) and pd_inputs and not prof.single_node_only:
            pd_parts[acc.id] = pd_inputs
    prof, cfg = main_prof, main_cfg
    if len(pd_parts) > 1:  # prefill on one part, decode on another (infer_pd_mixed), beside the same-part fleets
        pds += mixed_pd_fleets(pd_parts, vendor_of={a: catalog.accelerators[a].vendor for a in pd_parts},
                               provider_of={i.id: i.provider for i in catalog.instances.values()}, same_part=pds,
                               moments=moments, slo=slo, qps=load.qps, headroom=headroom, cfg=cfg,
                               tpot_p99_over_mean=ratio, max_devices=cons.max_devices)
    router = check_router(cons.router)
    pd_records = simulated_pd(pds, load, slo, cfg, cal, cons.max_devices, router)
    if not cands:
        int4_bytes = counts.total * matrix_bytes_per_param(spec, InferenceJob(weights="int4"))
        _no_plan(spec, slo, cons, rejected, best, int4_bytes, largest, considered, prof)
    # at one price and size, the widest weights first: quantizing that saves nothing only costs quality
    cands.sort(key=lambda c: (c.usd_per_hour, c.replicas * c.layout.tp * c.layout.pp * c.layout.cp,
                              -DTYPE_BYTES[c.weights],
                              c.tpot0))
    plans, simulated, near = verify_candidates(cands, load, slo, cfg, cal, prof, rejected, cons.max_devices, router)
    if not plans:
        closest = (f"the closest simulated fleet, {near['on']}, reached p99 TTFT {near['ttft_p99_s']:.3f} s and "
                   f"TPOT {near['tpot_p99_s']:.4f} s at the headroom load" if near else "no fleet fit --max-devices")
        raise InputError(field="slo", value=f"ttft-p99={slo.ttft_p99_s:g}s tpot-p99={slo.tpot_p99_s:g}s",
                         allowed="an SLO that a simulated fleet meets under the load",
                         hint=f"nearest feasible: {closest}; unloaded, the best p99-prompt TTFT is "
                              f"{best.get('ttft_s', math.nan):.3f} s on {best.get('ttft_on')}; relax the SLO")
    plans.sort(key=lambda p: (p["cost_usd_per_hour"], p["devices"], -DTYPE_BYTES[p["weights"]]))
    plans = _with_trust(plans, catalog, prof, spec, cons, rejected)
    annotate_kv_tp(plans, floors, need_tokens=need_tokens)  # fleets whose TP the KV cache forced (infer_kv_tp)
    # one per part, cheapest first: the advisor names the cheapest whose part draws no blocking finding in its
    # market (as the recommendation does) and saves enough against the recommended fleet
    alts.sort(key=lambda a: a["usd_per_hour"])
    cheapest = alts[0] if alts and alts[0]["usd_per_hour"] < plans[0]["cost_usd_per_hour"] else None
    return InferPlanResult(plans=plans, candidates_evaluated=evaluated, simulated=simulated, rejected=rejected,
                           hardware_considered=considered, best_unloaded=best,
                           terms=cal.used(*TERMS_USED, *(OFFLOAD_TERMS if load.prefix_set_tokens else ())),
                           what_if_rdma=cheapest, what_if_rdma_all=alts,
                           what_if_pd_all=pd_records, router=router,
                           parts_without_plan=parts_without_plan(considered, plans, per_part, slo,
                                                                 unsupported=unsupported))


def _with_trust(plans: list[dict[str, Any]], catalog: Catalog, prof: EngineProfile, spec: ModelSpec,
                cons: InferConstraints, rejected: dict[str, int]) -> list[dict[str, Any]]:
    """Each fleet with its confidence and 80% bands (search/plan_trust.py); fleets below --trust are dropped."""
    overridden = any(t.overridden for t in prof.terms.values())
    kept = []
    for p in plans:
        p["confidence"] = serving_confidence(catalog, p, overridden)
        if not meets_trust(p["confidence"], cons.trust):
            bump(rejected, "trust")
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
        runs = ", ".join(prof.accelerators) + f" ({prof.constraints_source})" if prof.accelerators else ", ".join(
            prof.stacks)
        raise InputError(field="engine", value=prof.id, allowed=f"an engine that runs on the allowed parts "
                         f"({prof.name} runs on {runs})",
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

