"""Rent vs buy for a cluster (`gpuplan tco`): the server, the rent rates, the cost lines and the results.

Formulas are in advise/tco.py (CostLine, fleet_break_even, cumulative_costs, buy_wins_year, payback_years);
this module gathers their inputs and says where each number comes from:
* provenance labels: "catalog" (a catalog record, with its source and date), "quoted" (a price the user
  brought: --server-price, --rent), "user input" (--devices, --years, --utilization, --tco NAME=VALUE) and
  "default" (advise/data/tco.yaml, the calibration's PUE, the advisor's thresholds); a number computed from
  several of them lists each (e.g. "catalog + default").
* rent kinds: on demand and monthly from the catalog's cheapest instance that can stand in for the cluster (with
  an RDMA fabric beyond one server, else at least the cluster's devices in one instance; search/pricing.device_price);
  yearly from the catalog (tco.yearly_device_price), else monthly x (1 - yearly_discount_vs_monthly); multi-year
  reserved = yearly x (1 - multi_year_discount_vs_yearly), else on demand x (1 - multi_year_discount_vs_on_demand).
  --rent replaces them all with one quoted rate.
* owning N devices: nodes = ceil(N / devices per server) whole servers; lines servers (capex), fabric (capex,
  only with more than one node: node scale-out Gbit/s x USD per Gbit/s), power (kW x PUE x tariff x 8760, the
  idle share fixed, the rest x u), hosting (kW x USD per kW-month x 12), operations (share of the server price),
  storage (TiB per device x USD per TiB-year) and staff (devices / devices per engineer x loaded pay).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from gpuplan.advise.findings import advise_data
from gpuplan.advise.tco import (
    HOURS_PER_YEAR,
    CostLine,
    TcoInputs,
    buy_wins_year,
    cumulative_costs,
    fleet_break_even,
    inputs_with_overrides,
    market_inputs,
    payback_years,
    rent_per_year,
    tco_inputs,
    year_marks,
)
from gpuplan.advise.tco_capital import Capital, resale_fraction
from gpuplan.advise.tco_rents import RentSpread, market_rents
from gpuplan.errors import unknown_name
from gpuplan.hardware import Accelerator, Catalog, Server
from gpuplan.i18n import both
from gpuplan.search.offers import server_purchase

__all__ = ["CATALOG", "DEFAULT", "QUOTED", "USER", "FleetInputs", "FleetTco", "Quantity", "RentCase",
           "ServerChoice", "TcoSetup", "fleet_inputs", "fleet_tco", "own_lines", "rent_rates", "server_choice",
           "split_overrides", "tco_for", "tco_market"]

CATALOG, QUOTED, USER, DEFAULT = "catalog", "quoted", "user input", "default"
DEFAULT_DEVICES_PER_SERVER = 8  # the usual HGX / Atlas board when the catalog has no server for the part
RENT_KINDS = ("on_demand", "monthly", "yearly", "multi_year", "quoted")


def _prov(*labels: str) -> str:
    """Provenance labels joined in a fixed order, each once."""
    order = (CATALOG, QUOTED, USER, DEFAULT)
    flat = {p for label in labels for p in label.split(" + ") if p}
    return " + ".join(p for p in order if p in flat)


class FleetInputs(BaseModel):
    """Inputs of `gpuplan tco` beyond TcoInputs; defaults from advise/data/tco.yaml `fleet_inputs`."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    multi_year_discount_vs_yearly: float = Field(ge=0, lt=1)
    multi_year_discount_vs_on_demand: float = Field(ge=0, lt=1)
    fabric_usd_per_gbit_per_s: float = Field(ge=0)
    fabric_gbit_per_s_per_device: float = Field(gt=0)
    storage_tib_per_device: float = Field(ge=0)
    storage_usd_per_tib_year: float = Field(ge=0)
    staff_devices_per_fte: float = Field(gt=0)
    staff_usd_per_fte_year: float = Field(ge=0)
    wacc: float = Field(ge=0, le=1)
    resale_fraction_after_3_years: float = Field(ge=0, lt=1)
    node_power_kw: float | None = Field(default=None, gt=0, le=200)
    overridden: tuple[str, ...] = ()


def _fleet_data(market: str | None) -> dict[str, dict[str, Any]]:
    """The fleet inputs of tco.yaml, the _cn / _global pair collapsed for `market` (global when None)."""
    return market_inputs(advise_data("tco")["fleet_inputs"], market)


