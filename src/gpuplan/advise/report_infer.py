"""The report document of an inference plan (`gpuplan plan infer --json`) and the inference comparison.

The inference planner ranks verified fleets cheapest first; the recommendation is its first plan,
the runners-up are the first plan of each other accelerator. Findings come from the inference
adapter (adapt_infer). TCO treats serving as running all year: device-hours = devices x 8760.

Memory per device of the recommended deployment comes from the inference memory model
(estimate/memory_infer.py, as `gpuplan estimate infer` uses it): weights, workspace and other at
the simulated mean batch; the engine preallocates the rest of its budget (memory fraction of the
device) as the KV-cache pool, of which the simulation's mean used fraction is in use.
Growth: the planner is re-run at `growth_factor` x the load on the recommended accelerator and
weight format; the fleet holds when a grown plan with the same layout needs no more replicas.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gpuplan import __version__
from gpuplan.advise.adapt_infer import inference_facts
from gpuplan.advise.engine import advise
from gpuplan.advise.facts import PlanFacts, Requirements
from gpuplan.advise.findings import Thresholds, advise_data, default_thresholds
from gpuplan.advise.report_train import BLOCKING_FINDINGS, REPORT_SCHEMA
from gpuplan.advise.rules_market import node_power_kw
from gpuplan.advise.sources import plan_sources
from gpuplan.advise.tco import HOURS_PER_YEAR, tco, tco_inputs
from gpuplan.advise.trust import buyer_market, fleet_key, in_buyer_market, serving_recommendation
from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import default_calibration
from gpuplan.estimate.engine_profile import engine_memory_calibration, engine_profile_peak
from gpuplan.estimate.memory_infer import estimate_inference_memory
from gpuplan.hardware import Catalog, Instance
from gpuplan.units import DTYPE_BYTES, GIB
from gpuplan.workload.engines import EngineProfile, engine
from gpuplan.workload.jobs import InferenceJob, serving_layout
from gpuplan.workload.presets import load_model

if TYPE_CHECKING:
    from gpuplan.search.infer_load import InferLoad
    from gpuplan.search.infer_search import InferConstraints

__all__ = ["INFER_MEMORY_PARTS", "compare_inference", "infer_summary", "inference_report", "is_infer_run",
           "named_engine", "named_pd", "pd_alternative", "rdma_alternative", "risk_of", "serve_growth",
           "serving_memory"]


def is_infer_run(obj: Mapping[str, Any]) -> bool:
    """Is this the JSON of `gpuplan plan infer --json`?"""
    return {"plans", "load", "slo", "model"} <= set(obj) and "schema" not in obj


def infer_summary(p: Mapping[str, Any]) -> dict[str, Any]:
    lay = p["layout"]
    layout = f"tp{lay['tp']} pp{lay['pp']} ep{lay['ep']}"
    return {"accelerator": p["accelerator"], "devices": p["devices"], "replicas": p["replicas"], "layout": layout,
            "weights": p["weights"], "engine": p.get("engine"), "instance": p["instance"], "instances": p["instances"],
            "usd_per_hour": p["cost_usd_per_hour"], "usd_per_million_tokens": p["cost_usd_per_million_tokens"],
            "ttft_p99_s": p["ttft_s"]["p99"], "tpot_p99_s": p["tpot_s"]["p99"], "utilization": p["utilization"],
            "tenancy": p["advice"]["tenancy"], "provenance": "estimated", "band": p.get("band", {}),
            "band_basis": p.get("band_basis", {}), "confidence": p.get("confidence")}


INFER_MEMORY_PARTS = ("weights", "kv_cache", "kv_free", "workspace", "other")


def _engine_of(run: Mapping[str, Any], plan: Mapping[str, Any]) -> str:
    """The engine a fleet was planned with: its own row's (a search across stacks plans each part with its
    stack's engine), else the run's."""
    return str(plan.get("engine") or run.get("engine") or "vllm")


def serving_memory(run: Mapping[str, Any], plan: Mapping[str, Any], catalog: Catalog) -> dict[str, Any] | None:
    """Per-device memory (GiB) of one inference plan: weights, KV cache in use, KV pool left free, workspace,
    other; with the device memory and the engine's budget. None when the model is not a preset or config."""
    try:
        spec = load_model(str(run["model"]))
    except GpuplanError:
        return None
    acc = catalog.accelerator(plan["accelerator"])
    prof = engine(_engine_of(run, plan)).on_part(acc)
    lay = plan["layout"]
    layout = serving_layout(tp=int(lay["tp"]), pp=int(lay["pp"]), ep=int(lay["ep"]))
    load = run["load"]
    tokens = max(1, round(float(load["input_len_mean"]) + float(load["output_len_mean"])))
    batch = max(1, math.ceil(float(plan.get("batch_mean") or 1.0)))
    cal = engine_memory_calibration(prof)
    job = InferenceJob(weights=plan["weights"], kv_dtype=str(run.get("kv_dtype") or "bf16"), batch=batch,
                       context=tokens, memory_fraction=prof.gpu_memory_fraction)
    mem = estimate_inference_memory(spec, job, layout, calibration=cal)
    device = float(acc.memory_gib or 0.0)
    budget = device * prof.gpu_memory_fraction
    # an engine that sizes its KV cache from a start-up profile (vLLM) keeps that profile's torch peak out of it,
    # as the planner does (estimate/engine_profile.py, estimate/infer_step._profile_reserve)
    profiled = engine_profile_peak(spec, layout, prof, weights=plan["weights"], calibration=cal).peak_bytes \
        if prof.profile_sampler_bytes_per_logit > 0 else 0.0
    workspace = max(mem.activations_bytes, profiled)
    fixed = (mem.weights_bytes + workspace + mem.other_bytes) / GIB
    pool = max(0.0, budget - fixed)  # the engine preallocates the rest of its budget for KV blocks
    used = pool * min(1.0, max(0.0, float(plan.get("kv_used_mean_fraction") or 0.0)))
    parts = {"weights": mem.weights_bytes / GIB, "kv_cache": used, "kv_free": pool - used,
             "workspace": workspace / GIB, "other": mem.other_bytes / GIB}
    return {"parts_gib": parts, "device_memory_gib": device, "engine_budget_gib": budget,
            "memory_fraction": prof.gpu_memory_fraction, "batch": batch, "context": tokens,
            "kv_used_fraction": plan.get("kv_used_mean_fraction"),
            "calibration": {k: v["value"] for k, v in mem.assumptions["calibration"].items()}}


