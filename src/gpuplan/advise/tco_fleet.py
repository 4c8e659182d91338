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
from dataclasses import dataclass
from typing import Any

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
    payback_years,
    rent_per_year,
    tco_inputs,
    yearly_device_price,
)
from gpuplan.errors import unknown_name
from gpuplan.hardware import Accelerator, Catalog, Server
from gpuplan.search.offers import server_purchase

__all__ = ["CATALOG", "DEFAULT", "QUOTED", "USER", "FleetInputs", "FleetTco", "Quantity", "RentCase",
           "ServerChoice", "fleet_inputs", "fleet_tco", "own_lines", "rent_rates", "server_choice",
           "split_overrides", "tco_for"]

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
    node_power_kw: float | None = Field(default=None, gt=0, le=200)
    overridden: tuple[str, ...] = ()


def _fleet_data(market: str | None) -> dict[str, dict[str, Any]]:
    """The fleet inputs of tco.yaml, the _cn / _global pair collapsed for `market` (global when None)."""
    raw: dict[str, dict[str, Any]] = advise_data("tco")["fleet_inputs"]
    pick = "_cn" if market == "cn" else "_global"
    out: dict[str, dict[str, Any]] = {}
    for name, entry in raw.items():
        if name.endswith(("_cn", "_global")):
            if name.endswith(pick):
                out[name.removesuffix(pick)] = entry
            continue
        out[name] = entry
    return out


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
    if server_price_usd is not None:
        price = Quantity(value=server_price_usd, unit="USD", provenance=QUOTED, source="--server-price")
    elif inp.server_price_usd is not None:
        price = Quantity(value=inp.server_price_usd, unit="USD", provenance=USER, source="--tco server_price_usd")
    elif (listed := server_purchase(catalog, server)) is not None:  # the catalog list price in USD
        rate = f", at {catalog.rates.cny_per_usd} CNY/USD" if listed.currency != "USD" else ""
        price = Quantity(value=listed.usd_per_server, unit="USD", provenance=CATALOG,
                         source=f"catalog server {listed.server}: {listed.currency} {listed.amount:,.0f}{rate}; "
                                f"{listed.source} ({listed.as_of}, confidence {listed.confidence})")
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
    return ServerChoice(server=server, devices_per_server=per, price_usd=price, power_kw=power)


def _label(inp_overridden: tuple[str, ...], name: str) -> str:
    return USER if name in inp_overridden else DEFAULT


def rent_rates(catalog: Catalog, accelerator: str, *, market: str | None, inp: TcoInputs, fin: FleetInputs,
               rent_usd_per_device_hour: float | None, devices: int = 1,
               devices_per_server: int = 1) -> tuple[tuple[str, Quantity], ...]:
    """(kind, USD per device-hour) for every rent kind that has a rate; --rent replaces them all.

    The rent compared with owning is that of offers that can stand in for the cluster: for more devices than one
    server holds, instances with a scale-out RDMA fabric (the owned cluster pays for one); for one server, instances
    of at least that many devices. Where no such offer publishes a rate, the cheapest of all, and its source says so.
    """
    from gpuplan.search.pricing import device_price, price_label

    unit = "USD per device-hour"
    if rent_usd_per_device_hour is not None:
        return (("quoted", Quantity(value=rent_usd_per_device_hour, unit=unit, provenance=QUOTED, source="--rent")),)
    multi = devices > devices_per_server
    like = ("an RDMA fabric" if multi else f"{devices} devices or more in one instance")
    dp = device_price(catalog, accelerator, market=market, keep=(
        (lambda i: i.rdma_network is not None) if multi else (lambda i: i.accelerator_count >= devices)))
    caveat = ""
    if dp.on_demand is None and dp.monthly is None:  # no comparable offer: the cheapest of all, said so
        dp = device_price(catalog, accelerator, market=market)
        caveat = f" (no catalog offer with {like} has a rate: a single instance's, not a like-for-like cluster)"
    out: list[tuple[str, Quantity]] = []

    def inst_source(inst_id: str | None, kind: str) -> str:
        if inst_id is None:
            return ""
        p = catalog.instance(inst_id).price(kind, distressed=catalog.pricing.use_distressed)
        return f"catalog instance {inst_id}" + (f": {price_label(p)}" if p is not None else "") + caveat

    od = None
    if dp.on_demand is not None:
        od = Quantity(value=dp.on_demand, unit=unit, provenance=CATALOG,
                      source=inst_source(dp.on_demand_instance, "on_demand_hourly"))
        out.append(("on_demand", od))
    if dp.monthly is not None:
        out.append(("monthly", Quantity(value=dp.monthly, unit=unit, provenance=CATALOG,
                                        source=inst_source(dp.monthly_instance, "monthly"))))
    yearly: Quantity | None = None
    published = yearly_device_price(catalog, accelerator, market)
    if published is not None:
        yearly = Quantity(value=published, unit=unit, provenance=CATALOG,
                          source="catalog: cheapest published yearly price")
    elif dp.monthly is not None:  # yearly subscription below 12 monthly payments
        d = inp.yearly_discount_vs_monthly
        yearly = Quantity(value=dp.monthly * (1 - d), unit=unit,
                          provenance=_prov(CATALOG, _label(inp.overridden, "yearly_discount_vs_monthly")),
                          source=f"monthly x (1 - yearly_discount_vs_monthly {d:g})")
    if yearly is not None:
        out.append(("yearly", yearly))
        d = fin.multi_year_discount_vs_yearly  # a multi-year term below the 1-year rate
        out.append(("multi_year", Quantity(
            value=yearly.value * (1 - d), unit=unit,
            provenance=_prov(yearly.provenance, _label(fin.overridden, "multi_year_discount_vs_yearly")),
            source=f"yearly x (1 - multi_year_discount_vs_yearly {d:g})")))
    elif od is not None:
        d = fin.multi_year_discount_vs_on_demand  # AWS 3-year reserved vs on demand
        out.append(("multi_year", Quantity(
            value=od.value * (1 - d), unit=unit,
            provenance=_prov(CATALOG, _label(fin.overridden, "multi_year_discount_vs_on_demand")),
            source=f"on demand x (1 - multi_year_discount_vs_on_demand {d:g})")))
    return tuple(out)


