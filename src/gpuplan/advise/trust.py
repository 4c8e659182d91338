"""What the recommendation rests on: its caveats, the best plan on confirmed inputs, the break-even values.

A plan rests on a low-confidence input when its efficiency is a default (no measurement of the part:
search/plan_trust.py) or rests on too few published runs (fewer than MIN_HIGH_ROWS, or one source: `thin`),
or its price has low confidence (a market quote from one report, a distressed rent). For such a
recommendation the answer names (1) the best plan that rests on confirmed inputs (efficiency measured, or
validated on enough runs, price not low), chosen by the same rule; (2) per low-confidence
input, the value at which the choice flips to that plan:
- price: cost = price x billed device-hours, so the plan stays cheaper while its price is below
  price x cost(alternative) / cost(plan) (per device-hour, and per instance-month where the quote is monthly);
- efficiency: time to train is inversely proportional to MFU at fixed tokens and devices (MFU is
  defined from the step time), and cost and device-hours proportional to time, so the plan stays
  cheaper while its MFU is above MFU x cost(plan) / cost(alternative) (device-hours when no plan has a
  price, times when the rule chose by time);
(3) what to do: get a quote; run `gpuplan bench` on the part and `gpuplan calibrate`.
A recommendation that meets the deadline while the top of its 80% band of time does not gets a
deadline caveat naming the plan the same rule picks among those whose band stays within it.
Without --market, plans offered only in China and plans offered only outside are not ranked
silently together: `best_per_market` gives the recommendation of each market.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from gpuplan.hardware import Catalog
from gpuplan.search.plan_trust import LEVELS
from gpuplan.units import GIB

__all__ = ["DEFAULT_BUYER_MARKET", "buyer_market", "capacity_caveat", "caveats", "deadline_caveat", "eligible_fleets",
           "fleet_block",
           "fleet_key", "in_buyer_market", "is_confirmed", "memory_caveat", "plan_markets", "serving_caveats",
           "serving_recommendation", "split_by_market"]

T = TypeVar("T", bound=Mapping[str, Any])
Chooser = Callable[[Sequence[dict[str, Any]]], dict[str, Any] | None]


def _efficiency_unconfirmed(eff: Mapping[str, Any]) -> bool:
    """A default efficiency, or one validated on too few published runs (search/plan_trust.py thin_evidence)."""
    return eff.get("provenance") == "default" or (eff.get("provenance") == "validated" and bool(eff.get("thin")))


def _thin(eff: Mapping[str, Any]) -> dict[str, Any]:
    """The caveat's account of thin evidence: how many runs and sources the part's efficiency rests on."""
    return {"thin": True, "rows": eff.get("rows", 0), "sources": eff.get("sources", 0)} if eff.get("thin") else {}


def is_confirmed(plan: dict[str, Any]) -> bool:
    """Efficiency measured or validated on enough runs, and a price (if any) of medium or high confidence."""
    conf = plan.get("confidence") or {}
    eff = conf.get("efficiency") or {}
    price = conf.get("price")
    return (eff.get("provenance") in ("measured", "validated") and not _efficiency_unconfirmed(eff)
            and (price is None or price.get("confidence") in LEVELS[1:]))


def fleet_key(plan: Mapping[str, Any]) -> str:
    """What a blocked serving fleet is listed under in `not_recommended`: its part and its offer (an export rule
    reads where the cards are, so a B200 rented in China is blocked while a B200 rented elsewhere is not)."""
    return f"{plan['accelerator']} ({plan['instance']})"


def fleet_block(plan: Mapping[str, Any], blocked: Mapping[str, str]) -> str | None:
    """The blocking finding of `plan`'s offer in `blocked`, or of its part (a document keyed by part)."""
    hit = blocked.get(fleet_key(plan))
    return hit if hit is not None else blocked.get(str(plan["accelerator"]))


def plan_markets(plan: Mapping[str, Any], catalog: Catalog) -> tuple[str, ...]:
    """Where the plan's hardware can be had: its offer's market (a training plan's `hardware_option.offer`, a
    serving fleet's `instance`), else the part's markets (own cluster)."""
    offer = (plan.get("hardware_option") or {}).get("offer") or plan.get("instance")
    if offer and offer in catalog.instances:
        return (catalog.instances[offer].market,)
    return tuple(catalog.accelerator(plan["accelerator"]).markets)


