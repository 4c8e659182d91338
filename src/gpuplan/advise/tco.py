"""Cost and TCO: renting on demand, by the month or year, on spot, against buying servers.

Formulas (all inputs are data, advise/data/tco.yaml, overridable):
* job cost, per-hour kinds = price per device-hour x device-hours; commitments bill whole periods:
  monthly = devices x ceil(hours / 730) x 730 x monthly rate (yearly: 8760 h).
* spot: the Young (1974) interval is recomputed with the combined failure + preemption rate
  M = 1 / (1/MTBF + nodes x preemption rate); lost share = write/tau + (tau/2 + restart)/M with
  tau = sqrt(2 x write x M); spot cost = spot rate x device-hours x (1 + lost share - plan's lost share).
* owning one server for a year: F = price/years + hosting x kW x 12 + operations x price
  + energy x idle share, with energy E = kW x PUE x tariff x 8760; at utilization u the year costs
  F + E x (1 - idle) x u. Renting the same capacity costs R x u with R = rate x devices x 8760.
  Break-even utilization u* = F / (R - E x (1 - idle)) (never when R <= E x (1 - idle)).
* a cluster (`gpuplan tco`, advise/tco_own.py builds the lines): each CostLine has capex C (paid at t=0, sold
  for S at the horizon Y), fixed running cost K and utilization-driven running cost V (at u = 1). Owning costs
  EAC + K + V u a year, EAC the equivalent annual capex at the cost of capital r (advise/tco_capital.py;
  C/Y at r = 0 without resale); renting the same device-hours costs R u with R = rate x devices x 8760.
  u* = (EAC + K) / (R - V); cumulative own(t) = C + a(t) (K + V u) - S (1+r)^-Y at Y against rent(t) = a(t) R u
  (present values, a(t) = t at r = 0): buying wins in the first year-end t <= Y where own(t) <= rent(t);
  simple payback t* = C / (R u - K - V u) (undiscounted).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gpuplan.advise.findings import advise_data
from gpuplan.advise.tco_capital import annuity_factor, equivalent_annual_capex
from gpuplan.errors import unknown_name
from gpuplan.hardware import Catalog, Server
from gpuplan.search.offers import server_purchase

__all__ = ["BuyCase", "CostLine", "TcoInputs", "TcoResult", "break_even_utilization", "buy_wins_year",
           "cumulative_costs", "fleet_break_even", "inputs_with_overrides", "market_inputs", "own_cost_per_year",
           "payback_years", "rent_per_year", "tco", "tco_inputs", "year_marks", "yearly_device_price"]

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = 730.0


class TcoInputs(BaseModel):
    """Inputs of the TCO comparison; defaults from advise/data/tco.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    years: float = Field(gt=0)
    electricity_usd_per_kwh: float = Field(ge=0)
    hosting_usd_per_kw_month: float = Field(ge=0)
    operations_fraction_per_year: float = Field(ge=0, le=1)
    idle_power_fraction: float = Field(ge=0, le=1)
    spot_preemptions_per_node_hour: float = Field(ge=0)
    yearly_discount_vs_monthly: float = Field(ge=0, lt=1)
    pue: float = Field(ge=1, le=3)
    server_price_usd: float | None = Field(default=None, gt=0, description="override the catalog list price")
    overridden: tuple[str, ...] = ()


def tco_inputs(market: str | None = None, pue: float = 1.3, overrides: Mapping[str, float] | None = None) -> TcoInputs:
    """TCO inputs for a market (electricity tariff), with user overrides by name."""
    data = {k: float(v["value"]) for k, v in market_inputs(advise_data("tco")["inputs"], market).items()}
    values: dict[str, Any] = {**data, "pue": pue}
    return inputs_with_overrides(TcoInputs, values, overrides, "TCO input")