def own_lines(choice: ServerChoice, devices: int, inp: TcoInputs, fin: FleetInputs, *,
              pue_provenance: str) -> tuple[CostLine, ...]:
    """The cost lines of owning `devices` devices in whole servers (see the module docstring)."""
    assert choice.price_usd is not None and choice.power_kw is not None
    per = int(choice.devices_per_server.value)
    nodes = max(1, math.ceil(devices / per))
    price, kw = choice.price_usd.value, choice.power_kw.value
    pp, kp = choice.price_usd.provenance, choice.power_kw.provenance

    def lab(name: str) -> str:
        return _label(inp.overridden, name)

    def flab(name: str) -> str:
        return _label(fin.overridden, name)

    lines = [CostLine(name="servers", capex_usd=nodes * price,
                      provenance=_prov(pp, choice.devices_per_server.provenance),
                      formula=f"{nodes} x {price:,.0f} USD, over {inp.years:g} years")]
    if nodes > 1:  # scale-out switches, optics and cables; NICs come with the server
        srv = choice.server
        gbit = srv.compute_gbit_per_s if srv is not None else 0.0
        gprov = CATALOG
        if gbit <= 0:
            gbit, gprov = per * fin.fabric_gbit_per_s_per_device, flab("fabric_gbit_per_s_per_device")
        lines.append(CostLine(name="fabric", capex_usd=nodes * gbit * fin.fabric_usd_per_gbit_per_s,
                              provenance=_prov(gprov, flab("fabric_usd_per_gbit_per_s")),
                              formula=f"{nodes} x {gbit:,.0f} Gbit/s x {fin.fabric_usd_per_gbit_per_s:g} USD"))
    energy = kw * inp.pue * inp.electricity_usd_per_kwh * HOURS_PER_YEAR  # per node at full use
    lines.append(CostLine(
        name="power", fixed_usd_per_year=nodes * energy * inp.idle_power_fraction,
        variable_usd_per_year=nodes * energy * (1 - inp.idle_power_fraction),
        provenance=_prov(kp, pue_provenance, lab("electricity_usd_per_kwh"), lab("idle_power_fraction")),
        formula=f"{nodes} x {kw:g} kW x PUE {inp.pue:g} x {inp.electricity_usd_per_kwh:g} USD/kWh x 8760 h "
                f"x (idle {inp.idle_power_fraction:g} + (1 - idle) x u)"))
    lines.append(CostLine(name="hosting", fixed_usd_per_year=nodes * kw * inp.hosting_usd_per_kw_month * 12,
                          provenance=_prov(kp, lab("hosting_usd_per_kw_month")),
                          formula=f"{nodes} x {kw:g} kW x {inp.hosting_usd_per_kw_month:g} USD/kW-month x 12"))
    lines.append(CostLine(name="operations", fixed_usd_per_year=nodes * price * inp.operations_fraction_per_year,
                          provenance=_prov(pp, lab("operations_fraction_per_year")),
                          formula=f"{inp.operations_fraction_per_year:g} x {nodes} x {price:,.0f} USD"))
    lines.append(CostLine(name="storage",
                          fixed_usd_per_year=devices * fin.storage_tib_per_device * fin.storage_usd_per_tib_year,
                          provenance=_prov(flab("storage_tib_per_device"), flab("storage_usd_per_tib_year")),
                          formula=f"{devices} x {fin.storage_tib_per_device:g} TiB x "
                                  f"{fin.storage_usd_per_tib_year:g} USD/TiB-year"))
    lines.append(CostLine(name="staff",
                          fixed_usd_per_year=devices / fin.staff_devices_per_fte * fin.staff_usd_per_fte_year,
                          provenance=_prov(flab("staff_devices_per_fte"), flab("staff_usd_per_fte_year")),
                          formula=f"{devices} / {fin.staff_devices_per_fte:g} devices per engineer x "
                                  f"{fin.staff_usd_per_fte_year:,.0f} USD"))
    return tuple(lines)


