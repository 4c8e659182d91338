"""The planner plans on what an offer really supplies (issue 11: defects an expert buyer's first hour shows).

Each test reproduces one defect: a plan on a fabric its offer lacks, a cluster larger than an offer
can supply, a device cap ignored, fine-tuning layouts nobody runs, no-price degeneration, a
recommendation that contradicts its own findings, a rule printed but not applied.
"""

from __future__ import annotations

import math

import pytest

from gpuplan.advise.findings import default_thresholds
from gpuplan.advise.report_train import compare_training, recommend_rule, training_report
from gpuplan.advise.trust import plan_markets
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import PricingPolicy, load_catalog
from gpuplan.search.offers import hardware_options
from gpuplan.search.train_search import PlanConstraints, choose_layout_family, cluster_sizes, plan_training
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
CAL = default_calibration()


def _job(gb: int = 1024, method: str = "full") -> TrainingJob:
    return TrainingJob(seq_len=4096, global_batch=gb, method=method)


def test_an_offer_without_rdma_is_planned_on_its_tcp_network_and_node_shape() -> None:
    """aws-g6e.12xlarge has 4 L40S and no RDMA: its plans are 4-device nodes on TCP, never InfiniBand."""
    opts = {o.offer: o for o in hardware_options(CAT, CAT.accelerator("l40s-48gb"), CAL)}
    g6e = opts["aws-g6e.12xlarge"]
    inst = CAT.instance("aws-g6e.12xlarge")
    assert inst.rdma_network is None and inst.accelerator_count == 4
    assert g6e.gpus_per_node == 4
    assert g6e.network is not None and CAT.network(g6e.network).kind == "tcp"
    spec = get_preset("llama3-70b").spec
    res = plan_training(spec, _job(), CAT, PlanConstraints(accelerators=("l40s-48gb",)), tokens=1e9)
    assert res.plans
    for p in res.plans:
        opt = p["hardware_option"]
        if opt["offer"] == "aws-g6e.12xlarge":
            assert p["layout"]["gpus_per_node"] == 4
            assert CAT.network(opt["network"]).kind == "tcp"
            if p["devices"] > 4:
                assert p["assumptions"]["network"] == opt["network"]


def test_an_offer_with_rdma_uses_that_fabric() -> None:
    opts = {o.offer: o for o in hardware_options(CAT, CAT.accelerator("h100-sxm5-80gb"), CAL)}
    p5 = [o for k, o in opts.items() if k and k.startswith("aws-p5")]
    assert p5 and all(o.network and CAT.network(o.network).rdma for o in p5)


def test_offer_capacity_caps_the_cluster_and_unknown_capacity_is_named_not_capped() -> None:
    """A stated capacity caps the offer's plans; an offer that states none is not capped at an invented size (issue
    37: every such offer was silently capped at 64 devices) and its plans say the capacity is unknown."""
    spec = get_preset("llama3-8b").spec
    res = plan_training(spec, _job(), CAT, PlanConstraints(accelerators=("h200-sxm-141gb",)), tokens=1e12)
    offered = [p for p in res.plans if p["hardware_option"]["kind"] == "offer"]
    assert offered
    for p in offered:
        opt = p["hardware_option"]
        if CAT.instance(opt["offer"]).max_devices is None:
            assert opt["max_devices"] is None and opt["capacity_provenance"] == "unknown"
            assert "capacity not stated: not capped" in opt["capacity_basis"]
        else:
            assert p["devices"] <= opt["max_devices"] and opt["capacity_provenance"] == "stated"
    assert max(p["devices"] for p in offered if p["hardware_option"]["capacity_provenance"] == "unknown") > 64
    # a Hugging Face Jobs flavor is one machine (its max_devices, with a source)
    hf = [p for p in offered if p["hardware_option"]["offer"] == "hf-jobs-h200x8"]
    assert hf and max(p["devices"] for p in hf) == 8
    assert res.rejected.get("offer_capacity", 0) > 0


