"""Issue 37: every export-control note of advise/data/compliance.yaml, one test each.

A note applies where its `applies_by` says: an export control where the cards are (a rental's offer market, an own
cluster's buyer market), guidance on use in the buyer's market. A critical note removes the offer from the
recommendation, also for a question asked without --market (the buyer then defaults to global, and an offer in
China is still judged by China's rules: a B200 rented in China is grey-market stock whoever rents it).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

import pytest

from gpuplan.advise import advise
from gpuplan.advise.adapt_infer import inference_facts
from gpuplan.advise.findings import advise_data, default_thresholds
from gpuplan.advise.report_infer import choose_fleet
from gpuplan.advise.trust import fleet_key
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.presets import load_model


@cache
def catalog() -> Catalog:
    return load_catalog(use_user_dir=False)


# (note id, a part it covers, that part's rental offer in the note's market, severity renting it there,
#  severity buying it new there); the figures are the sources' (see the note texts): A100s, A800/H800s and L40Ss
# entered China legally before their rules, no H100 or Blackwell part ever did, H200 licences are case by case
# since 2026-01-15, H20 licences were required from 2025-04 and then granted
RULES = [
    ("us-bis-2022-10", "a100-sxm4-80gb", "cn-rental-8x-a100-80gb", "warn", "critical"),
    ("us-bis-2022-10-h100", "h100-sxm5-80gb", "cn-rental-8x-h100", "critical", "critical"),
    ("us-bis-2023-10", "h800-sxm5-80gb", "cn-rental-8x-h800", "warn", "critical"),
    ("us-bis-2023-10-blackwell", "b200-sxm-180gb", "cn-rental-8x-b200", "critical", "critical"),
    ("us-bis-2026-01-h200", "h200-sxm-141gb", "cn-rental-8x-h200", "warn", "warn"),
    ("us-h20-2025", "h20-96gb", "cn-rental-8x-h20", "warn", "warn"),
]
LOAD = InferLoad(qps=1.0, input_len=parse_length_dist(512), output_len=parse_length_dist(128))
SLO = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.1)


def _notes() -> dict[str, dict[str, Any]]:
    return {n["id"]: n for n in advise_data("compliance")["export_notes"]}


def test_every_shipped_note_has_a_test_here() -> None:
    assert {r[0] for r in RULES} | {"us-ascend-2025"} == set(_notes())


def _run(acc: str, offer: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A question asked without --market: one part, its fleets on `offer` (the planner keeps the cheapest offers,
    so the offer in China is asked for by its provider) and its fleets anywhere."""
    spec = load_model("llama3-8b")
    provider = catalog().instances[offer].provider
    asks = (InferConstraints(accelerators=(acc,), provider=provider), InferConstraints(accelerators=(acc,)))
    plans = [p for c in asks for p in plan_inference(spec, LOAD, SLO, catalog(), c).plans]
    run = {"model": spec.name, "load": LOAD.to_json(), "slo": {"ttft_p99_s": 3.0, "tpot_p99_s": 0.1},
           "engine": "vllm", "plans": plans}
    return run, plans


def _exports(run: dict[str, Any], plan: dict[str, Any]) -> list[Any]:
    return [f for f in advise(inference_facts(run, plan, catalog=catalog())) if f.id == "market.export"]


