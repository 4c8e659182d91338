"""`gpuplan bench --plan`: the plan's own layout (or the nearest that runs, with the reason), the model scaled only
when the machine cannot hold it, measured vs predicted for exactly what ran, and `gpuplan calibrate` on the result."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.bench.calibrate import calibration_from_result, load_user_calibration, write_calibration
from gpuplan.bench.plan_run import load_plan, plan_facts, prepare_run
from gpuplan.bench.records import BenchResult, Measurement, Prediction, load_result, write_result
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.hardware import load_catalog
from gpuplan.workload.presets import load_model

runner = CliRunner()
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 128, "intermediate_size": 384,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1024,
        "max_position_embeddings": 512, "tie_word_embeddings": False}
H100 = "h100-sxm5-80gb"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(config.json of a tiny Llama, `estimate train --json` of it: DDP ZeRO-1 on 2 x H100, seq 128, batch 4)."""
    d = tmp_path_factory.mktemp("tiny")
    cfg = d / "config.json"
    cfg.write_text(json.dumps(TINY), encoding="utf-8")
    plan = d / "plan.json"
    plan.write_text(_estimate_tiny(cfg, "--dp", "2"), encoding="utf-8")
    return cfg, plan


def _estimate_tiny(cfg: Path, *layout: str) -> str:
    """`estimate train --json` of the tiny model on 2 x H100 (ZeRO-1, seq 128, batch 4) with the given layout flags."""
    res = runner.invoke(app, ["estimate", "train", "-m", str(cfg), "--accelerator", H100, "--num-accels", "2",
                              *layout, "--zero", "1", "--micro-batch", "2", "--recompute", "none", "--seq-len",
                              "128", "--global-batch", "4", "--json"])
    exited(res, 0)
    return str(res.stdout)


def _h100() -> Any:
    cat = load_catalog(use_user_dir=False)
    return cat, cat.accelerator(H100)


def test_plan_documents_and_picks(tmp_path: Path, tiny: tuple[Path, Path]) -> None:
    _, est = tiny
    plan, kind = load_plan(est)
    assert kind == "estimate train" and plan_facts(plan).devices == 2 and plan_facts(plan).accelerator == H100
    one = tmp_path / "one.json"
    one.write_text(json.dumps({**plan, "accelerator": "a100-sxm4-80gb", "devices": 2}), encoding="utf-8")
    assert load_plan(one)[1] == "plan"
    doc = tmp_path / "plans.json"
    second = {**plan, "accelerator": "h200-sxm-141gb", "devices": 2}
    doc.write_text(json.dumps({"plans": [{**plan, "accelerator": H100, "devices": 2}, second],
                               "recommended": {"accelerator": "h200-sxm-141gb", "devices": 2}}), encoding="utf-8")
    assert load_plan(doc)[0]["accelerator"] == "h200-sxm-141gb"  # the recommended one, as --emit picks
    assert load_plan(doc, 1)[0]["accelerator"] == H100
    with pytest.raises(InputError, match="pick"):
        load_plan(doc, 3)
    (tmp_path / "bad.json").write_text('{"x": 1}', encoding="utf-8")
    with pytest.raises(InputError, match="layout"):
        load_plan(tmp_path / "bad.json")


def test_a_plan_that_runs_as_is_is_predicted_as_the_plan(tiny: tuple[Path, Path]) -> None:
    cfg, est = tiny
    plan, _ = load_plan(est)
    cat, acc = _h100()
    prep = prepare_run(plan, load_model(str(cfg)), backend_kind="cuda", local_devices=2, accelerator=acc, catalog=cat)
    assert prep.differences == () and not prep.scaled
    assert prep.layout.to_dict() == {"tp": 1, "pp": 1, "dp": 2, "zero": 1, "micro_batch": 2, "microbatches": 1,
                                     "recompute": "none"}
    assert prep.predicted["step_time_s"] == pytest.approx(plan["step_time_s"], rel=1e-9)  # the same machine: the plan
    assert prep.predicted["mfu"] == pytest.approx(plan["mfu"], rel=1e-9)


