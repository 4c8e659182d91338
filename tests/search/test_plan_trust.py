"""Every plan says how sure it is (issue 12): provenance, bands, one confidence level, --trust, caveats.

Written against the built-in catalog and the shipped cross-validation result
(estimate/data/accuracy.json, produced by benchmarks/cross_validate.py).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from gpuplan.advise.report_train import blocked_finding, compare_training, training_report
from gpuplan.advise.trust import caveats, deadline_caveat, is_confirmed, memory_caveat
from gpuplan.errors import InputError
from gpuplan.estimate.calibration import CalibrationTerm, default_calibration, load_calibration
from gpuplan.estimate.uncertainty import EstimateClass, accuracy_data, band, class_stats
from gpuplan.hardware import load_catalog
from gpuplan.render.trust_text import caveat_lines, confidence_text
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.search.plan_trust import confidence_level, efficiency_provenance
from gpuplan.search.train_planner import HOURS_PER_MONTH, billed_by_month
from gpuplan.search.train_search import PlanConstraints, plan_training
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
SPEC = get_preset("llama3-8b").spec
JOB = TrainingJob(seq_len=4096, global_batch=1024)


def _plans(trust: str = "low", **kw: Any) -> Any:
    return plan_training(SPEC, JOB, CAT, PlanConstraints(deadline_days=30, trust=trust, **kw), tokens=1e12)


def test_every_plan_has_a_band_around_its_figures_and_a_confidence() -> None:
    res = _plans()
    assert res.plans
    for p in res.plans:
        b = p["band"]
        for key in ("time_to_train_s", "step_time_s", "tokens_per_s", "mfu", "device_hours"):
            lo, hi = b[key]
            assert lo < p[key] < hi, (key, lo, p[key], hi)
        if p["cost_usd"] is not None:
            lo, hi = b["cost_usd"]
            assert (lo <= p["cost_usd"] <= hi) if billed_by_month(p) else (lo < p["cost_usd"] < hi)
        conf = p["confidence"]
        assert conf["level"] in ("low", "medium", "high")
        assert conf["efficiency"]["provenance"] in ("measured", "validated", "default")
        if p["cost_usd"] is not None:
            assert {"confidence", "source", "as_of"} <= set(conf["price"])


def test_a_monthly_bill_has_no_band_until_the_time_band_crosses_a_month(tmp_path: Any) -> None:
    """Regression: a LoRA job of minutes on a monthly-only rental (cn-rental-a100-80gb-ib-cluster, 34,750 CNY per
    server a month) showed '155,524 (134k-217k)': the band scaled a bill of whole months by the speed band. A month
    is billed whatever the speed; the cost moves only where the time band crosses a month, and the tables say the
    bill is monthly."""
    from typer.testing import CliRunner

    from gpuplan.cli.main import app

    spec = get_preset("qwen2.5-7b").spec
    job = TrainingJob(method="lora", seq_len=4096)
    res = plan_training(spec, job, CAT, PlanConstraints(deadline_days=2, market="cn"), tokens=1e8)
    monthly = [p for p in res.plans if billed_by_month(p)]
    assert monthly
    for p in monthly:
        lo_t, hi_t = p["band"]["time_to_train_s"]
        months = [math.ceil(t / 3600 / HOURS_PER_MONTH) for t in (lo_t, p["time_to_train_s"], hi_t)]
        lo, hi = p["band"]["cost_usd"]
        assert lo == pytest.approx(p["cost_usd"] * months[0] / months[1])
        assert hi == pytest.approx(p["cost_usd"] * months[2] / months[1])
    report = tmp_path / "plan.md"
    out = CliRunner().invoke(app, ["plan", "train", "-m", "qwen2.5-7b", "--tokens", "1e8", "--seq-len", "4096",
                                   "--method", "lora", "--deadline", "2", "--market", "cn", "--lang", "en",
                                   "--report", str(report)])
    assert out.exit_code == 0, out.output
    rows = [line for line in report.read_text(encoding="utf-8").splitlines() if "cn-rental-8x-h800" in line]
    assert rows and all("(monthly: whole months billed)" in r and "k-" not in r.split("|")[7] for r in rows)


def test_a_part_without_rows_is_default_and_its_band_is_at_least_a_validated_parts() -> None:
    cal = default_calibration()
    assert efficiency_provenance(cal, "ascend-910c", "bf16")["provenance"] == "default"
    h100 = efficiency_provenance(cal, "h100-sxm5-80gb", "bf16")
    assert h100["provenance"] == "validated" and h100["rows"] > 10 and h100["cv_median_ape"] is not None
    cls = {"kind": "train", "family": "campaign", "arch": "dense", "scale": "multi"}
    wide = band(EstimateClass(efficiency="default", **cls), 100.0, "time")  # type: ignore[arg-type]
    narrow = band(EstimateClass(efficiency="validated", **cls), 100.0, "time")  # type: ignore[arg-type]
    assert wide is not None and narrow is not None
    assert wide.low <= narrow.low and wide.high >= narrow.high  # never narrower than a validated part's
    assert math.log(wide.high / wide.low) >= math.log(narrow.high / narrow.low)


def test_the_910b_bins_take_the_910b_efficiency_and_its_runs() -> None:
    """Regression: a LoRA plan on a 910B2 rental rested on the 0.55 default although 26 published 910B runs fit
    0.61: the bins (910B, B2, B3, B4) are one Da Vinci die with more or fewer AI cores, each with its own peak."""
    cal = default_calibration()
    b = efficiency_provenance(cal, "ascend-910b", "bf16")
    for part in ("ascend-910b2", "ascend-910b3", "ascend-910b4"):
        e = efficiency_provenance(cal, part, "bf16")
        assert e["provenance"] == "validated" and e["value"] == b["value"] and e["rows"] == b["rows"] > 10
        assert e["cv_median_ape"] == b["cv_median_ape"] is not None


def test_the_a800_takes_the_a100_efficiency_and_its_runs() -> None:
    """Regression: an A800 plan rested on the 0.55 default while both A100 SXM4 parts share 0.63 from 97 published
    runs; the A800 SXM4 is that die at the same clocks and peak, with NVLink capped at 400 GB/s."""
    cal = default_calibration()
    a100 = efficiency_provenance(cal, "a100-sxm4-80gb", "bf16")
    a800 = efficiency_provenance(cal, "a800-sxm4-80gb", "bf16")
    assert a800["provenance"] == "validated" and a800["value"] == a100["value"] and a800["rows"] > 50
    assert a800["cv_median_ape"] is not None


def test_the_gb200_takes_the_b200_efficiency() -> None:
    """Regression: GB200 plans rested on the 0.55 default below the 0.60 of the B200 whose Blackwell GPU it carries
    (at 1200 W and its own higher peak); like the 910B bins, one value per die, each part at its own peak."""
    cal = default_calibration()
    for dtype in ("bf16", "fp8"):
        b200 = efficiency_provenance(cal, "b200-sxm-180gb", dtype)
        gb200 = efficiency_provenance(cal, "gb200-186gb", dtype)
        assert gb200["value"] == b200["value"] and gb200["provenance"] == b200["provenance"]
        assert gb200["term"] == f"compute_efficiency.gb200-186gb.{dtype}"


def test_measured_efficiency_comes_from_calibrate() -> None:
    """`gpuplan calibrate` writes compute_efficiency.<part>.<dtype> marked overridden: provenance measured."""
    base = default_calibration()
    assert "compute_efficiency.h20-96gb.bf16" not in base.terms
    terms = dict(base.terms)
    terms["compute_efficiency.h20-96gb.bf16"] = CalibrationTerm(value=0.5, unit="fraction", overridden=True,
                                                                 source="gpuplan calibrate: test")
    cal = base.model_copy(update={"terms": terms})
    assert efficiency_provenance(base, "h20-96gb", "bf16")["provenance"] == "default"
    assert efficiency_provenance(cal, "h20-96gb", "bf16")["provenance"] == "measured"
    assert efficiency_provenance(load_calibration({"compute_efficiency.h100-sxm5-80gb.bf16": 0.5}),
                                 "h100-sxm5-80gb", "bf16")["provenance"] == "measured"


@pytest.mark.parametrize(("eff", "cv", "price", "level"), [
    ("measured", None, "high", "high"), ("validated", 0.08, "high", "high"), ("validated", 0.3, "high", "medium"),
    ("validated", 0.08, "low", "low"), ("default", None, "high", "low"), ("validated", 0.08, None, "high"),
    ("validated", 0.08, "medium", "medium"),
])
def test_confidence_level_is_the_weaker_of_efficiency_and_price(eff: str, cv: float | None, price: str | None,
                                                                  level: str) -> None:
    p = None if price is None else {"confidence": price}
    assert confidence_level({"provenance": eff, "cv_median_ape": cv, "rows": 20, "sources": 4}, p) == level


@pytest.mark.parametrize(("rows", "sources", "level"), [(1, 1, "medium"), (2, 2, "medium"), (12, 1, "medium"),
                                                        (3, 2, "high")])
def test_a_part_validated_on_few_runs_or_one_source_is_medium_at_best(rows: int, sources: int, level: str) -> None:
    """Regression: a part with one published run of held-out error 1% was 'high'; a median over one or two runs,
    or over one source's runs (one stack, one cluster), says little about the next run."""
    eff = {"provenance": "validated", "cv_median_ape": 0.01, "rows": rows, "sources": sources}
    assert confidence_level(eff, {"confidence": "high"}) == level


