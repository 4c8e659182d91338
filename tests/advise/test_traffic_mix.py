"""The purchase mix of a traffic curve: committed baseline + on-demand burst, checked by hand and by search."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.advise.traffic_mix import Rate, baseline_cost, best_baseline, mix_options, unit_rates
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_traffic import ScheduleHour

W = 730 / 24  # hours a month one row of a day curve stands for


def _hours(units: list[int]) -> list[ScheduleHour]:
    return [ScheduleHour(day=None, hour=h, qps=float(u), need=u, replicas=u, devices=u, units=u)
            for h, u in enumerate(units)]


def _rate(kind: str, usd: float) -> Rate:
    return Rate(kind=kind, usd_per_instance_hour=usd, instance="x", source="test", as_of="2026-01-01",
                confidence="high")


TWO_LEVEL = [10] * 12 + [2] * 12  # 12 busy hours at 10 instances, 12 quiet hours at 2


def test_two_level_curve_by_hand() -> None:
    # commit 2.0 vs on demand 3.0 USD/h: a committed instance pays off above 2/3 of the hours; the busy level is
    # needed half of them, so the baseline is the quiet level: 2 x 2.0 x 730 + 12 x 8 x 3.0 x 730/24
    assert best_baseline(TWO_LEVEL, commit_usd=2.0, burst_usd=3.0, hours_per_row=W) == 2
    total, base, burst_h = baseline_cost(TWO_LEVEL, 2, commit_usd=2.0, burst_usd=3.0, hours_per_row=W)
    assert base == pytest.approx(2920.0) and burst_h == pytest.approx(12 * 8 * W)
    assert total == pytest.approx(2920.0 + 8760.0)
    # at 1.0 vs 3.0 (pays off above 1/3) the busy level is worth committing: 10 x 1.0 x 730
    assert best_baseline(TWO_LEVEL, commit_usd=1.0, burst_usd=3.0, hours_per_row=W) == 10
    # no on-demand rate: the baseline covers the peak
    assert best_baseline(TWO_LEVEL, commit_usd=2.0, burst_usd=None, hours_per_row=W) == 10


def test_options_figures() -> None:
    rates = {"on_demand": _rate("on_demand", 3.0), "monthly": _rate("monthly", 2.0), "spot": _rate("spot", 1.2)}
    tokens = 1e9
    opts = {(o.commit, o.burst): o for o in mix_options(_hours(TWO_LEVEL), rates, hours_per_row=W,
                                                        tokens_per_month=tokens, devices_per_unit=8)}
    od = opts[("on_demand", "on_demand")]
    assert od.monthly_usd == pytest.approx((12 * 10 + 12 * 2) * 3.0 * W)  # 13,140
    mix = opts[("monthly", "on_demand")]
    assert mix.baseline == 2 and mix.baseline_devices == 16 and mix.monthly_usd == pytest.approx(11680.0)
    assert mix.break_even_utilization == pytest.approx(2 / 3)
    assert mix.usd_per_million_tokens == pytest.approx(11680.0 / 1e3)
    spot = opts[("monthly", "spot")]  # spot at 1.2 < 2.0: nothing committed pays off
    assert spot.baseline == 0 and spot.monthly_usd == pytest.approx(144 * 1.2 * W)


@settings(max_examples=60, deadline=None)
@given(units=st.lists(st.integers(1, 12), min_size=24, max_size=24),
       commit=st.floats(0.1, 10.0), burst=st.floats(0.1, 10.0))
def test_chosen_baseline_is_the_cheapest_of_all(units: list[int], commit: float, burst: float) -> None:
    n = best_baseline(units, commit_usd=commit, burst_usd=burst, hours_per_row=W)
    best = baseline_cost(units, n, commit_usd=commit, burst_usd=burst, hours_per_row=W)[0]
    for other in range(max(units) + 1):
        assert best <= baseline_cost(units, other, commit_usd=commit, burst_usd=burst, hours_per_row=W)[0] + 1e-6
    # cheaper commitments never shrink the baseline
    assert best_baseline(units, commit_usd=commit * 0.5, burst_usd=burst, hours_per_row=W) >= n


def test_catalog_rates_derive_terms_and_keep_provenance() -> None:
    cat = load_catalog()
    r = unit_rates(cat, "hyperstack-b200", provider=None, yearly_discount_vs_monthly=0.15,
                   multi_year_discount_vs_yearly=0.28, multi_year_discount_vs_on_demand=0.57)
    od = r["on_demand"]
    assert od.usd_per_instance_hour == pytest.approx(6.0) and od.source and od.as_of and not od.derived
    assert r["multi_year"].usd_per_instance_hour == pytest.approx(6.0 * 0.43)
    assert "multi_year_discount_vs_on_demand" in r["multi_year"].derived and r["multi_year"].confidence == "low"


def test_owned_baseline_by_hand() -> None:
    # owning costs a fixed 1,000 USD a month per instance's worth plus 100 USD at full use; on demand 3.0 USD/h.
    # n = 2 (the quiet level): 2 x 1,000 + 2 x 100 x 1.0 (used every hour) + 12 x 8 x 3.0 x 730/24 = 2,200 + 8,760
    # n = 10: 10,000 + 10 x 100 x (12 x 10 + 12 x 2) / 240 = 10,600 -> the cheapest
    def own_month(n: int, used: float) -> float:
        return n * 1000.0 + n * 100.0 * used

    from gpuplan.advise.traffic_mix import owned_option

    o = owned_option(_hours(TWO_LEVEL), own_month, on_demand=_rate("on_demand", 3.0), hours_per_row=W,
                     tokens_per_month=1e9, devices_per_unit=8)
    assert o is not None and o.commit == "owned" and o.baseline == 10 and o.burst is None
    assert o.monthly_usd == pytest.approx(10_000 + 1000 * 144 / 240)
    assert owned_option(_hours(TWO_LEVEL), own_month, on_demand=None, hours_per_row=W, tokens_per_month=1e9,
                        devices_per_unit=8) is None