def test_max_devices_is_honoured_down_to_one() -> None:
    spec = get_preset("qwen2.5-7b").spec
    res = plan_training(spec, _job(64, "lora"), CAT, PlanConstraints(max_devices=1), tokens=2e9)
    assert res.plans and {p["devices"] for p in res.plans} == {1}


def test_cluster_sizes_include_single_devices_and_whole_nodes() -> None:
    assert cluster_sizes(1, 16, 8) == [1, 2, 4, 8, 16]
    assert cluster_sizes(1, 1, 8) == [1]
    assert cluster_sizes(1, 64, 4) == [1, 2, 4, 8, 16, 32, 64]
    assert 48 not in cluster_sizes(1, 64, 16) and 16 in cluster_sizes(1, 64, 16)


def test_lora_layouts_are_data_parallel_unless_a_megatron_framework_is_named() -> None:
    spec = get_preset("qwen2.5-7b").spec
    params = float(count_params(spec).total)
    fam, why = choose_layout_family("lora", None, params, CAL)
    assert fam == "data_parallel" and "PEFT" in why
    res = plan_training(spec, _job(64, "lora"), CAT, PlanConstraints(max_devices=8, layout_family=fam),
                        tokens=2e9)
    assert res.plans
    assert all(p["layout"]["pp"] == 1 and p["layout"]["tp"] == 1 and p["layout"]["cp"] == 1 for p in res.plans)
    assert choose_layout_family("lora", "megatron", params, CAL)[0] == "megatron"
    assert choose_layout_family("full_ft", None, params, CAL)[0] == "data_parallel"
    assert choose_layout_family("full", None, params, CAL)[0] == "megatron"
    big = float(count_params(get_preset("llama3-70b").spec).total)
    assert choose_layout_family("full_ft", None, big, CAL)[0] == "megatron"


def test_without_prices_plans_rank_by_device_hours_and_never_round_to_zero_days() -> None:
    spec = get_preset("llama3-70b").spec
    doc = compare_training(spec, _job(), CAT, ["h200-sxm-141gb", "ascend-910b", "h20-96gb"], PlanConstraints(),
                           tokens=1e9)
    for opt in doc["options"]:
        plan = opt["plan"]
        assert plan is not None
        assert plan["devices"] <= 64, opt  # the same cluster rule as plan train, not 4096 devices
        assert plan["time_s"] > 3600  # hours, not "0.0 days"
    unpriced = [o for o in doc["options"] if o["plan"]["cost_usd"] is None]
    # without a rental price: by what buying the cluster costs where the catalog has a list price for the part's
    # server (Ascend 910B: Atlas 800T A2), else by device-hours
    assert unpriced and all(o["rule"]["measure"] == ("purchase" if o["plan"].get("purchase_usd") else "device_hours")
                            for o in unpriced)
    assert any(o["rule"]["measure"] == "purchase" for o in unpriced)