def _load_of(run: Mapping[str, Any]) -> InferLoad | None:
    """The load of a `plan infer --json` run rebuilt from its labels (None for a trace: pass the load)."""
    from gpuplan.search.infer_load import InferLoad
    from gpuplan.simulate.lengths import parse_length_dist

    load = run["load"]
    if load.get("trace") or not load.get("input_len") or not load.get("output_len"):
        return None
    try:
        return InferLoad(qps=float(load["qps"]), input_len=parse_length_dist(str(load["input_len"])),
                         output_len=parse_length_dist(str(load["output_len"])))
    except GpuplanError:
        return None


def _plan_market(market: str | None, plan: Mapping[str, Any], catalog: Catalog) -> str | None:
    """The market a re-plan of `plan` draws offers from: the run's, else the plan's own offer's. Without it a
    no-market re-plan could price the grown or wider fleet on an offer the buyer's rules block (a B200 rented in
    China quoted beside a global recommendation)."""
    if market is not None:
        return market
    inst = catalog.instances.get(str(plan.get("instance") or ""))
    return inst.market if inst is not None else None


def serve_growth(run: Mapping[str, Any], plan: Mapping[str, Any], catalog: Catalog, *, factor: float,
                 load: InferLoad | None = None, max_devices: int = 1024,
                 constraints: InferConstraints | None = None) -> dict[str, Any] | None:
    """Re-plan at `factor` x the load on the plan's accelerator and weight format (within the planner
    `constraints` of the original run: market, provider...): does the fleet hold, and if not, the cheapest
    fleet that meets the SLO and its hourly cost. None when the load is unknown."""
    from dataclasses import replace

    from gpuplan.search.infer_load import InferLoad, InferSlo, planner_terms
    from gpuplan.search.infer_search import InferConstraints, plan_inference
    from gpuplan.simulate.arrivals import Workload

    base = load or _load_of(run)
    if base is None:
        return None
    if base.trace is not None:
        t = base.trace
        grown = InferLoad.from_trace(Workload(arrival_s=t.arrival_s / factor, input_len=t.input_len,
                                              output_len=t.output_len, label=f"{t.label} x{factor:g}"))
    else:
        grown = InferLoad(qps=base.qps * factor, input_len=base.input_len, output_len=base.output_len)
    out: dict[str, Any] = {"factor": factor, "qps": grown.qps, "holds": False, "devices": None}
    try:
        spec = load_model(str(run["model"]))
        terms = {k: float(v["value"]) for k, v in run.get("terms", {}).items()}
        cons = replace(constraints or InferConstraints(kv_dtype=str(run.get("kv_dtype") or "bf16"),
                                                       max_devices=max_devices),
                       accelerators=(str(plan["accelerator"]),), weights=(str(plan["weights"]),))
        cons = replace(cons, max_devices=max(cons.max_devices, int(plan["devices"])),
                       market=_plan_market(cons.market, plan, catalog))
        res = plan_inference(spec, grown, InferSlo(ttft_p99_s=float(run["slo"]["ttft_p99_s"]),
                                                   tpot_p99_s=float(run["slo"]["tpot_p99_s"])), catalog, cons,
                             engine_profile=engine(_engine_of(run, plan)), terms=planner_terms(terms),
                             alternatives=False)
    except GpuplanError:
        return out
    if not res.plans:
        return out
    same = [p for p in res.plans if p["layout"] == plan["layout"] and p["replicas"] <= plan["replicas"]]
    cheapest = res.plans[0]
    out.update(holds=bool(same), devices=cheapest["devices"], replicas=cheapest["replicas"],
               accelerator=cheapest["accelerator"], layout=cheapest["layout"], instance=cheapest["instance"],
               usd_per_hour=cheapest["cost_usd_per_hour"], utilization=cheapest["utilization"])
    if same:  # the planned fleet at the grown load: its utilization of the SLO-bound capacity
        cap = float(plan.get("capacity_requests_per_s_per_replica") or 0.0) * int(plan["replicas"])
        out["utilization"] = grown.qps / cap if cap else same[0]["utilization"]
    return out


