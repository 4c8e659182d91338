"""What to commit to and what to rent by the hour for a traffic curve: the purchase mix of one fleet.

Rates are per instance-hour in USD, of the fleet's instance type (the same part and instance size in the same
market, under the provider filter), each the cheapest offer's newest price of its kind (`Instance.price`):
on demand, spot, monthly (/ 730 h) and 1-year (/ 8760 h). A 1-year rate the catalog lacks is derived from the
monthly one (x (1 - yearly_discount_vs_monthly)), a 3-year one from the 1-year rate (x (1 -
multi_year_discount_vs_yearly)) or, without one, from on demand (x (1 - multi_year_discount_vs_on_demand)),
as `gpuplan tco` does (advise/tco_rents.py); each derived rate says how and is of low confidence.

For each committed kind c (rate r_c) with on-demand burst (rate r_o), over a 730-hour month in which each row of
the curve stands for w = 730 / rows hours (advise/tco: hours of a month):
    monthly(N) = N x r_c x 730 + sum_h max(0, units_h - N) x r_o x w
and the baseline N is the cheapest of 0 .. max units_h (a committed unit pays off when it is needed more than
r_c / r_o of the hours: the break-even utilization). Without an on-demand rate the baseline covers the peak.
Spot burst is a scenario beside the mix, never the choice: a spot instance can be reclaimed at any time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.advise.commit_terms import with_commit_terms
from gpuplan.hardware import Catalog, Instance, convert
from gpuplan.search.infer_traffic import HOURS_PER_MONTH, ScheduleHour

__all__ = ["COMMIT_KINDS", "MixOption", "Rate", "baseline_cost", "best_baseline", "mix_options", "owned_option",
           "unit_rates"]

COMMIT_KINDS = ("monthly", "yearly", "multi_year")
_PRICE_KIND = {"on_demand": "on_demand_hourly", "spot": "spot_hourly", "monthly": "monthly", "yearly": "yearly"}
_HOURS = {"on_demand": 1.0, "spot": 1.0, "monthly": HOURS_PER_MONTH, "yearly": 8760.0}


@dataclass(frozen=True, slots=True, kw_only=True)
class Rate:
    """One kind's price of one instance-hour, USD, with its provenance."""

    kind: str
    usd_per_instance_hour: float
    instance: str
    source: str
    as_of: str
    confidence: str
    derived: str = ""  # how a rate the catalog does not publish was derived ("" = published)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "usd_per_instance_hour": self.usd_per_instance_hour, "instance": self.instance,
                "source": self.source, "as_of": self.as_of, "confidence": self.confidence,
                "derived": self.derived or None}


def _same_unit(catalog: Catalog, inst: Instance, like: Instance, provider: str | None) -> bool:
    return (catalog.server(inst.server).accelerator == catalog.server(like.server).accelerator
            and inst.market == like.market and inst.accelerator_count == like.accelerator_count
            and catalog.host_cards(inst) == catalog.host_cards(like)
            and (provider is None or inst.provider == provider))


def unit_rates(catalog: Catalog, instance: str, *, provider: str | None, yearly_discount_vs_monthly: float,
               multi_year_discount_vs_yearly: float, multi_year_discount_vs_on_demand: float) -> dict[str, Rate]:
    """The cheapest rate of each kind for one instance of the fleet's type (module docstring)."""
    like = catalog.instances[instance]
    got: dict[str, Rate] = {}
    for inst in sorted(catalog.instances.values(), key=lambda i: i.id):
        if not _same_unit(catalog, inst, like, provider):
            continue
        for kind, pkind in _PRICE_KIND.items():
            p = inst.price(pkind, distressed=catalog.pricing.use_distressed)
            usd = convert(p.amount, p.currency, "USD", catalog.rates) if p is not None else None
            if p is None or usd is None:
                continue
            r = Rate(kind=kind, usd_per_instance_hour=usd / _HOURS[kind], instance=inst.id, source=p.source,
                     as_of=str(p.as_of), confidence=p.confidence)
            if kind not in got or r.usd_per_instance_hour < got[kind].usd_per_instance_hour:
                got[kind] = r
    # a rate the catalog does not publish rests on a discount estimate: low confidence
    return with_commit_terms(got, lambda r, kind, f, how: replace(
        r, kind=kind, usd_per_instance_hour=r.usd_per_instance_hour * f, confidence="low", derived=how),
        yearly_discount_vs_monthly=yearly_discount_vs_monthly,
        multi_year_discount_vs_yearly=multi_year_discount_vs_yearly,
        multi_year_discount_vs_on_demand=multi_year_discount_vs_on_demand)


def baseline_cost(units: Sequence[int], n_base: int, *, commit_usd: float, burst_usd: float | None,
                  hours_per_row: float) -> tuple[float, float, float]:
    """(monthly USD, of it the baseline's, burst instance-hours) with `n_base` committed instances: the
    module docstring's monthly(N); the burst is priced at `burst_usd` an instance-hour (None: no burst rate,
    so the baseline must cover every hour)."""
    burst_hours = sum(max(0, u - n_base) for u in units) * hours_per_row
    if burst_usd is None and burst_hours > 0:
        return float("inf"), float("inf"), burst_hours
    base = n_base * commit_usd * HOURS_PER_MONTH
    return base + burst_hours * (burst_usd or 0.0), base, burst_hours