def test_recommendation_rule_is_the_rule_printed() -> None:
    """llama3-8b, 2e12 tokens, <= 32 devices, deadline 730 d: nothing finishes within 30 days, so the
    recommendation is the fastest near-cheapest plan, not the smallest (regression: 16 devices for 662
    days while 64 devices cost within 10% and took 167)."""
    spec = get_preset("llama3-8b").spec
    cons = PlanConstraints(deadline_days=730, max_devices=32)  # 64 since round-2 prices: CoreWeave B200 in 21 d
    res = plan_training(spec, _job(), CAT, cons, tokens=2e12)
    doc = training_report(spec, _job(), CAT, cons, tokens=2e12, result=res)
    rec = doc["recommendation"]
    rule = rec["rule"]
    assert rule["outcome"] == "fastest_near_cheapest" and rec["cost_usd"] is not None
    assert rule["target_days"] == 30  # the deadline, capped at recommend_target_days
    assert rule["max_days"] == 730
    # distressed-rent scenarios are listed but never recommended: the rule's pool leaves them out; no --market: the
    # pool is the default buyer's market (global; advise.trust.in_buyer_market)
    pool = [p for p in res.plans if p["cost_usd"] is not None and not p["hardware_option"].get("scenario")
            and "global" in plan_markets(p, CAT)]
    assert rule["buyer_market"] == "global"
    lowest = min(p["cost_usd"] for p in pool)
    near = [p for p in pool if p["cost_usd"] <= lowest * 1.1]
    assert rec["time_s"] == min(p["time_to_train_s"] for p in near)
    assert len({p["devices"] for p in near}) >= 1
    plans = [{"cost_usd": 100.0, "time_to_train_s": 10 * 86400.0, "devices": 8},
             {"cost_usd": 105.0, "time_to_train_s": 3 * 86400.0, "devices": 32},
             {"cost_usd": 300.0, "time_to_train_s": 1 * 86400.0, "devices": 128}]
    best, r = recommend_rule(plans, 0.1, 5)  # type: ignore[misc]
    assert best["devices"] == 32 and r["outcome"] == "smallest_within_target"
    best, r = recommend_rule(plans, 0.1, 2)  # type: ignore[misc]
    assert best["devices"] == 128 and r["outcome"] == "cheapest_within_target"
    best, r = recommend_rule(plans, 0.1, 0.5, 20)  # type: ignore[misc]
    assert best["devices"] == 32 and r["outcome"] == "fastest_near_cheapest"
    best, r = recommend_rule(plans, 0.1, 0.5, 0.6)  # type: ignore[misc]
    assert best["devices"] == 128 and r["outcome"] == "fastest"
    unpriced = [{"cost_usd": None, "device_hours": 1000.0, "time_to_train_s": 4 * 86400.0, "devices": 16},
                {"cost_usd": None, "device_hours": 900.0, "time_to_train_s": 8 * 86400.0, "devices": 4}]
    best, r = recommend_rule(unpriced, 0.1, 30)  # type: ignore[misc]
    assert best["devices"] == 4 and r["measure"] == "device_hours"


def test_clusters_to_buy_aim_at_the_deadline_not_at_a_month() -> None:
    """Regression: `plan train -m llama3-70b --tokens 2e12 --deadline 60 --market cn` (only own clusters, no
    price) recommended 2048 x 910C for 18 days over 1024 x 910C for 36: the 30-day target reasons from rentals,
    whose bill is device-hours; a cluster to buy costs by its size."""
    own = [{"cost_usd": None, "device_hours": 898e3, "time_to_train_s": 18.3 * 86400.0, "devices": 2048},
           {"cost_usd": None, "device_hours": 895e3, "time_to_train_s": 36.4 * 86400.0, "devices": 1024}]
    best, r = recommend_rule(own, 0.1, 30, 60, deadline_days=60)  # type: ignore[misc]
    assert best["devices"] == 1024 and r["target_days"] == 60 and r["own_to_deadline"]
    best, r = recommend_rule(own, 0.1, 30, 90)  # type: ignore[misc]  # no deadline: a month
    assert best["devices"] == 2048 and not r["own_to_deadline"]
    rented = [{**p, "cost_usd": p["device_hours"] * 2.0} for p in own]  # a priced rental keeps the 30-day target
    best, r = recommend_rule(rented, 0.1, 30, 60, deadline_days=60)  # type: ignore[misc]
    assert best["devices"] == 2048 and r["target_days"] == 30


def test_the_smallest_cluster_is_counted_in_the_devices_it_pays_for() -> None:
    """Regression: `compare -a a100-sxm4-80gb --market cn` picked 4 cards of a rented 8-card server (billed a whole
    server-month, 3,497 USD) for 22.7 days over all 8 of them for 11.4 days at the same price: "smallest cluster"
    counted used devices, not the devices the bill pays for."""
    server = [{"cost_usd": 3497.0, "time_to_train_s": 22.7 * 86400.0, "devices": 4, "billed_devices": 8},
              {"cost_usd": 3497.0, "time_to_train_s": 11.4 * 86400.0, "devices": 8, "billed_devices": 8}]
    best, r = recommend_rule(server, 0.1, 30)  # type: ignore[misc]
    assert best["devices"] == 8 and r["outcome"] == "smallest_within_target"
    # billed per card, the smaller cluster pays for fewer devices and stays the choice
    cards = [{**p, "billed_devices": p["devices"], "cost_usd": 3497.0 * (1.0 if p["devices"] == 4 else 1.02)}
             for p in server]
    best, _ = recommend_rule(cards, 0.1, 30)  # type: ignore[misc]
    assert best["devices"] == 4


