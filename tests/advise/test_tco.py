"""TCO: break-even utilization against a hand-computed example, spot overhead, job cost by kind; `gpuplan tco`:
break-even and the year buying wins on simple numbers, the cluster's cost lines, override precedence."""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpuplan.advise.tco import (
    CostLine,
    TcoInputs,
    break_even_utilization,
    buy_wins_year,
    cumulative_costs,
    fleet_break_even,
    own_cost_per_year,
    payback_years,
    rent_per_year,
    tco,
    tco_inputs,
    year_marks,
)
from gpuplan.advise.tco_fleet import TcoSetup, fleet_tco, tco_for
from gpuplan.advise.tco_inputs import (
    CATALOG,
    DEFAULT,
    QUOTED,
    USER,
    FleetInputs,
    Quantity,
    fleet_inputs,
    split_overrides,
)
from gpuplan.advise.tco_own import ServerChoice
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


# ---------------- gpuplan tco: a cluster owned for Y years against renting (advise/tco_fleet.py) ----------------

# capex 100,000 at t=0, 10,000 a year fixed running cost; 1 device rented for 40,000 a year at full use
SIMPLE = (CostLine(name="servers", capex_usd=100_000.0, provenance="default", formula=""),
          CostLine(name="running", fixed_usd_per_year=10_000.0, provenance="default", formula=""))
RATE = 40_000.0 / 8760  # USD per device-hour


def test_buy_wins_year_and_payback_by_hand() -> None:
    # cumulative own C + 10k t vs rent 40k t: t=1 110k vs 40k, t=2 120k vs 80k, t=3 130k vs 120k, t=4 140k vs 160k
    cum = cumulative_costs(SIMPLE, 4, 1.0, RATE, 1)
    assert [round(own) for _, own, _ in cum] == [110_000, 120_000, 130_000, 140_000]
    assert [round(rent) for _, _, rent in cum] == [40_000, 80_000, 120_000, 160_000]
    assert buy_wins_year(cum) == 4.0
    assert buy_wins_year(cumulative_costs(SIMPLE, 3, 1.0, RATE, 1)) is None  # never within 3 years
    assert payback_years(SIMPLE, 1.0, RATE, 1) == pytest.approx(100_000 / 30_000)  # 3.33 years
    # at half use the rent (20k) barely beats the running cost (10k): payback 10 years
    assert payback_years(SIMPLE, 0.5, RATE, 1) == pytest.approx(10.0)
    assert payback_years(SIMPLE, 0.25, RATE, 1) is None  # 10k rent == 10k running: never


def test_fleet_break_even_by_hand() -> None:
    # over 4 years: F = 100k/4 + 10k = 35k; R = 40k; V = 0 -> u* = 0.875
    assert fleet_break_even(SIMPLE, 4, RATE, 1) == pytest.approx(0.875)
    # a utilization-driven line V = 8k: u* = 35k / (40k - 8k) = 1.09375 (above 100%: never pays)
    power = CostLine(name="power", variable_usd_per_year=8_000.0, provenance="default", formula="")
    assert fleet_break_even((*SIMPLE, power), 4, RATE, 1) == pytest.approx(35 / 32)
    assert fleet_break_even((*SIMPLE, power), 4, 7_000.0 / 8760, 1) is None  # rent below V
    u = fleet_break_even(SIMPLE, 4, RATE, 1)
    assert u is not None
    own = sum(ln.per_year(4, u) for ln in SIMPLE)
    assert own == pytest.approx(rent_per_year(RATE, 1, u))  # the two cost the same at u*


def test_year_marks() -> None:
    assert year_marks(3) == (1.0, 2.0, 3.0)
    assert year_marks(2.5) == (1.0, 2.0, 2.5)
    assert year_marks(0.5) == (0.5,)


Inputs = tuple[ServerChoice, tuple[tuple[str, Quantity], ...], TcoInputs, FleetInputs]


def _run(acc: str, **kw: Any) -> TcoSetup:
    cat = load_catalog(())
    return tco_for(cat, cat.accelerator(acc), pue=1.3, node_power_per_tdp=1.8, **kw)


