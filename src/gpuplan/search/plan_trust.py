"""What a plan rests on: the provenance of its efficiency and price, its 80% bands, one confidence level.

- Efficiency (`efficiency_provenance`): `measured` when the part's compute-efficiency term came from
  the user's `gpuplan calibrate`; `validated` when the part has rows at that precision (16-bit or fp8)
  in the shipped ground truth (how many, from how many sources, and their cross-validated median error at that
  precision: estimate/data/accuracy.json); `default` otherwise
  (the part runs on compute_efficiency.default.*, which no measurement of it supports).
- Price (`price_confidence`): the catalog price the plan's cost uses, with its source, date, basis
  (list price or market quote) and confidence; None when the plan has no price.
- Level (`confidence_level`): the lower of the efficiency level (measured: high; validated: high when
  its cross-validated median error is at most `HIGH_CV_APE` over at least `MIN_HIGH_ROWS` runs from
  `MIN_HIGH_SOURCES` sources, else medium; default: low) and the price
  level (its catalog confidence; a distressed price is low). `--trust` keeps plans at or above a level.
- Bands (`training_bands`): from the cross-validated error of the plan's class (estimate/uncertainty.py).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.uncertainty import EstimateClass, band, part_accuracy
from gpuplan.hardware import Catalog, Price
from gpuplan.search.offers import HardwareOption
from gpuplan.search.pricing import DevicePrice, used_price
from gpuplan.search.train_planner import HOURS_PER_MONTH, billed_by_month

__all__ = ["HIGH_CV_APE", "LEVELS", "MIN_HIGH_ROWS", "MIN_HIGH_SOURCES", "SERVING_NOVELTY", "confidence_level",
           "cost_band", "device_price_confidence", "efficiency_provenance", "meets_trust", "price_confidence",
           "serving_classes", "serving_efficiency", "thin_evidence", "training_bands", "training_confidence"]

LEVELS = ("low", "medium", "high")
Arch = Literal["dense", "moe"]
Scale = Literal["single", "multi"]
Eff = Literal["validated", "default"]
Stack = Literal["stated", "unstated"]
HIGH_CV_APE = 0.15  # a validated part whose held-out median error exceeds this is medium, not high
# A held-out median over one or two runs, or over one source's runs, says little about the next run (one source's
# runs share its framework version, scripts and cluster): such a part is validated but medium, not high.
MIN_HIGH_ROWS = 3
MIN_HIGH_SOURCES = 2
_PRICE_KINDS = (("on_demand", "on_demand_hourly"), ("monthly", "monthly"))


def _at_precision(acc: dict[str, Any] | None, dtype: str) -> tuple[int, int, float | None]:
    """(rows, sources, held-out median error) of a part's training rows at one precision family."""
    if not acc:
        return 0, 0, None
    if "rows_by_precision" not in acc:  # an older accuracy.json: the part's figures at all precisions
        return int(acc["rows"]), int(acc.get("sources", 0)), acc.get("cv_median_ape")
    rows = int(acc["rows_by_precision"].get(dtype, 0))
    sources = int((acc.get("sources_by_precision") or {}).get(dtype, min(rows, int(acc.get("sources", 0)))))
    cv = (acc.get("cv_median_ape_by_precision") or {}).get(dtype, acc.get("cv_median_ape")) if rows else None
    return rows, sources, cv


