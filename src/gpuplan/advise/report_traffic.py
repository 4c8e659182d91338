"""`plan infer --traffic`: the schedule of replicas per hour and the purchase mix of the planned fleets.

The fleets are planned at the curve's peak rate (search/infer_search.plan_inference with qps = the peak);
for each listed fleet the schedule (search/infer_traffic.schedule) and its mixes (advise/traffic_mix) follow
from the fleet's verified peak replicas, its SLO-bound capacity and its instance type's rates. The answer is for
the recommended fleet (`schedule`, `purchase_mix`); `purchase_mix.by_fleet` gives each listed fleet's best
mix, so a part whose burst rents cheaper over the month is named even when it is not the cheapest at the peak.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpuplan.advise.findings import default_thresholds
from gpuplan.advise.tco import tco_inputs
from gpuplan.advise.tco_fleet import fleet_tco, tco_for
from gpuplan.advise.tco_inputs import fleet_inputs
from gpuplan.advise.traffic_mix import MixOption, Rate, mix_options, owned_option, unit_rates
from gpuplan.advise.trust import fleet_block
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.memory_infer import matrix_bytes_per_param
from gpuplan.hardware import Catalog
from gpuplan.search.infer_load import InferLoad
from gpuplan.search.infer_traffic import ScaleUp, ScheduleHour, TrafficCurve, lead_hours, scale_up, schedule
from gpuplan.workload.jobs import InferenceJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["TRAFFIC_TERMS", "fleet_traffic", "traffic_answer"]

TRAFFIC_TERMS = ("load_headroom", "traffic_min_replicas", "scale_up_instance_start_s", "scale_up_read_gb_per_s",
                 "scale_up_engine_start_s")
_KEYS = ("accelerator", "instance", "replicas", "layout", "weights")


def _scale(spec: ModelSpec, plan: Mapping[str, Any], terms: Calibration) -> ScaleUp:
    weights_bytes = count_params(spec).total * matrix_bytes_per_param(spec, InferenceJob(weights=plan["weights"]))
    return scale_up(weights_bytes, instance_start_s=terms.value("scale_up_instance_start_s"),
                    read_gb_per_s=terms.value("scale_up_read_gb_per_s"),
                    engine_start_s=terms.value("scale_up_engine_start_s"))


def fleet_traffic(plan: Mapping[str, Any], curve: TrafficCurve, *, catalog: Catalog, spec: ModelSpec,
                  load: InferLoad, terms: Calibration, provider: str | None,
                  market: str | None) -> tuple[tuple[ScheduleHour, ...], dict[str, Rate], list[MixOption], ScaleUp]:
    """One fleet's schedule, rates, mixes and scale-up time."""
    inst = catalog.instances[plan["instance"]]
    per_replica = int(plan["devices"]) // int(plan["replicas"])
    per_unit = int(inst.accelerator_count)
    up = _scale(spec, plan, terms)
    hours = schedule(curve, peak_replicas=int(plan["replicas"]),
                     capacity_rps=plan["capacity_requests_per_s_per_replica"], headroom=terms.value("load_headroom"),
                     min_replicas=int(terms.value("traffic_min_replicas")),
                     lead=lead_hours(up.total_s), devices_per_replica=per_replica, devices_per_unit=per_unit)
    tco_market = market or inst.market
    inp, fin = tco_inputs(tco_market), fleet_inputs(tco_market)
    rates = unit_rates(catalog, inst.id, provider=provider,
                       yearly_discount_vs_monthly=inp.yearly_discount_vs_monthly,
                       multi_year_discount_vs_yearly=fin.multi_year_discount_vs_yearly,
                       multi_year_discount_vs_on_demand=fin.multi_year_discount_vs_on_demand)
    tokens = curve.requests_per_month * (load.input_len.mean + load.output_len.mean)
    options = mix_options(hours, rates, hours_per_row=curve.hours_per_row, tokens_per_month=tokens,
                          devices_per_unit=per_unit)
    owned = _owned(catalog, plan, hours, rates, tco_market, hours_per_row=curve.hours_per_row, tokens=tokens,
                   per_unit=per_unit)
    return hours, rates, options + ([owned] if owned is not None else []), up


def _owned(catalog: Catalog, plan: Mapping[str, Any], hours: Sequence[ScheduleHour], rates: dict[str, Rate],
           market: str, *, hours_per_row: float, tokens: float, per_unit: int) -> MixOption | None:
    """Owning the baseline's servers (gpuplan tco's lines for that many devices), where the catalog prices the
    server and its power; None otherwise."""
    acc = catalog.accelerator(plan["accelerator"])
    setup = tco_for(catalog, acc, devices=per_unit, years=tco_inputs(market).years, utilization=1.0, market=market,
                    pue=default_calibration().value("pue"),
                    node_power_per_tdp=default_thresholds().value("node_power_per_accelerator_tdp"))
    if setup.choice.price_usd is None or setup.choice.power_kw is None:
        return None

    def own_month(n: int, used: float) -> float:
        t = fleet_tco(accelerator=acc.id, devices=n * per_unit, utilization=max(used, 1e-6), setup=setup)
        return t.own_usd_per_year / 12.0

    return owned_option(hours, own_month, on_demand=rates.get("on_demand"), hours_per_row=hours_per_row,
                        tokens_per_month=tokens, devices_per_unit=per_unit)