def _vp(q: Quantity | None) -> tuple[float, str]:
    assert q is not None
    return q.value, q.provenance


def test_price_and_power_override_precedence() -> None:
    base = {"devices": 16, "years": 3.0, "utilization": 0.5, "market": None}
    choice = _run("b200", **base).choice
    assert _vp(choice.price_usd) == (485_000, CATALOG) and _vp(choice.power_kw) == (14.3, CATALOG)
    # --tco server_price_usd / node_power_kw (user input) beat the catalog
    user = _run("b200", **base, overrides={"server_price_usd": 400_000, "node_power_kw": 12}).choice
    assert _vp(user.price_usd) == (400_000, USER) and _vp(user.power_kw) == (12, USER)
    # --server-price (a quote) beats --tco server_price_usd
    quoted = _run("b200", **base, server_price_usd=350_000.0, overrides={"server_price_usd": 400_000}).choice
    assert _vp(quoted.price_usd) == (350_000, QUOTED)
    # a CNY list price is converted at the catalog's rate
    cat = load_catalog(())
    h20 = _run("h20-96gb", **base).choice
    assert _vp(h20.price_usd)[0] == pytest.approx(1_090_000 / cat.rates.cny_per_usd)
    # no server in the catalog: an 8-device server is assumed and no price is known
    none = _run("l4-24gb", **base).choice
    assert none.server is None and none.price_usd is None
    assert none.devices_per_server.provenance == DEFAULT


def test_rent_kinds_and_rent_override() -> None:
    base = {"devices": 8, "years": 3.0, "utilization": 0.5}
    setup = _run("h20-96gb", **base, market="cn")  # the market's median of each kind
    fin = setup.fin
    got = {k: q for k, q, _ in setup.rates}
    monthly = got["monthly"].value
    assert got["yearly"].value == pytest.approx(monthly * 0.85)  # monthly x (1 - yearly_discount_vs_monthly)
    assert got["multi_year"].value == pytest.approx(monthly * 0.85 * (1 - fin.multi_year_discount_vs_yearly))
    assert got["monthly"].provenance == CATALOG and got["yearly"].provenance == "catalog + default"
    got = {k: q for k, q, _ in _run("h100-sxm5-80gb", **base, market="global").rates}
    assert got["multi_year"].value == pytest.approx(got["on_demand"].value * (1 - 0.57))
    rates = _run("h100-sxm5-80gb", **base, market=None, rent_usd_per_device_hour=2.0).rates
    assert [(k, q.value, q.provenance, c) for k, q, c in rates] == [("quoted", 2.0, QUOTED, None)]


def test_cluster_lines_by_hand() -> None:
    # 16 devices = 2 servers of USD 300,000 at 10 kW, rented at USD 3 per device-hour, 3 years, u = 0.5
    over = {"server_price_usd": 300_000, "node_power_kw": 10, "idle_power_fraction": 0, "electricity_usd_per_kwh": 0.1,
            "hosting_usd_per_kw_month": 150, "operations_fraction_per_year": 0.05, "fabric_usd_per_gbit_per_s": 10,
            "storage_tib_per_device": 2, "storage_usd_per_tib_year": 100, "staff_devices_per_fte": 16,
            "staff_usd_per_fte_year": 100_000, "wacc": 0, "resale_fraction_after_3_years": 0}
    setup = _run("b200", devices=16, years=3.0, utilization=0.5, market=None, rent_usd_per_device_hour=3.0,
                 overrides=over)
    res = fleet_tco(accelerator="b200-sxm-180gb", devices=16, utilization=0.5, setup=setup)
    lines = {ln.name: ln for ln in res.own}
    assert res.nodes == 2
    assert lines["servers"].capex_usd == 600_000
    assert lines["fabric"].capex_usd == 2 * 3200 * 10  # DGX B200: 8 x 400G compute ports
    assert lines["power"].variable_usd_per_year == pytest.approx(2 * 10 * 1.3 * 0.1 * 8760)  # 22,776
    assert lines["hosting"].fixed_usd_per_year == 2 * 10 * 150 * 12  # 36,000
    assert lines["operations"].fixed_usd_per_year == pytest.approx(0.05 * 600_000)  # 30,000
    assert lines["storage"].fixed_usd_per_year == 16 * 2 * 100  # 3,200
    assert lines["staff"].fixed_usd_per_year == 100_000  # one engineer
    capex = 600_000 + 64_000
    running = 22_776 * 0.5 + 36_000 + 30_000 + 3_200 + 100_000
    assert res.own_usd_per_year == pytest.approx(capex / 3 + running)
    case = res.rent[0]
    assert case.usd_per_year == pytest.approx(3.0 * 16 * 8760 * 0.5)  # 210,240
    fixed = capex / 3 + 36_000 + 30_000 + 3_200 + 100_000
    assert case.break_even_utilization == pytest.approx(fixed / (3.0 * 16 * 8760 - 22_776))
    # 210,240 a year of rent against 180,588 running: payback = 664,000 / 29,652 = 22.4 years, never within 3
    assert case.payback_years == pytest.approx(capex / (210_240 - running))
    assert case.buy_wins_year is None
    assert res.to_json()["rent"][0]["usd_per_device_hour"]["provenance"] == QUOTED
    # one server: no scale-out fabric
    one = fleet_tco(accelerator="b200-sxm-180gb", devices=8, utilization=0.5, setup=_run(
        "b200", devices=8, years=3.0, utilization=0.5, market=None, rent_usd_per_device_hour=3.0, overrides=over))
    assert "fabric" not in {ln.name for ln in one.own}