def serve_wider(run: Mapping[str, Any], plan: Mapping[str, Any], catalog: Catalog, *, load: InferLoad | None = None,
                max_devices: int = 1024, constraints: InferConstraints | None = None) -> dict[str, Any] | None:
    """Re-plan the same load on the plan's accelerator with the weight formats (of those the run allowed) that keep
    more bits than the plan's: what the quantization saves. `{"weights": None}` when none of them meets the SLO
    there; None for a 16-bit plan, when no wider format was allowed, or when the load is unknown."""
    from dataclasses import replace

    from gpuplan.search.infer_load import InferSlo, planner_terms
    from gpuplan.search.infer_search import InferConstraints, plan_inference
    from gpuplan.workload.jobs import SERVED_WEIGHTS

    width = DTYPE_BYTES.get(str(plan["weights"]), 2.0)
    allowed = constraints.weights if constraints is not None else SERVED_WEIGHTS
    wider = tuple(w for w in allowed if DTYPE_BYTES.get(w, 2.0) > width)
    base = load or _load_of(run)
    if width >= 2.0 or not wider or base is None:
        return None
    try:
        cons = replace(constraints or InferConstraints(kv_dtype=str(run.get("kv_dtype") or "bf16"),
                                                       max_devices=max_devices),
                       accelerators=(str(plan["accelerator"]),), weights=wider)
        cons = replace(cons, market=_plan_market(cons.market, plan, catalog))
        res = plan_inference(load_model(str(run["model"])), base,
                             InferSlo(ttft_p99_s=float(run["slo"]["ttft_p99_s"]),
                                      tpot_p99_s=float(run["slo"]["tpot_p99_s"])), catalog, cons,
                             engine_profile=engine(_engine_of(run, plan)),
                             terms=planner_terms({k: float(v["value"]) for k, v in run.get("terms", {}).items()}),
                             alternatives=False)
    except GpuplanError:
        return {"weights": None}
    if not res.plans:
        return {"weights": None}
    best = res.plans[0]
    return {"weights": str(best["weights"]), "devices": int(best["devices"]),
            "usd_per_hour": float(best["cost_usd_per_hour"]), "instance": str(best["instance"])}


