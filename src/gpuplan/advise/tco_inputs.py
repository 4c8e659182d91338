"""The inputs of `gpuplan tco` beyond TcoInputs, and the provenance every number of it carries.

* provenance labels: "catalog" (a catalog record, with its source and date), "quoted" (a price the user
  brought: --server-price, --rent), "user input" (--devices, --years, --utilization, --tco NAME=VALUE) and
  "default" (advise/data/tco.yaml, the calibration's PUE, the advisor's thresholds); a number computed from
  several of them lists each (e.g. "catalog + default": `join_provenance`).
* FleetInputs: fabric, storage, staff, cost of capital, resale, multi-year discounts (tco.yaml `fleet_inputs`,
  the _cn / _global pair collapsed for a market), overridden by name with --tco NAME=VALUE.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gpuplan.advise.findings import advise_data
from gpuplan.advise.tco import TcoInputs, inputs_with_overrides, market_inputs
from gpuplan.errors import unknown_name

__all__ = ["CATALOG", "DEFAULT", "QUOTED", "USER", "FleetInputs", "Quantity", "fleet_data", "fleet_inputs",
           "join_provenance", "label_of", "split_overrides"]

CATALOG, QUOTED, USER, DEFAULT = "catalog", "quoted", "user input", "default"


def join_provenance(*labels: str) -> str:
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


def fleet_data(market: str | None) -> dict[str, dict[str, Any]]:
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
    values: dict[str, Any] = {k: v["value"] for k, v in fleet_data(market).items()}
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


def label_of(inp_overridden: tuple[str, ...], name: str) -> str:
    """USER where --tco overrode `name`, else DEFAULT (advise/data/tco.yaml)."""
    return USER if name in inp_overridden else DEFAULT
