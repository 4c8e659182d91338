"""search.infer_engines: when no fleet meets the SLO with the engine asked, the error names another engine that
does on the same parts (regression: Qwen2.5-72B on domestic parts was "infeasible" with vLLM-Ascend, a plain
MindIE plan)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.search.infer_engines import engine_that_meets, engine_what_ifs, with_engine_hint
from gpuplan.workload.engines import EngineProfile, load_engines

ARGS = ["plan", "infer", "-m", "qwen2.5-72b", "--qps", "10", "--input-len", "2048", "--output-len", "512",
        "--ttft-p99", "3", "--tpot-p99", "0.12", "--market", "cn", "--domestic-only", "--lang", "en"]


def test_the_error_names_the_engine_that_meets_the_slo_and_its_fleet_is_the_one_planned_with_it() -> None:
    failed = CliRunner().invoke(app, [*ARGS, "--engine", "vllm"], terminal_width=400)
    assert failed.exit_code == 2
    text = " ".join(failed.output.split())
    assert "with --engine mindie the SLO is met: ascend-910c" in text
    ok = json.loads(CliRunner().invoke(app, [*ARGS, "--engine", "mindie", "--json"]).stdout)
    best = ok["plans"][0]
    assert f"{best['cost_usd_per_hour']:.2f} USD/h" in text and f"on {best['instances']} x {best['instance']}" in text
    # without --engine the Ascend parts are planned with their stack's engine (MindIE): the same fleet, no error
    default = json.loads(CliRunner().invoke(app, [*ARGS, "--json"]).stdout)
    assert default["engine_default"]["by_stack"]["cann"]["engine"] == "mindie"
    mine = [p for p in default["plans"] if p["accelerator"] == best["accelerator"]]
    assert mine and mine[0]["engine"] == "mindie"
    assert mine[0]["cost_usd_per_hour"] == pytest.approx(best["cost_usd_per_hour"])


def _plan(cost: float) -> dict[str, Any]:
    return {"cost_usd_per_hour": cost, "accelerator": "x", "layout": {"tp": 1, "pp": 1, "ep": 1}, "weights": "bf16",
            "replicas": 1, "devices": 1, "instances": 1, "instance": "i", "ttft_s": {"p99": 1.0},
            "tpot_s": {"p99": 0.05}}


def test_the_cheapest_deployable_engine_wins_and_the_baseline_is_never_suggested() -> None:
    costs = {"sglang": 30.0, "lmdeploy": 20.0, "generic": 1.0}

    def replan(p: EngineProfile) -> list[dict[str, Any]]:
        if p.id not in costs:
            raise InputError(field="slo", value="x", allowed="y")
        return [_plan(costs[p.id])]

    assert load_engines()["generic"].baseline
    eid, plan = engine_that_meets("vllm", replan)  # type: ignore[misc]
    assert eid == "lmdeploy" and plan["cost_usd_per_hour"] == 20.0
    assert engine_that_meets("vllm", lambda p: []) is None


@pytest.mark.parametrize("field", ["model", "hardware", "trust", "engine"])
def test_errors_another_engine_cannot_cure_are_left_alone(field: str) -> None:
    exc = InputError(field=field, value="v", allowed="a", hint="h")
    assert with_engine_hint(exc, "vllm", lambda p: [_plan(1.0)]) is exc


def test_a_domestic_plan_on_vllm_hears_that_mindie_serves_it_for_a_third_less(tmp_path: Path) -> None:
    """Regression: Qwen2.5-72B at 10 req/s on domestic parts, TPOT 200 ms: vLLM-Ascend needs 22 x 910C for 35.64
    USD/h, MindIE 14 for 23.76; the plan said nothing about it."""
    args = [*(a if a != "0.12" else "0.2" for a in ARGS), "--engine", "vllm"]  # vLLM named: MindIE is the what-if
    report = tmp_path / "plan.json"
    res = CliRunner().invoke(app, [*args, "--report", str(report)])
    assert res.exit_code == 0, res.output
    findings = {f["id"]: f for f in json.loads(report.read_text(encoding="utf-8"))["findings"]}
    x = findings["serve.engine_alternative"]
    assert "MindIE (Ascend) on the same ascend-910c" in x["message"]["en"] and "--engine mindie" in x["fix"]["en"]
    plan = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    alt = plan["what_if_engine"]  # named once, for the recommended part
    assert alt["engine"] == "mindie" and alt["accelerator"] == "ascend-910c"
    assert alt["usd_per_hour"] < 0.8 * plan["recommended"]["cost_usd_per_hour"]


def test_cuda_plans_are_not_replanned_per_engine() -> None:
    calls: list[str] = []

    def replan(p: EngineProfile) -> list[dict[str, Any]]:
        calls.append(p.id)
        return [_plan(1.0)]

    assert engine_what_ifs("vllm", "cuda", replan) == [] and calls == []
    out = engine_what_ifs("vllm", "cann", replan)
    assert calls and all("cann" in load_engines()[e].stacks for e in calls) and "generic" not in calls
    assert [r["engine"] for r in out] == calls


def test_compare_says_which_engine_makes_an_infeasible_part_feasible() -> None:
    """`compare` re-plans each part without what-ifs, but a part no vLLM fleet fits is named with the engine that
    fits it (regression: 910C read "no feasible plan" beside H20 where MindIE serves it)."""
    res = CliRunner().invoke(app, ["compare", "-m", "qwen2.5-72b", "--qps", "10", "--ttft-p99", "3", "--tpot-p99",
                                   "0.12", "--input-len", "2048", "--output-len", "512", "--accelerators",
                                   "ascend-910c,h20-96gb", "--engine", "vllm", "--lang", "en"], terminal_width=400)
    assert res.exit_code == 0, res.output
    assert "with --engine mindie the SLO is met: ascend-910c" in " ".join(res.output.split())
