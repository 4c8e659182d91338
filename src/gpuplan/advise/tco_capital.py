"""Cost of capital, resale value and depreciation of an owned cluster (`gpuplan tco`).

Formulas (standard engineering economics, e.g. Brealey, Myers & Allen, Principles of Corporate Finance, ch. 6):
* resale after Y years S = C x f3^(Y/3), f3 = the resale fraction after 3 years (a constant yearly decline);
* annuity factor a(t) = (1 - (1 + r)^-t) / r, and a(t) = t at r = 0 (r: the cost of capital, WACC);
* equivalent annual capital cost EAC = (C - S (1 + r)^-Y) / a(Y): the yearly payment with the same present value
  as buying at t = 0 and selling at Y; at r = 0 it is the straight-line depreciation (C - S) / Y. The part above
  the depreciation is the cost of capital, EAC - (C - S) / Y;
* depreciation schedule (straight line to the resale value): (C - S) / Y a year, book value C - (C - S) t / Y;
* present values at year-end t: owning C + running x a(t), less S (1 + r)^-Y at the horizon (the servers sold then);
  renting R u x a(t) (rent and running costs paid evenly over each year, taken at its end).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Capital", "annuity_factor", "depreciation_schedule", "equivalent_annual_capex", "resale_fraction"]


def resale_fraction(after_3_years: float, years: float) -> float:
    """The share of the purchase price the servers sell for after `years` (f3^(Y/3))."""
    return float(after_3_years ** (years / 3.0)) if after_3_years > 0 else 0.0


def annuity_factor(rate: float, years: float) -> float:
    """a(t) = (1 - (1 + r)^-t) / r; t at r = 0."""
    if rate == 0:
        return years
    return (1.0 - float((1.0 + rate) ** -years)) / rate


def equivalent_annual_capex(capex: float, resale: float, years: float, rate: float) -> float:
    """EAC = (C - S (1 + r)^-Y) / a(Y); (C - S) / Y at r = 0."""
    return (capex - resale * float((1.0 + rate) ** -years)) / annuity_factor(rate, years)


def depreciation_schedule(capex: float, resale: float, marks: tuple[float, ...]) -> tuple[tuple[float, float, float],
                                                                                          ...]:
    """(year-end t, depreciation in that year, book value at t), straight line to the resale value at the last
    mark."""
    years = marks[-1]
    per = (capex - resale) / years
    out = []
    prev = 0.0
    for t in marks:
        out.append((t, per * (t - prev), capex - per * t))
        prev = t
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class Capital:
    """The cost of capital of one owned cluster: the rate, the resale and what they cost a year."""

    wacc: float
    wacc_source: str
    capex_usd: float  # everything bought at t = 0
    resale_usd: float  # what the servers sell for at the horizon
    resale_fraction: float
    resale_source: str
    years: float

    @property
    def depreciation_usd_per_year(self) -> float:
        return (self.capex_usd - self.resale_usd) / self.years

    @property
    def capital_charge_usd_per_year(self) -> float:
        """EAC - straight-line depreciation: what tying the money up costs a year."""
        return equivalent_annual_capex(self.capex_usd, self.resale_usd, self.years, self.wacc) \
            - self.depreciation_usd_per_year

    def to_json(self, marks: tuple[float, ...]) -> dict[str, Any]:
        return {"wacc": self.wacc, "wacc_source": self.wacc_source, "capex_usd": self.capex_usd,
                "resale_usd": self.resale_usd, "resale_fraction": self.resale_fraction,
                "resale_source": self.resale_source,
                "equivalent_annual_capex_usd": self.depreciation_usd_per_year + self.capital_charge_usd_per_year,
                "depreciation_usd_per_year": self.depreciation_usd_per_year,
                "capital_charge_usd_per_year": self.capital_charge_usd_per_year,
                "depreciation": [{"year": t, "depreciation_usd": d, "book_value_usd": b}
                                 for t, d, b in depreciation_schedule(self.capex_usd, self.resale_usd, marks)],
                "formula": "EAC = (capex - resale x (1 + wacc)^-years) / a(years), a(t) = (1 - (1 + wacc)^-t) / wacc"}
