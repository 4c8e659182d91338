"""Own clusters without a rental price are compared by what buying them costs, not by device-hours across parts.

Regression tests of a defect found by using the planner as a buyer would: at 2a289bf, `plan train -m llama3-70b
--tokens 1e12 --deadline 30 --market global` left only own clusters, ranked them by device-hours and recommended
1152 GB200 (4.8 days): a GB200 device-hour counts as much as an H100 one there, so the fastest part per device won
whatever its servers cost. The catalog prices eight servers (servers.yaml `list_price`); a plan on one of them now
carries `purchase_usd` (whole servers at that price) and the rule compares those, names the parts it could not
compare, and the recommendation carries a caveat when the list price is a low-confidence figure.
"""

from __future__ import annotations

from typing import Any

from gpuplan.advise.report_train import recommend_rule, training_report
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import load_catalog
from gpuplan.render.report_text import rule_line
from gpuplan.render.trust_text import caveat_lines
from gpuplan.search.offers import hardware_options, server_purchase
from gpuplan.search.train_search import PlanConstraints
from gpuplan.service.train_options import training_job
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
DAY = 86400.0


def _own(acc: str, devices: int, days: float, device_hours: float, purchase: float | None) -> dict[str, Any]:
    return {"accelerator": acc, "cost_usd": None, "devices": devices, "time_to_train_s": days * DAY,
            "device_hours": device_hours, "purchase_usd": purchase}


def test_own_clusters_compare_on_purchase_not_device_hours() -> None:
    fast = _own("gb200-186gb", 288, 19.0, 131e3, 18.4e6)  # fewest device-hours, dearest servers
    cheap = _own("h100-sxm5-80gb", 512, 28.7, 352e3, 12.7e6)
    unknown = _own("h200-sxm-141gb", 512, 28.3, 348e3, None)
    best, rule = recommend_rule([fast, cheap, unknown], 0.1, 30, 365, deadline_days=30)  # type: ignore[misc]
    assert best is cheap and rule["measure"] == "purchase" and rule["not_compared"] == ["h200-sxm-141gb"]
    assert "h200-sxm-141gb" in rule_line({"rule": rule}, "en")
    # without any purchase price the rule is the device-hours rule it was
    best, rule = recommend_rule([{**fast, "purchase_usd": None}, unknown], 0.1, 30, 365,  # type: ignore[misc]
                                deadline_days=30)
    assert best["accelerator"] == "gb200-186gb" and rule["measure"] == "device_hours"


def test_a_purchase_priced_cluster_that_misses_the_target_does_not_block_one_that_meets_it() -> None:
    late = _own("h100-sxm5-80gb", 64, 200.0, 352e3, 1.6e6)  # the only priced part cannot finish in time
    ontime = _own("h200-sxm-141gb", 512, 28.3, 348e3, None)
    best, rule = recommend_rule([late, ontime], 0.1, 30, 365, deadline_days=30)  # type: ignore[misc]
    assert best is ontime and rule["measure"] == "device_hours"


def test_an_own_option_carries_its_servers_list_price() -> None:
    cal = default_calibration()
    own = [o for o in hardware_options(CAT, CAT.accelerator("gb200-186gb"), cal) if o.kind == "own"]
    assert own and own[0].purchase is not None
    buy = own[0].purchase
    assert buy.server == "gb200-nvl72" and buy.devices_per_server == 72
    assert buy.usd(288) == 4 * buy.usd_per_server and buy.usd(289) == 5 * buy.usd_per_server
    assert server_purchase(CAT, None) is None


def test_the_70b_month_plan_recommends_by_purchase() -> None:
    spec = get_preset("llama3-70b").spec
    job = training_job("pretrain", 4096, None, "bf16")
    # the offers supply at most 64 devices (--capacity *=64, the cap every unstated offer had before issue 37):
    # none meets the month, so the clusters to buy are compared on what buying them costs
    cons = PlanConstraints(deadline_days=30, market="global", capacity=(("*", 64),),
                           accelerators=("gb200-186gb", "b200-sxm-180gb", "h100-sxm5-80gb", "h200-sxm-141gb"))
    doc = training_report(spec, job, CAT, cons, tokens=1e12)
    rec = doc["recommendation"]
    assert rec["rule"]["measure"] == "purchase" and rec["purchase_usd"]
    assert rec["rule"]["not_compared"] == ["h200-sxm-141gb"]
    bought = [p for p in doc["plans"] if p.get("purchase_usd") and p["days"] <= 30]
    assert rec["purchase_usd"] <= 1.1 * min(p["purchase_usd"] for p in bought)
    # issue 37: the DGX H100 is 310k USD (270-350k, three sources, medium), not 199k (one source, low), so 512 x H100
    # cost 64 x 310k = 19.84M and 256 x B200 (24.0 days) at the NPN list price 32 x 485k = 15.52M wins; both prices
    # are medium confidence: no purchase caveat (a low-confidence one is flagged: the Atlas test below)
    assert (rec["accelerator"], rec["devices"], rec["purchase_usd"]) == ("b200-sxm-180gb", 256, 32 * 485_000)
    h100 = [p for p in bought if p["accelerator"] == "h100-sxm5-80gb"]
    assert min(p["purchase_usd"] for p in h100) == 64 * 310_000
    assert rec["purchase"]["confidence"] == "medium"
    assert not [c for c in rec["caveats"] if c["input"] == "purchase"]


def test_a_purchase_caveat_against_an_alternative_without_a_purchase_price_says_so() -> None:
    """Qwen2.5-72B in China, 60 days: the recommendation (Atlas 800T A2, a low-confidence list price) printed "no plan
    on confirmed inputs to compare with" and, one line below, the best plan on confirmed inputs (910B2, unpriced)."""
    spec = get_preset("qwen2.5-72b").spec
    job = training_job("pretrain", 4096, None, "bf16")
    cons = PlanConstraints(deadline_days=60, market="cn", accelerators=("ascend-910b", "ascend-910b2"))
    rec = training_report(spec, job, CAT, cons, tokens=1e12)["recommendation"]
    buy = [c for c in rec["caveats"] if c["input"] == "purchase"]
    assert rec["accelerator"] == "ascend-910b" and buy, rec["caveats"]
    assert rec["confirmed_alternative"]["accelerator"] == "ascend-910b2"
    assert not rec["confirmed_alternative"].get("purchase_usd") and buy[0]["alternative_unpriced"] is True
    text = " ".join(caveat_lines(rec, "en"))
    assert "no plan on confirmed inputs to compare with" not in text
    assert "has no purchase price in the catalog" in text
