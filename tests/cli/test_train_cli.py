"""estimate train, plan train and validate through the CLI: JSON contracts and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpuplan.cli.main import app

runner = CliRunner()
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "ground-truth"


def test_estimate_train_json_contract() -> None:
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3-8b", "--accelerator", "H100", "--num-accels", "16",
                              "--tp", "2", "--seq-len", "4096", "--global-batch", "128", "--tokens", "1e11", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("memory", "step_time_s", "breakdown_s", "tokens_per_s", "tokens_per_s_per_device",
                "tflops_per_device", "mfu", "hfu", "time_to_train_s", "device_hours", "cost", "layout", "assumptions"):
        assert key in out, key
    assert out["layout"]["tp"] == 2
    assert set(out["breakdown_s"]) >= {"compute", "tp_comm", "dp_comm", "pp_bubble", "pp_comm", "ep_comm",
                                       "cp_comm", "other"}
    assert out["memory"]["total_bytes"] > 0


@pytest.mark.parametrize(("args", "needle"), [
    (["--tp", "3"], "tp=3"),
    (["--tp", "2", "--pp", "2", "--dp", "2", "--cp", "1"], "tp*pp*dp*cp=8"),
    (["--tp", "16"], "tensor parallelism across the network"),
    (["--accelerator", "H1000"], "h100"),
    (["--num-accels", "0"], "num-accels"),
])
def test_estimate_train_bad_input(args: list[str], needle: str) -> None:
    base = ["estimate", "train", "-m", "llama3-8b", "--num-accels", "16"]
    if "--accelerator" not in args:
        base += ["--accelerator", "h100-sxm5-80gb"]
    res = runner.invoke(app, base + args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert needle.lower() in res.output.lower()


def test_model_that_fits_nowhere_says_so() -> None:
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3.1-405b", "--accelerator", "l40s-48gb",
                              "--num-accels", "8"])
    assert res.exit_code == 2 and "nearest feasible" in res.output


def test_plan_train_json() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64",
                              "--market", "cn", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    for key in ("candidates_evaluated", "plans", "pareto", "rejected"):
        assert key in out
    assert out["plans"] and out["candidates_evaluated"] > 0
    assert all("bottleneck" in p for p in out["plans"])


def test_plan_train_impossible_deadline_exits_2() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-70b", "--tokens", "1e13", "--max-devices", "16",
                              "--deadline", "1"])
    assert res.exit_code == 2 and "deadline" in res.output
    # the nearest feasible alternative: the quickest plan that fits, with the deadline it needs
    assert "fastest plan that fits takes" in res.output and "--deadline" in res.output


def test_plan_train_over_budget_names_the_cheapest_plan() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3-8b", "--tokens", "1e12", "--max-devices", "64",
                              "--budget", "1"])
    assert res.exit_code == 2 and "cheapest plan that fits costs" in res.output


def test_plan_train_model_too_big_for_the_cluster_names_the_smallest_fit() -> None:
    res = runner.invoke(app, ["plan", "train", "-m", "llama3.1-405b", "--tokens", "1e12", "--max-devices", "8"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "smallest cluster that fits is" in res.output


@pytest.mark.skipif(not (SHARED / "memory.csv").exists(), reason="shared ground truth absent")
def test_validate_json_shape() -> None:
    res = runner.invoke(app, ["validate", str(SHARED / "memory.csv"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out) >= {"cases", "median_ape", "p90_ape", "skipped"}
    assert {"id", "metric", "measured", "predicted", "ape"} <= set(out["cases"][0])


def test_validate_missing_file_exits_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["validate", str(tmp_path / "nope.csv")])
    assert res.exit_code == 2