def market_inputs(raw: Mapping[str, Any], market: str | None) -> dict[str, Any]:
    """tco.yaml entries with each NAME_cn / NAME_global pair collapsed to NAME for `market` (global when None):
    electricity, hosting, staff pay and the cost of capital differ by region."""
    pick = "_cn" if market == "cn" else "_global"
    out: dict[str, Any] = {}
    for name, entry in raw.items():
        if name.endswith(("_cn", "_global")):
            if name.endswith(pick):
                out[name.removesuffix(pick)] = entry
            continue
        out[name] = entry
    return out


M = TypeVar("M", bound=BaseModel)


def inputs_with_overrides(model: type[M], values: dict[str, Any], overrides: Mapping[str, float] | None,
                          label: str) -> M:
    """`model` built from `values` with the user's `overrides` (name -> value) applied and listed in
    `overridden`; an unknown name gets the close matches (pydantic checks the ranges)."""
    names = [k for k in model.model_fields if k != "overridden"]
    for name, value in (overrides or {}).items():
        if name not in names:
            raise unknown_name(label, name, names)
        values[name] = value
    return model(**values, overridden=tuple(sorted(overrides or {})))


@dataclass(frozen=True, slots=True, kw_only=True)
class BuyCase:
    """One server owned for a year."""

    server: str
    devices: int
    price_usd: float
    price_source: str
    power_kw: float
    fixed_usd_per_year: float
    energy_usd_per_year_at_full_use: float


def own_cost_per_year(price_usd: float, power_kw: float, inp: TcoInputs, utilization: float) -> float:
    """Cost of owning one server for a year at `utilization` (see the module formulas)."""
    fixed, energy = _fixed_and_energy(price_usd, power_kw, inp)
    return fixed + energy * (1 - inp.idle_power_fraction) * utilization


def _fixed_and_energy(price_usd: float, power_kw: float, inp: TcoInputs) -> tuple[float, float]:
    energy = power_kw * inp.pue * inp.electricity_usd_per_kwh * HOURS_PER_YEAR
    fixed = (price_usd / inp.years + inp.hosting_usd_per_kw_month * power_kw * 12
             + inp.operations_fraction_per_year * price_usd + energy * inp.idle_power_fraction)
    return fixed, energy


def break_even_utilization(price_usd: float, power_kw: float, devices: int, rent_usd_per_device_hour: float,
                           inp: TcoInputs) -> float | None:
    """Utilization above which owning is cheaper than renting at this rate; None if renting always wins."""
    fixed, energy = _fixed_and_energy(price_usd, power_kw, inp)
    margin = rent_usd_per_device_hour * devices * HOURS_PER_YEAR - energy * (1 - inp.idle_power_fraction)
    if margin <= 0:
        return None
    return fixed / margin


@dataclass(frozen=True, slots=True, kw_only=True)
class TcoResult:
    job_cost_usd: dict[str, float | None]
    usd_per_device_hour: dict[str, float | None]
    spot_lost_share: float | None
    buy: BuyCase | None
    break_even: dict[str, float | None]
    inputs: TcoInputs

    def to_json(self) -> dict[str, Any]:
        return {"job_cost_usd": self.job_cost_usd, "usd_per_device_hour": self.usd_per_device_hour,
                "spot_lost_share": self.spot_lost_share,
                "buy": None if self.buy is None else {
                    "server": self.buy.server, "devices": self.buy.devices, "price_usd": self.buy.price_usd,
                    "price_source": self.buy.price_source, "power_kw": self.buy.power_kw,
                    "fixed_usd_per_year": self.buy.fixed_usd_per_year,
                    "energy_usd_per_year_at_full_use": self.buy.energy_usd_per_year_at_full_use},
                "break_even_utilization": self.break_even, "inputs": self.inputs.model_dump(mode="json"),
                "provenance": "estimated from catalog prices (list prices and market quotes) and advise/data/tco.yaml"}


def yearly_device_price(catalog: Catalog, accelerator: str, market: str | None = None) -> float | None:
    """Cheapest published yearly price per device-hour (USD), or None."""
    best: float | None = None
    for inst in catalog.instances.values():
        if catalog.server(inst.server).accelerator != accelerator or inst.accelerator_count <= 0:
            continue
        if market and inst.market != market:
            continue
        hourly = inst.hourly("USD", catalog.rates, "yearly", distressed=catalog.pricing.use_distressed)
        if hourly is not None:
            per = hourly / inst.accelerator_count
            best = per if best is None else min(best, per)
    return best