@dataclass(frozen=True, slots=True, kw_only=True)
class RentCase:
    """One rent kind against owning."""

    kind: str
    rate: Quantity
    usd_per_year: float  # renting the owned cluster's device-hours at utilization u
    break_even_utilization: float | None  # None: the rent does not cover the variable running cost
    buy_wins_year: float | None  # None: never within the years
    payback_years: float | None
    cumulative: tuple[tuple[float, float, float], ...]  # (year, own USD, rent USD)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "usd_per_device_hour": self.rate.to_json(), "usd_per_year": self.usd_per_year,
                "break_even_utilization": self.break_even_utilization, "buy_wins_year": self.buy_wins_year,
                "payback_years": self.payback_years,
                "cumulative": [{"year": t, "own_usd": own, "rent_usd": rent} for t, own, rent in self.cumulative]}


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetTco:
    """Renting (each kind) against owning `devices` devices for `years` at `utilization`."""

    accelerator: str
    devices: int
    years: float
    utilization: float
    market: str | None
    server: str | None
    nodes: int
    devices_per_server: Quantity
    price_usd: Quantity
    power_kw: Quantity
    own: tuple[CostLine, ...]
    rent: tuple[RentCase, ...]
    inputs: dict[str, Quantity]

    @property
    def own_usd_per_year(self) -> float:
        return sum(ln.per_year(self.years, self.utilization) for ln in self.own)

    @property
    def own_usd_per_device_hour(self) -> float:
        """Owning cost per used device-hour: own per year / (devices x 8760 x u)."""
        return self.own_usd_per_year / (self.devices * HOURS_PER_YEAR * self.utilization)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "tco", "accelerator": self.accelerator, "devices": self.devices, "years": self.years,
            "utilization": self.utilization, "market": self.market, "server": self.server, "nodes": self.nodes,
            "devices_per_server": self.devices_per_server.to_json(), "server_price_usd": self.price_usd.to_json(),
            "node_power_kw": self.power_kw.to_json(),
            "own": {"usd_per_year": self.own_usd_per_year, "usd_per_device_hour": self.own_usd_per_device_hour,
                    "capex_usd": sum(ln.capex_usd for ln in self.own),
                    "lines": [{"name": ln.name, "usd_per_year": ln.per_year(self.years, self.utilization),
                               "capex_usd": ln.capex_usd, "fixed_usd_per_year": ln.fixed_usd_per_year,
                               "variable_usd_per_year_at_full_use": ln.variable_usd_per_year,
                               "provenance": ln.provenance, "formula": ln.formula} for ln in self.own]},
            "rent": [r.to_json() for r in self.rent],
            "inputs": {k: q.to_json() for k, q in self.inputs.items()},
            "provenance": "estimated from the inputs; each input says where it comes from",
        }


