"""The recommendation's rule line speaks of the recommended fleet, not of the cheapest listed one."""

from __future__ import annotations

from typing import Any

from gpuplan.render.report_text import recommended_rule_line
from gpuplan.web.views import recommendation


def _plan(acc: str, inst: str, util: float, growth: float, tenancy: str) -> dict[str, Any]:
    return {"accelerator": acc, "instance": inst, "replicas": 3, "layout": {"tp": 8, "pp": 1, "ep": 8},
            "weights": "int4", "utilization": util,
            "advice": {"tenancy": tenancy, "utilization": util, "p99_growth_at_headroom": growth}}


def test_the_rule_line_is_the_recommended_fleets_own() -> None:
    """Buyer check (web, DeepSeek-V3 in China): the cheapest fleet (A100, 96% utilization) is not recommended
    (market.export); the web page said 'Recommendation: h20-96gb - ... (utilization 96%, p99 growth 25%)', the A100's
    figures, while the H20 fleet runs at 75%. The CLI matched the plan; the web took the first one."""
    blocked = _plan("a100-sxm4-80gb", "cn-rental-8x-a100-80gb", 0.96, 0.25, "dedicated")
    rec_plan = _plan("h20-96gb", "compshare-h20-96gb", 0.75, 0.32, "dedicated")
    rec = {k: rec_plan[k] for k in ("accelerator", "instance", "replicas", "layout", "weights")}
    line = recommended_rule_line([blocked, rec_plan], rec, "en")
    assert "utilization 75%" in line and "32%" in line and "96%" not in line
    head = recommendation({"recommended": rec, "plans": [blocked, rec_plan]}, "en", kind="infer")
    assert head is not None and "h20-96gb" in head["head"] and "utilization 75%" in head["head"]
    assert "96%" not in head["head"]
    assert recommended_rule_line([blocked], rec, "zh") == ""


def test_the_layout_line_says_when_the_model_is_sharded() -> None:
    """Buyer check: Llama-3.1-70B LoRA on 4 x H100 80 GB read 'tp1 pp1 dp4 rc=full' in the CLI and web tables, a layout
    that cannot hold a 141 GB frozen base per card; the plan shards it (ZeRO-3). The short line now names the stage
    (and vpp), as the report's long line did."""
    from gpuplan.render.report_text import layout_text

    lay = {"tp": 1, "pp": 1, "dp": 4, "cp": 1, "ep": 1, "vpp": 1, "zero_stage": 3, "recompute": "full"}
    assert layout_text(lay) == "tp1 pp1 dp4 z3 rc=full"
    assert layout_text({**lay, "zero_stage": 0, "pp": 4, "vpp": 2, "cp": 2}) == "tp1 pp4 dp4 cp2 vpp2 rc=full"
