"""The recommendation rule of a training plan list (printed as applied; docs/training.md).

Near-cheapest (within `recommend_cost_tolerance` of the lowest cost, device-hours without prices) and within the
target time (the deadline capped at `recommend_target_days`; for own clusters without a price, the deadline itself)
the smallest cluster; else the cheapest plan within the target; else the fastest near-cheapest plan within the
deadline (or `recommend_max_days`); else an own cluster within the target; else the fastest. Plans another plan
beats on time while costing at least `recommend_dominance_margin` less are left out first. Used by
advise/report_train.py, which first removes the plans a blocking finding rules out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gpuplan.advise.findings import default_thresholds

__all__ = ["recommend", "recommend_rule"]


def recommend(plans: Sequence[dict[str, Any]], tolerance: float, target_days: float | None = None,
              max_days: float | None = None, margin: float | None = None,
              deadline_days: float | None = None) -> dict[str, Any] | None:
    """The recommended plan under `recommend_rule` (None without plans)."""
    rule = recommend_rule(plans, tolerance, target_days, max_days, margin, deadline_days=deadline_days)
    return rule[0] if rule else None


def recommend_rule(plans: Sequence[dict[str, Any]], tolerance: float, target_days: float | None = None,
                   max_days: float | None = None, margin: float | None = None, *,
                   deadline_days: float | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(plan, rule as applied). Priced plans are measured by cost ("near-cheapest": within `tolerance`
    of the lowest); without any, own clusters by what buying them costs (`purchase_usd`: whole servers at the
    catalog list price) over the plans that have one, when one of them meets the target time (the rule names
    the parts it could not compare, `not_compared`); else by device-hours:

    1. the smallest near-cheapest cluster that finishes within `target_days` (fewer devices are easier to
       rent and fail less often), counted in the devices it pays for (`billed_devices`: 4 cards of a rented
       8-card server pay for 8, so the 8-card plan, as cheap and faster, is the smaller one's equal and wins
       on time);
    2. else the cheapest priced plan that finishes within `target_days` (paying more to meet the target);
    3. else, among priced plans that finish within `max_days` (the deadline, or `recommend_max_days`),
       the fastest near-cheapest one;
    4. else the own cluster (no price) that finishes within `target_days` and costs least to buy, else with the
       fewest device-hours;
    5. else the fastest plan.
    Without any priced plan, steps 1-3 run on the purchase (or device-hours), and the target time is the deadline
    (`deadline_days`) when one is given: the cost of an own cluster grows with its size, not with its
    device-hours, so a cluster larger than the deadline needs buys nothing but time (the 30-day target
    reasons from rentals, whose bill is device-hours). Without a target time, step 3 decides.
    Plans that another plan beats on time while costing at least `margin` less
    (`recommend_dominance_margin`) are left out first.
    """
    if not plans:
        return None
    if margin is None:
        margin = default_thresholds().value("recommend_dominance_margin")
    priced = [p for p in plans if p.get("cost_usd") is not None]
    own_to_deadline = not priced and deadline_days is not None
    if own_to_deadline:
        target_days = deadline_days
    limit = (target_days if target_days is not None else -math.inf) * 86400.0  # no target: steps 1-2 skipped
    # own clusters only: device-hours of different parts are no cost (a GB200 hour is not an H100 hour), so they
    # are compared on what buying them costs where the catalog prices their server and one of those meets the target
    bought = [p for p in plans if p.get("cost_usd") is None and p.get("purchase_usd")]
    by_purchase = not priced and any(p["time_to_train_s"] <= limit for p in bought)
    measure = "cost" if priced else "purchase" if by_purchase else "device_hours"
    compared = priced or (bought if by_purchase else list(plans))

    def value(p: dict[str, Any]) -> float:
        key = {"cost": "cost_usd", "purchase": "purchase_usd"}.get(measure, "device_hours")
        return float(p.get(key) or 0.0)

    # a plan that another beats on both cost and time is never the answer (a larger cluster that is
    # cheaper and faster wins over a smaller one, whatever the size preference below)
    pool = _undominated(compared, value, margin)

    def near(ps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        lowest = min(value(p) for p in ps)
        return [p for p in ps if value(p) <= lowest * (1 + tolerance)]

    rule: dict[str, Any] = {"measure": measure, "recommend_cost_tolerance": tolerance, "target_days": target_days,
                            "max_days": max_days, "dominance_margin": margin,
                            "dominated": len(compared) - len(pool), "own_to_deadline": own_to_deadline}
    if by_purchase:
        rule["not_compared"] = sorted({p["accelerator"] for p in plans if not p.get("purchase_usd")})
    soon = [p for p in near(pool) if p["time_to_train_s"] <= limit]
    if soon:
        rule["outcome"] = "smallest_within_target"
        return min(soon, key=lambda p: (p.get("billed_devices", p.get("devices", 0)), value(p),
                                        p["time_to_train_s"])), rule
    soon = [p for p in pool if p["time_to_train_s"] <= limit]
    if soon:
        rule["outcome"] = "cheapest_within_target"
        return min(soon, key=lambda p: (value(p), p.get("devices", 0), p["time_to_train_s"])), rule
    bound = (max_days if max_days is not None else math.inf) * 86400.0
    late = [p for p in pool if p["time_to_train_s"] <= bound]
    if late:
        rule["outcome"] = "fastest_near_cheapest"
        return min(near(late), key=lambda p: (p["time_to_train_s"], value(p))), rule
    unpriced = [p for p in plans if p.get("cost_usd") is None and p["time_to_train_s"] <= limit]
    buy = [p for p in unpriced if p.get("purchase_usd")]
    if buy:  # no offer meets the time: an own cluster does; the cheapest to buy where the catalog prices one
        rule.update(outcome="unpriced_within_target", measure="purchase",
                    not_compared=sorted({p["accelerator"] for p in unpriced if not p.get("purchase_usd")}))
        return min(_undominated(buy, lambda p: float(p["purchase_usd"]), margin),
                   key=lambda p: (float(p["purchase_usd"]), p["time_to_train_s"])), rule
    unpriced = _undominated(unpriced, lambda p: float(p.get("device_hours") or 0.0), margin)
    if unpriced:  # no offer meets the time: an own cluster does (cost unknown)
        rule.update(outcome="unpriced_within_target", measure="device_hours")
        return min(unpriced, key=lambda p: (p.get("device_hours") or 0.0, p.get("devices", 0))), rule
    rule["outcome"] = "fastest"
    return min(plans, key=lambda p: (p["time_to_train_s"], p.get("cost_usd") is None, p.get("cost_usd") or 0.0)), rule


def _undominated(plans: Sequence[dict[str, Any]], value: Any, margin: float) -> list[dict[str, Any]]:
    """The plans no other plan beats on both: faster and at least `margin` cheaper in `value` (cost or
    device-hours); differences inside the margin are price rounding and estimate noise, not a loss."""
    return [p for p in plans if not any(
        q["time_to_train_s"] < p["time_to_train_s"] and value(q) <= value(p) * (1 - margin) for q in plans)]

