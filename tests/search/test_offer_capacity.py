"""Issue 37: an offer's capacity is data with provenance (stated, typical, unknown), --capacity overrides it, and an
unknown capacity is a caveat on the recommendation, not a silent cap of 64 devices."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from gpuplan.advise.report_train import training_report
from gpuplan.cli.main import app
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import Instance, load_catalog
from gpuplan.search.offers import hardware_options
from gpuplan.search.train_search import PlanConstraints
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
CAL = default_calibration()


def _instance(**extra: Any) -> Instance:
    base = CAT.instance("cn-rental-8x-h20").model_dump(mode="json", exclude_none=True)
    return Instance.model_validate({**base, **extra})


def test_capacity_provenance_stated_typical_unknown() -> None:
    assert CAT.instance("cn-rental-a100-80gb-ib-cluster").capacity == (256, "stated")
    assert CAT.instance("cn-rental-8x-h20").capacity == (None, "unknown")
    typical = _instance(typical_max_devices=512,
                        field_sources={"typical_max_devices": "a broker's usual lot (test)"})
    assert typical.capacity == (512, "typical")
    with pytest.raises(ValidationError, match="typical_max_devices needs its source"):
        _instance(typical_max_devices=512)


def test_capacity_override_caps_the_offer_and_says_so() -> None:
    h20 = CAT.accelerator("h20-96gb")
    opts = {o.offer: o for o in hardware_options(CAT, h20, CAL, market="cn") if o.offer}
    assert opts["cn-rental-8x-h20"].max_devices is None and opts["cn-rental-8x-h20"].capacity_provenance == "unknown"
    given = {o.offer: o for o in hardware_options(CAT, h20, CAL, market="cn", capacity={"cn-rental-8x-h20": 100})
             if o.offer}
    # 100 devices of 8-card servers: 12 whole servers, 96 devices
    assert given["cn-rental-8x-h20"].max_devices == 96 and given["cn-rental-8x-h20"].capacity_provenance == "user input"
    assert "--capacity cn-rental-8x-h20=100" in given["cn-rental-8x-h20"].capacity_basis
    every = [o for o in hardware_options(CAT, h20, CAL, market="cn", capacity={"*": 16}) if o.offer]
    assert every and all(o.max_devices is not None and o.max_devices <= 16 for o in every)


def test_qwen3_235b_in_china_within_45_days_rents_beside_buying_with_a_capacity_caveat() -> None:
    """Qwen3-235B-A22B continued pretraining on 1e12 tokens in China within 45 days. With every rental capped at 64
    devices the only answer was buying 2,048 H20 (39M USD). Now rentals of unknown capacity are planned at the size
    the job needs, and the recommendation says the capacity must be confirmed; buying stays listed beside it."""
    spec = get_preset("qwen3-235b-a22b").spec
    job = TrainingJob(seq_len=4096, global_batch=1024, method="full")
    doc = training_report(spec, job, CAT, PlanConstraints(market="cn", deadline_days=45), tokens=1e12)
    rec = doc["recommendation"]
    assert rec is not None and rec["offer"] is not None and rec["time_s"] <= 45 * 86400
    assert CAT.instances[rec["offer"]].market == "cn" and rec["devices"] > 64
    cap = [c for c in rec["caveats"] if c["input"] == "capacity"]
    assert cap and cap[0]["value"]["provenance"] == "unknown" and cap[0]["value"]["offer"] == rec["offer"]
    assert cap[0]["value"]["devices"] >= rec["devices"]
    # buying is listed beside it: own clusters with a purchase price that meet the deadline
    bought = [p for p in doc["plans"] if p.get("purchase_usd")]
    assert bought and all(p["days"] <= 45 for p in bought)
    # with the provider's quote of 256 devices the same offer is planned within it, and the caveat goes
    quoted = training_report(spec, job, CAT, PlanConstraints(market="cn", deadline_days=45,
                                                              capacity=((rec["offer"], 256),)), tokens=1e12)
    q = quoted["recommendation"]
    assert q is None or q["offer"] != rec["offer"] or q["devices"] <= 256
    assert q is None or not [c for c in q["caveats"] if c["input"] == "capacity" and c["value"]["offer"]
                             == rec["offer"]]


def test_capacity_option_names_the_field() -> None:
    runner = CliRunner()
    base = ["plan", "train", "-m", "llama3-8b", "--tokens", "1e9", "--market", "cn", "--lang", "en"]
    bad = runner.invoke(app, [*base, "--capacity", "cn-rental-8x-h2O=8"])
    assert bad.exit_code == 2 and "capacity='cn-rental-8x-h2O'" in bad.output
    assert "Did you mean cn-rental-8x-h20" in bad.output
    zero = runner.invoke(app, [*base, "--capacity", "*=0"])
    assert zero.exit_code == 2 and "capacity.*=0" in zero.output


def test_distressed_rents_are_a_listed_scenario_never_recommended_nor_on_the_front() -> None:
    """The 910B whole-server rents in China are all distressed (15,000 CNY a month for 8 cards): they used to be
    dropped. Now they are planned as a scenario at those rents, listed and marked price.distressed, and neither the
    recommendation nor the Pareto front rests on them."""
    from gpuplan.search.train_search import plan_training

    spec = get_preset("llama3-8b").spec
    job = TrainingJob(seq_len=4096, global_batch=1024, method="full")
    cons = PlanConstraints(market="cn", accelerators=("ascend-910b", "ascend-910b2"))
    res = plan_training(spec, job, CAT, cons, tokens=2e10)
    scen = [p for p in res.plans if p["hardware_option"]["scenario"] == "distressed"]
    assert {p["hardware_option"]["offer"] for p in scen} == {"cn-rental-8x-910b", "cn-rental-8x-910b2"}
    # 15,000 CNY / 7.15 / 8 cards / 730 h = 0.359 USD per device-hour, billed by the month
    p910 = next(p for p in scen if p["hardware_option"]["offer"] == "cn-rental-8x-910b")
    price = p910["confidence"]["price"]
    assert price["usd_per_device_hour"] == pytest.approx(15_000 / 7.15 / 8 / 730)
    assert price["distressed"] and price["confidence"] == "low"
    assert not any(p["hardware_option"].get("scenario") for p in res.pareto)
    doc = training_report(spec, job, CAT, cons, tokens=2e10, result=res)
    assert doc["not_recommended"]["ascend-910b (cn-rental-8x-910b)"] == "price.distressed"
    assert doc["recommendation"]["offer"] not in ("cn-rental-8x-910b", "cn-rental-8x-910b2")
