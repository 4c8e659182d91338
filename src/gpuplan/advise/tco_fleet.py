"""Rent vs buy for a cluster (`gpuplan tco`): the rent rates, the cases against owning, and the results.

Formulas are in advise/tco.py (CostLine, fleet_break_even, cumulative_costs, buy_wins_year, payback_years); the
inputs and provenance labels in advise/tco_inputs.py; the server bought and the owned cost lines in advise/tco_own.py.
This module sets renting against them:
* rent kinds: on demand and monthly from the catalog's cheapest instance that can stand in for the cluster (with
  an RDMA fabric beyond one server, else at least the cluster's devices in one instance; search/pricing.device_price);
  yearly from the catalog (tco.yearly_device_price), else monthly x (1 - yearly_discount_vs_monthly); multi-year
  reserved = yearly x (1 - multi_year_discount_vs_yearly), else on demand x (1 - multi_year_discount_vs_on_demand).
  --rent replaces them all with one quoted rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuplan.advise.findings import advise_data
from gpuplan.advise.tco import (
    HOURS_PER_YEAR,
    CostLine,
    TcoInputs,
    buy_wins_year,
    cumulative_costs,
    fleet_break_even,
    market_inputs,
    payback_years,
    rent_per_year,
    tco_inputs,
    year_marks,
)
from gpuplan.advise.tco_capital import Capital, resale_fraction
from gpuplan.advise.tco_inputs import (
    CATALOG,
    DEFAULT,
    QUOTED,
    USER,
    FleetInputs,
    Quantity,
    fleet_data,
    fleet_inputs,
    join_provenance,
    label_of,
    split_overrides,
)
from gpuplan.advise.tco_own import ServerChoice, own_lines, server_choice
from gpuplan.advise.tco_rents import RentSpread, market_rents
from gpuplan.hardware import Accelerator, Catalog

__all__ = ["FleetTco", "RentCase", "TcoSetup", "fleet_tco", "rent_rates", "tco_for", "tco_market"]


def rent_rates(catalog: Catalog, accelerator: str, *, market: str, inp: TcoInputs, fin: FleetInputs,
               rent_usd_per_device_hour: float | None, devices: int = 1, devices_per_server: int = 1
               ) -> tuple[tuple[tuple[str, Quantity, Quantity | None], ...], tuple[RentSpread, ...]]:
    """((kind, reference rate, cheapest credible rate) for every rent kind with a quote, the market's rents).

    The reference of a kind is the median of the market's comparable rents (advise/tco_rents.py), with the
    cheapest credible beside it; --rent replaces them all with one quoted rate (the market's rents stay listed)."""
    unit = "USD per device-hour"
    spreads = market_rents(catalog, accelerator, market=market, devices=devices,
                           devices_per_server=devices_per_server,
                           yearly_discount_vs_monthly=inp.yearly_discount_vs_monthly,
                           multi_year_discount_vs_yearly=fin.multi_year_discount_vs_yearly,
                           multi_year_discount_vs_on_demand=fin.multi_year_discount_vs_on_demand)
    if rent_usd_per_device_hour is not None:
        return (("quoted", Quantity(value=rent_usd_per_device_hour, unit=unit, provenance=QUOTED, source="--rent"),
                 None),), spreads
    out = []
    for sp in spreads:
        ref = sp.reference
        if sp.median_usd_per_device_hour is None or sp.cheapest is None:
            continue
        derived = any(q.derived for q in ref)
        prov = join_provenance(CATALOG, DEFAULT if derived else "")
        what = {"comparable": "comparable", "all": "(none comparable: all)",
                "distressed only": "distressed-capacity (the only quotes)"}[sp.basis]
        median = Quantity(value=sp.median_usd_per_device_hour, unit=unit, provenance=prov,
                          source=f"median of {len(ref)} {what} offer(s) in market {market}: "
                                 + ", ".join(q.instance for q in ref))
        c = sp.cheapest
        cheap = Quantity(value=c.usd_per_device_hour, unit=unit,
                         provenance=join_provenance(CATALOG, DEFAULT if c.derived else ""),
                         source=f"{c.instance}: {c.source} ({c.as_of}, confidence {c.confidence})"
                                + (f"; {c.derived}" if c.derived else "")
                                + ("" if sp.cheapest_credible else "; no offer of medium or high confidence"))
        out.append((sp.kind, median, cheap))
    return tuple(out), spreads



@dataclass(frozen=True, slots=True, kw_only=True)
class RentCase:
    """One rent kind against owning: at the market's median rate, and at its cheapest credible one."""

    kind: str
    rate: Quantity
    usd_per_year: float  # renting the owned cluster's device-hours at utilization u
    break_even_utilization: float | None  # None: the rent does not cover the variable running cost
    buy_wins_year: float | None  # None: never within the years
    payback_years: float | None
    cumulative: tuple[tuple[float, float, float], ...]  # (year, own USD, rent USD), present values
    cheapest: Quantity | None = None
    break_even_at_cheapest: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "usd_per_device_hour": self.rate.to_json(), "usd_per_year": self.usd_per_year,
                "break_even_utilization": self.break_even_utilization, "buy_wins_year": self.buy_wins_year,
                "payback_years": self.payback_years,
                "cheapest_usd_per_device_hour": self.cheapest.to_json() if self.cheapest else None,
                "break_even_utilization_at_cheapest": self.break_even_at_cheapest,
                "cumulative": [{"year": t, "own_usd": own, "rent_usd": rent} for t, own, rent in self.cumulative]}


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetTco:
    """Renting (each kind) against owning `devices` devices for `years` at `utilization`."""

    accelerator: str
    devices: int
    years: float
    utilization: float
    market: str
    currency: str  # the market's currency (CNY in China): amounts are shown in it
    cny_per_usd: float
    server: str | None
    nodes: int
    devices_per_server: Quantity
    price_usd: Quantity
    price_range_usd: tuple[float, float] | None
    power_kw: Quantity
    own: tuple[CostLine, ...]
    own_at_range: tuple[float, float] | None  # owning per year at the low and high purchase price
    rent: tuple[RentCase, ...]
    market_rents: tuple[RentSpread, ...]
    capital: Capital
    inputs: dict[str, Quantity]

    @property
    def own_usd_per_year(self) -> float:
        return sum(ln.per_year(self.years, self.utilization, self.capital.wacc) for ln in self.own)

    @property
    def own_usd_per_device_hour(self) -> float:
        """Owning cost per used device-hour: own per year / (devices x 8760 x u)."""
        return self.own_usd_per_year / (self.devices * HOURS_PER_YEAR * self.utilization)

    def local(self, usd: float) -> float:
        """`usd` in the market's currency."""
        return usd * self.cny_per_usd if self.currency == "CNY" else usd

    def to_json(self) -> dict[str, Any]:
        w = self.capital.wacc
        return {
            "kind": "tco", "accelerator": self.accelerator, "devices": self.devices, "years": self.years,
            "utilization": self.utilization, "market": self.market, "server": self.server, "nodes": self.nodes,
            "currency": {"code": self.currency, "cny_per_usd": self.cny_per_usd,
                         "own_per_year": self.local(self.own_usd_per_year),
                         "capex": self.local(sum(ln.capex_usd for ln in self.own)),
                         "rent_per_year": {r.kind: self.local(r.usd_per_year) for r in self.rent}},
            "devices_per_server": self.devices_per_server.to_json(), "server_price_usd": {
                **self.price_usd.to_json(), "low": self.price_range_usd[0] if self.price_range_usd else None,
                "high": self.price_range_usd[1] if self.price_range_usd else None},
            "node_power_kw": self.power_kw.to_json(),
            "own": {"usd_per_year": self.own_usd_per_year, "usd_per_device_hour": self.own_usd_per_device_hour,
                    "usd_per_year_at_price_range": list(self.own_at_range) if self.own_at_range else None,
                    "capex_usd": sum(ln.capex_usd for ln in self.own),
                    "lines": [{"name": ln.name, "usd_per_year": ln.per_year(self.years, self.utilization, w),
                               "capex_usd": ln.capex_usd, "resale_usd": ln.resale_usd,
                               "capex_usd_per_year": ln.capex_per_year(self.years, w),
                               "fixed_usd_per_year": ln.fixed_usd_per_year,
                               "variable_usd_per_year_at_full_use": ln.variable_usd_per_year,
                               "provenance": ln.provenance, "formula": ln.formula,
                               "formula_zh": ln.formula_zh or ln.formula} for ln in self.own]},
            "rent": [r.to_json() for r in self.rent],
            "market_rents": {sp.kind: sp.to_json() for sp in self.market_rents},
            "cost_of_capital": self.capital.to_json(year_marks(self.years)),
            "inputs": {k: q.to_json() for k, q in self.inputs.items()},
            "provenance": "estimated from the inputs; each input says where it comes from",
        }


def _input_table(inp: TcoInputs, fin: FleetInputs, market: str | None, pue_source: str,
                 pue_provenance: str) -> dict[str, Quantity]:
    raw = advise_data("tco")["inputs"]
    data = market_inputs(raw, market)
    suffix = "_cn" if market == "cn" else "_global"
    names = ("electricity_usd_per_kwh", "hosting_usd_per_kw_month", "operations_fraction_per_year",
             "idle_power_fraction", "yearly_discount_vs_monthly")
    out = {"years": Quantity(value=inp.years, unit="years", provenance=USER, source="--years"),
           "pue": Quantity(value=inp.pue, unit="ratio", provenance=pue_provenance, source=pue_source)}
    for name in names:
        user = name in inp.overridden
        key = name + suffix if name + suffix in raw else name
        out[name] = Quantity(value=float(getattr(inp, name)), unit=str(data[name]["unit"]),
                             provenance=label_of(inp.overridden, name),
                             source="--tco" if user else f"advise/data/tco.yaml {key}: {data[name]['source']}")
    fdata = fleet_data(market)
    for name in FleetInputs.model_fields:
        value = getattr(fin, name)
        if name == "overridden" or value is None:
            continue
        user = name in fin.overridden
        out[name] = Quantity(value=float(value), unit=str(fdata[name]["unit"]),
                             provenance=label_of(fin.overridden, name),
                             source=("--wacc" if name == "wacc" else "--tco") if user
                             else f"advise/data/tco.yaml: {fdata[name]['source']}")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TcoSetup:
    """The inputs of fleet_tco: the market, the server bought, the rents and the cost inputs."""

    market: str
    currency: str
    cny_per_usd: float
    choice: ServerChoice
    rates: tuple[tuple[str, Quantity, Quantity | None], ...]
    spreads: tuple[RentSpread, ...]
    inp: TcoInputs
    fin: FleetInputs


def _capital(lines: tuple[CostLine, ...], inp: TcoInputs, fin: FleetInputs) -> Capital:
    fdata = fleet_data(None)
    return Capital(wacc=fin.wacc, wacc_source="--wacc" if "wacc" in fin.overridden else "advise/data/tco.yaml wacc",
                   capex_usd=sum(ln.capex_usd for ln in lines), resale_usd=sum(ln.resale_usd for ln in lines),
                   resale_fraction=resale_fraction(fin.resale_fraction_after_3_years, inp.years),
                   resale_source=fdata["resale_fraction_after_3_years"]["source"], years=inp.years)


def fleet_tco(*, accelerator: str, devices: int, utilization: float, setup: TcoSetup,
              pue_source: str = "calibration term pue") -> FleetTco:
    """Every rent kind of the setup against owning (its choice must have a price and a power)."""
    choice, inp, fin = setup.choice, setup.inp, setup.fin
    assert choice.price_usd is not None and choice.power_kw is not None
    pue_prov = label_of(inp.overridden, "pue")
    fx = (setup.currency, setup.cny_per_usd if setup.currency == "CNY" else 1.0)
    lines = own_lines(choice, devices, inp, fin, pue_provenance=pue_prov, fx=fx)
    w = fin.wacc
    cases = []
    for kind, rate, cheap in setup.rates:
        cum = cumulative_costs(lines, inp.years, utilization, rate.value, devices, w)
        cases.append(RentCase(kind=kind, rate=rate, usd_per_year=rent_per_year(rate.value, devices, utilization),
                              break_even_utilization=fleet_break_even(lines, inp.years, rate.value, devices, w),
                              buy_wins_year=buy_wins_year(cum),
                              payback_years=payback_years(lines, utilization, rate.value, devices), cumulative=cum,
                              cheapest=cheap, break_even_at_cheapest=fleet_break_even(
                                  lines, inp.years, cheap.value, devices, w) if cheap is not None else None))
    at_range = None
    bought = choice.price_usd
    if choice.price_range_usd is not None:  # owning per year at the sources' low and high purchase price
        def own_at(price: float) -> float:
            q = replace(choice, price_usd=replace(bought, value=price))
            return sum(ln.per_year(inp.years, utilization, w)
                       for ln in own_lines(q, devices, inp, fin, pue_provenance=pue_prov))
        at_range = (own_at(choice.price_range_usd[0]), own_at(choice.price_range_usd[1]))
    per = int(choice.devices_per_server.value)
    return FleetTco(accelerator=accelerator, devices=devices, years=inp.years, utilization=utilization,
                    market=setup.market, currency=setup.currency, cny_per_usd=setup.cny_per_usd,
                    server=choice.server.id if choice.server else None,
                    nodes=max(1, math.ceil(devices / per)), devices_per_server=choice.devices_per_server,
                    price_usd=choice.price_usd, price_range_usd=choice.price_range_usd, power_kw=choice.power_kw,
                    own=lines, own_at_range=at_range, rent=tuple(cases), market_rents=setup.spreads,
                    capital=_capital(lines, inp, fin), inputs=_input_table(inp, fin, setup.market, pue_source,
                                                                           pue_prov))


def tco_market(accelerator: Accelerator, market: str | None) -> str:
    """The market asked: given, else the part's own when it is sold in one market only, else global."""
    if market:
        return market
    return "cn" if tuple(accelerator.markets) == ("cn",) else "global"


def tco_for(catalog: Catalog, accelerator: Accelerator, *, devices: int, years: float, utilization: float,
            market: str | None, pue: float, node_power_per_tdp: float, server_price_usd: float | None = None,
            rent_usd_per_device_hour: float | None = None, wacc: float | None = None,
            overrides: Mapping[str, float] | None = None) -> TcoSetup:
    """The inputs of fleet_tco from the catalog and the user's values (the caller checks for missing ones)."""
    where = tco_market(accelerator, market)
    base, fleet = split_overrides(overrides)
    if wacc is not None:
        fleet["wacc"] = wacc
    inp = tco_inputs(where, pue=pue, overrides={**base, "years": years})
    inp = inp.model_copy(update={"overridden": tuple(sorted(base))})
    fin = fleet_inputs(where, fleet)
    choice = server_choice(catalog, accelerator, server_price_usd=server_price_usd, inp=inp, fin=fin,
                           node_power_per_tdp=node_power_per_tdp)
    rates, spreads = rent_rates(catalog, accelerator.id, market=where, inp=inp, fin=fin,
                                rent_usd_per_device_hour=rent_usd_per_device_hour, devices=devices,
                                devices_per_server=int(choice.devices_per_server.value))
    return TcoSetup(market=where, currency="CNY" if where == "cn" else "USD", cny_per_usd=catalog.rates.cny_per_usd,
                    choice=choice, rates=rates, spreads=spreads, inp=inp, fin=fin)