def best_baseline(units: Sequence[int], *, commit_usd: float, burst_usd: float | None,
                  hours_per_row: float) -> int:
    """The committed instance count of least monthly cost (the smallest of equals), searched over 0 .. peak."""
    costs = [(baseline_cost(units, n, commit_usd=commit_usd, burst_usd=burst_usd, hours_per_row=hours_per_row)[0],
              n) for n in range(max(units) + 1)]
    return min(costs)[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class MixOption:
    """A baseline of `baseline` instances on the committed kind, the rest of each hour on `burst`."""

    commit: str  # monthly | yearly | multi_year | on_demand (all on demand)
    burst: str | None  # on_demand | spot | None (the baseline covers the peak)
    baseline: int
    baseline_devices: int
    monthly_usd: float
    baseline_usd: float
    burst_usd: float
    burst_instance_hours: float
    break_even_utilization: float | None  # r_commit / r_burst: a committed instance pays off above this
    usd_per_million_tokens: float

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "burst": self.burst, "baseline_instances": self.baseline,
                "baseline_devices": self.baseline_devices, "monthly_usd": self.monthly_usd,
                "baseline_usd": self.baseline_usd, "burst_usd": self.burst_usd,
                "burst_instance_hours": self.burst_instance_hours,
                "break_even_utilization": self.break_even_utilization,
                "usd_per_million_tokens": self.usd_per_million_tokens}


def mix_options(hours: Sequence[ScheduleHour], rates: dict[str, Rate], *, hours_per_row: float,
                tokens_per_month: float, devices_per_unit: int) -> list[MixOption]:
    """Every mix the rates allow: all on demand; each committed kind with on-demand burst at its best baseline
    (or covering the peak without an on-demand rate); each committed kind with spot burst (a scenario)."""
    units = [h.units for h in hours]
    out: list[MixOption] = []
    od = rates.get("on_demand")
    spot = rates.get("spot")

    def option(commit: str, commit_usd: float, burst: Rate | None, n: int) -> MixOption:
        burst_usd = burst.usd_per_instance_hour if burst is not None else None
        total, base, bh = baseline_cost(units, n, commit_usd=commit_usd, burst_usd=burst_usd,
                                        hours_per_row=hours_per_row)
        return MixOption(commit=commit, burst=burst.kind if burst is not None and bh > 0 else None, baseline=n,
                         baseline_devices=n * devices_per_unit, monthly_usd=total, baseline_usd=base,
                         burst_usd=total - base, burst_instance_hours=bh,
                         break_even_utilization=commit_usd / burst_usd if burst_usd else None,
                         usd_per_million_tokens=total / tokens_per_month * 1e6)

    if od is not None:  # all on demand: no baseline
        out.append(option("on_demand", od.usd_per_instance_hour, od, 0))
    for kind in COMMIT_KINDS:
        c = rates.get(kind)
        if c is None:
            continue
        for burst in ([od] if od is not None else [None]) + ([spot] if spot is not None else []):
            n = best_baseline(units, commit_usd=c.usd_per_instance_hour,
                              burst_usd=burst.usd_per_instance_hour if burst is not None else None,
                              hours_per_row=hours_per_row)
            out.append(option(kind, c.usd_per_instance_hour, burst, n))
    return out


def owned_option(hours: Sequence[ScheduleHour], own_month: Callable[[int, float], float], *,
                 on_demand: Rate | None, hours_per_row: float, tokens_per_month: float,
                 devices_per_unit: int) -> MixOption | None:
    """A baseline of owned servers with on-demand burst: for N instances' worth of devices, `own_month(N, u)` is
    the monthly cost of owning them used a share u of the month (advise/tco_own: servers, fabric, power at u,
    hosting, operations, storage, staff, cost of capital, resale); N is the cheapest of 1 .. the peak. None
    without an on-demand rate (the burst) or when owning is not priced."""
    if on_demand is None:
        return None
    units = [h.units for h in hours]
    best: tuple[float, int, float, float] | None = None
    for n in range(1, max(units) + 1):
        used = sum(min(u, n) for u in units) * hours_per_row / (n * HOURS_PER_MONTH)
        base = own_month(n, used)
        burst_h = sum(max(0, u - n) for u in units) * hours_per_row
        total = base + burst_h * on_demand.usd_per_instance_hour
        if best is None or total < best[0]:
            best = (total, n, base, burst_h)
    if best is None:
        return None
    total, n, base, burst_h = best
    return MixOption(commit="owned", burst="on_demand" if burst_h > 0 else None, baseline=n,
                     baseline_devices=n * devices_per_unit, monthly_usd=total, baseline_usd=base,
                     burst_usd=total - base, burst_instance_hours=burst_h,
                     break_even_utilization=base / (n * HOURS_PER_MONTH) / on_demand.usd_per_instance_hour,
                     usd_per_million_tokens=total / tokens_per_month * 1e6)
