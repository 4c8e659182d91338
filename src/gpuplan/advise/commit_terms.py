"""The committed-term rents an offer does not publish, derived from those it does (advise/data/tco.yaml discounts).

A 1-year rate is the monthly one x (1 - yearly_discount_vs_monthly); a 3-year rate is the 1-year one x
(1 - multi_year_discount_vs_yearly) or, without one, on demand x (1 - multi_year_discount_vs_on_demand). One rule for
`gpuplan tco`'s market rents (per device-hour, tco_rents.py) and `plan infer --traffic`'s purchase mix (per
instance-hour, traffic_mix.py); each derived rate says how it was derived.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

__all__ = ["with_commit_terms"]


class _Derivable(Protocol):
    @property
    def derived(self) -> str: ...


R = TypeVar("R", bound=_Derivable)
# (a rate, the kind it becomes, the factor on its price, how it was derived) -> the derived rate
Scale = Callable[[R, str, float, str], R]


def with_commit_terms(got: Mapping[str, R], scale: Scale[R], *, yearly_discount_vs_monthly: float,
                      multi_year_discount_vs_yearly: float, multi_year_discount_vs_on_demand: float) -> dict[str, R]:
    """`got` (rates by kind: on_demand, monthly, yearly) with the yearly and multi_year rates it lacks derived."""
    out = dict(got)
    if "yearly" not in out and "monthly" in out:  # a 1-year term below 12 monthly payments
        d = yearly_discount_vs_monthly
        out["yearly"] = scale(out["monthly"], "yearly", 1 - d, f"monthly x (1 - yearly_discount_vs_monthly {d:g})")
    if "yearly" in out:  # a 3-year term below the 1-year rate (or, without one, below on demand)
        y, d = out["yearly"], multi_year_discount_vs_yearly
        out["multi_year"] = scale(y, "multi_year", 1 - d, (y.derived + "; then " if y.derived else "")
                                  + f"1-year x (1 - multi_year_discount_vs_yearly {d:g})")
    elif "on_demand" in out:
        d = multi_year_discount_vs_on_demand
        out["multi_year"] = scale(out["on_demand"], "multi_year", 1 - d,
                                  f"on demand x (1 - multi_year_discount_vs_on_demand {d:g})")
    return out