def test_tp_pp_plan_keeps_tp_and_pp_folds_cp_and_scales_only_as_needed() -> None:
    cat, acc = _h100()
    res = runner.invoke(app, ["estimate", "train", "-m", "llama3.1-70b", "--accelerator", H100, "--num-accels", "64",
                              "--tp", "8", "--pp", "2", "--cp", "2", "--vpp", "4", "--zero", "1",
                              "--recompute", "selective",
                              "--seq-len", "4096", "--global-batch", "256", "--json"])
    exited(res, 0)
    plan = json.loads(res.stdout)
    assert (plan["layout"]["dp"], plan["layout"]["vpp"]) == (2, 4)
    spec = load_model("llama3.1-70b")
    prep = prepare_run(plan, spec, backend_kind="cuda", local_devices=8, accelerator=acc, catalog=cat)
    text = " | ".join(prep.differences)
    assert "cp2 folded into data parallelism (dp4)" in text and "torchtitan" in text and "tp8" not in text.split(
        "folded")[0]
    assert "vpp4 run as vpp1" in text and "selective recomputation run as full" in text
    assert "the plan's tp8 pp2 cut to tp8 pp1 (this machine has 8)" in text and "ranks cut to 1" in text
    assert (prep.layout.tp, prep.layout.pp, prep.layout.dp) == (8, 1, 1)  # TP kept: 8 local devices hold it
    assert prep.layout.micro_batch == plan["layout"]["micro_batch"]
    assert prep.scaled and "cannot hold Llama-3.1-70B" in text
    layers = prep.spec.num_layers
    assert 1 <= layers < spec.num_layers and prep.spec.hidden_size == spec.hidden_size  # layers dropped, width kept
    assert prep.predicted["memory_total_bytes"] <= acc.memory_gib * 2**30  # it fits ...
    more = prepare_run(plan, spec.model_copy(update={"num_layers": layers + 1}), backend_kind="cuda",
                       local_devices=8, accelerator=acc, catalog=cat)
    assert more.scaled  # ... and one layer more would not: scaled no further than needed
    # compared with the prediction for the scaled model and the layout run on this machine, never the plan's figure
    assert prep.spec.name in prep.predicted_for and f"8 x {H100}" in prep.predicted_for
    assert "tp8 pp1 dp1" in prep.predicted_for
    assert prep.predicted["step_time_s"] != pytest.approx(plan["step_time_s"], rel=0.05)
    # 32 devices: tp8 x pp2 as planned, dp (cp folded in: 4 ranks of 16 micro-batches) cut to 2; ZeRO-1 with
    # TP x DP runs as ZeRO-0 (said so), predicted as such
    big = prepare_run(plan, spec, backend_kind="cuda", local_devices=32, accelerator=acc, catalog=cat)
    assert big.layout.to_dict() == {"tp": 8, "pp": 2, "dp": 2, "zero": 0, "micro_batch": 4, "microbatches": 16,
                                    "recompute": "full"}
    assert any("ZeRO-1 with tp8 x dp2 run as ZeRO-0" in d for d in big.differences) and not big.scaled
    assert "tp8 pp2 dp2 cp1 ep1 zero0 mb4x16" in big.predicted_for and f"on 32 x {H100}" in big.predicted_for


