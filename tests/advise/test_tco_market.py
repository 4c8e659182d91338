"""Issue 37: `gpuplan tco` as a CFO reads it: the market's rents (cheapest credible, median, sources), the cost of
capital and resale value, and the market's currency; each figure computed by hand from the catalog and inputs."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from gpuplan.advise.tco import CostLine, cumulative_costs, fleet_break_even
from gpuplan.advise.tco_capital import annuity_factor, depreciation_schedule, equivalent_annual_capex, resale_fraction
from gpuplan.advise.tco_rents import market_rents
from gpuplan.cli.main import app
from gpuplan.hardware import Price, load_catalog

runner = CliRunner()
CAT = load_catalog(())


def _rents(acc: str, market: str, devices: int) -> dict[str, object]:
    return {sp.kind: sp for sp in market_rents(CAT, acc, market=market, devices=devices, devices_per_server=8,
                                               yearly_discount_vs_monthly=0.15, multi_year_discount_vs_yearly=0.28,
                                               multi_year_discount_vs_on_demand=0.57)}


def test_h100_rents_are_the_markets_distribution_not_one_list_price() -> None:
    """64 x H100, global, on demand. Comparable (an RDMA fabric across servers): CoreWeave 49.24, AWS p5 55.04 and
    Azure ND H100 v5 98.32 USD per 8-GPU hour = 6.155, 6.88, 12.29 per device-hour: median 6.88, cheapest credible
    6.155 (CoreWeave, medium). Every H100 offer (per-card clouds too) is listed: the community card at 2.69."""
    od = _rents("h100-sxm5-80gb", "global", 64)["on_demand"]
    assert od.basis == "comparable"  # type: ignore[attr-defined]
    ref = sorted(q.usd_per_device_hour for q in od.reference)  # type: ignore[attr-defined]
    assert ref == pytest.approx([49.24 / 8, 55.04 / 8, 98.32 / 8])
    assert od.median_usd_per_device_hour == pytest.approx(6.88)  # type: ignore[attr-defined]
    assert od.cheapest.instance == "coreweave-8x-h100"  # type: ignore[attr-defined]
    assert od.cheapest.usd_per_device_hour == pytest.approx(6.155)  # type: ignore[attr-defined]
    every = {q.instance: q for q in od.quotes}  # type: ignore[attr-defined]
    assert every["runpod-h100-sxm-community"].usd_per_device_hour == pytest.approx(2.69)
    assert not every["runpod-h100-sxm-community"].comparable
    js = od.to_json()  # type: ignore[attr-defined]
    assert js["median"] == pytest.approx(6.88) and js["min"]["instance"] == "coreweave-8x-h100" and js["count"] == 3
    assert any("coreweave-8x-h100" in s for s in js["sources"])
    # one server: an instance of at least 8 devices stands in (per-card rentals do not)
    one = _rents("h100-sxm5-80gb", "global", 8)["on_demand"]
    assert all(q.comparable == (CAT.instances[q.instance].accelerator_count >= 8)
               for q in one.quotes)  # type: ignore[attr-defined]


def test_910b_rents_in_china_are_distressed_only_and_said_so() -> None:
    """The 910B's only rent in China is a distressed one (15,000 CNY per 8-card server-month, omniyq 2026-08-22):
    it becomes the reference only because it is all the market quotes, and the basis says so. 15,000 / 7.15 / 8 /
    730 = 0.3592 USD per device-hour; 1-year = x 0.85; 3-year = x 0.85 x 0.72."""
    r = _rents("ascend-910b", "cn", 64)
    m = r["monthly"]
    assert m.basis == "distressed only" and m.cheapest.distressed  # type: ignore[attr-defined]
    assert m.median_usd_per_device_hour == pytest.approx(15_000 / 7.15 / 8 / 730)  # type: ignore[attr-defined]
    assert r["yearly"].median_usd_per_device_hour == pytest.approx(  # type: ignore[attr-defined]
        15_000 / 7.15 / 8 / 730 * 0.85)
    assert r["multi_year"].median_usd_per_device_hour == pytest.approx(  # type: ignore[attr-defined]
        15_000 / 7.15 / 8 / 730 * 0.85 * 0.72)
    assert "yearly_discount_vs_monthly 0.15" in r["yearly"].cheapest.derived  # type: ignore[attr-defined]


def test_cost_of_capital_and_resale_by_hand() -> None:
    """C = 100,000 bought, sold for S = 30,000 after Y = 3 years, WACC 8%:
    a(3) = (1 - 1.08^-3) / 0.08 = 2.577097; EAC = (100,000 - 30,000 x 1.08^-3) / 2.577097 = 29,562.3 a year,
    of which straight-line depreciation (100,000 - 30,000) / 3 = 23,333.3 and cost of capital 6,229.0.
    At WACC 0 the EAC is the depreciation; resale after 3 years at f3 0.30 is 0.30, after 6 years 0.09."""
    assert annuity_factor(0.08, 3) == pytest.approx(2.577097, abs=1e-6)
    eac = equivalent_annual_capex(100_000, 30_000, 3, 0.08)
    assert eac == pytest.approx((100_000 - 30_000 / 1.08**3) / 2.5770969)
    assert round(eac, 1) == 29_562.3
    assert equivalent_annual_capex(100_000, 30_000, 3, 0.0) == pytest.approx(70_000 / 3)
    assert resale_fraction(0.30, 3) == pytest.approx(0.30) and resale_fraction(0.30, 6) == pytest.approx(0.09)
    sched = depreciation_schedule(100_000, 30_000, (1.0, 2.0, 3.0))
    assert [round(b) for _, _, b in sched] == [76_667, 53_333, 30_000]
    # a cluster line of that capex with 10,000 a year running, rented at 40,000 a year (1 device, 8760 h):
    # break-even u* = (29,562.3 + 10,000) / 40,000 = 0.98907; at WACC 0 without resale: (33,333.3 + 10,000) / 40,000
    line = CostLine(name="servers", capex_usd=100_000, resale_usd=30_000, fixed_usd_per_year=10_000,
                    provenance="default", formula="")
    rate = 40_000 / 8760
    assert fleet_break_even((line,), 3, rate, 1, 0.08) == pytest.approx((eac + 10_000) / 40_000)
    bare = CostLine(name="servers", capex_usd=100_000, fixed_usd_per_year=10_000, provenance="default", formula="")
    assert fleet_break_even((bare,), 3, rate, 1) == pytest.approx((100_000 / 3 + 10_000) / 40_000)
    # present values at year-ends, u = 1: own(3) = 100,000 + 10,000 a(3) - 30,000 x 1.08^-3; rent(3) = 40,000 a(3)
    t, own, rent = cumulative_costs((line,), 3, 1.0, rate, 1, 0.08)[-1]
    assert t == 3 and own == pytest.approx(100_000 + 10_000 * 2.5770969 - 30_000 / 1.08**3)
    assert rent == pytest.approx(40_000 * 2.5770969)


def test_64_ascend_910b_in_china_answers_in_cny_with_market_rents_and_cost_of_capital() -> None:
    res = runner.invoke(app, ["tco", "--accelerator", "ascend-910b", "--devices", "64", "--years", "3",
                              "--utilization", "0.7", "--market", "cn", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["market"] == "cn" and out["currency"]["code"] == "CNY" and out["currency"]["cny_per_usd"] == 7.15
    assert out["currency"]["own_per_year"] == pytest.approx(out["own"]["usd_per_year"] * 7.15)
    # 8 Atlas 800T A2 at 2,122,000 CNY each: the capex in CNY is 8 x 2,122,000 plus the fabric
    servers = next(ln for ln in out["own"]["lines"] if ln["name"] == "servers")
    assert servers["capex_usd"] * 7.15 == pytest.approx(8 * 2_122_000)
    assert "2,122,000 CNY" in servers["formula"]
    rents = out["market_rents"]
    assert rents["monthly"]["basis"] == "distressed only" and rents["monthly"]["min"]["credible"] is False
    assert rents["monthly"]["median"] * 7.15 * 8 * 730 == pytest.approx(15_000)
    cap = out["cost_of_capital"]
    assert cap["wacc"] == 0.05 and cap["resale_fraction"] == pytest.approx(0.30)
    assert cap["resale_usd"] == pytest.approx(0.30 * 8 * 2_122_000 / 7.15)
    assert [round(d["year"]) for d in cap["depreciation"]] == [1, 2, 3]
    text = runner.invoke(app, ["tco", "--accelerator", "ascend-910b", "--devices", "64", "--years", "3",
                               "--utilization", "0.7", "--market", "cn", "--lang", "zh"])
    assert text.exit_code == 0 and "CNY/年" in text.output and "仅甩卖价" in text.output


def test_the_market_defaults_to_the_parts_own_and_wacc_is_checked() -> None:
    """Without --market a part sold only in China is costed in China (the 910B: CNY), a global part globally."""
    out = json.loads(runner.invoke(app, ["tco", "--accelerator", "ascend-910b", "--devices", "8", "--years", "3",
                                         "--utilization", "0.5", "--json"]).output)
    assert out["market"] == "cn" and out["currency"]["code"] == "CNY"
    res = runner.invoke(app, ["tco", "--accelerator", "h100-sxm5-80gb", "--devices", "64", "--years", "3",
                              "--utilization", "0.7", "--wacc", "0.12", "--json"])
    out = json.loads(res.output)
    assert out["market"] == "global" and out["cost_of_capital"]["wacc"] == 0.12
    assert out["cost_of_capital"]["wacc_source"] == "--wacc"
    bad = runner.invoke(app, ["tco", "--accelerator", "h100-sxm5-80gb", "--devices", "64", "--years", "3",
                              "--utilization", "0.7", "--wacc", "8"])
    assert bad.exit_code == 2 and "wacc=8" in bad.output and "--wacc 0.08" in bad.output


def test_a_price_range_must_hold_its_amount() -> None:
    ok = Price(kind="purchase", amount=310_000, amount_low=270_000, amount_high=350_000, currency="USD", source="s",
               as_of="2024-08")
    assert (ok.amount_low, ok.amount_high) == (270_000, 350_000)
    with pytest.raises(ValidationError, match="range must hold"):
        Price(kind="purchase", amount=200_000, amount_low=270_000, currency="USD", source="s", as_of="2024")


def test_tco_in_china_says_what_the_export_rules_say_of_buying_and_renting_the_part() -> None:
    """A B200 in China: buying new and renting the grey-market stock are both critical (us-bis-2023-10-blackwell);
    an H800: buying critical, renting the installed base a warning; the same parts globally: no note."""
    def notes(acc: str, market: str) -> dict[str, str]:
        out = json.loads(runner.invoke(app, ["tco", "--accelerator", acc, "--devices", "64", "--years", "3",
                                             "--utilization", "0.7", "--market", market, "--json"]).output)
        return {n["how"]: n["severity"] for n in out["export_notes"]}

    assert notes("b200-sxm-180gb", "cn") == {"buy": "critical", "rent": "critical"}
    assert notes("h800-sxm5-80gb", "cn") == {"buy": "critical", "rent": "warn"}
    assert notes("b200-sxm-180gb", "global") == {}