def test_compare_shows_a_blocked_part_with_its_plan_marked() -> None:
    """Regression: `compare --market cn` showed '-' for every figure of a part the rule rules out (market.export),
    while `plan train` lists it with its time and cost, marked. Both now show the plan. For a pretraining run China
    has no H800 cluster to rent when its offers supply a single server (--capacity *=8, a broker's one-server quote;
    the catalog states no capacity for them): the plan buys one, which the 2023-10 rule blocks."""
    spec = get_preset("llama3-8b").spec
    doc = compare_training(spec, _job(), CAT, ["h800-sxm5-80gb", "ascend-910b2"],
                           PlanConstraints(market="cn", deadline_days=30, capacity=(("*", 8),)), tokens=1e12)
    h800, ascend = doc["options"]
    assert h800["plan"] is not None and h800["plan"]["time_s"] > 0 and h800["not_recommended"] == "market.export"
    assert h800["plan"]["offer"] is None  # an own cluster
    assert any(f["id"] == "market.export" and f["severity"] == "critical" for f in h800["findings"])
    assert ascend["plan"] is not None and ascend["not_recommended"] is None


def test_renting_cards_already_in_china_is_not_blocked_by_export_rules() -> None:
    """Regression: a Chinese team pretraining a 7B in 30 days was recommended 256 Ascend 910B to buy (9.5M USD) while
    an A100 InfiniBand cluster for rent in China (155k USD) was 'not recommended: market.export'. The rule stops new
    shipments, not renting the installed base (the catalog's A100 note: 'installed base still rented in Chinese
    clouds'): the rental now draws a warning that the pool cannot grow, and only buying the part is blocked."""
    spec = get_preset("llama3-8b").spec
    cons = PlanConstraints(market="cn", deadline_days=30)
    doc = compare_training(spec, _job(), CAT, ["a100-sxm4-80gb", "ascend-910b2"], cons, tokens=1e12)
    a100 = doc["options"][0]
    assert a100["plan"]["offer"] == "cn-rental-a100-80gb-ib-cluster" and a100["not_recommended"] is None
    export = [f for f in a100["findings"] if f["id"] == "market.export"]
    assert len(export) == 1 and export[0]["severity"] == "warn"
    assert "installed base" in export[0]["message"]["en"] and "存量" in export[0]["message"]["zh"]
    report = training_report(spec, _job(), CAT, cons, tokens=1e12)
    rec = report["recommendation"]
    assert rec["accelerator"] == "a100-sxm4-80gb" and rec["offer"] == "cn-rental-a100-80gb-ib-cluster"
    # buying the same part stays ruled out: its own clusters are marked under the part's key, not the rental's
    assert report["not_recommended"].get("a100-sxm4-80gb") == "market.export"
    assert "a100-sxm4-80gb (cn-rental-a100-80gb-ib-cluster)" not in report["not_recommended"]


def test_a_critical_export_finding_removes_the_part_from_the_recommendation() -> None:
    spec = get_preset("qwen3-235b-a22b").spec
    cons = PlanConstraints(market="cn", accelerators=("h800-sxm5-80gb", "ascend-910c"))
    doc = training_report(spec, _job(), CAT, cons, tokens=1e13)
    assert doc["recommendation"] is not None
    assert doc["recommendation"]["accelerator"] != "h800-sxm5-80gb"
    assert doc["not_recommended"].get("h800-sxm5-80gb") == "market.export"
    assert any(e["accelerator"] == "h800-sxm5-80gb" for e in doc["recommendation"]["rule"]["excluded"])