def _gpu_plan_result(tiny: tuple[Path, Path], slowdown: float) -> tuple[BenchResult, Any]:
    """A plan-run result as `bench --plan` writes it on 2 x H100, the step measured `slowdown` x the prediction."""
    from gpuplan.bench.records import BenchmarkStatus, Device, Machine, PlanRun

    cfg, est = tiny
    plan, _ = load_plan(est)
    cat, acc = _h100()
    prep = prepare_run(plan, load_model(str(cfg)), backend_kind="cuda", local_devices=2, accelerator=acc, catalog=cat)
    params = {"model": prep.spec.name, "dp": 2, "zero": 1, "micro_batch": 2, "microbatches": 1, "recompute": "none",
              "seq_len": 128}

    def m(name: str, key: str, value: float, unit: str) -> Measurement:
        p = Prediction(value=prep.predicted[key], unit=unit, terms=prep.terms, basis=prep.predicted_for)
        return Measurement(benchmark="plan", name=name, metric=name.split(".")[1], value=value, unit=unit, spread=0.01,
                           repeats=5, params=params, predicted=p, ratio=value / prep.predicted[key])

    ms = (m("plan.step_time", "step_time_s", prep.predicted["step_time_s"] * slowdown, "s"),
          m("plan.mfu", "mfu", prep.predicted["mfu"] / slowdown, "fraction"),
          m("plan.peak_memory", "memory_bytes", prep.predicted["memory_bytes"] * 1.1, "bytes"))
    machine = Machine(hostname="h", platform="linux", python="3.11", backend="cuda", cpu="x", cpu_count=8,
                      devices=(Device(index=0, name="NVIDIA H100 80GB HBM3"), Device(index=1, name="NVIDIA H100 80GB "
                                                                                    "HBM3")), world_size=1)
    pr = PlanRun(source=str(est), document="estimate train", plan_id="train-x", model="bp", run_model=prep.spec.name,
                 scaled=False, accelerator=H100, devices=2, planned_layout="-", run_layout=dict(prep.layout.to_dict()),
                 run_layout_label="-", strategy="DDP", processes=2, seq_len=128, predicted_for=prep.predicted_for)
    res = BenchResult(gpuplan_version="0", created_at="2026-01-01T00:00:00+00:00", command="gpuplan bench --plan",
                      quick=False, complete=True, machine=machine, accelerator=H100,
                      benchmarks=(BenchmarkStatus(name="plan", status="ok", seconds=1.0, measurements=3),),
                      measurements=ms, plan=pr)
    return res, prep


def test_calibrate_takes_a_plan_result_and_the_next_prediction_moves_to_the_measurement(
        tmp_path: Path, tiny: tuple[Path, Path]) -> None:
    res, prep = _gpu_plan_result(tiny, slowdown=1.25)
    path = write_result(res, tmp_path / "plan-gpu.json")
    assert load_result(path) == res
    cat, acc = _h100()
    cf = calibration_from_result(res, cat, result_path=str(path))
    term = cf.terms[f"compute_efficiency.{H100}.bf16"]
    used = next(v for k, v in prep.terms.items() if k.startswith("compute_efficiency."))
    assert term.value < used and "plan run" in term.source
    assert set(cf.recorded) >= {"plan_mfu", "plan_memory_ratio"} and cf.recorded["plan_memory_ratio"].value == 1.1
    out = runner.invoke(app, ["calibrate", str(path), "--dir", str(tmp_path / "cal"), "--json"])
    exited(out, 0)
    assert json.loads(out.stdout)["terms"][f"compute_efficiency.{H100}.bf16"]["value"] == term.value
    write_calibration(cf, tmp_path / "cal2")
    plan, _ = load_plan(tiny[1])
    again = prepare_run(plan, load_model(str(tiny[0])), backend_kind="cuda", local_devices=2, accelerator=acc,
                        catalog=cat, calibration=load_user_calibration(tmp_path / "cal2"))
    measured = res.measurements[0].value
    before, after = prep.predicted["step_time_s"], again.predicted["step_time_s"]
    assert abs(after - measured) < 0.25 * abs(before - measured)  # the next plan predicts the measured step