def _spot_lost(write_s: float, mtbf_s: float, restart_s: float, preempt_per_s: float) -> float:
    rate = (1 / mtbf_s if math.isfinite(mtbf_s) and mtbf_s > 0 else 0.0) + preempt_per_s
    if rate <= 0:
        return 0.0
    m = 1 / rate
    if write_s <= 0:  # stateless (serving): each interruption costs only the restart
        return restart_s / m
    tau = math.sqrt(2 * write_s * m)  # Young 1974
    return write_s / tau + (tau / 2 + restart_s) / m


def tco(*, catalog: Catalog, accelerator: str, devices: int, gpus_per_node: int, device_hours: float,
        time_s: float, prices: Mapping[str, float | None], checkpoint_write_s: float, mtbf_s: float,
        restart_s: float, server: Server | None, node_power_kw: float | None, inp: TcoInputs,
        market: str | None = None) -> TcoResult:
    """Job cost under every rental kind, and owning against renting (break-even utilization)."""
    nodes = max(1, math.ceil(devices / gpus_per_node))
    hours = time_s / 3600.0
    od, monthly, spot = prices.get("on_demand"), prices.get("monthly"), prices.get("spot")
    yearly = yearly_device_price(catalog, accelerator, market)
    if yearly is None and monthly is not None:
        yearly = monthly * (1 - inp.yearly_discount_vs_monthly)
    rates: dict[str, float | None] = {"on_demand": od, "monthly": monthly, "yearly": yearly, "spot": spot}
    base_lost = _spot_lost(checkpoint_write_s, mtbf_s, restart_s, 0.0)
    spot_lost = _spot_lost(checkpoint_write_s, mtbf_s, restart_s, nodes * inp.spot_preemptions_per_node_hour / 3600)
    job: dict[str, float | None] = {
        "on_demand": od * device_hours if od else None,
        "monthly": monthly * devices * math.ceil(hours / HOURS_PER_MONTH) * HOURS_PER_MONTH if monthly else None,
        "yearly": yearly * devices * math.ceil(hours / HOURS_PER_YEAR) * HOURS_PER_YEAR if yearly else None,
        "spot": spot * device_hours * (1 + spot_lost - base_lost) if spot else None,
    }
    buy: BuyCase | None = None
    even: dict[str, float | None] = {}
    price = inp.server_price_usd
    source = "user input"
    listed = server_purchase(catalog, server)  # the catalog list price in USD (search/offers.py)
    if price is None and listed is not None:
        price = listed.usd_per_server
        source = f"catalog server {listed.server}: {listed.source} ({listed.as_of})"
    per_server = server.accelerators_per_node if server is not None else gpus_per_node
    if price is not None and node_power_kw is not None:
        fixed, energy = _fixed_and_energy(price, node_power_kw, inp)
        buy = BuyCase(server=server.id if server else "?", devices=per_server, price_usd=price, price_source=source,
                      power_kw=node_power_kw, fixed_usd_per_year=fixed, energy_usd_per_year_at_full_use=energy)
        for kind, rate in rates.items():
            if rate is not None and kind != "spot":
                even[kind] = break_even_utilization(price, node_power_kw, per_server, rate, inp)
        job["buy"] = (fixed * hours / HOURS_PER_YEAR + energy * (1 - inp.idle_power_fraction) * hours
                      / HOURS_PER_YEAR) * nodes
    return TcoResult(job_cost_usd=job, usd_per_device_hour=rates,
                     spot_lost_share=spot_lost - base_lost if spot else None, buy=buy, break_even=even, inputs=inp)