# Issue 37: the buyer's market is asked for (--market) or inferred (data residency), else global. Offers of
# another market are not the buyer's to rent (a China rental needs a Chinese entity, real-name accounts and CNY
# billing; one outside needs an export-compliant buyer), so the recommendation comes from the buyer's market and
# the best plan of each other market is shown beside it (best_per_market).
DEFAULT_BUYER_MARKET = "global"


def buyer_market(market: str | None, residency: str | None = None) -> str:
    """The market a recommendation is drawn from: --market, else the data-residency region, else global."""
    return market or residency or DEFAULT_BUYER_MARKET


def in_buyer_market(plans: Sequence[T], catalog: Catalog, market: str | None,
                    residency: str | None = None) -> list[T]:
    """The plans whose hardware can be had in the buyer's market (`buyer_market`), in their order; every plan
    when none can (a part sold in one market only, asked for by name)."""
    buyer = buyer_market(market, residency)
    mine = [p for p in plans if buyer in plan_markets(p, catalog)]
    return mine or list(plans)


def eligible_fleets(plans: Sequence[T], catalog: Catalog, market: str | None, blocked: Mapping[str, str],
                    residency: str | None = None) -> list[T]:
    """The fleets a serving recommendation may be drawn from: the buyer's market's (`in_buyer_market`), none
    blocked (`fleet_block`)."""
    return [p for p in in_buyer_market(plans, catalog, market, residency) if fleet_block(p, blocked) is None]


def split_by_market(plans: Sequence[dict[str, Any]], catalog: Catalog) -> dict[str, list[dict[str, Any]]]:
    """Plans per market, only when plans of more than one market are present (else empty)."""
    by: dict[str, list[dict[str, Any]]] = {}
    for p in plans:
        for m in plan_markets(p, catalog):
            by.setdefault(m, []).append(p)
    only = {m for p in plans for m in plan_markets(p, catalog) if len(plan_markets(p, catalog)) == 1}
    return by if len(only) > 1 else {}


def _quote(plan: dict[str, Any], catalog: Catalog, ratio: float) -> dict[str, Any]:
    """Break-even of the plan's price: per device-hour and, for a monthly quote, per instance-month."""
    price = plan["confidence"]["price"]
    out: dict[str, Any] = {"usd_per_device_hour": price["usd_per_device_hour"] * ratio}
    inst = catalog.instances.get(price["instance"])
    p = inst.price(price["kind"]) if inst is not None else None
    if p is not None and p.amount is not None:
        out.update(amount=p.amount * ratio, currency=p.currency, per=price["kind"], instance=inst.id if inst else "")
    return out