def efficiency_provenance(cal: Calibration, accelerator: str, dtype: str, kind: str = "train") -> dict[str, Any]:
    """Where the part's efficiency comes from: measured, validated (rows, sources, CV error) or default.

    Rows, sources and the held-out error are those at the plan's precision family (16-bit or fp8: separate
    terms), so an fp8 run's small error does not vouch for a 16-bit plan."""
    dtype = "fp8" if dtype == "fp8" else "bf16"
    name = f"compute_efficiency.{accelerator}.{dtype}"
    term = cal.terms.get(name)
    rows, sources, cv = _at_precision(part_accuracy(kind, accelerator), dtype)
    tied = term.tuned_on.accelerator if term is not None and term.tuned_on is not None else ()
    if rows == 0 and len(tied) > 1:  # one value tuned on several parts (same die): their rows validate it
        found = [f for a in tied if (f := _at_precision(part_accuracy(kind, a), dtype))[0]]
        rows = sum(f[0] for f in found)
        sources = max((f[1] for f in found), default=0)  # a lower bound: parts may share a source
        cv = next((f[2] for f in found if f[2] is not None), None)
    if term is not None and term.overridden:
        prov = "measured"
    elif rows:
        prov = "validated"
    else:
        prov = "default"
        name = f"compute_efficiency.default.{dtype}" if term is None else name
        term = cal.terms.get(name)
    return {"provenance": prov, "rows": rows, "sources": sources, "cv_median_ape": cv, "term": name,
            "value": term.value if term is not None else None, "source": term.source if term is not None else "",
            "thin": prov == "validated" and thin_evidence(rows, sources)}


def thin_evidence(rows: int, sources: int) -> bool:
    """Too few published runs to say how far off the next one may be: fewer than `MIN_HIGH_ROWS` runs or fewer
    than `MIN_HIGH_SOURCES` independent sources (one source's runs share its stack, scripts and cluster)."""
    return rows < MIN_HIGH_ROWS or sources < MIN_HIGH_SOURCES


def price_confidence(catalog: Catalog, opt: HardwareOption) -> dict[str, Any] | None:
    """The catalog price behind an option's cost (on-demand, else monthly), None without a price; a distressed-rent
    scenario's price is its distressed rent (low confidence)."""
    return device_price_confidence(catalog, opt.price, distressed=opt.scenario == "distressed")


def device_price_confidence(catalog: Catalog, price: DevicePrice, *,
                            distressed: bool = False) -> dict[str, Any] | None:
    """The catalog price behind a per-device price (on-demand, else monthly), None without a price."""
    for key, kind in _PRICE_KINDS:
        inst_id = getattr(price, f"{key}_instance")
        if inst_id is None:
            continue
        inst = catalog.instances[inst_id]
        p = inst.price(kind, distressed=True) if distressed else used_price(catalog, inst, kind)
        if p is None:
            continue
        return _price_record(p, kind, inst_id, getattr(price, key))
    return None


def _price_record(p: Price, kind: str, instance: str, usd_per_device_hour: float) -> dict[str, Any]:
    """The `confidence.price` object of a plan: a distressed rent counts as low confidence."""
    return {"confidence": "low" if p.distressed else p.confidence, "source": p.source, "as_of": str(p.as_of),
            "basis": p.basis, "kind": kind, "instance": instance, "distressed": p.distressed,
            "usd_per_device_hour": usd_per_device_hour}