def _chosen(options: Sequence[MixOption]) -> MixOption | None:
    """The cheapest mix without spot (spot is a scenario: it can be reclaimed at any time)."""
    firm = [o for o in options if o.burst != "spot" and o.monthly_usd != float("inf")]
    return min(firm, key=lambda o: (o.monthly_usd, o.commit)) if firm else None


def _fleet_id(plan: Mapping[str, Any]) -> dict[str, Any]:
    return {k: plan[k] for k in ("accelerator", "instance", "instances", "replicas", "devices", "layout", "weights")}


def traffic_answer(run: Mapping[str, Any], curve: TrafficCurve, *, catalog: Catalog, spec: ModelSpec,
                   load: InferLoad, terms: Calibration, provider: str | None = None,
                   market: str | None = None, fleets: int = 10) -> dict[str, Any]:
    """{"traffic", "schedule", "purchase_mix"} for the recommended fleet of `run` (a `plan infer` record planned
    at the curve's peak), with `purchase_mix.by_fleet` over the first `fleets` listed fleets."""
    plans: list[dict[str, Any]] = run["plans"]
    rec = run.get("recommended") or {}
    plan = next((p for p in plans if rec and all(p.get(k) == rec.get(k) for k in _KEYS)), plans[0])
    hours, rates, options, up = fleet_traffic(plan, curve, catalog=catalog, spec=spec, load=load, terms=terms,
                                              provider=provider, market=market)
    chosen = _chosen(options)
    # a committed rate the catalog does not publish is derived (low confidence): the best mix on published
    # rates alone is named beside it, so a buyer sees what the choice rests on
    published = _chosen([o for o in options if o.commit == "owned"
                         or (o.commit in rates and not rates[o.commit].derived)])
    od = next((o for o in options if o.commit == "on_demand"), None)
    spot = [o for o in options if o.burst == "spot"]
    peak_units = max(h.units for h in hours)
    tokens = curve.requests_per_month * (load.input_len.mean + load.output_len.mean)
    # a baseline instance-hour: its committed rate, or owning's monthly cost over its hours
    commit_usd = (0.0 if chosen is None else chosen.baseline_usd / (chosen.baseline * 730.0) if chosen.baseline
                  else 0.0)
    burst_rate = rates.get("on_demand")
    rows = []
    for h in hours:
        base = min(h.units, chosen.baseline) if chosen is not None else 0
        cost = ((chosen.baseline * commit_usd if chosen is not None else 0.0)
                + (h.units - base) * (burst_rate.usd_per_instance_hour if burst_rate is not None else 0.0))
        rows.append({**h.to_json(), "baseline_instances": base, "burst_instances": h.units - base,
                     "cost_usd_per_hour": cost,
                     "on_demand_usd_per_hour": (h.units * burst_rate.usd_per_instance_hour
                                                if burst_rate is not None else None)})
    # the fleets a buyer of this market may choose instead: the same market's offers, no blocking finding
    blocked = run.get("not_recommended") or {}
    market_of = catalog.instances[plan["instance"]].market
    by_fleet = []
    for p in plans[:fleets]:
        if p is not plan and (catalog.instances[p["instance"]].market != market_of
                              or fleet_block(p, blocked) is not None):
            continue
        if p is plan:
            best = chosen
        else:
            best = _chosen(fleet_traffic(p, curve, catalog=catalog, spec=spec, load=load, terms=terms,
                                         provider=provider, market=market)[2])
        by_fleet.append({**_fleet_id(p), "recommended": p is plan,
                         "mix": best.to_json() if best is not None else None})
    cheaper = min((f for f in by_fleet if f["mix"] is not None and not f["recommended"]),
                  key=lambda f: f["mix"]["monthly_usd"], default=None)
    if cheaper is None or chosen is None or cheaper["mix"]["monthly_usd"] >= chosen.monthly_usd:
        cheaper = None
    spot_pre = tco_inputs(market or catalog.instances[plan["instance"]].market).spot_preemptions_per_node_hour
    mix = {
        "fleet": _fleet_id(plan), "unit": "instance", "instance_devices": int(catalog.instances[
            plan["instance"]].accelerator_count),
        "peak_instances": peak_units, "month_hours": 730.0, "hours_per_row": curve.hours_per_row,
        "requests_per_month": curve.requests_per_month, "tokens_per_month": tokens,
        "rates": {k: r.to_json() for k, r in rates.items()},
        "chosen": chosen.to_json() if chosen is not None else None,
        "chosen_rate_derived": bool(chosen is not None and chosen.commit in rates and rates[chosen.commit].derived),
        "chosen_published": published.to_json() if published is not None else None,
        "all_on_demand": od.to_json() if od is not None else None,
        "savings_vs_all_on_demand": (1.0 - chosen.monthly_usd / od.monthly_usd
                                     if chosen is not None and od is not None and od.monthly_usd > 0 else None),
        "always_on_peak_usd": plan["cost_usd_per_hour"] * 730.0,
        "options": [o.to_json() for o in options],
        "spot": [{**o.to_json(), "expected_preemptions_per_month": o.burst_instance_hours * spot_pre,
                  "preemptions_per_node_hour": spot_pre} for o in spot],
        "scale_up": up.to_json(), "terms": terms.used(*TRAFFIC_TERMS),
        "by_fleet": by_fleet, "cheaper_fleet": cheaper,
        "no_on_demand": burst_rate is None,
    }
    return {"traffic": {"label": curve.label, "weekly": curve.weekly, "peak_qps": curve.peak_qps,
                        "rows": len(curve.rows)},
            "schedule": rows, "purchase_mix": mix}
