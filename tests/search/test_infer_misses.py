"""`plan infer` says why a part searched has no fleet (`parts_without_plan`). Regression test of a gap found by
using the planner as a buyer in China would: at 2a289bf, Qwen2.5-72B at 10 requests/s under a 60 ms TPOT limit
listed A100, H800 and H20 fleets and said nothing of the Ascend 910B2 and 910C it had searched (the rejection
counts only: 'tpot_slo': 16); the team's first question, "why no Ascend?", had no answer short of re-running with
--vendor huawei.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.search.infer_load import InferSlo
from gpuplan.search.infer_misses import parts_without_plan

runner = CliRunner()
ARGS = ["plan", "infer", "-m", "qwen2.5-72b", "--qps", "10", "--input-dist", "uniform:1000-3000", "--output-dist",
        "uniform:200-600", "--ttft-p99", "3", "--tpot-p99", "0.06", "--market", "cn"]


def test_each_part_without_a_fleet_is_named_with_its_reason() -> None:
    res = runner.invoke(app, [*ARGS, "--json"])
    exited(res, 0)
    out = json.loads(res.stdout)
    used = {p["accelerator"] for p in out["plans"]}
    missed = {m["accelerator"]: m for m in out["parts_without_plan"]}
    assert set(missed) == set(out["hardware_considered"]) - used
    ascend = missed["ascend-910b2"]
    assert ascend["reason"] == "tpot_slo" and ascend["tpot_s"] > 0.06 and ascend["tpot_on"].startswith("ascend-910b2")
    text = runner.invoke(app, ARGS, env={"COLUMNS": "200"})
    exited(text, 0)
    assert "No fleet on:" in text.output and "ascend-910b2 (best TPOT" in text.output
    zh = runner.invoke(app, [*ARGS, "--lang", "zh"], env={"COLUMNS": "200"})
    exited(zh, 0)
    assert "以下型号无可行方案" in zh.output and "ascend-910b2（即使空载" in zh.output


def test_the_web_recommendation_names_the_parts_without_a_fleet() -> None:
    from gpuplan.web.views import recommendation

    out = json.loads(runner.invoke(app, [*ARGS, "--json"]).stdout)
    lines = recommendation(out, "en", "infer")["lines"]  # type: ignore[index]
    assert any(ln.startswith("No fleet on:") and "ascend-910b2" in ln for ln in lines), lines


def test_reasons_follow_the_slo() -> None:
    slo = InferSlo(ttft_p99_s=1.0, tpot_p99_s=0.05)
    best = {"a": {"ttft_s": 0.5, "tpot_s": 0.08}, "b": {"ttft_s": 2.0, "tpot_s": 0.03},
            "c": {"ttft_s": 0.2, "tpot_s": 0.02}}
    got = {m["accelerator"]: m["reason"] for m in parts_without_plan(["a", "b", "c", "d", "e"],
                                                                     [{"accelerator": "e"}], best, slo)}
    assert got == {"a": "tpot_slo", "b": "ttft_slo", "c": "load", "d": "out_of_memory"}


def test_a_part_without_the_asked_weight_format_says_so() -> None:
    """DeepSeek-V3 in FP8 for China: the A100/A800 and Ascend parts have no fp8 peak; they were listed as 'no layout
    on its offers holds the model' (regression), which sent a buyer after memory instead of the weight format."""
    slo = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.08)
    got = parts_without_plan(["a100", "l20"], [], {}, slo, unsupported={"a100": ["fp8"]})
    assert [(m["accelerator"], m["reason"], m.get("weights")) for m in got] == [
        ("a100", "weights_unsupported", ["fp8"]), ("l20", "out_of_memory", None)]
    res = runner.invoke(app, ["plan", "infer", "-m", "deepseek-v3", "--weights", "fp8", "--qps", "5", "--input-len",
                              "2000", "--output-len", "500", "--ttft-p99", "3", "--tpot-p99", "0.08", "--market", "cn"],
                        env={"COLUMNS": "200"})
    exited(res, 0)
    assert "a800-sxm4-80gb (fp8 does not run here (the part has no peak for it" in res.output
