"""How sure one estimate is (`estimate train`, `estimate infer`): the confidence and 80% bands a plan carries.

A plan's figures carry `confidence`, `band` and `band_basis` (search/plan_trust.py). An estimate answers for the one
configuration the user chose, from the same step model, so its figures carry the same three keys from the same
cross-validated classes (estimate/uncertainty.py): one schema for plans and estimates, and no figure without a
statement of how sure it is.
"""

from __future__ import annotations

from typing import Any

from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.uncertainty import EstimateClass, band
from gpuplan.hardware import Catalog
from gpuplan.search.plan_trust import (
    SERVING_NOVELTY,
    confidence_level,
    cost_band,
    device_price_confidence,
    efficiency_provenance,
    serving_classes,
    serving_efficiency,
    training_bands,
)
from gpuplan.search.pricing import DevicePrice

__all__ = ["COST_KINDS", "serving_estimate_trust", "training_estimate_trust"]

COST_KINDS = ("usd_on_demand", "usd_spot", "usd_monthly_commitment")
LATENCIES = ("ttft_s", "tpot_s", "e2e_s")
RATES = ("output_tokens_per_s", "output_tokens_per_s_per_device", "total_tokens_per_s", "requests_per_s")


def training_estimate_trust(catalog: Catalog, cal: Calibration, fig: dict[str, Any], *, accelerator: str,
                            precision: str, price: DevicePrice, moe: bool, nodes: int,
                            framework_stated: bool) -> dict[str, Any]:
    """`confidence`, `band` and `band_basis` of an `estimate train` figure set (plan_figures' output).

    Bands are those of a plan (training_bands), plus one per cost kind the estimate prints: an hourly bill moves
    with the time band, a monthly commitment only where the time band crosses a month."""
    eff = efficiency_provenance(cal, accelerator, precision)
    cost = fig.get("cost") or {}
    priced = bool(fig.get("time_to_train_s")) and any(cost.get(k) for k in COST_KINDS)
    price_rec = device_price_confidence(catalog, price) if priced else None
    conf = {"level": confidence_level(eff, price_rec), "efficiency": eff, "price": price_rec,
            "costed": bool(fig.get("time_to_train_s"))}  # without --tokens there is no cost to be sure of
    bands, basis = training_bands(fig, efficiency=eff["provenance"], moe=moe, nodes=nodes,
                                  framework_stated=framework_stated)
    t, tb = fig.get("time_to_train_s"), bands.get("time_to_train_s")
    if t and tb:
        for k in COST_KINDS:
            if cost.get(k):
                bands[f"cost.{k}"] = cost_band(float(cost[k]), float(t), tb, monthly=k == "usd_monthly_commitment")
    return {"confidence": conf, "band": bands, "band_basis": basis}


def serving_estimate_trust(fig: dict[str, Any], *, accelerator: str, engine: str, engine_overridden: bool,
                           moe: bool, devices_per_replica: int) -> dict[str, Any]:
    """`confidence`, `band` and `band_basis` of an `estimate infer` answer (InferenceEstimate.to_json()).

    Latencies (a fixed batch's, or each simulated percentile) take the latency class's band, throughputs the
    throughput class's (serving_bands does the same for a fleet); the confidence is the part's serving evidence
    (no price: an estimate of one deployment has no cost)."""
    eff = serving_efficiency(accelerator, engine, engine_overridden)
    conf = {"level": confidence_level(eff, None), "efficiency": eff, "price": None, "costed": False}
    lat, tput = serving_classes(eff["provenance"], moe, devices_per_replica)
    bands: dict[str, list[float]] = {}
    basis: dict[str, Any] = {}

    def put(name: str, value: Any, cls: EstimateClass, orient: str) -> None:
        if not isinstance(value, int | float) or value <= 0:  # a one-token answer has no TPOT
            return
        b = band(cls, float(value), orient, SERVING_NOVELTY)
        if b is not None:
            bands[name] = b.as_list()
            basis["latency" if cls is lat else "throughput"] = b.basis

    for name in LATENCIES:
        v = fig.get(name)
        if isinstance(v, dict):  # simulated under a request rate: each percentile
            for q, x in v.items():
                put(f"{name}.{q}", x, lat, "time")
        else:
            put(name, v, lat, "time")
    if fig.get("scenario") != "server":  # under a request rate the throughput is the offered load, not an estimate
        for name in RATES:
            put(name, fig.get(name), tput, "rate")
    return {"confidence": conf, "band": bands, "band_basis": basis}
