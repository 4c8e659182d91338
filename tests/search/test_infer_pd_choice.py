"""When the disaggregated fleet is recommended instead of the colocated one (search/infer_pd_choice.py)."""

from __future__ import annotations

from typing import Any

from gpuplan.render.trust_text import pd_line
from gpuplan.search.infer_pd_choice import disaggregated_recommendation


def _run(pd_usd: float, *, simulated: bool = True, pd_weights: str = "fp8") -> dict[str, Any]:
    plans = [{"accelerator": "h800-sxm5-80gb", "instance": "a", "replicas": 13, "devices": 104, "weights": "int4",
              "cost_usd_per_hour": 350.0},
             {"accelerator": "h800-sxm5-80gb", "instance": "a", "replicas": 16, "devices": 128, "weights": "fp8",
              "cost_usd_per_hour": 420.0}]
    pd = {"accelerator": "h800-sxm5-80gb", "weights": pd_weights, "usd_per_hour": pd_usd, "simulated": simulated,
          "prefill": {"devices": 8}, "decode": {"devices": 16}}
    return {"plans": plans, "recommended": plans[0], "what_if_pd": pd}


def test_a_simulated_cheaper_disaggregated_fleet_is_recommended_like_for_like() -> None:
    run = _run(100.0)
    choice = disaggregated_recommendation(run)
    assert choice is not None and choice["launch"] == "--emit sglang --disaggregated"
    assert choice["saving"] == 1.0 - 100.0 / 350.0
    # the recommendation is int4; the disaggregated fleet is fp8: the colocated fp8 fleet is named beside it
    assert choice["instead_of"]["weights"] == "int4" and choice["colocated_same_format"]["cost_usd_per_hour"] == 420.0
    run["recommended_disaggregated"] = choice
    line = pd_line(run, "en")
    assert line.startswith("Recommended instead: prefill/decode disaggregated (each pool simulated), 8 + 16 x "
                           "h800-sxm5-80gb fp8 at 100.00 USD/hour (-71% vs the colocated recommendation, which "
                           "serves int4 weights: not like for like)")
    assert "推荐" in pd_line(run, "zh")


def test_no_disaggregated_recommendation_unless_simulated_and_cheaper_at_its_own_format() -> None:
    assert disaggregated_recommendation(_run(100.0, simulated=False)) is None  # a closed form is never a plan
    assert disaggregated_recommendation(_run(360.0)) is None  # dearer than the recommendation
    # cheaper than the recommendation, but not than a colocated fleet at its own format (one not recommended, blocked)
    run = _run(340.0, pd_weights="int4")
    run["plans"].append({"accelerator": "x", "weights": "int4", "cost_usd_per_hour": 330.0})
    assert disaggregated_recommendation(run) is None
    assert disaggregated_recommendation({"plans": [], "recommended": None, "what_if_pd": None}) is None
    run = _run(100.0)
    assert "not a plan" in pd_line(run, "en")  # without the choice the line stays the advisor's aside
