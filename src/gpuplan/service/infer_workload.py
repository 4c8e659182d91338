"""`plan infer --workload FILE.yaml`: several models, each at its own rate and SLO, and what one fleet of them costs.

Each model is planned alone, as `plan infer` plans it (search/infer_search.plan_inference: its replicas simulated at
its own SLO, behind the run's router) and recommended by the same rule (advise.trust.serving_recommendation, blocked
offers removed); the combined fleet is the sum of those. Where two or more models have verified fleets on one
instance type of the buyer's market, their replicas are packed onto shared instances by device count
(search/infer_packing.py) and the cheapest packing is named when it saves instances. The colocated fleets only:
the disaggregated and engine what-ifs of a single-model `plan infer` are not run per model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpuplan.advise.findings import Thresholds
from gpuplan.advise.report_infer import choose_fleet
from gpuplan.advise.trust import eligible_fleets, serving_recommendation
from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import Catalog
from gpuplan.search.infer_fleet import fleet_offers
from gpuplan.search.infer_load import InferSlo
from gpuplan.search.infer_packing import first_fit_decreasing, packable, replica_sizes, shared_instances
from gpuplan.search.infer_search import InferConstraints, plan_inference, plan_record
from gpuplan.service.infer_inputs import infer_load
from gpuplan.workload.engines import EngineProfile
from gpuplan.workload.presets import load_model
from gpuplan.workload.serving_mix import ServedModel, ServingMix

__all__ = ["PACKING_ASSUMPTION", "plan_workload"]

PACKING_ASSUMPTION = ("each model planned alone at its own rate and SLO (its replicas simulated behind the run's "
                      "router); packing puts whole replicas of several models on one instance by device count and "
                      "moves no replica's devices, so each keeps its simulated latency; what they share on one "
                      "server (host CPU, PCIe, NICs, its failure) is not modelled; colocated fleets only")


def _in_file(exc: InputError, i: int, m: ServedModel) -> InputError:
    """`exc` with the workload entry it came from in its field."""
    return InputError(field=f"workload.models[{i}] ({m.label}): {exc.field}", value=exc.value, allowed=exc.allowed,
                      hint=exc.hint)


def _one(i: int, m: ServedModel, catalog: Catalog, cons: InferConstraints, prof: EngineProfile, cal: Calibration,
         th: Thresholds, requirements: Any, residency: str | None,
         stack_engines: Mapping[str, EngineProfile] | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the model's answer, the fleets it could be recommended) planned alone."""
    try:
        spec = load_model(m.model)
        load = infer_load(m.qps, None, m.input_len, m.output_len, m.input_dist, m.output_dist, files=True)
        slo = InferSlo(ttft_p99_s=m.ttft_p99_s, tpot_p99_s=m.tpot_p99_s)
        res = plan_inference(spec, load, slo, catalog, cons, engine_profile=prof, terms=cal, alternatives=False,
                             stack_engines=stack_engines)
    except InputError as exc:
        raise _in_file(exc, i, m) from None
    run = plan_record(spec, load, slo, res, prof, cons.kv_dtype, slo_names=(f"models[{i}].ttft_p99_s",
                                                                            f"models[{i}].tpot_p99_s"))
    _, blocked = choose_fleet(run, res.plans, catalog, th, requirements, cons.market)
    rec = serving_recommendation(res.plans, catalog, cons.market, skip=tuple(blocked), residency=residency)
    if rec is None:
        raise InputError(field=f"workload.models[{i}] ({m.label})", value=m.model,
                         allowed="a model with a fleet that can be recommended",
                         hint=f"every fleet that meets its SLO draws a blocking finding ({blocked}); relax the "
                              "market or compliance options, or plan it alone with plan infer")
    eligible = [v for p in eligible_fleets(res.plans, catalog, cons.market, blocked, residency)
                for v in _rehosted(p, catalog, cons)]
    answer = {"name": m.label, "model": spec.name, "model_id": m.model, "load": load.to_json(),
              "slo": run["slo"], "recommended": rec, "plans_considered": len(eligible),
              "cost_usd_per_hour": float(rec["cost_usd_per_hour"])}
    return answer, eligible


def _rehosted(p: dict[str, Any], catalog: Catalog, cons: InferConstraints) -> list[dict[str, Any]]:
    """`p`, and the same replicas on every other whole-instance offer of the same server in its market (the same
    devices and links, so the same simulated replicas), priced by device count: the instance types packing may use."""
    here = catalog.instances[str(p["instance"])]
    out = [p]
    for o in fleet_offers(catalog, str(p["accelerator"]), market=here.market, provider=cons.provider):
        other = catalog.instances[o.instance]
        if o.instance == here.id or other.server != here.server or o.cards_per_host or o.accelerator_count < 2:
            continue
        if not packable({**p, "per_card": False}, o.accelerator_count):
            continue
        n = first_fit_decreasing(replica_sizes(p), o.accelerator_count)
        out.append({**p, "instance": o.instance, "instances": n, "cost_usd_per_hour": n * o.usd_per_hour,
                    "per_card": False, "price_kind": o.kind, "rehosted_from": here.id})
    return out


def plan_workload(mix: ServingMix, catalog: Catalog, cons: InferConstraints, *, engine_profile: EngineProfile,
                  terms: Calibration, thresholds: Thresholds, requirements: Any = None,
                  residency: str | None = None, label: str = "",
                  stack_engines: Mapping[str, EngineProfile] | None = None) -> dict[str, Any]:
    """The `workload` JSON object: per model its fleet alone, the combined cost, the instance types models share
    and the cheapest packing of them (`packing`: null when none saves against separate fleets)."""
    models: list[dict[str, Any]] = []
    best: dict[str, Mapping[str, Any]] = {}
    plans: dict[str, list[dict[str, Any]]] = {}
    for i, m in enumerate(mix.models):
        answer, eligible = _one(i, m, catalog, cons, engine_profile, terms, thresholds, requirements, residency,
                                stack_engines)
        models.append(answer)
        best[m.label] = answer["recommended"]
        plans[m.label] = eligible
    separate = sum(a["cost_usd_per_hour"] for a in models)
    devices_of = {i.id: int(i.accelerator_count) for i in catalog.instances.values()}
    market_of = {i.id: i.market for i in catalog.instances.values()}
    shared = shared_instances(best, plans, devices_of, market_of=market_of, market=None)
    saving = [s for s in shared if s.saving_usd_per_hour > 1e-6 and s.instances_packed < s.instances_apart]
    packing = saving[0].to_json() if saving else None
    # the models whose own recommended fleets are on one instance type: say so, whether or not packing saves
    by_instance: dict[str, list[str]] = {}
    for a in models:
        by_instance.setdefault(str(a["recommended"]["instance"]), []).append(a["name"])
    return {"file": label, "models": models, "separate_usd_per_hour": separate,
            "same_instance": [{"instance": k, "models": v} for k, v in sorted(by_instance.items()) if len(v) > 1],
            "shared": [s.to_json() for s in shared[:5]], "packing": packing,
            "total_usd_per_hour": packing["usd_per_hour_total"] if packing else separate,
            "engine": engine_profile.id, "router": cons.router, "assumption": PACKING_ASSUMPTION}