def test_fleet_inputs_by_market_and_unknown_names() -> None:
    assert fleet_inputs("cn").staff_usd_per_fte_year < fleet_inputs("global").staff_usd_per_fte_year
    assert fleet_inputs(None).staff_usd_per_fte_year == fleet_inputs("global").staff_usd_per_fte_year
    base, fleet = split_overrides({"pue": 1.2, "storage_tib_per_device": 1})
    assert base == {"pue": 1.2} and fleet == {"storage_tib_per_device": 1}
    with pytest.raises(InputError) as err:
        split_overrides({"storage_tib": 1})
    assert err.value.field == "tco" and "storage_tib_per_device" in err.value.hint


def test_a_cluster_is_compared_with_rents_that_can_stand_in_for_it() -> None:
    """Buyer check: 64 x H100 owned for 3 years (8 DGX with a 3,200 Gbit/s fabric) was compared with the cheapest
    rent of any H100 offer, a single community-cloud card (2.69 USD/h), and a 3-year rate derived from it (1.16):
    'renting is cheaper'. A rent that stands in for the cluster is one with an RDMA fabric beyond one server (here
    CoreWeave's InfiniBand nodes), and for one server an instance of at least its devices; where none has a rate,
    all the market's quotes, and the reference says none is like for like."""
    from gpuplan.search.pricing import device_price

    cat = load_catalog(())
    setup = _run("h100-sxm5-80gb", devices=64, years=3.0, utilization=0.7, market="global")
    _, od, cheapest = next(r for r in setup.rates if r[0] == "on_demand")
    cheapest_rdma = device_price(cat, "h100-sxm5-80gb", market="global", keep=lambda i: i.rdma_network is not None)
    assert cheapest is not None and cheapest.value == pytest.approx(cheapest_rdma.on_demand)
    inst = cat.instances[cheapest_rdma.on_demand_instance or ""]
    assert inst.rdma_network and inst.id in cheapest.source and inst.id in od.source
    assert od.value > (device_price(cat, "h100-sxm5-80gb", market="global").on_demand or 0)
    one = _run("h100-sxm5-80gb", devices=8, years=3.0, utilization=0.7, market="global")
    spread = next(sp for sp in one.spreads if sp.kind == "on_demand")
    assert spread.basis == "comparable" and all(q.comparable for q in spread.reference)
    assert all(cat.instances[q.instance].accelerator_count >= 8 for q in spread.reference)
    # no A800 offer in China has an RDMA fabric: all the market's quotes, said to be none comparable
    a800 = {k: q for k, q, _ in _run("a800-sxm4-80gb", devices=64, years=3.0, utilization=0.7, market="cn").rates}
    assert "none comparable" in a800["on_demand"].source
