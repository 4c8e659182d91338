"""plan infer --workload FILE.yaml: several models, each at its own SLO, their total and the packing of replicas."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_result import exited, one_line_error
from gpuplan.cli.main import app
from gpuplan.workload.serving_mix import read_workload

EXAMPLE = Path(__file__).parents[2] / "examples" / "workload_qwen3.yaml"
# two small chat models on Lambda, whose offers are whole 8-GPU servers: each fleet alone fills part of one
SMALL = """models:
  - {model: qwen3-32b, qps: 2, input_len: 2000, output_len: 300, ttft_p99_s: 2, tpot_p99_s: 0.05}
  - {model: qwen3-8b, qps: 5, input_len: 2000, output_len: 300, ttft_p99_s: 2, tpot_p99_s: 0.05}
"""


def _file(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "workload.yaml"
    f.write_text(text, encoding="utf-8")
    return f


@cache
def _small(path: str) -> dict[str, Any]:
    res = CliRunner().invoke(app, ["plan", "infer", "--workload", path, "--provider", "lambda", "--json"])
    exited(res, 0)
    out: dict[str, Any] = json.loads(res.stdout)
    return out


@pytest.fixture(scope="module")
def small_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _file(tmp_path_factory.mktemp("wl"), SMALL)


def test_each_model_alone_and_two_tp_replicas_of_different_models_packed_on_one_server(small_file: Path) -> None:
    """Qwen3-32B at 2 req/s fits one TP4 replica and Qwen3-8B at 5 req/s one TP2 replica on A100 40GB: alone each
    rents a whole 8x A100 40GB server (15.92 USD/h), packed they share one (6 of 8 devices): 15.92 instead of 31.84."""
    w = _small(str(small_file))["workload"]
    names = [m["name"] for m in w["models"]]
    assert names == ["qwen3-32b", "qwen3-8b"]
    for m in w["models"]:
        rec = m["recommended"]
        assert rec["ttft_s"]["p99"] <= m["slo"]["ttft_p99_s"] and rec["tpot_s"]["p99"] <= m["slo"]["tpot_p99_s"]
        assert rec["instance"] == "lambda-8x-a100-40gb" and rec["instances"] == 1
    assert w["separate_usd_per_hour"] == pytest.approx(sum(m["cost_usd_per_hour"] for m in w["models"]))
    assert w["same_instance"] == [{"instance": "lambda-8x-a100-40gb", "models": names}]
    pk = w["packing"]
    assert pk["instance"] == "lambda-8x-a100-40gb" and pk["models"] == names
    assert (pk["instances_apart"], pk["instances_packed"], pk["devices_packed"]) == (2, 1, 6)
    assert [f["layout"]["tp"] for f in pk["fleets"]] == [4, 2]
    assert w["total_usd_per_hour"] == pytest.approx(pk["usd_per_instance_hour"]) == pytest.approx(15.92)
    assert w["separate_usd_per_hour"] == pytest.approx(31.84)


def test_a_model_of_the_file_gets_the_fleet_plan_infer_gives_it_alone(small_file: Path) -> None:
    w = _small(str(small_file))["workload"]
    alone = json.loads(CliRunner().invoke(app, [
        "plan", "infer", "-m", "qwen3-8b", "--qps", "5", "--input-len", "2000", "--output-len", "300", "--ttft-p99",
        "2", "--tpot-p99", "0.05", "--provider", "lambda", "--json"]).stdout)["recommended"]
    mine = w["models"][1]["recommended"]
    for k in ("accelerator", "instance", "replicas", "layout", "weights", "cost_usd_per_hour"):
        assert mine[k] == alone[k], k


def test_the_table_lists_each_model_the_total_and_the_packing_en_and_zh(small_file: Path) -> None:
    args = ["plan", "infer", "--workload", str(small_file), "--provider", "lambda"]
    en = " ".join(CliRunner().invoke(app, [*args, "--lang", "en"], terminal_width=400).output.split())
    assert "Inference plans for 2 models (workload.yaml), each at its own rate and SLO" in en
    assert "total," in en and "31.84" in en  # the last row (the table wraps its cells)
    assert ("fit on 1 x lambda-8x-a100-40gb (6 of 8 devices in use) instead of 2 apart; with every other model on "
            "its own fleet the total is 15.92 USD/hour, 15.92 less than separate fleets (31.84)") in en
    zh = " ".join(CliRunner().invoke(app, [*args, "--lang", "zh"], terminal_width=400).output.split())
    assert "可放进 1 台 lambda-8x-a100-40gb（8 张卡中用 6 张）" in zh


def test_the_example_file_is_valid() -> None:
    mix = read_workload(EXAMPLE.read_text(encoding="utf-8"), label=EXAMPLE.name)
    assert [(m.model, m.qps) for m in mix.models] == [("qwen3-32b", 5.0), ("qwen3-8b", 20.0)]


@pytest.mark.parametrize(("text", "field"), [
    ("models:\n  - {model: qwen3-8b, qps: 5, ttft_p99_s: 2, tpot_p99_s: 0.05, rate: 3}\n", "workload.models[0].rate"),
    ("models:\n  - {model: qwen3-8b, qps: -1, ttft_p99_s: 2, tpot_p99_s: 0.05}\n", "workload.models[0].qps"),
    ("models:\n  - {model: qwen3-8b, qps: 1, ttft_p99_s: 2}\n", "workload.models[0].tpot_p99_s"),
    ("models:\n  - {model: qwen3-8b, qps: 1, input_len: 9, input_dist: 'uniform:1-9', ttft_p99_s: 2, "
     "tpot_p99_s: 0.05}\n", "workload.models[0].input_dist"),
    ("models:\n  - {model: qwen3-8b, qps: 1, ttft_p99_s: 2, tpot_p99_s: 0.05}\n"
     "  - {model: qwen3-8b, qps: 2, ttft_p99_s: 2, tpot_p99_s: 0.05}\n", "workload.models"),
    ("models:\n  - {model: no-such-model, qps: 1, ttft_p99_s: 2, tpot_p99_s: 0.05}\n",
     "workload.models[0] (no-such-model)"),
    ("- just a list\n", "workload"),
    ("models: [\n", "workload"),
])
def test_a_bad_file_is_one_line_naming_the_field_and_exit_2(tmp_path: Path, text: str, field: str) -> None:
    res = CliRunner().invoke(app, ["plan", "infer", "--workload", str(_file(tmp_path, text))])
    one_line_error(res, field)


def test_options_the_file_replaces_are_refused_and_the_single_model_options_stay_required(tmp_path: Path) -> None:
    f = _file(tmp_path, SMALL)
    one_line_error(CliRunner().invoke(app, ["plan", "infer", "--workload", str(f), "--qps", "3"]), "qps")
    one_line_error(CliRunner().invoke(app, ["plan", "infer", "--workload", str(f), "-m", "qwen3-8b"]), "model")
    one_line_error(CliRunner().invoke(app, ["plan", "infer", "--workload", str(tmp_path / "none.yaml")]), "workload")
    one_line_error(CliRunner().invoke(app, ["plan", "infer", "-m", "qwen3-8b", "--qps", "1", "--tpot-p99", "0.05"]),
                   "ttft-p99")
