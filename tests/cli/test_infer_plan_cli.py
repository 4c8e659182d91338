"""gpuplan plan infer through the CLI: JSON contract, trace input, exit code 2 with a clear message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app

runner = CliRunner()
BASE = ["plan", "infer", "-m", "llama3.1-8b", "--ttft-p99", "2", "--tpot-p99", "0.05"]


def test_plan_infer_json_contract() -> None:
    res = runner.invoke(app, [*BASE, "--qps", "5", "--input-dist", "uniform:256-1024", "--output-len", "128",
                              "--market", "global", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("candidates_evaluated", "plans", "rejected", "simulated", "load", "slo", "terms"):
        assert key in out, key
    p = out["plans"][0]
    for key in ("accelerator", "instance", "instances", "layout", "weights", "replicas", "devices",
                "cost_usd_per_hour", "cost_usd_per_million_input_tokens", "cost_usd_per_million_output_tokens",
                "utilization", "ttft_s", "tpot_s", "e2e_s", "advice", "provenance"):
        assert key in p, key
    assert set(p["ttft_s"]) >= {"p50", "p90", "p99"}
    assert p["ttft_s"]["p99"] <= 2 and p["tpot_s"]["p99"] <= 0.05
    assert out["load"]["output_len"] == "fixed:128"


def test_plan_infer_trace(tmp_path: Path) -> None:
    f = tmp_path / "trace.csv"
    rows = "\n".join(f"{i * 0.25},{300 + 7 * i % 500},{50 + 3 * i % 100}" for i in range(400))
    f.write_text("arrival_s,input_len,output_len\n" + rows + "\n", encoding="utf-8")
    res = runner.invoke(app, [*BASE, "--trace", str(f), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["load"]["qps"] == pytest.approx(4.0)
    assert out["plans"]
    clash = runner.invoke(app, [*BASE, "--trace", str(f), "--input-len", "100"])
    assert clash.exit_code == 2 and "left out with --trace" in clash.output


@pytest.mark.parametrize(("args", "needle"), [
    (["--qps", "0"], "qps"),
    (["--qps", "-2"], "qps"),
    (["--qps", "3", "--input-len", "0"], "input-len"),
    (["--qps", "3", "--output-dist", "uniform:9-3"], "output-dist"),
    (["--qps", "3", "--ttft-p99", "0.0001"], "best achievable p99 TTFT"),
    ([], "--trace"),
    (["--qps", "3", "--engine", "vlm"], "vllm"),
    (["--qps", "3", "--term", "load_headroom"], "NAME=NUMBER"),
])
def test_plan_infer_bad_input(args: list[str], needle: str) -> None:
    base = [a for a in BASE if a not in ("--ttft-p99", "2")] if "--ttft-p99" in args else BASE
    res = runner.invoke(app, [*base, *args])
    exited(res, 2)
    assert needle in res.output


def test_plan_infer_model_too_big_for_the_device_limit() -> None:
    res = runner.invoke(app, ["plan", "infer", "-m", "llama3.1-405b", "--qps", "1", "--ttft-p99", "5",
                              "--tpot-p99", "0.2", "--max-devices", "1"])
    assert res.exit_code == 2
    assert "even at int4" in res.output and "nearest feasible" in res.output


def test_prices_per_million_tokens_keep_three_significant_figures() -> None:
    """Long prompts on cheap parts cost fractions of a cent per million input tokens: '0.00825', not '0.01'."""
    from gpuplan.units import sig

    args = ["plan", "infer", "-m", "qwen2.5-7b", "--qps", "20", "--input-len", "4000", "--output-len", "16",
            "--ttft-p99", "10", "--tpot-p99", "0.5", "--lang", "en"]
    data = runner.invoke(app, [*args, "--json"])
    assert data.exit_code == 0 and data.exception is None, data.output
    first = json.loads(data.stdout)["plans"][0]
    cheap = first["cost_usd_per_million_input_tokens"]
    assert cheap < 0.01
    res = runner.invoke(app, args)
    assert res.exit_code == 0 and res.exception is None, res.output
    assert f"{sig(cheap)} |" in res.stdout and sig(cheap) == f"{cheap:.3g}"
    assert sig(first["cost_usd_per_million_output_tokens"]) in res.stdout
    assert [sig(x) for x in (0.0012345, 0.09996, 1.333, 12.345, 1234.5)] == ["0.00123", "0.100", "1.33", "12.3",
                                                                             "1,234"]


def test_the_table_names_the_disaggregated_fleet_the_market_allows() -> None:
    """One line under the plans: the disaggregated fleet gpuplan sized (never a plan), against the recommendation."""
    args = ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-len", "8000", "--output-len", "500",
            "--ttft-p99", "3", "--tpot-p99", "0.04", "--market", "global", "--top", "2"]
    plan = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    pd, rec = plan["what_if_pd_all"][0], plan["recommended"]
    out = " ".join(CliRunner().invoke(app, [*args, "--lang", "en"], terminal_width=400).output.split())
    diff = pd["usd_per_hour"] / rec["cost_usd_per_hour"] - 1.0
    # like for like: the line names both weight formats where they differ
    formats = (f", which serves {rec['weights']} weights: not like for like" if pd["weights"] != rec["weights"]
               else "")
    assert (f"Prefill/decode disaggregated (each pool simulated, not a plan): the cheapest the market allows, "
            f"{pd['prefill']['devices']} + {pd['decode']['devices']} x {pd['accelerator']} {pd['weights']} at "
            f"{pd['usd_per_hour']:,.2f} USD/hour ({diff:+.0%} vs the recommendation{formats})") in out


def test_an_slo_that_looks_like_milliseconds_is_flagged_on_stderr_and_in_the_json() -> None:
    res = runner.invoke(app, ["plan", "infer", "-m", "llama3.1-8b", "--qps", "2", "--ttft-p99", "3000",
                              "--tpot-p99", "0.1", "--market", "global", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["slo"]["ttft_p99_s"] == 3000 and "pass 3)" in out["slo"]["warning"]["en"]
    assert "--ttft-p99 3000" in res.stderr
    ok = json.loads(runner.invoke(app, ["plan", "infer", "-m", "llama3.1-8b", "--qps", "2", "--ttft-p99", "3",
                                        "--tpot-p99", "0.1", "--market", "global", "--json"]).stdout)
    assert "warning" not in ok["slo"]


def test_plan_infer_names_the_router_it_sized_for() -> None:
    from cli_result import one_line_error

    args = [*BASE, "--qps", "5", "--input-len", "512", "--output-len", "128", "--market", "global"]
    res = runner.invoke(app, [*args, "--json", "--router", "random"])
    exited(res, 0)
    out = json.loads(res.stdout)
    assert out["router"] == "random" and {p["router"] for p in out["plans"]} == {"random"}
    assert "random router" in out["plans"][0]["provenance"]
    res = runner.invoke(app, [*args, "--lang", "en", "--top", "2"])
    exited(res, 0)
    assert "fewest outstanding tokens (least-load" in " ".join(res.stdout.split())
    one_line_error(runner.invoke(app, [*args, "--router", "fastest"]), "router")


DAY_CSV = "hour,qps\n" + "".join(f"{h},{8 if 9 <= h < 18 else 1}\n" for h in range(24))


def test_plan_infer_traffic_schedule_and_mix(tmp_path: Path) -> None:
    f = tmp_path / "day.csv"
    f.write_text(DAY_CSV, encoding="utf-8")
    res = runner.invoke(app, [*BASE, "--traffic", str(f), "--output-len", "128", "--market", "global", "--json"])
    exited(res, 0)
    out = json.loads(res.stdout)
    assert out["load"]["qps"] == 8.0 and out["traffic"] == {"label": "day.csv", "weekly": False, "peak_qps": 8.0,
                                                            "rows": 24}
    rec, sched, mix = out["recommended"], out["schedule"], out["purchase_mix"]
    assert mix["fleet"]["accelerator"] == rec["accelerator"] and mix["fleet"]["replicas"] == rec["replicas"]
    assert max(s["replicas"] for s in sched) == rec["replicas"]
    # the scale-up time is the sum of its sourced terms; each hour keeps up the need of the next `lead` hours
    up = mix["scale_up"]
    assert up["total_s"] == up["instance_start_s"] + up["weights_read_s"] + up["engine_start_s"]
    lead = up["lead_hours"]
    for i, s in enumerate(sched):
        ahead = [sched[(i + k) % 24]["replicas_needed"] for k in range(lead + 1)]
        assert s["replicas"] == max(ahead)
    # the chosen mix is the cheapest firm option, and its monthly cost is what the schedule's hours add up to
    firm = [o for o in mix["options"] if o["burst"] != "spot"]
    assert mix["chosen"]["monthly_usd"] == min(o["monthly_usd"] for o in firm)
    assert sum(s["cost_usd_per_hour"] for s in sched) * 730 / 24 == pytest.approx(mix["chosen"]["monthly_usd"])
    # a derived (unpublished) term rate is flagged, with the best mix on published rates beside it
    assert mix["chosen_rate_derived"] == bool(mix["rates"][mix["chosen"]["commit"]]["derived"])
    pub = mix["chosen_published"]
    assert pub is not None and not mix["rates"][pub["commit"]]["derived"]
    assert pub["monthly_usd"] >= mix["chosen"]["monthly_usd"]
    assert {"scale_up_instance_start_s", "scale_up_read_gb_per_s", "scale_up_engine_start_s",
            "traffic_min_replicas"} <= set(mix["terms"])


def test_plan_infer_traffic_table_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "day.csv"
    f.write_text(DAY_CSV, encoding="utf-8")
    res = runner.invoke(app, [*BASE, "--traffic", str(f), "--output-len", "128", "--market", "global",
                              "--lang", "zh"])
    exited(res, 0)
    assert "采购组合" in res.output and "扩容时间" in res.output


@pytest.mark.parametrize(("extra", "text", "field"), [
    (["--qps", "5"], DAY_CSV, "qps"),
    ([], "hour,qps\n0,1\nnine,2\n", "traffic line 3: hour"),
    ([], "hour,qps\n" + "".join(f"{h},1\n" for h in range(23)), "traffic"),
])
def test_plan_infer_traffic_bad_input_is_one_line(tmp_path: Path, extra: list[str], text: str, field: str) -> None:
    from cli_result import one_line_error

    f = tmp_path / "day.csv"
    f.write_text(text, encoding="utf-8")
    res = runner.invoke(app, [*BASE, "--traffic", str(f), *extra])
    one_line_error(res, field)


def test_plan_infer_traffic_missing_file_is_one_line(tmp_path: Path) -> None:
    from cli_result import one_line_error

    res = runner.invoke(app, [*BASE, "--traffic", str(tmp_path / "none.csv")])
    one_line_error(res, "traffic")
