"""TCO: break-even utilization against a hand-computed example, spot overhead, job cost by kind."""

from __future__ import annotations

import math

import pytest

from gpuplan.advise.tco import break_even_utilization, own_cost_per_year, tco, tco_inputs
from gpuplan.errors import InputError
from gpuplan.hardware import load_catalog

HAND = {"years": 3, "electricity_usd_per_kwh": 0.10, "hosting_usd_per_kw_month": 150,
        "operations_fraction_per_year": 0.05, "idle_power_fraction": 0.0}


def test_break_even_matches_the_hand_computed_example() -> None:
    # docs/advisor.md: a USD 300,000 8-GPU server drawing 10.2 kW, rented at USD 2.50 per GPU-hour.
    # fixed F = 300000/3 + 150*10.2*12 + 0.05*300000 = 100000 + 18360 + 15000 = 133360 USD/year
    # energy at full use E = 10.2 * 1.3 * 0.10 * 8760 = 11615.76 USD/year
    # renting R = 2.50 * 8 * 8760 = 175200 USD/year at 100%
    # u* = 133360 / (175200 - 11615.76) = 0.81524
    inp = tco_inputs(pue=1.3, overrides=HAND)
    u = break_even_utilization(300_000, 10.2, 8, 2.50, inp)
    assert u == pytest.approx(133360 / 163584.24, rel=1e-9)
    assert u == pytest.approx(0.81524, abs=1e-5)
    assert own_cost_per_year(300_000, 10.2, inp, u) == pytest.approx(2.50 * 8 * 8760 * u)
    assert break_even_utilization(300_000, 10.2, 8, 0.10, inp) is None  # renting below the energy cost


def test_idle_power_moves_break_even_up() -> None:
    lo = break_even_utilization(300_000, 10.2, 8, 2.5, tco_inputs(pue=1.3, overrides=HAND))
    hi = break_even_utilization(300_000, 10.2, 8, 2.5,
                                tco_inputs(pue=1.3, overrides={**HAND, "idle_power_fraction": 0.3}))
    assert lo is not None and hi is not None and hi > lo


def test_unknown_input_is_an_input_error() -> None:
    with pytest.raises(InputError):
        tco_inputs(overrides={"yeers": 3})


def test_job_cost_by_kind_and_spot_overhead() -> None:
    cat = load_catalog(())
    inp = tco_inputs(pue=1.3, overrides={**HAND, "server_price_usd": 300_000})
    hours = 1000.0
    res = tco(catalog=cat, accelerator="h100-sxm5-80gb", devices=16, gpus_per_node=8, device_hours=16 * hours,
              time_s=hours * 3600, prices={"on_demand": 4.0, "monthly": 2.0, "spot": 1.5}, checkpoint_write_s=60.0,
              mtbf_s=20 * 3600.0, restart_s=600.0, server=None, node_power_kw=10.2, inp=inp)
    job = res.job_cost_usd
    assert job["on_demand"] == pytest.approx(4.0 * 16 * hours)
    assert job["monthly"] == pytest.approx(2.0 * 16 * 2 * 730)  # 1000 h bills two whole months
    assert res.spot_lost_share is not None and res.spot_lost_share > 0
    assert job["spot"] == pytest.approx(1.5 * 16 * hours * (1 + res.spot_lost_share))
    # Young interval with the combined rate: 2 nodes x 0.01 preemptions/h plus 1/20 h failures
    m = 1 / (1 / (20 * 3600) + 2 * 0.01 / 3600)
    tau = math.sqrt(2 * 60 * m)
    base_tau = math.sqrt(2 * 60 * 20 * 3600)
    expected = (60 / tau + (tau / 2 + 600) / m) - (60 / base_tau + (base_tau / 2 + 600) / (20 * 3600))
    assert res.spot_lost_share == pytest.approx(expected)
    assert res.buy is not None and res.break_even["on_demand"] == pytest.approx(
        break_even_utilization(300_000, 10.2, 8, 4.0, inp))