def split_overrides(overrides: Mapping[str, float] | None) -> tuple[dict[str, float], dict[str, float]]:
    """--tco NAME=VALUE pairs split into TcoInputs and FleetInputs overrides; unknown names raise InputError."""
    tco_names = [k for k in TcoInputs.model_fields if k != "overridden"]
    fleet_names = [k for k in FleetInputs.model_fields if k != "overridden"]
    base: dict[str, float] = {}
    fleet: dict[str, float] = {}
    for name, value in (overrides or {}).items():
        if name in tco_names:
            base[name] = value
        elif name in fleet_names:
            fleet[name] = value
        else:
            raise unknown_name("tco", name, [*tco_names, *fleet_names])
    return base, fleet


def fleet_inputs(market: str | None = None, overrides: Mapping[str, float] | None = None) -> FleetInputs:
    """Fleet inputs for a market, with user overrides by name (pydantic checks the ranges)."""
    values: dict[str, Any] = {k: v["value"] for k, v in _fleet_data(market).items()}
    return inputs_with_overrides(FleetInputs, values, overrides, "tco")


@dataclass(frozen=True, slots=True, kw_only=True)
class Quantity:
    """A number with its unit, provenance label(s) and source."""

    value: float
    unit: str
    provenance: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "provenance": self.provenance, "source": self.source}


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerChoice:
    """The server bought: its devices, price and power, each with provenance (price/power None: unknown)."""

    server: Server | None
    devices_per_server: Quantity
    price_usd: Quantity | None
    power_kw: Quantity | None
    price_range_usd: tuple[float, float] | None = None  # the sources' low and high purchase price, catalog only


def server_choice(catalog: Catalog, acc: Accelerator, *, server_price_usd: float | None, inp: TcoInputs,
                  fin: FleetInputs, node_power_per_tdp: float) -> ServerChoice:
    """The catalog server for `acc` (one with a purchase price first, then one with power, then by id).

    Price: --server-price (quoted) > --tco server_price_usd (user input) > catalog list_price in USD.
    Power: --tco node_power_kw (user input) > catalog power_kw > devices x TDP x node_power_per_tdp."""
    found = [s for s in catalog.servers.values() if s.accelerator == acc.id]
    server = min(found, key=lambda s: (s.list_price is None or s.list_price.amount is None, s.power_kw is None,
                                       s.id)) if found else None
    if server is not None:
        per = Quantity(value=server.accelerators_per_node, unit="devices", provenance=CATALOG,
                       source=f"catalog server {server.id}")
    else:
        per = Quantity(value=DEFAULT_DEVICES_PER_SERVER, unit="devices", provenance=DEFAULT,
                       source="no catalog server for this accelerator: an 8-device server assumed")
    price: Quantity | None = None
    span: tuple[float, float] | None = None
    if server_price_usd is not None:
        price = Quantity(value=server_price_usd, unit="USD", provenance=QUOTED, source="--server-price")
    elif inp.server_price_usd is not None:
        price = Quantity(value=inp.server_price_usd, unit="USD", provenance=USER, source="--tco server_price_usd")
    elif (listed := server_purchase(catalog, server)) is not None:  # the catalog list price in USD
        rate = f", at {catalog.rates.cny_per_usd} CNY/USD" if listed.currency != "USD" else ""
        lp = server.list_price if server is not None else None
        lo, hi = (lp.amount_low, lp.amount_high) if lp is not None else (None, None)
        quoted = f" (sources range {lo:,.0f}-{hi:,.0f})" if lo and hi else ""
        price = Quantity(value=listed.usd_per_server, unit="USD", provenance=CATALOG,
                         source=f"catalog server {listed.server}: {listed.currency} {listed.amount:,.0f}{quoted}"
                                f"{rate}; {listed.source} ({listed.as_of}, confidence {listed.confidence})")
        if lo or hi:
            usd = listed.usd_per_server / listed.amount
            span = ((lo or listed.amount) * usd, (hi or listed.amount) * usd)
    power: Quantity | None = None
    if fin.node_power_kw is not None:
        power = Quantity(value=fin.node_power_kw, unit="kW", provenance=USER, source="--tco node_power_kw")
    elif server is not None and server.power_kw is not None:
        power = Quantity(value=server.power_kw, unit="kW", provenance=CATALOG,
                         source=f"catalog server {server.id}: {server.source_of('power_kw')}")
    elif acc.tdp_w is not None:
        kw = per.value * acc.tdp_w * node_power_per_tdp / 1000.0  # devices x TDP x node overhead factor
        power = Quantity(value=kw, unit="kW", provenance=_prov(per.provenance, CATALOG, DEFAULT),
                         source=f"{per.value:g} x {acc.tdp_w:g} W (catalog TDP) x node_power_per_accelerator_tdp "
                                f"{node_power_per_tdp:g} (advise/data/thresholds.yaml)")
    return ServerChoice(server=server, devices_per_server=per, price_usd=price, power_kw=power, price_range_usd=span)


