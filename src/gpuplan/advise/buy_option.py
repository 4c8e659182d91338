"""The cluster a buyer could own instead of renting (issue 37: rental plans beside buying): the cheapest own-cluster
plan of the search whose servers have a catalog purchase price and whose part no blocking finding rules out (export
rules: buying new A100/H800 in China), with its server count and price in the price's own currency."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["buy_option"]


def buy_option(plans: Sequence[Mapping[str, Any]], blocked: Mapping[str, str],
               target_days: float | None = None) -> dict[str, Any] | None:
    """The own-cluster plan with the lowest purchase price (then the shortest time) among `plans` (each already
    within the deadline and budget) that finish within `target_days` (the recommendation rule's target,
    recommend_target_days: a plan at the deadline's edge leaves no room for its band), else among all; parts whose
    own clusters `blocked` rules out are skipped (report_train.option_key: an own cluster is listed under its
    accelerator). None when no own cluster has a server price."""
    pool = [p for p in plans if p.get("purchase_usd") is not None and p.get("purchase")
            and str(p["accelerator"]) not in blocked]
    if not pool:
        return None
    timely = [p for p in pool if target_days is None or float(p["time_to_train_days"]) <= target_days]
    pool = timely or pool
    best = min(pool, key=lambda p: (float(p["purchase_usd"]), float(p["time_to_train_s"])))
    buy = dict(best["purchase"])
    servers = int(buy["servers"])
    return {"accelerator": best["accelerator"], "devices": best["devices"], "days": best["time_to_train_days"],
            "layout": best.get("layout"), "server": buy["server"], "servers": servers,
            "purchase_usd": float(best["purchase_usd"]),
            "purchase_amount": float(buy["amount"]) * servers, "currency": buy["currency"],
            "price_per_server": float(buy["amount"]), "source": buy["source"], "as_of": buy["as_of"],
            "confidence": buy["confidence"]}