def test_the_error_a_plan_quotes_is_that_of_its_own_precision() -> None:
    """Regression: a 16-bit H800 plan quoted 'validated on 1 published runs ... median error 1%', the median of
    its fp8 rows; the 16-bit term rests on one run from one source, and its own held-out error."""
    part = accuracy_data()["parts"]["train"]["h800-sxm5-80gb"]
    cal = default_calibration()
    e16 = efficiency_provenance(cal, "h800-sxm5-80gb", "bf16")
    assert e16["rows"] == part["rows_by_precision"]["bf16"] and e16["sources"] == part["sources_by_precision"]["bf16"]
    assert e16["cv_median_ape"] == part["cv_median_ape_by_precision"]["bf16"] != part["cv_median_ape"]
    assert e16["thin"] and confidence_level(e16, None) == "medium"
    text = confidence_text({"level": "medium", "efficiency": e16, "price": None}, "en", short=False)
    assert f"only {e16['rows']} published run(s)" in text and "1 published runs" not in text
    assert "实测" in confidence_text({"level": "medium", "efficiency": e16, "price": None}, "zh", short=False)
    assert confidence_text({"level": "medium", "efficiency": e16, "price": None}, "en") == "medium (few runs)"
    h100 = efficiency_provenance(cal, "h100-sxm5-80gb", "bf16")  # many runs from several sources
    assert not h100["thin"] and h100["sources"] >= 2