@pytest.mark.parametrize(("note", "acc", "offer", "rent", "buy"), RULES)
def test_no_market_question_never_recommends_an_offer_its_rules_block(note: str, acc: str, offer: str, rent: str,
                                                                     buy: str) -> None:
    rule = _notes()[note]
    assert any(acc.startswith(p) for p in rule["applies_to"]) and rule["markets"] == ["cn"]
    assert catalog().instances[offer].market == "cn"
    run, plans = _run(acc, offer)
    here = [p for p in plans if p["instance"] == offer]
    assert here, sorted({p["instance"] for p in plans})
    # the offer in China ranked first, as the cheapest fleet of a no-market question may be
    ranked = here + [p for p in plans if p["instance"] != offer]
    found = _exports(run, here[0])
    assert [f.severity for f in found] == [rent] and rule["date"] in found[0].message["en"]
    best, blocked = choose_fleet(run, ranked, catalog(), default_thresholds(), None)
    # no --market: the buyer is global, so the fleet comes from an offer outside China whatever the China offer's
    # rule says; the China offer is checked all the same and marked when its rule blocks it
    abroad = [p for p in ranked if catalog().instances[p["instance"]].market == "global"]
    assert best is not None and best is (abroad[0] if abroad else here[0])  # H800, H20: rented in China only
    if abroad:
        assert not [f for f in _exports(run, best) if f.severity == "critical"]  # the check is per offer
    asked_cn, blocked_cn = choose_fleet({**run, "market": "cn"}, ranked, catalog(), default_thresholds(), None, "cn")
    if rent == "critical":
        assert blocked[fleet_key(here[0])] == "market.export" == blocked_cn[fleet_key(here[0])]
        assert asked_cn is None or catalog().instances[asked_cn["instance"]].market != "cn"
    else:  # a buyer in China may rent the installed base: the China offer is its pick, warned
        assert fleet_key(here[0]) not in blocked and asked_cn is here[0]


@pytest.mark.parametrize(("note", "acc", "offer", "rent", "buy"), RULES)
def test_buying_new_in_china_reads_the_note_and_buying_elsewhere_does_not(note: str, acc: str, offer: str, rent: str,
                                                                          buy: str) -> None:
    run, plans = _run(acc, offer)
    base = inference_facts(run, next(p for p in plans if p["instance"] == offer), catalog=catalog())
    own_cn = replace(base, hosting="owned", hosting_market=None, market="cn")
    x = [f for f in advise(own_cn) if f.id == "market.export"]
    assert [f.severity for f in x] == [buy] and _notes()[note]["date"] in x[0].message["zh"]
    own_global = replace(own_cn, market="global")
    assert not [f for f in advise(own_global) if f.id == "market.export"]


def test_ascend_guidance_reads_the_buyers_market_wherever_the_cards_are() -> None:
    """us-ascend-2025 (applies_by: buyer): a buyer outside China renting 910B2s in China is warned; a buyer in China,
    or a question that names no market for a part sold only in China (the buyer is then inferred as China), is not."""
    run, plans = _run("ascend-910b2", "gitee-ai-910b2c")
    p = next(p for p in plans if p["instance"] == "gitee-ai-910b2c")
    assert not [f for f in advise(inference_facts(run, p, catalog=catalog())) if f.id == "market.export"]
    glob = advise(inference_facts({**run, "market": "global"}, p, catalog=catalog()))
    x = [f for f in glob if f.id == "market.export"]
    assert [f.severity for f in x] == ["warn"] and "2025-05-13" in x[0].message["en"]
    cn = advise(inference_facts({**run, "market": "cn"}, p, catalog=catalog()))
    assert not [f for f in cn if f.id == "market.export"]


@pytest.mark.parametrize(("acc", "offer"), [("b200-sxm-180gb", "cn-rental-8x-b200"),
                                           ("h100-sxm5-80gb", "cn-rental-8x-h100")])