def _input_table(inp: TcoInputs, fin: FleetInputs, market: str | None, pue_source: str,
                 pue_provenance: str) -> dict[str, Quantity]:
    data = advise_data("tco")["inputs"]
    tariff = "electricity_usd_per_kwh_cn" if market == "cn" else "electricity_usd_per_kwh_global"
    names = {"electricity_usd_per_kwh": tariff, "hosting_usd_per_kw_month": "hosting_usd_per_kw_month",
             "operations_fraction_per_year": "operations_fraction_per_year",
             "idle_power_fraction": "idle_power_fraction", "yearly_discount_vs_monthly": "yearly_discount_vs_monthly"}
    out = {"years": Quantity(value=inp.years, unit="years", provenance=USER, source="--years"),
           "pue": Quantity(value=inp.pue, unit="ratio", provenance=pue_provenance, source=pue_source)}
    for name, key in names.items():
        user = name in inp.overridden
        out[name] = Quantity(value=float(getattr(inp, name)), unit=str(data[key]["unit"]),
                             provenance=USER if user else DEFAULT,
                             source="--tco" if user else f"advise/data/tco.yaml {key}: {data[key]['source']}")
    fdata = _fleet_data(market)
    for name in FleetInputs.model_fields:
        value = getattr(fin, name)
        if name == "overridden" or value is None:
            continue
        user = name in fin.overridden
        out[name] = Quantity(value=float(value), unit=str(fdata[name]["unit"]), provenance=USER if user else DEFAULT,
                             source="--tco" if user else f"advise/data/tco.yaml: {fdata[name]['source']}")
    return out


def fleet_tco(*, accelerator: str, devices: int, utilization: float, market: str | None, choice: ServerChoice,
              rates: tuple[tuple[str, Quantity], ...], inp: TcoInputs, fin: FleetInputs,
              pue_source: str = "calibration term pue") -> FleetTco:
    """Every rent kind in `rates` against owning (choice must have a price and a power)."""
    assert choice.price_usd is not None and choice.power_kw is not None
    pue_prov = USER if "pue" in inp.overridden else DEFAULT
    lines = own_lines(choice, devices, inp, fin, pue_provenance=pue_prov)
    cases = []
    for kind, rate in rates:
        cum = cumulative_costs(lines, inp.years, utilization, rate.value, devices)
        cases.append(RentCase(kind=kind, rate=rate, usd_per_year=rent_per_year(rate.value, devices, utilization),
                              break_even_utilization=fleet_break_even(lines, inp.years, rate.value, devices),
                              buy_wins_year=buy_wins_year(cum),
                              payback_years=payback_years(lines, utilization, rate.value, devices), cumulative=cum))
    per = int(choice.devices_per_server.value)
    return FleetTco(accelerator=accelerator, devices=devices, years=inp.years, utilization=utilization,
                    market=market, server=choice.server.id if choice.server else None,
                    nodes=max(1, math.ceil(devices / per)), devices_per_server=choice.devices_per_server,
                    price_usd=choice.price_usd, power_kw=choice.power_kw, own=lines, rent=tuple(cases),
                    inputs=_input_table(inp, fin, market, pue_source, pue_prov))


def tco_for(catalog: Catalog, accelerator: Accelerator, *, devices: int, years: float, utilization: float,
            market: str | None, pue: float, node_power_per_tdp: float, server_price_usd: float | None = None,
            rent_usd_per_device_hour: float | None = None,
            overrides: Mapping[str, float] | None = None) -> tuple[ServerChoice, tuple[tuple[str, Quantity], ...],
                                                                   TcoInputs, FleetInputs]:
    """The inputs of fleet_tco from the catalog and the user's values (the caller checks for missing ones)."""
    base, fleet = split_overrides(overrides)
    inp = tco_inputs(market, pue=pue, overrides={**base, "years": years})
    inp = inp.model_copy(update={"overridden": tuple(sorted(base))})
    fin = fleet_inputs(market, fleet)
    choice = server_choice(catalog, accelerator, server_price_usd=server_price_usd, inp=inp, fin=fin,
                           node_power_per_tdp=node_power_per_tdp)
    rates = rent_rates(catalog, accelerator.id, market=market, inp=inp, fin=fin,
                       rent_usd_per_device_hour=rent_usd_per_device_hour, devices=devices,
                       devices_per_server=int(choice.devices_per_server.value))
    return choice, rates, inp, fin