def test_trust_high_never_returns_a_plan_on_a_default_efficiency_or_a_low_confidence_price() -> None:
    low, high = _plans("low"), _plans("high")
    assert len(high.plans) < len(low.plans) and high.rejected.get("trust", 0) > 0
    assert any(p["confidence"]["efficiency"]["provenance"] == "default" for p in low.plans)
    for p in high.plans:
        assert p["confidence"]["efficiency"]["provenance"] != "default"
        assert p["confidence"]["price"] is None or p["confidence"]["price"]["confidence"] == "high"
    med = _plans("medium")
    for p in med.plans:
        assert p["confidence"]["efficiency"]["provenance"] != "default"
        assert p["confidence"]["price"] is None or p["confidence"]["price"]["confidence"] != "low"


def test_trust_applies_to_plan_infer() -> None:
    load = InferLoad(qps=5.0, input_len=parse_length_dist("1024"), output_len=parse_length_dist("256"))
    slo = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.1)
    every = plan_inference(SPEC, load, slo, CAT, InferConstraints())
    levels = {p["confidence"]["level"] for p in every.plans}
    assert "low" in levels
    for p in every.plans:
        assert {"ttft_s.p99", "tpot_s.p99", "cost_usd_per_hour"} <= set(p["band"])
        lo, hi = p["band"]["cost_usd_per_hour"]
        assert lo <= p["cost_usd_per_hour"] <= hi
    for trust in ("medium", "high"):
        if trust == "high" and "high" not in levels:  # no fleet reaches it: a clear error naming --trust
            with pytest.raises(InputError, match="trust"):
                plan_inference(SPEC, load, slo, CAT, InferConstraints(trust=trust))
            continue
        res = plan_inference(SPEC, load, slo, CAT, InferConstraints(trust=trust))
        assert res.plans and res.rejected.get("trust", 0) > 0
        for p in res.plans:
            assert p["confidence"]["efficiency"]["provenance"] != "default"
            assert p["confidence"]["price"] is None or p["confidence"]["price"]["confidence"] != "low"


