"""`estimate train` and `estimate infer` say how sure they are, as plans do: `confidence`, `band`, `band_basis` in
the JSON, the bands in brackets and the "How sure" lines under the table. Regression tests of defects found by using
the estimators as a buyer would: at 2a289bf both printed their figures as "estimated" with no band and no
confidence, and `estimate infer` called a Qwen2.5-72B decode step on eight Ascend 910B2 "memory" bound when 76% of
it was vllm-ascend's per-layer host time (the roofline side of the linear layers, not what the step waits on).
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.search.plan_trust import LEVELS

runner = CliRunner()
TRAIN = ["estimate", "train", "-m", "llama3-8b", "--accelerator", "h100-sxm5-80gb", "--num-accels", "64"]
INFER = ["estimate", "infer", "-m", "qwen2.5-72b", "--accelerator", "ascend-910b2", "--num-accels", "8", "--tp", "8",
         "--input-len", "2000", "--output-len", "400"]


def _json(args: list[str]) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    exited(res, 0)
    return json.loads(res.stdout)


def _inside(value: float, band: list[float]) -> bool:
    return band[0] <= value <= band[1] and band[0] < band[1]


def test_estimate_train_carries_a_plans_confidence_and_bands() -> None:
    out = _json([*TRAIN, "--tokens", "1e12"])
    conf = out["confidence"]
    assert conf["level"] in LEVELS and conf["efficiency"]["provenance"] == "validated"
    assert conf["efficiency"]["rows"] > 0 and conf["price"] is not None and conf["costed"] is True
    for name in ("step_time_s", "tokens_per_s", "mfu", "time_to_train_s", "device_hours"):
        v = out[name]
        assert _inside(v, out["band"][name]), (name, v, out["band"][name])
    for kind in ("usd_on_demand", "usd_spot"):
        assert _inside(out["cost"][kind], out["band"][f"cost.{kind}"]), kind
    assert set(out["band_basis"]) >= {"throughput", "campaign"}
    assert out["layout"]["global_batch"] == 1024  # the ~4M-token default, run at this layout


def test_estimate_train_table_prints_bands_and_how_sure() -> None:
    res = runner.invoke(app, [*TRAIN, "--tokens", "1e12"], env={"COLUMNS": "220"})
    exited(res, 0)
    assert "How sure: confidence" in res.output and "80% bands" in res.output
    step = next(ln for ln in res.output.splitlines() if "step time" in ln)
    assert "(" in step and "-" in step.split("(")[1]  # 6.858 (6.303-11.187) s
    zh = runner.invoke(app, [*TRAIN, "--lang", "zh"], env={"COLUMNS": "220"})
    exited(zh, 0)
    assert "可信程度" in zh.output and "未计算成本" in zh.output  # no --tokens: nothing costed


def test_estimate_infer_carries_confidence_and_bands() -> None:
    out = _json([*INFER, "--batch", "1"])
    assert out["confidence"]["level"] in LEVELS and out["confidence"]["costed"] is False
    for name in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s"):
        assert _inside(out[name], out["band"][name]), name
    assert set(out["band_basis"]) == {"latency", "throughput"}


def test_a_decode_step_of_host_overhead_is_called_so() -> None:
    out = _json([*INFER, "--batch", "1"])
    step = out["decode_step"]
    assert step["bound"] == "memory"  # the linear layers' roofline side
    assert step["dominant"] == "overhead" and step["shares"]["overhead"] > 0.5
    assert abs(sum(step["shares"].values()) - 1.0) < 1e-9
    res = runner.invoke(app, [*INFER, "--batch", "1"], env={"COLUMNS": "220"})
    exited(res, 0)
    assert "host and per-layer overhead" in res.output
    big = _json(["estimate", "infer", "-m", "llama3.1-8b", "--accelerator", "h100-sxm5-80gb", "--input-len", "1024",
                 "--output-len", "128", "--batch", "64"])
    assert big["decode_step"]["dominant"] == "memory"


def test_under_a_request_rate_the_load_has_no_band() -> None:
    out = _json(["estimate", "infer", "-m", "llama3.1-8b", "--accelerator", "h100-sxm5-80gb", "--input-len", "1024",
                 "--output-len", "128", "--qps", "2", "--num-requests", "300"])
    assert _inside(out["ttft_s"]["p99"], out["band"]["ttft_s.p99"])
    assert "requests_per_s" not in out["band"]  # the offered load is the user's, not an estimate
