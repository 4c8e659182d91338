"""The market's rents for a part (`gpuplan tco`): every catalog offer's rate, not one list price.

A CFO compares owning with what the market charges, so the rent side of rent-vs-buy is a distribution:
* quotes: each catalog instance of the part in the market, its newest price of each kind (on demand, monthly,
  1-year) per device-hour in USD (monthly / 730 h, yearly / 8760 h; CNY at the catalog's rate); a 1-year rate the
  offer does not publish is derived from its monthly one (x (1 - yearly_discount_vs_monthly)), a 3-year rate from
  the 1-year one (x (1 - multi_year_discount_vs_yearly)) or, without one, from on demand
  (x (1 - multi_year_discount_vs_on_demand)); each derived quote says how;
* comparable: for a cluster larger than one server an offer with a scale-out RDMA fabric, else an instance holding
  the cluster's devices (the owned cluster pays for that fabric; search/pricing.device_price's test);
* the reference of each kind is the median of the comparable quotes (each offer once) and the cheapest credible
  one (confidence medium or high); without a comparable quote, of all quotes, and it says so;
* distressed (surplus-capacity) rents are listed as a scenario, never the reference, unless they are the only
  quotes the market has (then the reference says "distressed only").
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.advise.commit_terms import with_commit_terms
from gpuplan.hardware import Catalog, Instance, convert

__all__ = ["RENT_KINDS", "WEAKNESSES", "RentQuote", "RentSpread", "market_rents"]

RENT_KINDS = ("on_demand", "monthly", "yearly", "multi_year")
_PRICE_KIND = {"on_demand": "on_demand_hourly", "monthly": "monthly", "yearly": "yearly"}
_HOURS = {"on_demand": 1.0, "monthly": 730.0, "yearly": 8760.0}
CREDIBLE = ("medium", "high")
# What a reference may rest on that a buyer should not act on unchecked (RentSpread.weaknesses)
WEAKNESSES = ("distressed_only", "not_comparable", "no_credible_quote")


@dataclass(frozen=True, slots=True, kw_only=True)
class RentQuote:
    """One offer's rate of one kind, per device-hour in USD."""

    instance: str
    provider: str
    kind: str
    usd_per_device_hour: float
    confidence: str
    source: str
    as_of: str
    comparable: bool
    distressed: bool
    derived: str = ""  # how a rate the offer does not publish was derived ("" = published)

    def to_json(self) -> dict[str, Any]:
        return {"instance": self.instance, "provider": self.provider, "usd_per_device_hour": self.usd_per_device_hour,
                "confidence": self.confidence, "source": self.source, "as_of": self.as_of,
                "comparable": self.comparable, "distressed": self.distressed, "derived": self.derived or None}


@dataclass(frozen=True, slots=True, kw_only=True)
class RentSpread:
    """The market's rents of one kind: the reference (median, cheapest credible) and every quote."""

    kind: str
    quotes: tuple[RentQuote, ...]
    basis: str  # "comparable" | "all" | "distressed only": which quotes the reference rests on
    median_usd_per_device_hour: float | None
    cheapest: RentQuote | None
    cheapest_credible: bool

    @property
    def reference(self) -> tuple[RentQuote, ...]:
        if self.basis == "distressed only":
            return tuple(q for q in self.quotes if q.distressed)
        pool = [q for q in self.quotes if not q.distressed]
        return tuple(q for q in pool if q.comparable) if self.basis == "comparable" else tuple(pool)

    @property
    def weaknesses(self) -> tuple[str, ...]:
        """What the reference rests on that a buyer should check before acting (WEAKNESSES): surplus-capacity quotes
        only, no quote that can stand in for the cluster (basis "all"), no quote of medium or high confidence."""
        flags = (self.basis == "distressed only", self.basis == "all", not self.cheapest_credible)
        return tuple(w for w, on in zip(WEAKNESSES, flags, strict=True) if on)

    def to_json(self) -> dict[str, Any]:
        ref = self.reference
        return {"kind": self.kind, "basis": self.basis, "weaknesses": list(self.weaknesses), "count": len(ref),
                "median": self.median_usd_per_device_hour,
                "min": ({**self.cheapest.to_json(), "credible": self.cheapest_credible}
                        if self.cheapest is not None else None),
                "max": max((q.usd_per_device_hour for q in ref), default=None),
                "sources": sorted({f"{q.instance}: {q.source} ({q.as_of})" for q in ref}),
                "quotes": [q.to_json() for q in self.quotes]}


def _rate(catalog: Catalog, inst: Instance, kind: str) -> tuple[float, Any] | None:
    """(USD per device-hour, the price) of the offer's newest price of `kind`, distressed or not."""
    p = inst.price(_PRICE_KIND[kind], distressed=True)
    if p is None or inst.accelerator_count < 1:
        return None
    usd = convert(p.amount, p.currency, "USD", catalog.rates)
    if not usd:
        return None
    return usd / _HOURS[kind] / inst.accelerator_count, p


def market_rents(catalog: Catalog, accelerator: str, *, market: str, devices: int, devices_per_server: int,
                 yearly_discount_vs_monthly: float, multi_year_discount_vs_yearly: float,
                 multi_year_discount_vs_on_demand: float) -> tuple[RentSpread, ...]:
    """The rents of every kind that has a quote (see the module docstring)."""
    multi = devices > devices_per_server
    by_kind: dict[str, list[RentQuote]] = {k: [] for k in RENT_KINDS}
    for inst in sorted(catalog.instances.values(), key=lambda i: i.id):
        if catalog.server(inst.server).accelerator != accelerator or inst.market != market:
            continue
        comparable = inst.rdma_network is not None if multi else inst.accelerator_count >= devices
        got: dict[str, RentQuote] = {}
        for kind in ("on_demand", "monthly", "yearly"):
            r = _rate(catalog, inst, kind)
            if r is not None:
                usd, p = r
                got[kind] = RentQuote(instance=inst.id, provider=inst.provider, kind=kind, usd_per_device_hour=usd,
                                      confidence=p.confidence, source=p.source, as_of=str(p.as_of),
                                      comparable=comparable, distressed=p.distressed)
        got = with_commit_terms(got, lambda q, kind, f, how: replace(
            q, kind=kind, usd_per_device_hour=q.usd_per_device_hour * f, derived=how),
            yearly_discount_vs_monthly=yearly_discount_vs_monthly,
            multi_year_discount_vs_yearly=multi_year_discount_vs_yearly,
            multi_year_discount_vs_on_demand=multi_year_discount_vs_on_demand)
        for kind, q in got.items():
            by_kind[kind].append(q)
    out = []
    for kind in RENT_KINDS:
        quotes = by_kind[kind]
        if not quotes:
            continue
        pool = [q for q in quotes if not q.distressed]
        like = [q for q in pool if q.comparable]
        basis, ref = ("comparable", like) if like else ("all", pool) if pool else (
            "distressed only", [q for q in quotes if q.distressed])
        credible = [q for q in ref if q.confidence in CREDIBLE]
        cheapest = min(credible or ref, key=lambda q: (q.usd_per_device_hour, q.instance))
        out.append(RentSpread(kind=kind, quotes=tuple(sorted(quotes, key=lambda q: q.usd_per_device_hour)),
                              basis=basis, median_usd_per_device_hour=statistics.median(
                                  q.usd_per_device_hour for q in ref),
                              cheapest=cheapest, cheapest_credible=bool(credible)))
    return tuple(out)