def caveats(rec: dict[str, Any], alt: dict[str, Any] | None, measure: str | None, catalog: Catalog,
            deadline_days: float | None = None) -> list[dict[str, Any]]:
    """One entry per low-confidence input of `rec`: input, value, break_even (vs `alt`), action.

    The MFU break-even is also bounded by the deadline: time is inversely proportional to MFU, so below
    MFU x time / deadline the plan misses it, whatever it costs (`deadline_bound` says which bound holds)."""
    conf = rec.get("confidence") or {}
    eff = conf.get("efficiency") or {}
    price = conf.get("price")
    by_cost = bool(measure == "cost" and alt is not None and rec.get("cost_usd") and alt.get("cost_usd"))
    # own clusters chosen on what buying them costs: sized to the deadline, a cluster grows as its MFU falls, so
    # the purchase ratio to the alternative bounds the MFU as a cost ratio does
    by_purchase = bool(measure == "purchase" and alt is not None and rec.get("purchase_usd")
                       and alt.get("purchase_usd"))
    key = ("cost_usd" if by_cost else "purchase_usd" if by_purchase else "device_hours"
           if measure == "device_hours" and alt is not None and rec.get("device_hours") and alt.get("device_hours")
           else "time_to_train_s")
    # a choice made on cost has no cost break-even against an alternative without a price (times would not say
    # when the choice flips: the plan was not chosen for its time)
    unpriced = bool(measure in ("cost", "purchase") and alt is not None and not (by_cost or by_purchase))
    ratio = float(alt[key]) / float(rec[key]) if alt is not None and not unpriced else None
    out: list[dict[str, Any]] = []
    if _efficiency_unconfirmed(eff):
        be: dict[str, Any] | None = {"mfu": float(rec["mfu"]) / ratio} if ratio else None
        if deadline_days and rec.get("time_to_train_s"):
            floor = float(rec["mfu"]) * float(rec["time_to_train_s"]) / (deadline_days * 86400.0)
            if be is None or floor > be["mfu"]:
                be = {"mfu": floor, "deadline_bound": True}
        out.append({"input": "efficiency", "value": {"mfu": rec["mfu"], "term": eff.get("term"),
                                                     "term_value": eff.get("value"), **_thin(eff)},
                    "break_even": be, "holds_while": "above" if be else None, "alternative_unpriced": unpriced,
                    "action": "bench", "accelerator": rec["accelerator"]})
    if price is not None and price.get("confidence") not in LEVELS[1:]:
        if price.get("kind") == "purchase":  # an own cluster bought at a list price: the purchase is the bet
            out.append({"input": "purchase", "value": {**(rec.get("purchase") or {}), "usd": rec["purchase_usd"]},
                        "break_even": {"usd": float(alt["purchase_usd"])} if by_purchase and alt else None,
                        "holds_while": "below" if by_purchase else None, "action": "quote",
                        "alternative_unpriced": bool(alt is not None and not by_purchase),
                        "accelerator": rec["accelerator"]})
        else:
            be = _quote(rec, catalog, ratio) if by_cost and ratio else None
            out.append({"input": "price", "value": {"usd_per_device_hour": price["usd_per_device_hour"],
                                                    "source": price["source"], "as_of": price["as_of"],
                                                    "confidence": price["confidence"], "instance": price["instance"]},
                        "break_even": be, "holds_while": "below" if be else None, "action": "quote",
                        "accelerator": rec["accelerator"]})
    return out


def _high_s(plan: Mapping[str, Any]) -> float | None:
    band = (plan.get("band") or {}).get("time_to_train_s")
    return float(band[1]) if band else None


def deadline_caveat(rec: dict[str, Any], plans: Sequence[dict[str, Any]], deadline_days: float | None,
                    choose: Chooser, summary: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any] | None:
    """A caveat when the recommendation meets the deadline but the top of its 80% band of time does not, with
    the plan the same rule picks among those whose band stays within the deadline (None: no such plan)."""
    high = _high_s(rec)
    if not deadline_days or high is None or high <= deadline_days * 86400.0:
        return None
    safe = choose([p for p in plans if (h := _high_s(p)) is not None and h <= deadline_days * 86400.0])
    return {"input": "deadline", "value": {"days": float(rec["time_to_train_s"]) / 86400.0,
                                           "band_high_days": high / 86400.0, "deadline_days": deadline_days},
            "break_even": None, "holds_while": None, "action": "margin", "accelerator": rec["accelerator"],
            "safe_alternative": summary(safe) if safe is not None else None}


def capacity_caveat(rec: Mapping[str, Any]) -> dict[str, Any] | None:
    """A caveat when the recommendation rents an offer whose capacity is not stated: unknown (nothing says how many
    devices it can supply) or typical (what such offers usually supply, not a quote for this one)."""
    opt = rec.get("hardware_option") or {}
    prov = opt.get("capacity_provenance")
    if opt.get("kind") != "offer" or prov not in ("unknown", "typical"):
        return None
    return {"input": "capacity", "value": {"devices": int(rec.get("billed_devices") or rec["devices"]),
                                           "offer": opt.get("offer"), "provenance": prov,
                                           "max_devices": opt.get("max_devices"), "basis": opt.get("capacity_basis")},
            "break_even": None, "holds_while": None, "action": "confirm_capacity", "accelerator": rec["accelerator"]}


def _memory_high(plan: Mapping[str, Any]) -> float | None:
    band = (plan.get("band") or {}).get("memory.total_bytes")
    return float(band[1]) if band else None


def _device_bytes(plan: Mapping[str, Any], catalog: Catalog) -> float | None:
    gib = catalog.accelerator(str(plan["accelerator"])).memory_gib
    return float(gib) * GIB if gib else None