@pytest.mark.torch
def test_cpu_end_to_end_two_process_ddp(tmp_path: Path, tiny: tuple[Path, Path]) -> None:
    pytest.importorskip("torch")
    cfg, est = tiny
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["bench", "--plan", str(est), "--model", str(cfg), "--device", "cpu", "--out", str(out),
                              "--steps", "2", "--timeout", "120", "--lang", "en"])
    exited(res, 0)
    r = load_result(out)
    assert r.plan is not None and r.complete and r.machine.backend == "cpu"
    assert r.plan.run_layout == {"tp": 1, "pp": 1, "dp": 2, "zero": 1, "micro_batch": 2, "microbatches": 1,
                                 "recompute": "none"}
    assert r.plan.processes == 2 and not r.plan.scaled and r.plan.strategy.startswith("DDP + ZeroRedundancy")
    assert r.plan.plan_predicted["step_time_s"] == pytest.approx(json.loads(est.read_text())["step_time_s"])
    assert any(f"the plan is for {H100}" in d for d in r.plan.differences)
    by = {m.name: m for m in r.measurements}
    assert {"plan.step_time", "plan.tokens_per_s", "plan.model_tflops", "plan.peak_memory"} <= set(by)
    assert by["plan.tokens_per_s"].value == pytest.approx(4 * 128 / by["plan.step_time"].value)
    assert all(m.predicted.value is None and m.predicted.reason for m in r.measurements)  # a CPU: no catalog part
    assert "measured vs predicted" in res.stdout and "plan.step_t" in res.stdout  # the table (80 columns)
    zh = runner.invoke(app, ["bench", "compare", str(out), "--lang", "zh"])
    exited(zh, 0)
    from gpuplan.cli.bench import _print_plan
    from gpuplan.cli.common import console

    with console.capture() as cap:
        _print_plan(r, "zh")
    assert "实测与预测" in cap.get() and "差异" in cap.get()
    cal = runner.invoke(app, ["calibrate", str(out), "--dir", str(tmp_path / "cal")])
    exited(cal, 2)  # read and understood: a CPU has no catalog part to calibrate, said in one line
    assert "CPU run" in cal.output


@pytest.mark.torch
def test_cpu_plan_run_of_a_tensor_parallel_plan_runs_tp2(tmp_path: Path, tiny: tuple[Path, Path]) -> None:
    pytest.importorskip("torch")
    cfg, _ = tiny
    stdout = _estimate_tiny(cfg, "--tp", "2")
    est = tmp_path / "tp2.json"
    est.write_text(stdout, encoding="utf-8")
    assert (json.loads(stdout)["layout"]["tp"], json.loads(stdout)["layout"]["dp"]) == (2, 1)
    out = tmp_path / "r.json"
    run = runner.invoke(app, ["bench", "--plan", str(est), "--model", str(cfg), "--device", "cpu", "--out", str(out),
                              "--steps", "2", "--timeout", "120", "--lang", "en"])
    exited(run, 0)
    r = load_result(out)
    assert r.plan is not None and r.complete
    assert r.plan.run_layout == {"tp": 2, "pp": 1, "dp": 1, "zero": 1, "micro_batch": 2, "microbatches": 2,
                                 "recompute": "none"}
    assert r.plan.run_layout_label.startswith("tp2 pp1 dp1") and r.plan.planned_layout.startswith("tp2 pp1 dp1")
    assert not any("folded" in d or "tp2" in d for d in r.plan.differences)  # TP ran as planned: no difference
    assert r.plan.processes == 2 and r.plan.strategy.startswith("TP2 (DTensor")
    assert "TP2 (DTensor ColwiseParallel/RowwiseParallel)" in r.plan.implementation
    by = {m.name: m for m in r.measurements}
    assert by["plan.step_time"].repeats == 2 and by["plan.step_time"].params["tp"] == 2
    assert by["plan.tokens_per_s"].value == pytest.approx(4 * 128 / by["plan.step_time"].value)


@pytest.mark.gpu
def test_gpu_plan_run_against_the_prediction_for_this_machine(tmp_path: Path, tiny: tuple[Path, Path]) -> None:
    cfg, est = tiny
    out = tmp_path / "r.json"
    res = runner.invoke(app, ["bench", "--plan", str(est), "--model", str(cfg), "--device", "auto", "--out", str(out),
                              "--steps", "3"])
    exited(res, 0)
    r = load_result(out)
    assert r.plan is not None and r.machine.backend in ("cuda", "npu")
    assert r.plan.processes == min(2, len(r.machine.devices))
    if r.accelerator is not None:  # a catalog part: predicted for exactly what ran, MFU measured
        by = {m.name: m for m in r.measurements}
        assert by["plan.step_time"].predicted.value and by["plan.step_time"].ratio
        assert "plan.mfu" in by and by["plan.peak_memory"].predicted.value
        cf = runner.invoke(app, ["calibrate", str(out), "--dir", str(tmp_path / "cal"), "--json"])
        exited(cf, 0)
        assert f"compute_efficiency.{r.accelerator}.bf16" in json.loads(cf.stdout)["terms"]