def _label(inp_overridden: tuple[str, ...], name: str) -> str:
    return USER if name in inp_overridden else DEFAULT


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
        prov = _prov(CATALOG, DEFAULT if derived else "")
        what = {"comparable": "comparable", "all": "(none comparable: all)",
                "distressed only": "distressed-capacity (the only quotes)"}[sp.basis]
        median = Quantity(value=sp.median_usd_per_device_hour, unit=unit, provenance=prov,
                          source=f"median of {len(ref)} {what} offer(s) in market {market}: "
                                 + ", ".join(q.instance for q in ref))
        c = sp.cheapest
        cheap = Quantity(value=c.usd_per_device_hour, unit=unit, provenance=_prov(CATALOG, DEFAULT if c.derived
                                                                                   else ""),
                         source=f"{c.instance}: {c.source} ({c.as_of}, confidence {c.confidence})"
                                + (f"; {c.derived}" if c.derived else "")
                                + ("" if sp.cheapest_credible else "; no offer of medium or high confidence"))
        out.append((sp.kind, median, cheap))
    return tuple(out), spreads


FORMULA_LINES = ("servers", "power", "hosting", "storage", "staff")  # formulas with words: tco.formula.<line>


class _Formula(TypedDict):
    formula: str
    formula_zh: str


def _formula(line: str, **params: Any) -> _Formula:
    """A cost line's formula in both languages (messages tco.formula.<line>): CostLine's formula and formula_zh."""
    assert line in FORMULA_LINES
    text = both(f"tco.formula.{line}", **params)
    return {"formula": text["en"], "formula_zh": text["zh"]}