@pytest.mark.parametrize("net,nics", [("eth-25-tcp", 1.0), ("ib-ndr-400", 8.0)])
def test_network_option_plans_every_part_on_that_fabric(net: str, nics: float) -> None:
    spec = get_preset("llama3-8b").spec
    cons = PlanConstraints(max_devices=32, network=net, nics_per_node=nics, accelerators=("h100-sxm5-80gb",))
    res = plan_training(spec, _job(), CAT, cons, tokens=1e12)
    multi = [p for p in res.plans if p["devices"] > 8]
    assert multi and all(p["assumptions"]["network"] == net for p in multi)
    assert all(p["hardware_option"]["kind"] == "as_specified" for p in res.plans)


def test_every_listed_training_part_is_checked_for_blocking_findings() -> None:
    """Regression: `plan train -m llama3-8b --tokens 2e10 --market cn` listed A100 and H800 rentals unmarked below
    the recommended Ascend plan (the rule stopped at its pick), while `compare` of the same parts marked them
    not recommended (market.export). Every listed part is judged, wherever the pick falls: its own clusters and its
    rentals apart, since the rule stops buying new A100/H800 in China, not renting the cards already there."""
    spec = get_preset("llama3-8b").spec
    parts = ("ascend-910b2", "a100-sxm4-80gb", "h800-sxm5-80gb")
    doc = training_report(spec, _job(), CAT, PlanConstraints(market="cn", accelerators=parts), tokens=2e10)
    assert doc["recommendation"] is not None and doc["recommendation"]["accelerator"] == "ascend-910b2"
    # buying either is ruled out (keyed by the part: its own clusters) ...
    # ... and the 910B2 rented at distressed (surplus-capacity) rents only is a scenario, listed, not recommended
    assert doc["not_recommended"] == {"a100-sxm4-80gb": "market.export", "h800-sxm5-80gb": "market.export",
                                      "ascend-910b2 (cn-rental-8x-910b2)": "price.distressed"}
    # ... renting them in China is not (the runners-up are rentals, unmarked; their export finding is a warning)
    assert {r["accelerator"] for r in doc["runners_up"]} == {"a100-sxm4-80gb", "h800-sxm5-80gb"}
    assert all(r["offer"] and r["not_recommended"] is None for r in doc["runners_up"])
    # the same parts in the global market draw no export finding: nothing is marked
    glob = training_report(spec, _job(), CAT, PlanConstraints(market="global", accelerators=parts[1:]), tokens=2e10)
    assert glob["not_recommended"] == {}



def test_tcp_plans_are_slower_than_infiniband_at_the_same_size() -> None:
    spec = get_preset("llama3-8b").spec

    def days(net: str, nics: float) -> dict[int, float]:
        cons = PlanConstraints(max_devices=32, network=net, nics_per_node=nics, accelerators=("h100-sxm5-80gb",))
        return {p["devices"]: p["time_to_train_days"] for p in plan_training(spec, _job(), CAT, cons,
                                                                              tokens=1e12).plans}

    tcp, ib = days("eth-25-tcp", 1.0), days("ib-ndr-400", 8.0)
    for n in (16, 32):
        assert tcp[n] > ib[n] * 1.1, (n, tcp[n], ib[n])
    assert math.isclose(tcp[8], ib[8], rel_tol=1e-9)  # one node: the fabric does not matter
    assert default_thresholds().value("recommend_target_days") == 30


def test_the_910b3_rental_without_rdma_is_planned_on_tcp_not_roce() -> None:
    # its only rent is a distressed-capacity price (catalog research round 2): a scenario unless asked for
    scen = [o for o in hardware_options(CAT, CAT.accelerator("ascend-910b3"), CAL, market="cn") if o.offer]
    assert scen and all(o.scenario == "distressed" and "scenario" in o.price_basis for o in scen)
    cat = CAT.with_pricing(PricingPolicy(use_distressed=True))
    opts = hardware_options(cat, CAT.accelerator("ascend-910b3"), CAL, market="cn")
    rentals = [o for o in opts if o.offer and CAT.instance(o.offer).rdma_network is None]
    assert rentals and all(o.scenario is None for o in rentals)
    for o in rentals:
        assert o.network is not None and CAT.network(o.network).kind == "tcp"
        assert o.max_devices is None and o.capacity_provenance == "unknown"  # no capacity stated: none invented
        assert "TCP" in o.network_basis