def test_break_even_values_flip_the_choice_exactly() -> None:
    """At the break-even price the plan costs what the confirmed alternative costs; same for MFU."""
    rec = {"accelerator": "x", "cost_usd": 100.0, "mfu": 0.5, "time_to_train_s": 1e6,
           "confidence": {"efficiency": {"provenance": "default", "term": "compute_efficiency.default.bf16",
                                         "value": 0.55},
                          "price": {"confidence": "low", "usd_per_device_hour": 2.0, "source": "s", "as_of": "2026",
                                    "instance": "nope", "kind": "monthly"}}}
    alt = {"accelerator": "y", "cost_usd": 125.0, "time_to_train_s": 2e6}
    out = {c["input"]: c for c in caveats(rec, alt, "cost", CAT)}
    price_be = out["price"]["break_even"]["usd_per_device_hour"]
    assert 100.0 * price_be / 2.0 == pytest.approx(125.0)  # cost scales with the price
    mfu_be = out["efficiency"]["break_even"]["mfu"]
    assert 100.0 * 0.5 / mfu_be == pytest.approx(125.0)  # cost scales with 1 / MFU
    assert out["price"]["holds_while"] == "below" and out["efficiency"]["holds_while"] == "above"
    assert {c["action"] for c in out.values()} == {"quote", "bench"}
    assert caveats({**rec, "confidence": {"efficiency": {"provenance": "validated"}, "price": None}}, alt, "cost",
                   CAT) == []


def test_recommendation_names_its_caveats_the_confirmed_alternative_and_the_best_per_market() -> None:
    cons = PlanConstraints(deadline_days=30)
    doc = training_report(SPEC, JOB, CAT, cons, tokens=1e12)
    rec = doc["recommendation"]
    assert rec["confidence"]["level"] in ("low", "medium", "high")
    if not is_confirmed(rec):
        assert rec["caveats"]
        for c in rec["caveats"]:
            assert {"input", "value", "break_even", "action"} <= set(c)
        alt = rec["confirmed_alternative"]
        assert alt is not None and is_confirmed(alt)
    else:
        assert rec["caveats"] == []
    # China-only and global offers are not ranked silently together without --market
    assert set(rec["best_per_market"]) == {"cn", "global"}
    assert training_report(SPEC, JOB, CAT, PlanConstraints(deadline_days=30, market="global"),
                           tokens=1e12)["recommendation"]["best_per_market"] == {}


def test_compare_without_a_price_picks_the_smallest_cluster_within_the_target_and_says_cost_is_unknown() -> None:
    """Issue 12 item 7: unpriced parts got 4096 devices for a LoRA job of 0.1 days."""
    spec = get_preset("llama3-70b").spec
    job = TrainingJob(seq_len=4096, global_batch=1024, method="lora")
    doc = compare_training(spec, job, CAT, ["ascend-910b", "h20-96gb"], PlanConstraints(layout_family="data_parallel"),
                           tokens=2e10)
    for o in doc["options"]:
        p = o["plan"]
        assert p is not None and "band" in p and "confidence" in p
        if p["cost_usd"] is None:  # no rental: what buying it costs where the catalog prices its server
            assert p["devices"] <= 64, (o["accelerator"], p["devices"])
            assert o["rule"]["measure"] == ("purchase" if p.get("purchase_usd") else "device_hours")
            assert p["provenance"]["cost_usd"].startswith("unknown")
        else:  # a rental: the rule's pick among the plans that finish within the 30-day target
            assert o["rule"]["outcome"] in ("smallest_within_target", "cheapest_within_target")
            assert p["time_s"] <= 30 * 86400


