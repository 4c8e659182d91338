"""Charts and tables say what a plan costs, purchases included; exports are safe to open (issue 38)."""

from __future__ import annotations

from typing import Any

from gpuplan.render.report_md import compare_rows
from gpuplan.service.exports import csv_cell, plans_csv
from gpuplan.web.views import pareto_chart

DAY = 86400.0


def _plan(acc: str, days: float, cost: float | None, purchase: float | None = None) -> dict[str, Any]:
    return {"accelerator": acc, "devices": 256, "time_to_train_s": days * DAY, "cost_usd": cost,
            "purchase_usd": purchase}


def test_a_result_of_purchases_draws_their_capex_not_empty_axes() -> None:
    chart = pareto_chart({"plans": [_plan("ascend-910b", 20, None, 76e6), _plan("h20-96gb", 25, None, 39e6)],
                          "pareto": []}, "en")
    bought = [d for d in chart["data"] if d["name"].startswith("to buy")]
    assert len(bought) == 1 and bought[0]["y"] == [76e6, 39e6] and bought[0]["x"] == [20.0, 25.0]
    assert "annotations" not in chart["layout"]


def test_a_result_without_any_price_says_so_on_the_chart() -> None:
    chart = pareto_chart({"plans": [_plan("x", 20, None)], "pareto": []}, "zh")
    note = chart["layout"]["annotations"][0]["text"]
    assert "没有方案" in note and chart["layout"]["xaxis"]["visible"] is False


def test_compare_prices_a_purchase_as_the_plan_page_does() -> None:
    plan = {"accelerator": "ascend-910b", "devices": 2048, "days": 30.0, "time_s": 30 * DAY, "cost_usd": None,
            "purchase_usd": 76_000_000.0, "mfu": 0.4, "band": {}, "hardware_option": {"kind": "own"}}
    doc = {"options": [{"accelerator": "ascend-910b", "plan": plan, "findings": [], "memory_headroom": 0.2,
                        "ecosystem_risk": "medium"}]}
    _, rows = compare_rows(doc, "en")
    assert "76,000,000" in rows[0][4] and "no price" not in rows[0][4]


def test_csv_cells_never_start_a_formula(infer_plan: dict[str, Any]) -> None:
    assert csv_cell("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")"
    assert csv_cell("@SUM(A1)") == "'@SUM(A1)" and csv_cell("+1+1") == "'+1+1"
    assert csv_cell("-12.5") == "-12.5" and csv_cell(-3) == -3 and csv_cell("h100") == "h100"
    forged = {**infer_plan, "plans": [{**infer_plan["plans"][0], "accelerator": "=cmd|' /C calc'!A0"}]}
    text = plans_csv("infer", forged)  # an imported plan may carry any text
    assert ",'=cmd|" in text.replace('"', "") and ",=cmd" not in text.replace('"', "")


def test_markdown_exports_carry_no_raw_html(monkeypatch: Any) -> None:
    import gpuplan.render.report_md as md

    monkeypatch.setattr(md, "_infer", lambda doc, lang: f"# {doc['job']['model']} < 50 ms\n")
    out = md.render_markdown({"kind": "infer", "job": {"model": "<img src=x onerror=alert(1)>"}}, "en")
    assert out == "# &lt;img src=x onerror=alert(1)> &lt; 50 ms\n"
