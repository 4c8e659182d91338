"""Owning a cluster for `gpuplan tco`: the server bought and the cost lines of owning N devices in whole servers.

* the server: the catalog's server for the part (one with a purchase price first); price --server-price (quoted) >
  --tco server_price_usd (user input) > the catalog list price in USD; power --tco node_power_kw > catalog power_kw >
  devices x TDP x node_power_per_accelerator_tdp.
* owning N devices: nodes = ceil(N / devices per server) whole servers; lines servers (capex), fabric (capex,
  only with more than one node: node scale-out Gbit/s x USD per Gbit/s), power (kW x PUE x tariff x 8760, the
  idle share fixed, the rest x u), hosting (kW x USD per kW-month x 12), operations (share of the server price),
  storage (TiB per device x USD per TiB-year) and staff (devices / devices per engineer x loaded pay).
Formulas of the lines are in advise/tco.py (CostLine); their words in both languages in i18n tco.formula.<line>.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict

from gpuplan.advise.tco import HOURS_PER_YEAR, CostLine, TcoInputs
from gpuplan.advise.tco_capital import resale_fraction
from gpuplan.advise.tco_inputs import CATALOG, DEFAULT, QUOTED, USER, FleetInputs, Quantity, join_provenance, label_of
from gpuplan.hardware import Accelerator, Catalog, Server
from gpuplan.i18n import both
from gpuplan.search.offers import server_purchase

__all__ = ["DEFAULT_DEVICES_PER_SERVER", "FORMULA_LINES", "ServerChoice", "own_lines", "server_choice"]

DEFAULT_DEVICES_PER_SERVER = 8  # the usual HGX / Atlas board when the catalog has no server for the part


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
        power = Quantity(value=kw, unit="kW", provenance=join_provenance(per.provenance, CATALOG, DEFAULT),
                         source=f"{per.value:g} x {acc.tdp_w:g} W (catalog TDP) x node_power_per_accelerator_tdp "
                                f"{node_power_per_tdp:g} (advise/data/thresholds.yaml)")
    return ServerChoice(server=server, devices_per_server=per, price_usd=price, power_kw=power, price_range_usd=span)


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
        return label_of(inp.overridden, name)

    def flab(name: str) -> str:
        return label_of(fin.overridden, name)

    keep = resale_fraction(fin.resale_fraction_after_3_years, inp.years)
    lines = [CostLine(name="servers", capex_usd=nodes * price, resale_usd=nodes * price * keep,
                      provenance=join_provenance(pp, choice.devices_per_server.provenance,
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
                              provenance=join_provenance(gprov, flab("fabric_usd_per_gbit_per_s")),
                              formula=f"{nodes} x {gbit:,.0f} Gbit/s x {m(fin.fabric_usd_per_gbit_per_s, '.3g')}"))
    energy = kw * inp.pue * inp.electricity_usd_per_kwh * HOURS_PER_YEAR  # per node at full use
    lines.append(CostLine(
        name="power", fixed_usd_per_year=nodes * energy * inp.idle_power_fraction,
        variable_usd_per_year=nodes * energy * (1 - inp.idle_power_fraction),
        provenance=join_provenance(kp, pue_provenance, lab("electricity_usd_per_kwh"), lab("idle_power_fraction")),
        **_formula("power", nodes=nodes, kw=kw, pue=inp.pue, kwh=m(inp.electricity_usd_per_kwh, '.3g'),
                   idle=inp.idle_power_fraction)))
    lines.append(CostLine(name="hosting", fixed_usd_per_year=nodes * kw * inp.hosting_usd_per_kw_month * 12,
                          provenance=join_provenance(kp, lab("hosting_usd_per_kw_month")),
                          **_formula("hosting", nodes=nodes, kw=kw, rate=m(inp.hosting_usd_per_kw_month, '.4g'))))
    lines.append(CostLine(name="operations", fixed_usd_per_year=nodes * price * inp.operations_fraction_per_year,
                          provenance=join_provenance(pp, lab("operations_fraction_per_year")),
                          formula=f"{inp.operations_fraction_per_year:g} x {nodes} x {m(price)}"))
    lines.append(CostLine(name="storage",
                          fixed_usd_per_year=devices * fin.storage_tib_per_device * fin.storage_usd_per_tib_year,
                          provenance=join_provenance(flab("storage_tib_per_device"), flab("storage_usd_per_tib_year")),
                          **_formula("storage", devices=devices, tib=fin.storage_tib_per_device,
                                     rate=m(fin.storage_usd_per_tib_year, '.4g'))))
    lines.append(CostLine(name="staff",
                          fixed_usd_per_year=devices / fin.staff_devices_per_fte * fin.staff_usd_per_fte_year,
                          provenance=join_provenance(flab("staff_devices_per_fte"), flab("staff_usd_per_fte_year")),
                          **_formula("staff", devices=devices, per=fin.staff_devices_per_fte,
                                     pay=m(fin.staff_usd_per_fte_year))))
    return tuple(lines)