def own_lines(choice: ServerChoice, devices: int, inp: TcoInputs, fin: FleetInputs, *,
              pue_provenance: str, fx: tuple[str, float] = ("USD", 1.0)) -> tuple[CostLine, ...]:
    """The cost lines of owning `devices` devices in whole servers (see the module docstring); the formulas show
    amounts in `fx` (currency, units per USD): the market's currency."""

    def m(usd: float, spec: str = ",.0f") -> str:
        return f"{format(usd * fx[1], spec)} {fx[0]}"

    assert choice.price_usd is not None and choice.power_kw is not None
    per = int(choice.devices_per_server.value)
    nodes = max(1, math.ceil(devices / per))
    price, kw = choice.price_usd.value, choice.power_kw.value
    pp, kp = choice.price_usd.provenance, choice.power_kw.provenance

    def lab(name: str) -> str:
        return _label(inp.overridden, name)

    def flab(name: str) -> str:
        return _label(fin.overridden, name)

    keep = resale_fraction(fin.resale_fraction_after_3_years, inp.years)
    lines = [CostLine(name="servers", capex_usd=nodes * price, resale_usd=nodes * price * keep,
                      provenance=_prov(pp, choice.devices_per_server.provenance,
                                       flab("resale_fraction_after_3_years"), flab("wacc")),
                      **_formula("servers", nodes=nodes, price=m(price), keep=keep, years=inp.years,
                                 wacc=fin.wacc))]
    if nodes > 1:  # scale-out switches, optics and cables; NICs come with the server
        srv = choice.server
        gbit = srv.compute_gbit_per_s if srv is not None else 0.0
        gprov = CATALOG
        if gbit <= 0:
            gbit, gprov = per * fin.fabric_gbit_per_s_per_device, flab("fabric_gbit_per_s_per_device")
        lines.append(CostLine(name="fabric", capex_usd=nodes * gbit * fin.fabric_usd_per_gbit_per_s,
                              provenance=_prov(gprov, flab("fabric_usd_per_gbit_per_s")),
                              formula=f"{nodes} x {gbit:,.0f} Gbit/s x {m(fin.fabric_usd_per_gbit_per_s, '.3g')}"))
    energy = kw * inp.pue * inp.electricity_usd_per_kwh * HOURS_PER_YEAR  # per node at full use
    lines.append(CostLine(
        name="power", fixed_usd_per_year=nodes * energy * inp.idle_power_fraction,
        variable_usd_per_year=nodes * energy * (1 - inp.idle_power_fraction),
        provenance=_prov(kp, pue_provenance, lab("electricity_usd_per_kwh"), lab("idle_power_fraction")),
        **_formula("power", nodes=nodes, kw=kw, pue=inp.pue, kwh=m(inp.electricity_usd_per_kwh, '.3g'),
                   idle=inp.idle_power_fraction)))
    lines.append(CostLine(name="hosting", fixed_usd_per_year=nodes * kw * inp.hosting_usd_per_kw_month * 12,
                          provenance=_prov(kp, lab("hosting_usd_per_kw_month")),
                          **_formula("hosting", nodes=nodes, kw=kw, rate=m(inp.hosting_usd_per_kw_month, '.4g'))))
    lines.append(CostLine(name="operations", fixed_usd_per_year=nodes * price * inp.operations_fraction_per_year,
                          provenance=_prov(pp, lab("operations_fraction_per_year")),
                          formula=f"{inp.operations_fraction_per_year:g} x {nodes} x {m(price)}"))
    lines.append(CostLine(name="storage",
                          fixed_usd_per_year=devices * fin.storage_tib_per_device * fin.storage_usd_per_tib_year,
                          provenance=_prov(flab("storage_tib_per_device"), flab("storage_usd_per_tib_year")),
                          **_formula("storage", devices=devices, tib=fin.storage_tib_per_device,
                                     rate=m(fin.storage_usd_per_tib_year, '.4g'))))
    lines.append(CostLine(name="staff",
                          fixed_usd_per_year=devices / fin.staff_devices_per_fte * fin.staff_usd_per_fte_year,
                          provenance=_prov(flab("staff_devices_per_fte"), flab("staff_usd_per_fte_year")),
                          **_formula("staff", devices=devices, per=fin.staff_devices_per_fte,
                                     pay=m(fin.staff_usd_per_fte_year))))
    return tuple(lines)


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
    data = market_inputs(advise_data("tco")["inputs"], market)
    suffix = "_cn" if market == "cn" else "_global"
    names = ("electricity_usd_per_kwh", "hosting_usd_per_kw_month", "operations_fraction_per_year",
             "idle_power_fraction", "yearly_discount_vs_monthly")
    raw = advise_data("tco")["inputs"]
    out = {"years": Quantity(value=inp.years, unit="years", provenance=USER, source="--years"),
           "pue": Quantity(value=inp.pue, unit="ratio", provenance=pue_provenance, source=pue_source)}
    for name in names:
        user = name in inp.overridden
        key = name + suffix if name + suffix in raw else name
        out[name] = Quantity(value=float(getattr(inp, name)), unit=str(data[name]["unit"]),
                             provenance=USER if user else DEFAULT,
                             source="--tco" if user else f"advise/data/tco.yaml {key}: {data[name]['source']}")
    fdata = _fleet_data(market)
    for name in FleetInputs.model_fields:
        value = getattr(fin, name)
        if name == "overridden" or value is None:
            continue
        user = name in fin.overridden
        out[name] = Quantity(value=float(value), unit=str(fdata[name]["unit"]), provenance=USER if user else DEFAULT,
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
    fdata = _fleet_data(None)
    return Capital(wacc=fin.wacc, wacc_source="--wacc" if "wacc" in fin.overridden else "advise/data/tco.yaml wacc",
                   capex_usd=sum(ln.capex_usd for ln in lines), resale_usd=sum(ln.resale_usd for ln in lines),
                   resale_fraction=resale_fraction(fin.resale_fraction_after_3_years, inp.years),
                   resale_source=fdata["resale_fraction_after_3_years"]["source"], years=inp.years)


def fleet_tco(*, accelerator: str, devices: int, utilization: float, setup: TcoSetup,
              pue_source: str = "calibration term pue") -> FleetTco:
    """Every rent kind of the setup against owning (its choice must have a price and a power)."""
    choice, inp, fin = setup.choice, setup.inp, setup.fin
    assert choice.price_usd is not None and choice.power_kw is not None
    pue_prov = USER if "pue" in inp.overridden else DEFAULT
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

