"""The money rules a buyer acts on, each against a figure computed by hand from the inputs shown (issue 37).

Each test was checked against a mutation of the rule it guards: `(1 - idle)` -> `(1 + idle)` and `margin <= 0` ->
`margin < 0` in advise/tco.py break_even_utilization; `<= lowest * (1 + tolerance)` -> `<` and -> `(1 - tolerance)`
in advise/report_train.py recommend_rule's near-cheapest step. Each mutation fails a test here.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.advise.report_train import recommend_rule
from gpuplan.advise.tco import break_even_utilization, own_cost_per_year, tco_inputs

DAY = 86400.0


def test_break_even_counts_only_the_busy_share_of_the_energy() -> None:
    """A 300,000 USD 8-GPU server drawing 10 kW, PUE 1.3, 0.10 USD/kWh, hosting 150 USD/kW-month, operations 5% a
    year, over 3 years, idle draw 30% of full power, rented at 3.00 USD per GPU-hour:
      energy at full use E = 10 x 1.3 x 0.10 x 8760                        = 11,388 USD/year
      fixed F = 300000/3 + 150 x 10 x 12 + 0.05 x 300000 + 0.3 x 11,388    = 136,416.4 USD/year
      renting R = 3.00 x 8 x 8760                                          = 210,240 USD/year at 100%
      u* = F / (R - E x (1 - 0.3)) = 136,416.4 / (210,240 - 7,971.6)       = 136,416.4 / 202,268.4 = 0.67443
    """
    inp = tco_inputs(pue=1.3, overrides={"years": 3, "electricity_usd_per_kwh": 0.10, "hosting_usd_per_kw_month": 150,
                                         "operations_fraction_per_year": 0.05, "idle_power_fraction": 0.3})
    u = break_even_utilization(300_000, 10.0, 8, 3.00, inp)
    assert u == pytest.approx(136_416.4 / 202_268.4, rel=1e-12)
    assert round(u, 5) == 0.67443  # type: ignore[arg-type]
    # at u* owning the server costs what renting its device-hours does
    assert own_cost_per_year(300_000, 10.0, inp, u) == pytest.approx(3.00 * 8 * 8760 * u)  # type: ignore[arg-type]


def test_break_even_is_never_when_the_rent_only_matches_the_busy_energy() -> None:
    """PUE 1, 0.50 USD/kWh, 2 kW, idle 50%: busy energy E x (1 - 0.5) = 2 x 0.5 x 8760 x 0.5 = 4,380 USD/year;
    one device rented at 0.50 USD/h is 0.5 x 8760 = 4,380 USD/year: renting never costs more than the energy owning
    burns, so owning never pays (None), not a division by zero."""
    inp = tco_inputs(pue=1.0, overrides={"electricity_usd_per_kwh": 0.5, "idle_power_fraction": 0.5})
    assert break_even_utilization(10_000, 2.0, 1, 0.50, inp) is None
    # a cent more an hour: margin 0.01 x 8760 = 87.6 USD/year; F = 10000/3 + 150 x 2 x 12 + 0.05 x 10000 + 0.5 x 8760
    fixed = 10_000 / 3 + 3_600 + 500 + 4_380
    assert break_even_utilization(10_000, 2.0, 1, 0.51, inp) == pytest.approx(fixed / 87.6)


def _plan(cost: float, days: float, devices: int) -> dict[str, Any]:
    return {"cost_usd": cost, "time_to_train_s": days * DAY, "devices": devices}


def test_near_cheapest_includes_its_edge_and_then_prefers_the_smallest_cluster() -> None:
    """Tolerance 25%, target 5 days. Costs 100 (10 days, 64 devices), 110 (4.5 days, 32), 125 (4 days, 16):
    near-cheapest is cost <= 100 x (1 + 0.25) = 125, so all three; within 5 days: 110 and 125; the smallest cluster
    of those is 16 devices at 125 USD. (Strict '<' would drop the 125 plan at the edge and pick 32 devices;
    100 x (1 - 0.25) = 75 would leave no near-cheapest plan within the target and pick the cheapest within it.)"""
    plans = [_plan(100.0, 10, 64), _plan(110.0, 4.5, 32), _plan(125.0, 4, 16)]
    picked = recommend_rule(plans, 0.25, 5, margin=0.1)
    assert picked is not None
    best, rule = picked
    assert (best["cost_usd"], best["devices"]) == (125.0, 16)
    assert rule["outcome"] == "smallest_within_target" and rule["dominated"] == 0
    # one cent past the edge (125.01 > 125): out of near-cheapest, the 32-device plan at 110 USD is the answer
    best, rule = recommend_rule([*plans[:2], _plan(125.01, 4, 16)], 0.25, 5, margin=0.1)  # type: ignore[misc]
    assert (best["cost_usd"], best["devices"], rule["outcome"]) == (110.0, 32, "smallest_within_target")


def test_near_cheapest_is_measured_from_the_lowest_cost() -> None:
    """Tolerance 10%, no plan within the 1-day target, max 30 days: step 3 takes the fastest near-cheapest plan.
    Costs 200 (20 days), 215 (12 days), 260 (6 days): near-cheapest <= 200 x 1.1 = 220, so 200 and 215, and the
    faster is 215 USD in 12 days (not 260: 260 > 220)."""
    plans = [_plan(200.0, 20, 8), _plan(215.0, 12, 16), _plan(260.0, 6, 32)]
    best, rule = recommend_rule(plans, 0.10, 1, 30, margin=0.1)  # type: ignore[misc]
    assert (best["cost_usd"], best["time_to_train_s"] / DAY, rule["outcome"]) == (215.0, 12, "fastest_near_cheapest")
