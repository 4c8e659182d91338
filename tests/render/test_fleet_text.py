"""A serving fleet's layout in words: attention data parallelism is named, not shown as tp1."""

from __future__ import annotations

from gpuplan.render.report_text import fleet_text


def test_attention_data_parallel_fleets_say_so_in_both_languages() -> None:
    dp = {"accelerator": "h200-sxm-141gb", "layout": {"tp": 1, "pp": 1, "ep": 8}, "weights": "fp8"}
    assert fleet_text(dp, "en") == "h200-sxm-141gb DP8 attention, EP8 fp8"
    assert "注意力 DP8" in fleet_text(dp, "zh")
    tp = {"accelerator": "h200-sxm-141gb", "layout": {"tp": 8, "pp": 1, "ep": 8}, "weights": "fp8"}
    assert fleet_text(tp, "en") == "h200-sxm-141gb tp8 ep8 fp8"
    pp = {"accelerator": "l40s-48gb", "layout": {"tp": 4, "pp": 2, "ep": 1}, "weights": "int4"}
    assert fleet_text(pp, "en") == "l40s-48gb tp4 pp2 int4"