def test_shipped_accuracy_file_is_cross_validated_and_covers_every_kind() -> None:
    data = accuracy_data()
    assert data["produced_by"] == "benchmarks/cross_validate.py"
    for kind in ("train", "serve"):
        assert 0.7 <= data["coverage"][kind]["coverage"] <= 0.9, (kind, data["coverage"][kind])
        st = class_stats(EstimateClass(kind=kind, efficiency="validated"))
        assert st is not None and st.q10 < 1.0 < st.q90


def test_host_findings_use_the_server_of_the_offer_the_plan_rents() -> None:
    """A plan on a rental reads its host facts (power, cores, RAM) from that offer's server, not from the
    catalog server of the part with the most fields (regression: B200 power estimated from chip power
    although the CoreWeave offer runs on a DGX B200 of stated power)."""
    from gpuplan.advise.adapt_train import server_for

    inst = next(i for i in CAT.instances.values() if CAT.server(i.server).accelerator == "b200-sxm-180gb"
                and CAT.server(i.server).power_kw is not None and i.accelerator_count == 8)
    sv = server_for(CAT, "b200-sxm-180gb", 8, inst.id)
    assert sv is not None and sv.id == inst.server and sv.power_kw is not None
    own = server_for(CAT, "b200-sxm-180gb", 8)
    assert own is not None  # own cluster: the most complete server of the part


def test_mfu_break_even_never_lets_the_plan_miss_the_deadline() -> None:
    """Regression: a LoRA plan finishing in 5.9 of 7 days was said to 'stay the choice while its MFU is above
    7%' (cost parity only); at 7% it would take a month. Time is inversely proportional to MFU, so the
    break-even is at least MFU x time / deadline."""
    rec = {"accelerator": "x", "cost_usd": 100.0, "mfu": 0.36, "time_to_train_s": 5.9 * 86400,
           "confidence": {"efficiency": {"provenance": "default", "term": "t", "value": 0.55}, "price": None}}
    alt = {"accelerator": "y", "cost_usd": 500.0, "time_to_train_s": 5.6 * 86400}
    free = caveats(rec, alt, "cost", CAT)[0]["break_even"]
    assert free["mfu"] == pytest.approx(0.36 / 5.0)
    bound = caveats(rec, alt, "cost", CAT, deadline_days=7.0)[0]["break_even"]
    assert bound["mfu"] == pytest.approx(0.36 * 5.9 / 7.0) and bound["deadline_bound"]
    # a far deadline leaves the cost parity in charge
    assert "deadline_bound" not in caveats(rec, alt, "cost", CAT, deadline_days=365.0)[0]["break_even"]


def test_a_band_past_the_deadline_gets_a_caveat_naming_a_plan_whose_band_meets_it() -> None:
    """Regression: 32 x B200 for Llama 3 8B on 1e12 tokens takes 20.6 days against a 30-day deadline, but the top
    of its band is 34 days; nothing said so. The caveat names the plan the same rule picks among those whose
    band stays within the deadline."""
    cons = PlanConstraints(deadline_days=30)
    res = plan_training(SPEC, JOB, CAT, cons, tokens=1e12)
    rec = training_report(SPEC, JOB, CAT, cons, tokens=1e12, result=res)["recommendation"]
    assert rec["time_s"] <= 30 * 86400 < rec["band"]["time_to_train_s"][1]
    late = [c for c in rec["caveats"] if c["input"] == "deadline"]
    assert len(late) == 1
    safe = late[0]["safe_alternative"]
    assert safe is not None and safe["band"]["time_to_train_s"][1] <= 30 * 86400
    assert late[0]["value"]["band_high_days"] == pytest.approx(rec["band"]["time_to_train_s"][1] / 86400)
    # a deadline the band meets draws no caveat; nor does a plan without a deadline
    far = PlanConstraints(deadline_days=60)
    far_rec = training_report(SPEC, JOB, CAT, far, tokens=1e12,
                              result=plan_training(SPEC, JOB, CAT, far, tokens=1e12))["recommendation"]
    if far_rec["band"]["time_to_train_s"][1] <= 60 * 86400:
        assert not [c for c in far_rec["caveats"] if c["input"] == "deadline"]
    assert deadline_caveat(rec, res.plans, None, lambda pool: None, dict) is None