def _rank(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 0


def confidence_level(efficiency: dict[str, Any], price: dict[str, Any] | None) -> str:
    """The lower of the efficiency level and the price level (a plan without a price: efficiency alone)."""
    prov = efficiency["provenance"]
    if prov == "measured":
        eff = "high"
    elif prov == "validated":
        cv = efficiency.get("cv_median_ape")
        thin = thin_evidence(int(efficiency.get("rows") or 0), int(efficiency.get("sources") or 0))
        eff = "high" if cv is not None and cv <= HIGH_CV_APE and not thin else "medium"
    else:
        eff = "low"
    if price is None:
        return eff
    pr = price["confidence"] if price["confidence"] in LEVELS else "low"
    return LEVELS[min(_rank(eff), _rank(pr))]


def meets_trust(confidence: dict[str, Any], trust: str) -> bool:
    """Whether a plan's confidence is at least `trust` (low keeps everything)."""
    return _rank(str(confidence["level"])) >= _rank(trust)


def purchase_confidence(opt: HardwareOption) -> dict[str, Any] | None:
    """The `confidence.price` of an own cluster the catalog prices to buy (`kind` "purchase": its list price per
    server; a plan chosen on what buying it costs rests on it as a rental plan rests on its hourly price)."""
    buy = opt.purchase
    if buy is None:
        return None
    return {"confidence": buy.confidence, "source": buy.source, "as_of": buy.as_of, "basis": "list_price",
            "kind": "purchase", "instance": buy.server, "distressed": False, "usd_per_device_hour": None,
            "usd_per_server": buy.usd_per_server}


def training_confidence(catalog: Catalog, cal: Calibration, accelerator: str, dtype: str,
                        opt: HardwareOption) -> dict[str, Any]:
    eff = efficiency_provenance(cal, accelerator, dtype)
    price = price_confidence(catalog, opt) or purchase_confidence(opt)
    return {"level": confidence_level(eff, price), "efficiency": eff, "price": price}


def cost_band(usd: float, time_s: float, time_band: list[float], *, monthly: bool) -> list[float]:
    """80% band of a job's bill from its time band: an hourly bill moves with the time; a monthly commitment bills
    whole months, so it moves only where the time band crosses a month (train_planner.cost_figures)."""
    if monthly:
        months = [math.ceil(t / 3600.0 / HOURS_PER_MONTH) for t in (*time_band, time_s)]
        return [usd * months[0] / months[2], usd * months[1] / months[2]]
    return [usd * time_band[0] / time_s, usd * time_band[1] / time_s]


# What is new about every serving estimate besides its source: plans model the engines' current releases
# (engines.yaml; `EngineProfile.version` None), which no published row states (rows state older versions or none),
# so a serving band widens by the leave-one-engine-version-out factor too (estimate/uncertainty.novelty_factor).
SERVING_NOVELTY = frozenset({"stack"})


def serving_classes(efficiency: str, moe: bool, devices_per_replica: int) -> tuple[EstimateClass, EstimateClass]:
    """(latency, throughput) classes of a serving estimate: a replica over more than 8 devices is multi-node; the
    engine is always named (a stated serving stack)."""
    common: dict[str, Any] = {"kind": "serve", "efficiency": "default" if efficiency == "default" else "validated",
                              "arch": "moe" if moe else "dense",
                              "scale": "multi" if devices_per_replica > 8 else "single", "stack": "stated"}
    return EstimateClass(family="latency", **common), EstimateClass(family="throughput", **common)


def training_bands(fig: dict[str, Any], *, efficiency: str, moe: bool, nodes: int,
                   framework_stated: bool = False) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """80% bands of a training plan's figures (name as in the plan's JSON -> [low, high]) and their bases."""
    arch: Arch = "moe" if moe else "dense"
    scale: Scale = "multi" if nodes > 1 else "single"
    eff: Eff = "default" if efficiency == "default" else "validated"
    stack: Stack = "stated" if framework_stated else "unstated"
    step = EstimateClass(kind="train", efficiency=eff, family="throughput", arch=arch, scale=scale, stack=stack)
    campaign = EstimateClass(kind="train", efficiency=eff, family="campaign", arch=arch, scale=scale, stack=stack)
    out: dict[str, list[float]] = {}
    basis: dict[str, Any] = {}
    for name, cls, orient in (("step_time_s", step, "time"), ("tokens_per_s", step, "rate"),
                              ("tokens_per_s_per_device", step, "rate"), ("mfu", step, "rate"),
                              ("tflops_per_device", step, "rate"), ("time_to_train_s", campaign, "time"),
                              ("time_to_train_days", campaign, "time"), ("device_hours", campaign, "time"),
                              ("cost_usd", campaign, "time")):
        b = band(cls, fig.get(name), orient)
        if b is not None:
            out[name] = b.as_list()
            basis["throughput" if cls is step else "campaign"] = b.basis
    if "cost_usd" in out and "time_to_train_s" in out and fig.get("time_to_train_s") and billed_by_month(fig):
        out["cost_usd"] = cost_band(float(fig["cost_usd"]), float(fig["time_to_train_s"]), out["time_to_train_s"],
                                    monthly=True)
    total = (fig.get("memory") or {}).get("total_bytes")
    mb = band(EstimateClass(kind="memory", efficiency="validated", family="train", arch=arch, scale=scale,
                            stack=stack), total, "rate")
    if mb is not None:
        out["memory.total_bytes"] = mb.as_list()
        basis["memory"] = mb.basis
    return out, basis


def serving_efficiency(accelerator: str, engine: str | None, engine_overridden: bool) -> dict[str, Any]:
    """Where a serving estimate's per-step terms come from: the user's (measured), the part's serving rows
    (validated: rows, sources, held-out median error) or the engine defaults."""
    acc = part_accuracy("serve", accelerator)
    rows = int(acc["rows"]) if acc else 0
    sources = int(acc.get("sources", 0)) if acc else 0
    prov = "measured" if engine_overridden else "validated" if rows else "default"
    return {"provenance": prov, "rows": rows, "sources": sources,
            "cv_median_ape": acc.get("cv_median_ape") if acc else None, "term": f"engine {engine}",
            "value": None, "source": "workload/data/engines.yaml",
            "thin": prov == "validated" and thin_evidence(rows, sources)}


def serving_confidence(catalog: Catalog, plan: dict[str, Any], engine_overridden: bool) -> dict[str, Any]:
    """Confidence of a serving plan: the part's serving rows (engine terms measured when the user set them)
    and the price of its instance."""
    eff = serving_efficiency(plan["accelerator"], plan.get("engine"), engine_overridden)
    price = None
    inst = catalog.instances.get(plan.get("instance", ""))
    p = used_price(catalog, inst, plan.get("price_kind", "on_demand_hourly")) if inst is not None else None
    if p is not None and inst is not None:
        price = _price_record(p, str(plan.get("price_kind")), inst.id,
                              plan["cost_usd_per_hour"] / max(int(plan.get("devices") or 1), 1))
    return {"level": confidence_level(eff, price), "efficiency": eff, "price": price}


def serving_bands(plan: dict[str, Any], *, efficiency: str, moe: bool) -> tuple[dict[str, list[float]],
                                                                                dict[str, Any]]:
    """80% bands of a serving plan: latency percentiles from the latency class; throughput, fleet size and
    cost from the throughput class (a replica serves proportionally to throughput, so the fleet and its
    cost scale inversely)."""
    lat, tput = serving_classes(efficiency, moe,
                                int(plan.get("devices") or 1) // max(int(plan.get("replicas") or 1), 1))
    out: dict[str, list[float]] = {}
    basis: dict[str, Any] = {}
    for name, value, cls, orient in (
            ("ttft_s.p99", (plan.get("ttft_s") or {}).get("p99"), lat, "time"),
            ("tpot_s.p99", (plan.get("tpot_s") or {}).get("p99"), lat, "time"),
            ("capacity_requests_per_s_per_replica", plan.get("capacity_requests_per_s_per_replica"), tput, "rate"),
            ("replicas", plan.get("replicas"), tput, "time"),
            ("cost_usd_per_hour", plan.get("cost_usd_per_hour"), tput, "time"),
            ("cost_usd_per_million_tokens", plan.get("cost_usd_per_million_tokens"), tput, "time")):
        b = band(cls, value, orient, SERVING_NOVELTY)
        if b is not None:
            out[name] = b.as_list()
            basis["latency" if cls is lat else "throughput"] = b.basis
    if "replicas" in out:  # a fleet is whole replicas
        out["replicas"] = [float(max(1, int(out["replicas"][0]))), float(-(-out["replicas"][1] // 1))]
    return out, basis