# ---------------- a cluster owned for Y years against renting the same device-hours (gpuplan tco) ----------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CostLine:
    """One line of owning a cluster: capex paid at t=0 and running costs per year."""

    name: str
    capex_usd: float = 0.0  # paid once at t=0
    resale_usd: float = 0.0  # what the capex sells for at the horizon (advise/tco_capital.py)
    fixed_usd_per_year: float = 0.0  # running, whatever the utilization
    variable_usd_per_year: float = 0.0  # running, at utilization 1 (scales linearly with u)
    provenance: str
    formula: str
    formula_zh: str = ""  # the same formula with its words in Chinese (empty: `formula` has none)

    def running(self, utilization: float) -> float:
        """Running cost per year at `utilization` (no capex)."""
        return self.fixed_usd_per_year + self.variable_usd_per_year * utilization

    def capex_per_year(self, years: float, wacc: float = 0.0) -> float:
        """The equivalent annual cost of the capex: (C - S) / Y at wacc 0, with the cost of capital above it."""
        return equivalent_annual_capex(self.capex_usd, self.resale_usd, years, wacc) if self.capex_usd else 0.0

    def per_year(self, years: float, utilization: float, wacc: float = 0.0) -> float:
        """Equivalent annual capex plus running cost, per year."""
        return self.capex_per_year(years, wacc) + self.running(utilization)


def rent_per_year(usd_per_device_hour: float, devices: int, utilization: float) -> float:
    """Renting the same device-hours as the owned cluster delivers: rate x devices x 8760 x u."""
    return usd_per_device_hour * devices * HOURS_PER_YEAR * utilization


def fleet_break_even(lines: tuple[CostLine, ...], years: float, usd_per_device_hour: float,
                     devices: int, wacc: float = 0.0) -> float | None:
    """u* = (EAC + K) / (R - V) (EAC = C / Y without resale or cost of capital); None when the rent does not even
    cover the variable running cost."""
    fixed = sum(ln.capex_per_year(years, wacc) + ln.fixed_usd_per_year for ln in lines)
    margin = rent_per_year(usd_per_device_hour, devices, 1.0) - sum(ln.variable_usd_per_year for ln in lines)
    if margin <= 0:
        return None
    return fixed / margin


def year_marks(years: float) -> tuple[float, ...]:
    """The year-ends compared: 1, 2, ... floor(Y), and Y itself when it is not whole."""
    whole = tuple(float(t) for t in range(1, math.floor(years) + 1))
    return whole if whole and whole[-1] == years else (*whole, years)


def cumulative_costs(lines: tuple[CostLine, ...], years: float, utilization: float, usd_per_device_hour: float,
                     devices: int, wacc: float = 0.0) -> tuple[tuple[float, float, float], ...]:
    """(t, own, rent) at each year-end, in present value at `wacc` (tco_capital): own(t) = C + running(u) x a(t),
    less the resale S (1 + wacc)^-Y at the horizon; rent(t) = R u x a(t); a(t) = t at wacc 0."""
    capex = sum(ln.capex_usd for ln in lines)
    resale = sum(ln.resale_usd for ln in lines) * (1.0 + wacc) ** -years
    running = sum(ln.running(utilization) for ln in lines)
    rent = rent_per_year(usd_per_device_hour, devices, utilization)
    return tuple((t, capex + running * annuity_factor(wacc, t) - (resale if t == years else 0.0),
                  rent * annuity_factor(wacc, t)) for t in year_marks(years))


def buy_wins_year(cumulative: tuple[tuple[float, float, float], ...]) -> float | None:
    """The first year-end at which the cumulative cost of owning is at most that of renting; None: never."""
    return next((t for t, own, rent in cumulative if own <= rent), None)


def payback_years(lines: tuple[CostLine, ...], utilization: float, usd_per_device_hour: float,
                  devices: int) -> float | None:
    """t* = C / (R u - running(u)): when the saved running cost repays the capex; None: never."""
    saving = rent_per_year(usd_per_device_hour, devices, utilization) - sum(ln.running(utilization) for ln in lines)
    if saving <= 0:
        return None
    return sum(ln.capex_usd for ln in lines) / saving