def test_a_memory_band_past_the_device_gets_a_caveat_naming_a_plan_whose_band_fits() -> None:
    """Regression: full fine-tuning Llama 3 8B recommended one B200 at 152 GiB of its 179 while the cross-validated
    memory band of its class reached 193 GiB; the plan said nothing of it. The caveat names the plan the same rule
    picks among those whose band top fits their device."""
    job = TrainingJob(seq_len=4096, global_batch=1024, method="full")
    cons = PlanConstraints(deadline_days=7, market="global", layout_family="data_parallel")
    res = plan_training(SPEC, job, CAT, cons, tokens=5e9)
    rec = training_report(SPEC, job, CAT, cons, tokens=5e9, result=res)["recommendation"]
    device = float(CAT.accelerator(rec["accelerator"]).memory_gib or 0) * 2**30
    tight = [c for c in rec["caveats"] if c["input"] == "memory"]
    assert rec["band"]["memory.total_bytes"][1] > device >= rec["memory_gib"] * 2**30
    assert len(tight) == 1 and tight[0]["value"]["device_gib"] == pytest.approx(device / 2**30)
    safe = tight[0]["safe_alternative"]
    assert safe is not None
    safe_device = float(CAT.accelerator(safe["accelerator"]).memory_gib or 0) * 2**30
    assert safe["band"]["memory.total_bytes"][1] <= safe_device
    text = " ".join(caveat_lines(rec, "en"))
    assert "top of its 80% band" in text and "GiB" in text
    assert "显存" in " ".join(caveat_lines(rec, "zh"))
    assert memory_caveat({**rec, "band": {}}, res.plans, CAT, lambda pool: None, dict) is None


def test_a_recommendation_critical_for_cross_node_tcp_names_the_best_plan_without_it() -> None:
    """Regression: `plan train -m qwen2.5-72b --method full_ft --market cn` recommended 64 per-card H20 rentals over
    assumed 25 Gbit/s TCP while its own advisor called the plan critical (`net.rdma_required`) and named no plan
    without cross-node TCP. The plan stays recommended (its time and cost pay the TCP fabric); the recommendation
    now also names the best plan on one node or on RDMA between nodes, chosen by the same rule."""
    import json

    from typer.testing import CliRunner

    from gpuplan.cli.main import app

    def plan(*args: str) -> dict[str, Any]:
        out = CliRunner().invoke(app, ["plan", "train", *args, "--json"])
        assert out.exit_code == 0, out.output
        doc: dict[str, Any] = json.loads(out.stdout)
        return doc

    doc = plan("-m", "qwen2.5-72b", "--tokens", "2e9", "--seq-len", "4096", "--method", "full_ft", "--deadline", "14",
               "--market", "cn")
    rec = doc["recommended"]
    assert rec["network"] == "eth-25-tcp" and rec["nodes"] > 1
    assert any(f["id"] == "net.rdma_required" and f["severity"] == "critical" for f in doc["findings"])
    alt = rec["rdma_alternative"]
    assert alt is not None and blocked_finding(alt, doc["not_recommended"]) is None
    assert alt["nodes"] == 1 or CAT.network(alt["network"]).rdma
    calm = plan("-m", "llama3-8b", "--tokens", "1e12", "--deadline", "30", "--market", "global")
    assert not any(f["id"] == "net.rdma_required" for f in calm["findings"])
    assert calm["recommended"]["rdma_alternative"] is None