def _tco(facts: PlanFacts, catalog: Catalog, th: Thresholds) -> dict[str, Any]:
    cal = default_calibration()
    kw, _ = node_power_kw(facts, th)
    billed = int(facts.serving.get("billed_devices", facts.devices))
    res = tco(catalog=catalog, accelerator=facts.accelerator.id, devices=billed,
              gpus_per_node=facts.gpus_per_node, device_hours=billed * HOURS_PER_YEAR,
              time_s=HOURS_PER_YEAR * 3600.0, prices=facts.price_usd_per_device_hour, checkpoint_write_s=0.0,
              mtbf_s=float("inf"), restart_s=cal.value("restart_overhead_s"), server=facts.server, node_power_kw=kw,
              inp=tco_inputs(facts.hosting_market or facts.market, pue=cal.value("pue")),
              market=facts.hosting_market or facts.market)
    return res.to_json()


def _first_clear(alts: Sequence[Mapping[str, Any]], instance_of: Callable[[Mapping[str, Any]], str],
                 facts: PlanFacts, catalog: Catalog, th: Thresholds,
                 parts_of: Callable[[Mapping[str, Any]], list[tuple[str, str]]] | None = None) -> dict[str, Any] | None:
    """The first alternative whose part draws no blocking finding in its offer's market: the recommendation's rule
    (BLOCKING_FINDINGS), applied to the alternatives the advisor names; those the buyer can rent (its market:
    trust.buyer_market) first, as the recommendation is drawn. `parts_of`: every (part, instance) an alternative
    rents (both pools of a heterogeneous disaggregated fleet), each checked; by default its part on `instance_of`."""
    buyer = buyer_market(facts.market, facts.requirements.data_residency)
    mine = [a for a in alts if catalog.instances[instance_of(a)].market == buyer]
    for a in mine or alts:
        if all(_clear(acc, catalog.instances[inst], facts, catalog, th)
               for acc, inst in (parts_of(a) if parts_of else [(str(a["accelerator"]), instance_of(a))])):
            return dict(a)
    return None


def _clear(acc: str, inst: Instance, facts: PlanFacts, catalog: Catalog, th: Thresholds) -> bool:
    """True when `acc` rented on `inst` draws no blocking finding."""
    alt_facts = replace(facts, accelerator=catalog.accelerator(acc), hosting="rented", hosting_market=inst.market,
                        provider=inst.provider)
    return not any(f.severity == "critical" and f.id in BLOCKING_FINDINGS for f in advise(alt_facts, th))