def test_no_market_training_question_skips_the_grey_market_rental_it_would_have_picked(acc: str, offer: str) -> None:
    """plan train without --market: the buyer is global, so the recommendation is the part rented outside China
    (the monthly rental in China, the cheapest that meets the 30-day target, is not the default buyer's to rent);
    the China offer is still judged by its export note and listed, marked, under its own key (the part's other offers
    are not). Asked for China, the China rental is never the recommendation."""
    from gpuplan.advise.report_train import training_report
    from gpuplan.search.train_search import PlanConstraints
    from gpuplan.workload.jobs import TrainingJob

    doc = training_report(load_model("llama3-70b"), TrainingJob(seq_len=4096, global_batch=1024, method="full"),
                          catalog(), PlanConstraints(accelerators=(acc,)), tokens=2e10)
    rec = doc["recommendation"]
    assert rec is not None and rec["offer"] != offer and catalog().instances[rec["offer"]].market == "global"
    key = f"{acc} ({offer})"
    assert doc["not_recommended"][key] == "market.export"
    assert rec["rule"]["buyer_market"] == "global" and rec["rule"]["buyer_market_default"]
    assert f"{acc} ({rec['offer']})" not in doc["not_recommended"]
    cn = training_report(load_model("llama3-70b"), TrainingJob(seq_len=4096, global_batch=1024, method="full"),
                         catalog(), PlanConstraints(accelerators=(acc,), market="cn"), tokens=2e10)
    assert cn["recommendation"] is None or cn["recommendation"]["offer"] != offer


def test_a_part_sold_only_in_china_is_not_said_to_be_drawn_from_outside_china() -> None:
    """No --market, a part no offer outside China rents (H20): the rule falls back to every market's plans, so the
    recommendation is a China offer and the rule must not say it came from the default buyer's market (it did)."""
    from gpuplan.advise.report_train import training_report
    from gpuplan.render.report_text import rule_line
    from gpuplan.search.train_search import PlanConstraints
    from gpuplan.workload.jobs import TrainingJob

    doc = training_report(load_model("llama3-8b"), TrainingJob(seq_len=4096, global_batch=512, method="full"),
                          catalog(), PlanConstraints(accelerators=("h20-96gb",)), tokens=1e10)
    rec = doc["recommendation"]
    assert rec is not None and catalog().instances[rec["offer"]].market == "cn"
    assert rec["rule"]["buyer_market"] == "global" and not rec["rule"]["buyer_market_default"]
    assert "outside China" not in rule_line(rec, "en")


def test_no_market_growth_and_wider_format_replans_stay_in_the_recommended_offers_market() -> None:
    """The README serving question without --market recommends 4 x B200 on Hyperstack (global, 24 USD/h). Its growth
    finding (2x the load) and its bf16 what-if were re-planned without a market and priced on the B200 rented in
    China, an offer the China export note blocks: '7 x b200 at 24.91 USD/hour (+4%)' and '8 devices at 24.91'
    (8ee7833). They now stay in the recommendation's market: 7 x B200 at 42 USD/h, 8 at 53.52."""
    from gpuplan.advise.report_infer import serve_growth, serve_wider
    from gpuplan.search.infer_load import planner_terms
    from gpuplan.search.infer_search import plan_record
    from gpuplan.workload.engines import engine

    cat = load_catalog(use_user_dir=False)
    load = InferLoad(qps=20.0, input_len=parse_length_dist("uniform:512-2048"),
                     output_len=parse_length_dist("uniform:128-512"))
    slo = InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05)
    spec = load_model("llama3.1-70b")
    prof = engine("vllm")
    res = plan_inference(spec, load, slo, cat, InferConstraints(), engine_profile=prof, terms=planner_terms())
    run = plan_record(spec, load, slo, res, prof, "bf16")
    best = next(p for p in res.plans if p["instance"] == "hyperstack-b200" and p["replicas"] == 4)
    grown = serve_growth(run, best, cat, factor=2.0, load=load, constraints=InferConstraints())
    assert grown is not None and not grown["holds"]
    assert cat.instances[grown["instance"]].market == "global"
    assert grown["devices"] == 7 and grown["usd_per_hour"] == pytest.approx(42.0)
    wider = serve_wider(run, best, cat, load=load, constraints=InferConstraints())
    assert wider is not None and wider["weights"] == "bf16"
    assert cat.instances[wider["instance"]].market == "global"
    assert wider["usd_per_hour"] == pytest.approx(53.52, rel=1e-3)