def test_an_offer_bills_whole_instances() -> None:
    """One device of an 8-card server rental pays for the server (regression: billed per device)."""
    spec = get_preset("qwen2.5-7b").spec
    cat = CAT.with_pricing(PricingPolicy(use_distressed=True))  # the 910B3 rent is a distressed price
    res = plan_training(spec, _job(64, "lora"), cat, PlanConstraints(accelerators=("ascend-910b3",), max_devices=8,
                                                                     market="cn"), tokens=2e9)
    by_size = {p["devices"]: p for p in res.plans if p["hardware_option"]["offer"] == "cn-rental-8x-910b3"}
    assert 1 in by_size and 8 in by_size
    one, eight = by_size[1], by_size[8]
    assert one["billed_devices"] == 8 and eight["billed_devices"] == 8
    # the same server for longer costs more: the full server is the cheaper way to rent it
    assert one["cost_usd"] >= eight["cost_usd"]


def test_a_plan_beaten_on_cost_and_time_is_never_recommended() -> None:
    """32 devices at 4,438 USD / 4.4 days lost to 64 devices at 4,063 USD / 2.0 days, yet the smaller
    cluster was recommended (regression: the size preference ran before dominance)."""
    plans = [{"cost_usd": 4438.0, "time_to_train_s": 4.4 * 86400.0, "devices": 32},
             {"cost_usd": 4063.0, "time_to_train_s": 2.0 * 86400.0, "devices": 64},
             {"cost_usd": 5472.0, "time_to_train_s": 0.9 * 86400.0, "devices": 32}]
    best, rule = recommend_rule(plans, 0.1, 7)  # type: ignore[misc]
    assert best["devices"] == 64 and rule["outcome"] == "smallest_within_target"
    spec = get_preset("llama3-70b").spec
    doc = training_report(spec, _job(), CAT, PlanConstraints(deadline_days=7), tokens=2e9)
    rec = doc["recommendation"]
    res_plans = [p for p in plan_training(spec, _job(), CAT, PlanConstraints(deadline_days=7), tokens=2e9).plans
                 if "global" in plan_markets(p, CAT)]  # the default buyer's market: what the rule chooses from
    assert not any(p["cost_usd"] is not None and p["cost_usd"] < rec["cost_usd"]
                   and p["time_to_train_s"] < rec["time_s"] for p in res_plans)