def _pd_parts(a: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(part, instance) of each pool of a disaggregated fleet (a heterogeneous one names a part per pool)."""
    return [(str(a[pool].get("accelerator") or a["accelerator"]), str(a[pool]["instance"]))
            for pool in ("prefill", "decode")]


def rdma_alternative(run: Mapping[str, Any], facts: PlanFacts, catalog: Catalog,
                     th: Thresholds) -> dict[str, Any] | None:
    """The cheapest what-RDMA-would-buy fleet (search/infer_whatif) whose part draws no blocking finding."""
    alts = run.get("what_if_rdma_all") or ([run["what_if_rdma"]] if run.get("what_if_rdma") else [])
    return _first_clear(alts, lambda a: str(a["instance"]), facts, catalog, th)


def pd_alternative(run: Mapping[str, Any], facts: PlanFacts, catalog: Catalog,
                   th: Thresholds) -> dict[str, Any] | None:
    """The cheapest prefill/decode-disaggregated fleet (search/infer_pd_fleet) whose part draws no blocking
    finding in its decode pool's market."""
    return _first_clear(run.get("what_if_pd_all") or [], lambda a: str(a["decode"]["instance"]), facts, catalog, th,
                        parts_of=_pd_parts)


def named_pd(run: Mapping[str, Any], catalog: Catalog, th: Thresholds,
             requirements: Requirements | None) -> dict[str, Any] | None:
    """The disaggregated fleet the advisor would name for `run` (a `plan infer --json` document): the cheapest in
    `what_if_pd_all` whose part draws no blocking finding in its market; None without one."""
    if not run.get("what_if_pd_all") or not run.get("plans"):
        return None
    facts = inference_facts(run, run["plans"][0], catalog=catalog, requirements=requirements)
    return pd_alternative(run, facts, catalog, th)


def named_engine(run: Mapping[str, Any], catalog: Catalog, th: Thresholds, requirements: Requirements | None, *,
                 load: InferLoad, constraints: InferConstraints) -> dict[str, Any] | None:
    """The cheapest fleet another engine of the recommended part's stack serves the same load with, on that part
    (search/infer_engines.engine_what_ifs, each engine's shipped profile, simulated like the recommendation); None
    on CUDA, without a recommendation or when no other engine meets the SLO. Named once for the CLI and the API."""
    from gpuplan.search.infer_engines import engine_what_ifs

    found = _engine_replan(run, catalog, th, requirements, load=load, constraints=constraints)
    if found is None:
        return None
    asked, stack, replan = found
    alts = engine_what_ifs(asked, stack, replan)
    return alts[0] if alts else None


def named_setting(run: Mapping[str, Any], catalog: Catalog, th: Thresholds, requirements: Requirements | None, *,
                  load: InferLoad, constraints: InferConstraints) -> dict[str, Any] | None:
    """A setting of the recommended fleet's engine (MindIE with SplitFuse on: engines.yaml `variant_of`) re-planned
    for the same load on the parts of the stack it runs on (SplitFuse: 910B only) that the request allows: its
    cheapest fleet, or why none met the SLO (search/infer_engines.setting_what_if); None where the engine has no
    such setting. Named once for the CLI and the API."""
    from gpuplan.search.infer_engines import setting_what_if

    found = _engine_replan(run, catalog, th, requirements, load=load, constraints=constraints)
    return setting_what_if(*found) if found is not None else None


def _engine_replan(run: Mapping[str, Any], catalog: Catalog, th: Thresholds, requirements: Requirements | None, *,
                   load: InferLoad, constraints: InferConstraints
                   ) -> tuple[str, str, Callable[[EngineProfile], list[dict[str, Any]]]] | None:
    """(the recommended fleet's engine, its part's stack, a re-plan of the run with another engine profile on the
    recommended part, or where that engine does not run on it, on the parts of the stack it runs on); None without
    a recommendation."""
    from gpuplan.search.infer_load import InferSlo, planner_terms
    from gpuplan.search.infer_search import plan_inference

    best, _ = choose_fleet(run, run.get("plans") or [], catalog, th, requirements, constraints.market)
    if best is None:
        return None
    acc = catalog.accelerator(str(best["accelerator"]))
    spec = load_model(str(run["model"]))
    slo = InferSlo(ttft_p99_s=float(run["slo"]["ttft_p99_s"]), tpot_p99_s=float(run["slo"]["tpot_p99_s"]))
    terms = planner_terms({k: float(v["value"]) for k, v in run.get("terms", {}).items()})

    def replan(prof: EngineProfile) -> list[dict[str, Any]]:
        on = (acc.id,) if prof.runs_on(acc) else tuple(
            a.id for a in catalog.accelerators.values() if a.software_stack == acc.software_stack
            and prof.runs_on(a) and (not constraints.accelerators or a.id in constraints.accelerators))
        return plan_inference(spec, load, slo, catalog, replace(constraints, accelerators=on), engine_profile=prof,
                              terms=terms, alternatives=False).plans if on else []

    return _engine_of(run, best), acc.software_stack, replan


def choose_fleet(run: Mapping[str, Any], plans: Sequence[Mapping[str, Any]], catalog: Catalog, th: Thresholds,
                 requirements: Requirements | None, market: str | None = None) -> tuple[Any, dict[str, str]]:
    """(the cheapest fleet whose offer draws no blocking finding, {fleet_key: finding} of every blocked offer).

    The training rule (report_train.BLOCKING_FINDINGS): a critical export, residency or compliance finding for
    where the fleet's cards are removes that offer from the recommendation; it stays listed, marked. The check is
    per offer, not per part: an export rule reads where the cards are, so a B200 rented in China (grey market) is
    blocked while a B200 rented elsewhere is not (a per-part check let the first offer of a part decide for all).
    Every offer listed is checked, those below the recommendation too, so that no listed fleet reads as clear when
    it is not (a table once marked an export-blocked A100 below the recommendation and left an H800 above it
    unmarked). The fleet comes from the buyer's market (`market`, else the residency region, else global:
    trust.in_buyer_market) when one there is clear; the best of each market is listed beside it."""
    blocked: dict[str, str] = {}
    checked: set[str] = set()
    for p in plans:
        key = fleet_key(p)
        if key in checked:
            continue
        checked.add(key)
        found = advise(inference_facts(run, p, catalog=catalog, requirements=requirements), th)
        hit = [f for f in found if f.severity == "critical" and f.id in BLOCKING_FINDINGS]
        if hit:
            blocked[key] = hit[0].id
    clear = [p for p in plans if fleet_key(p) not in blocked]
    mine = in_buyer_market(clear, catalog, market, requirements.data_residency if requirements else None)
    return (mine[0] if mine else None), blocked


def inference_report(run: Mapping[str, Any], catalog: Catalog, *, thresholds: Thresholds | None = None,
                     requirements: Requirements | None = None, runners_up: int = 4, infer_load: InferLoad | None = None,
                     growth: bool = True, max_devices: int = 1024,
                     constraints: InferConstraints | None = None) -> dict[str, Any]:
    """The report document (kind "infer") of a `plan infer --json` result. `infer_load` is the planned load (needed for
    the growth re-plan of a trace; rebuilt from the labels otherwise); `growth=False` skips the re-plan;
    `constraints` are the run's planner constraints (market, provider, max devices), kept by the re-plan."""
    th = thresholds or default_thresholds()
    plans = list(run["plans"])
    load, slo = run["load"], run["slo"]
    job = {"model": run["model"], "qps": load["qps"], "input_len": load.get("input_len"),
           "output_len": load.get("output_len"), "input_len_mean": load["input_len_mean"],
           "output_len_mean": load["output_len_mean"], "ttft_p99_s": slo["ttft_p99_s"],
           "tpot_p99_s": slo["tpot_p99_s"], "engine": run.get("engine"), "router": run.get("router")}
    doc: dict[str, Any] = {"schema": REPORT_SCHEMA, "kind": "infer", "generated": dt.date.today().isoformat(),
                           "gpuplan_version": __version__, "job": job,
                           "candidates_evaluated": run.get("candidates_evaluated", 0),
                           "simulated": run.get("simulated", 0), "rejected": run.get("rejected", {})}
    if not plans:
        doc.update(recommendation=None, runners_up=[], plans=[], findings=[])
        return doc
    best, blocked = choose_fleet(run, plans, catalog, th, requirements, constraints.market if constraints else None)
    if best is None:
        doc.update(recommendation=None, runners_up=[], plans=[infer_summary(p) for p in plans], findings=[],
                   not_recommended=blocked)
        return doc
    job["engine"] = _engine_of(run, best)  # the recommended fleet's (each part's stack's engine without --engine)
    seen = {best["accelerator"]}
    runners = []
    for p in plans[1:]:
        if p["accelerator"] not in seen:
            seen.add(p["accelerator"])
            runners.append(p)
    grow = serve_growth(run, best, catalog, factor=th.value("growth_factor"), load=infer_load,
                        max_devices=max_devices, constraints=constraints) if growth else None
    wide = serve_wider(run, best, catalog, load=infer_load, max_devices=max_devices,
                       constraints=constraints) if growth else None
    facts = inference_facts(run, best, catalog=catalog, requirements=requirements, growth=grow, wider=wide)
    alt = rdma_alternative(run, facts, catalog, th)
    if alt is not None:
        facts = replace(facts, serving={**facts.serving, "what_if_rdma": alt})
    pd = run["what_if_pd"] if "what_if_pd" in run else pd_alternative(run, facts, catalog, th)  # named once
    if pd is not None:
        facts = replace(facts, serving={**facts.serving, "what_if_pd": pd})
    other = run.get("what_if_engine")  # the recommended part with another engine (named_engine)
    if other and other["accelerator"] == best["accelerator"]:
        facts = replace(facts, serving={**facts.serving, "what_if_engine": other})
    if run.get("what_if_setting") and _engine_of(run, best) == run["what_if_setting"]["variant_of"]:
        facts = replace(facts, serving={**facts.serving, "what_if_setting": run["what_if_setting"]})  # named_setting
    findings = advise(facts, th)
    doc.update(
        recommendation={**infer_summary(best), "advice": best["advice"],
                        **{k: v for k, v in (serving_recommendation(
                            plans, catalog, constraints.market if constraints else None, skip=tuple(blocked),
                            residency=requirements.data_residency if requirements else None) or {}).items()
                           if k in ("caveats", "confirmed_alternative", "best_per_market", "buyer_market")}},
        not_recommended=blocked,
        runners_up=[infer_summary(p) for p in runners[:runners_up]],
        plans=[infer_summary(p) for p in plans],
        latency={k: best[k] for k in ("ttft_s", "tpot_s", "e2e_s")},
        at_headroom=best.get("at_headroom", {}),
        memory=serving_memory(run, best, catalog),
        growth=grow,
        findings=[f.to_json() for f in findings],
        tco=_tco(facts, catalog, th),
        assumptions={"engine": _engine_of(run, best), "memory_fraction": facts.serving.get("memory_fraction"),
                     "server": facts.server.id if facts.server else None, "load": load, "slo": slo},
        calibration=[{"name": k, "value": v["value"], "unit": v.get("unit", ""), "source": v["source"],
                      "provenance": "data"} for k, v in run.get("terms", {}).items()],
        thresholds=th.used(*sorted({t for f in findings for t in f.thresholds})),
        sources=plan_sources(facts, catalog,
                             prices=[(f"price {p['instance']}", p["instance"]) for p in [best, *runners]],
                             model=("per-step cost model and discrete-event simulation", "gpuplan plan infer")),
    )
    return doc


def risk_of(catalog: Catalog, accelerator: str) -> str:
    stacks = advise_data("ecosystem")["stacks"]
    risk: str = stacks.get(catalog.accelerator(accelerator).software_stack, stacks["other"])["risk"]
    return risk


def compare_inference(run_for: Callable[[str], Mapping[str, Any]], accelerators: Sequence[str], catalog: Catalog,
                      job: Mapping[str, Any], *, thresholds: Thresholds | None = None,
                      requirements: Requirements | None = None) -> dict[str, Any]:
    """One cheapest verified fleet per accelerator. `run_for(acc)` returns the `plan infer --json` object of the
    inference planner restricted to that accelerator, or {"error": text} when it has no plan."""
    th = thresholds or default_thresholds()
    options: list[dict[str, Any]] = []
    for acc in accelerators:
        run = run_for(acc)
        risk = risk_of(catalog, acc)
        if "error" in run or not run.get("plans"):
            options.append({"accelerator": acc, "plan": None, "rejected": run.get("error", run.get("rejected")),
                            "ecosystem_risk": risk, "findings": [], "band": {}, "confidence": None})
            continue
        best = run["plans"][0]
        facts = inference_facts(run, best, catalog=catalog, requirements=requirements)
        options.append({"accelerator": acc, "plan": infer_summary(best), "rejected": run.get("rejected", {}),
                        "memory_headroom": None, "ecosystem_risk": risk, "band": best.get("band", {}),
                        "confidence": best.get("confidence"),
                        "findings": [f.to_json() for f in advise(facts, th)]})
    return {"schema": REPORT_SCHEMA, "kind": "compare_infer", "generated": dt.date.today().isoformat(),
            "gpuplan_version": __version__, "job": dict(job), "options": options}