def memory_caveat(rec: dict[str, Any], plans: Sequence[dict[str, Any]], catalog: Catalog, choose: Chooser,
                  summary: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any] | None:
    """A caveat when the recommendation's memory fits the device but the top of its 80% band does not (the
    cross-validated memory errors of its class: a run of that class may need that much), with the plan the same
    rule picks among those whose band top fits their device (None: no such plan)."""
    high, device = _memory_high(rec), _device_bytes(rec, catalog)
    if high is None or device is None or high <= device:
        return None

    def fits(p: dict[str, Any]) -> bool:
        h, d = _memory_high(p), _device_bytes(p, catalog)
        return h is not None and d is not None and h <= d

    safe = choose([p for p in plans if fits(p)])
    return {"input": "memory", "value": {"gib": float(rec["memory"]["total_bytes"]) / GIB, "band_high_gib": high / GIB,
                                         "device_gib": device / GIB},
            "break_even": None, "holds_while": None, "action": "probe", "accelerator": rec["accelerator"],
            "safe_alternative": summary(safe) if safe is not None else None}


def serving_caveats(rec: dict[str, Any], alt: dict[str, Any] | None, catalog: Catalog) -> list[dict[str, Any]]:
    """Caveats of a serving recommendation: the fleet's cost per hour is capacity-bound, so it stays the
    cheapest while one replica serves above capacity x cost / cost(alternative) and while its price is
    below price x cost(alternative) / cost."""
    conf = rec.get("confidence") or {}
    eff = conf.get("efficiency") or {}
    price = conf.get("price")
    ratio = float(alt["cost_usd_per_hour"]) / float(rec["cost_usd_per_hour"]) if alt is not None else None
    out: list[dict[str, Any]] = []
    if _efficiency_unconfirmed(eff):
        cap = float(rec["capacity_requests_per_s_per_replica"])
        out.append({"input": "efficiency", "value": {"capacity_requests_per_s_per_replica": cap,
                                                     "term": eff.get("term"), **_thin(eff)},
                    "break_even": {"capacity_requests_per_s_per_replica": cap / ratio} if ratio else None,
                    "holds_while": "above" if ratio else None, "action": "bench", "accelerator": rec["accelerator"]})
    if price is not None and price.get("confidence") not in LEVELS[1:]:
        out.append({"input": "price", "value": {"usd_per_device_hour": price["usd_per_device_hour"],
                                                "source": price["source"], "as_of": price["as_of"],
                                                "confidence": price["confidence"], "instance": price["instance"]},
                    "break_even": _quote(rec, catalog, ratio) if ratio else None,
                    "holds_while": "below" if ratio else None, "action": "quote", "accelerator": rec["accelerator"]})
    return out


def serving_recommendation(plans: Sequence[dict[str, Any]], catalog: Catalog, market: str | None,
                           skip: Sequence[str] = (), residency: str | None = None) -> dict[str, Any] | None:
    """The cheapest fleet of the buyer's market (`in_buyer_market`) with its band, confidence, caveats, the cheapest
    fleet on confirmed inputs and, without --market, the cheapest fleet of each market. `skip`: fleets
    (`fleet_key`) or parts removed by a blocking finding."""
    skipped = dict.fromkeys(skip, "")
    plans = [p for p in plans if fleet_block(p, skipped) is None]
    if not plans:
        return None
    mine = in_buyer_market(plans, catalog, market, residency)
    rec = mine[0]
    alt = None if is_confirmed(rec) else next((p for p in mine if is_confirmed(p)), None)
    per_market: dict[str, Any] = {}
    if market is None:
        for m, pool in sorted(split_by_market([{**p, "hardware_option": {"offer": p["instance"]}} for p in plans],
                                              catalog).items()):
            per_market[m] = _serving_summary(pool[0])
    return {**_serving_summary(rec), "rule": "cheapest verified fleet per hour that meets the SLO at the headroom "
                                             "load (search/infer_search.py), in the buyer's market",
            "buyer_market": buyer_market(market, residency),
            "caveats": serving_caveats(rec, alt, catalog),
            "confirmed_alternative": _serving_summary(alt) if alt is not None else None,
            "best_per_market": per_market}


_SERVING_KEYS = ("accelerator", "instance", "instances", "replicas", "devices", "layout", "weights", "engine",
                 "cost_usd_per_hour", "cost_usd_per_million_tokens", "utilization", "ttft_s", "tpot_s",
                 "capacity_requests_per_s_per_replica", "band", "band_basis", "confidence")


def _serving_summary(p: dict[str, Any]) -> dict[str, Any]:
    return {k: p.get(k) for k in _SERVING_KEYS}