def test_a_rented_part_can_also_be_an_own_cluster_beyond_its_offers() -> None:
    """Regression: parts some offer rents were capped at the offer's capacity while parts no offer rents grew
    freely, so Llama-3.1-70B on 15T tokens recommended 4,096 unpriced H100 PCIe (91.6 days) over faster parts."""
    b200 = CAT.accelerator("b200-sxm-180gb")
    opts = hardware_options(CAT, b200, CAL)
    offers = [o for o in opts if o.kind == "offer"]
    own = [o for o in opts if o.kind == "own"]
    assert offers and all((o.max_devices is not None) == (o.capacity_provenance in ("stated", "typical"))
                          for o in offers)
    assert len(own) == 1 and own[0].max_devices is None and own[0].price.on_demand is None
    assert "gpuplan tco" in own[0].price_basis
    # a market the part is not sold in gets no own cluster; a named provider means that provider's offers
    assert not [o for o in hardware_options(CAT, b200, CAL, market="cn") if o.kind == "own"]
    provider = offers[0].offer and CAT.instance(offers[0].offer).provider
    assert not [o for o in hardware_options(CAT, b200, CAL, provider=provider) if o.kind == "own"]

    spec = get_preset("llama3.1-70b").spec
    job = TrainingJob(seq_len=8192, global_batch=512)
    cons = PlanConstraints()
    res = plan_training(spec, job, CAT, cons, tokens=15e12)
    big = [p for p in res.plans if p["accelerator"] == "b200-sxm-180gb" and p["devices"] == 4096]
    assert big and any(p["hardware_option"]["kind"] == "own" for p in big)
    # an offer that states no capacity is planned at that size too, its capacity said to be unknown (issue 37)
    assert all(p["hardware_option"]["capacity_provenance"] in ("own", "unknown") for p in big)
    doc = training_report(spec, job, CAT, cons, tokens=15e12, result=res)
    rec = doc["recommendation"]
    assert rec is not None and rec["accelerator"] not in ("h100-pcie-80gb", "h100-nvl-94gb")
    # nothing meets 30 days: the fastest of the near-cheapest plans within max_days (advise/recommend_rule.py),
    # among the priced offers of the default buyer's market. (Until the GB200 tray's NICs were fixed, that was
    # also the fastest plan of all: the tray then crossed trays at NVLink speed and was both fastest and cheap.)
    rule = rec["rule"]
    assert rule["outcome"] == "fastest_near_cheapest"
    late = [p for p in res.plans if p["cost_usd"] is not None and not p["hardware_option"].get("scenario")
            and CAT.instance(p["hardware_option"]["offer"]).market == "global"
            and p["time_to_train_s"] <= rule["max_days"] * 86400.0]
    cheapest = min(p["cost_usd"] for p in late)
    fastest = min(p["time_to_train_s"] for p in late
                  if p["cost_usd"] <= cheapest * (1 + rule["recommend_cost_tolerance"]))
    assert rec["time_s"] <= fastest * 1.01


def test_a_per_card_pod_puts_its_cards_on_one_host_and_bills_per_card() -> None:
    """RunPod rents A100s per card in pods of up to 8 GPUs of one HGX machine. Regression: the 1-card price made
    every device its own node, so a 2-card job ran over 25 GbE TCP between two 'nodes' and an 8-card one over
    eight, with the pipeline and gradient traffic of a job that in fact never leaves one server's NVLink."""
    opts = {o.offer: o for o in hardware_options(CAT, CAT.accelerator("a100-sxm4-80gb"), CAL)}
    pod = opts["runpod-a100-80gb-secure"]
    assert pod.gpus_per_node == 8 and pod.billing_unit == 1
    assert pod.billed_devices(2) == 2 and pod.billed_devices(8) == 8 and pod.billed_devices(12) == 12
    assert "per-card rental" in pod.network_basis and "gpuCount" in pod.network_basis
    spec = get_preset("llama3-8b").spec
    res = plan_training(spec, _job(256), CAT, PlanConstraints(accelerators=("a100-sxm4-80gb",), max_devices=8,
                                                              provider="runpod"), tokens=2e9)
    eight = [p for p in res.plans if p["devices"] == 8]
    assert eight, [p["devices"] for p in res.plans]
    for p in eight:
        assert p["hardware_option"]["gpus_per_node"] == 8 and p["billed_devices"] == 8
        assert p["breakdown_s"].get("pp_comm", 0.0) < 0.05 * p["step_time_s"]
    # a fixed-size VM of one card is still one card per node (Alibaba's gn7e 1-GPU instance type)
    gn7e = {o.offer: o for o in hardware_options(CAT, CAT.accelerator("a100-sxm4-80gb"), CAL)}[
        "alibaba-ecs.gn7e-c16g1.4xlarge"]
    assert gn7e.gpus_per_node == 1 and gn7e.billed_devices(2) == 2


def test_cards_per_host_needs_a_per_card_offer_and_its_source() -> None:
    from pydantic import ValidationError

    from gpuplan.hardware.schema_offers import Instance

    base = dict(id="x-pod", provider="x", name="X pod", server="hgx-a100-80gb-8", accelerator_count=1,
                tenancy="dedicated_vm", market="global", source="s", as_of="2026-12-01", confidence="medium",
                cards_per_host=8)
    with pytest.raises(ValidationError, match="field_sources.cards_per_host"):
        Instance.model_validate(base)
    with pytest.raises(ValidationError, match="accelerator_count must be 1"):
        Instance.model_validate({**base, "accelerator_count": 4, "field_sources": {"cards_per_host": "docs"}})
    assert Instance.model_validate({**base, "field_sources": {"cards_per_host": "docs"}}).cards_per_host == 8