def _thin_plan(provenance: str = "validated", rows: int = 1, sources: int = 1) -> dict[str, Any]:
    eff = {"provenance": provenance, "rows": rows, "sources": sources, "cv_median_ape": 0.34,
           "term": "compute_efficiency.v100-sxm2-32gb.bf16", "value": 0.39, "source": "", "thin": rows < 3}
    price = {"confidence": "high", "usd_per_device_hour": 1.0, "source": "s", "as_of": "2026-01-01",
             "instance": "x", "kind": "on_demand_hourly", "basis": "list", "distressed": False}
    return {"accelerator": "v100-sxm2-32gb", "mfu": 0.30, "time_to_train_s": 86400.0 * 5, "cost_usd": 2750.0,
            "confidence": {"level": "medium", "efficiency": eff, "price": price}}


def test_a_part_validated_on_one_run_is_not_a_confirmed_input_and_gets_a_caveat() -> None:
    """Regression: a Qwen2.5-7B plan in China offered '8 x v100-sxm2-32gb' as the 'best plan on confirmed inputs',
    its efficiency tuned on one published run (held-out error 34%). Thin evidence is not a confirmed input: it gets
    the efficiency caveat, in words that say how thin it is, and is not offered as the confirmed alternative."""
    thin, solid = _thin_plan(), _thin_plan(rows=68, sources=9)
    assert not is_confirmed(thin) and is_confirmed(solid)
    cav = caveats(thin, None, "cost", CAT)
    assert [c["input"] for c in cav] == ["efficiency"] and cav[0]["value"]["thin"]
    assert caveats(solid, None, "cost", CAT) == []
    text = " ".join(caveat_lines({"caveats": cav}, "en"))
    assert "only 1 published run(s)" in text and "not on a measurement" not in text
    assert "1 条公开实测" in " ".join(caveat_lines({"caveats": cav}, "zh"))


def test_a_plan_chosen_by_cost_gets_no_mfu_break_even_against_an_unpriced_alternative() -> None:
    """Regression: a cost-ranked H20 plan (494 USD, 4.9 days) whose confirmed alternative was an unpriced own 910B2
    cluster (23 h) read 'it stays the choice while its MFU is above 274%': the break-even compared times for a
    choice made on cost. Against a plan with no price there is no cost break-even; the text says why."""
    rec = _thin_plan(provenance="default", rows=0, sources=0)
    rec["confidence"]["price"]["confidence"] = "low"
    alt = {**_thin_plan(rows=68, sources=9), "accelerator": "ascend-910b2", "cost_usd": None,
           "time_to_train_s": 23.2 * 3600.0}
    eff = next(c for c in caveats(rec, alt, "cost", CAT) if c["input"] == "efficiency")
    assert eff["break_even"] is None and eff["alternative_unpriced"]
    line = caveat_lines({"caveats": [eff]}, "en")[0]
    assert "has no price" in line and "%" not in line.split(";")[1]
    assert "没有价格" in caveat_lines({"caveats": [eff]}, "zh")[0]
    priced = {**alt, "cost_usd": 5500.0}  # a priced alternative keeps its cost break-even
    be = next(c for c in caveats(rec, priced, "cost", CAT) if c["input"] == "efficiency")["break_even"]
    assert be["mfu"] == pytest.approx(rec["mfu"] * 2750.0 / 5500.0)


def test_the_disaggregated_line_says_when_its_weights_differ_from_the_recommendation() -> None:
    # issue 36: a DeepSeek-V3 recommendation in int4 was set against an fp8 disaggregated fleet with no word of it
    from gpuplan.render.trust_text import pd_line

    pd = {"accelerator": "h800-sxm5-80gb", "weights": "fp8", "usd_per_hour": 100.0, "simulated": True,
          "prefill": {"devices": 8}, "decode": {"devices": 16}}
    run = {"what_if_pd": pd, "recommended": {"cost_usd_per_hour": 350.0, "weights": "int4"}}
    line = pd_line(run, "en")
    assert "24" not in line and "8 + 16 x h800-sxm5-80gb fp8 at 100.00 USD/hour (-71% vs the recommendation, " \
        "which serves int4 weights: not like for like)" in line
    assert "int4" in pd_line(run, "zh")
    run["recommended"]["weights"] = "fp8"
    assert "like for like" not in pd_line(run, "en") and "(-71% vs the recommendation)" in pd_line(run, "en")