def test_a_per_card_pod_is_not_given_its_hosts_drives_cpus_and_ram() -> None:
    """Regression: a plan on RunPod H200 pods (cards_per_host 8) was judged against the HGX H200 host's 30.7 TB of
    NVMe, 112 cores and its RAM: a pod gets the provider's disk allotment and per-card CPU and RAM, so the host
    findings said nothing where they cannot know. The pod's figures are the offer's per-card ones times the cards."""
    from gpuplan.advise.adapt_train import server_for
    from gpuplan.hardware.schema_offers import Instance

    pod = CAT.instance("runpod-h200")
    assert CAT.server(pod.server).local_nvme_tb == pytest.approx(30.7)
    sv = server_for(CAT, "h200-sxm-141gb", 8, pod.id)
    assert sv is not None and sv.local_nvme_tb is None and sv.cpu_cores is None and sv.ram_gib is None
    stated = Instance.model_validate({**pod.model_dump(), "id": "x-pod", "vcpus": 16, "ram_gib": 188.0})
    four = CAT.rented_server(stated, 4)
    assert (four.cpu_cores, four.ram_gib, four.local_nvme_tb) == (64, 752.0, None)
    whole = CAT.instance("aws-p5.48xlarge")  # a whole-node instance keeps its server's figures
    assert CAT.rented_server(whole, 8) == CAT.server(whole.server)


def test_a_serving_replica_on_per_card_pods_keeps_its_cards_on_one_host() -> None:
    """A TP2 replica can rent two RunPod cards of one machine (before: a 1-card offer could not host TP2 at all),
    and the fleet line says it rents cards, not instances."""
    import json

    from typer.testing import CliRunner

    from gpuplan.cli.main import app
    from gpuplan.render.report_text import fleet_units_text

    res = CliRunner().invoke(app, ["plan", "infer", "-m", "llama3-70b", "--qps", "2", "--ttft-p99", "2",
                                   "--tpot-p99", "0.05", "--provider", "runpod", "--json"])
    assert res.exit_code == 0, res.output
    plans = [p for p in json.loads(res.stdout)["plans"] if p.get("instance", "").startswith("runpod-")]
    tp2 = [p for p in plans if p["layout"]["tp"] == 2]
    assert tp2 and all(p["per_card"] and p["instances"] == p["devices"] for p in tp2)
    assert "card(s) of" in fleet_units_text(tp2[0], "en") and "按卡租用" in fleet_units_text(tp2[0], "zh")


def test_a_tray_of_a_rack_has_the_trays_nics_not_the_racks() -> None:
    """Regression: CoreWeave's 4-GPU GB200 tray took the whole NVL72 rack's 72 NICs (28,800 Gbit/s) as its own, 18
    400G NICs per GPU, so every multi-tray GB200 plan crossed trays at NVLink speed over InfiniBand. A GB200 NVL72 has
    one ConnectX NIC per GPU (72 per rack); a 4-GPU tray has 4, as Azure's 4-GPU GB200 VM states (1,600 Gbit/s)."""
    gb200 = CAT.accelerators["gb200-186gb"]
    by_offer = {o.offer: o for o in hardware_options(CAT, gb200, CAL) if o.kind == "offer"}
    tray = by_offer["coreweave-4x-gb200"]
    assert tray.gpus_per_node == 4
    assert tray.nics_per_node == pytest.approx(4.0)
    assert "4 of the 72 devices" in tray.network_basis
    # the own rack keeps the rack's NICs on the rack's 72 devices
    own = next(o for o in hardware_options(CAT, gb200, CAL) if o.kind == "own")
    assert own.nics_per_node / own.gpus_per_node == pytest.approx(1.0)
