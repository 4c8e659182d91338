"""The layout rule of the end-to-end training benchmark (torch-free): planned layout, layout run, prediction."""

from __future__ import annotations

import pytest

from gpuplan.bench.e2e import bench_model
from gpuplan.bench.layout import BenchLayout, layout_label, plan_bench_layout, runnable, strategy_label
from gpuplan.estimate.calibration import load_calibration
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.search.candidates import LayoutChoices
from gpuplan.search.cluster import cluster_hardware
from gpuplan.search.train_planner import best_layout, plan_figures
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.presets import load_model


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog(use_user_dir=False)


@pytest.mark.parametrize(("row", "why"), [
    ({"tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 3, "recompute": "full"}, None),
    ({"tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 0, "recompute": "none"}, None),
    ({"tp": 2, "pp": 1, "dp": 1, "cp": 1, "ep": 1, "zero": 1, "recompute": "none"}, None),  # DTensor TP
    ({"tp": 2, "pp": 2, "dp": 2, "cp": 1, "ep": 1, "zero": 3, "recompute": "full"}, None),  # + FSDP2 over dp
    ({"tp": 1, "pp": 4, "dp": 2, "cp": 1, "ep": 1, "zero": 1, "recompute": "none"}, None),  # 1F1B
    ({"tp": 2, "pp": 1, "dp": 2, "cp": 1, "ep": 1, "zero": 1, "recompute": "none"},
     "TP=2 with DP=2 and ZeRO-1 (ZeroRedundancyOptimizer takes no DTensor parameters)"),
    ({"tp": 1, "pp": 4, "cp": 2, "ep": 1, "vpp": 2, "zero": 1, "recompute": "none"}, "CP=2, VPP=2"),
    ({"tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 1, "recompute": "selective"}, "selective recomputation"),
    ({"tp": 1, "pp": 1, "cp": 1, "ep": 1, "zero": 2, "recompute": "none"}, "ZeRO-2"),
])
def test_what_the_bench_can_run(row: dict[str, object], why: str | None) -> None:
    assert runnable(row) == why


def test_bench_layout_rejects_what_it_cannot_run() -> None:
    with pytest.raises(ValueError, match="not a layout the bench runs"):
        BenchLayout(dp=2, zero=2, micro_batch=1, microbatches=1, recompute="none")
    with pytest.raises(ValueError):
        BenchLayout(dp=2, zero=1, micro_batch=1, microbatches=1, recompute="selective")
    with pytest.raises(ValueError, match="not a layout"):  # ZeroRedundancyOptimizer takes no DTensor parameters
        BenchLayout(tp=2, dp=2, zero=1, micro_batch=1, microbatches=1, recompute="none")
    lay = BenchLayout(dp=4, zero=3, micro_batch=2, microbatches=3, recompute="full")
    assert lay.global_batch == 24 and lay.world == 4
    assert layout_label(lay.to_dict()) == "tp1 pp1 dp4 cp1 ep1 zero3 mb2x3 recompute=full"
    assert strategy_label(lay) == "FSDP fully_shard (ZeRO-3), activation checkpointing"
    both = BenchLayout(tp=2, pp=2, dp=2, zero=3, micro_batch=1, microbatches=4, recompute="none")
    assert both.world == 8 and both.global_batch == 8  # the global batch counts DP replicas only
    assert layout_label(both.to_dict()) == "tp2 pp2 dp2 cp1 ep1 zero3 mb1x4 recompute=none"
    assert strategy_label(both) == ("TP2 (DTensor column/row parallel) x PP2 (Schedule1F1B), "
                                    "DP2 FSDP fully_shard (ZeRO-3)")
    assert "ScheduleGPipe" in strategy_label(BenchLayout(pp=4, dp=1, zero=0, micro_batch=1, microbatches=2,
                                                         recompute="none"))  # 1F1B needs micro-batches >= stages


def test_a_pipeline_plan_is_run_as_planned(cat: Catalog) -> None:
    # the 2-layer CPU bench model on 2 x H100: the planner prefers PP=2, which the bench runs (pipelining)
    spec = bench_model(load_model("llama3.1-8b"), small=True)
    acc = cat.accelerator("h100-sxm5-80gb")
    plan = plan_bench_layout(spec, devices=2, seq_len=128, global_batch=4, accelerator=acc, catalog=cat)
    assert plan.planned is not None and plan.planned["pp"] == 2
    assert plan.fallback is None and layout_label(plan.planned) == layout_label(plan.run.to_dict())
    run = plan.run
    assert (run.pp, run.world, run.global_batch) == (2, 2, 4)
    # the prediction is the planner's figure for exactly that layout
    job = TrainingJob(seq_len=128, global_batch=4, precision="bf16")
    hw = cluster_hardware(cat, acc.id, None, gpus_per_node=2)
    pinned = LayoutChoices(devices=[2], tp=[run.tp], pp=[run.pp], cp=[1], ep=[1], vpp=[1], zero=[run.zero],
                           micro_batch=[run.micro_batch], recompute=[run.recompute], max_tp=2)
    c, ev, i, _ = best_layout(spec, job, hw, pinned)
    assert i is not None
    fig = plan_figures(spec, job, hw, c, ev, i, catalog=cat, tokens=None)
    assert plan.predicted["step_time_s"] == pytest.approx(fig["step_time_s"])
    assert plan.predicted["tokens_per_s"] == pytest.approx(4 * 128 / fig["step_time_s"])
    assert plan.predicted["mfu"] == pytest.approx(fig["mfu"])
    m = fig["memory"]
    assert plan.predicted["memory_bytes"] == pytest.approx(
        m["weights_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"] + m["activations_bytes"])
    assert plan.terms["bf16_dense_tflops"] == pytest.approx(989.4)


def test_a_plan_the_bench_cannot_run_falls_back_to_the_fastest_layout_it_runs(cat: Catalog) -> None:
    # Llama-3.1-8B's full width on 8 x H200 at 8192 tokens, the fastest layout kept (layout_simplicity_tolerance 0):
    # planned as TP x DP with ZeRO-1, which the bench does not run (with the default tolerance the plan is plain DP8)
    spec = bench_model(load_model("llama3.1-8b"), small=False)
    acc = cat.accelerator("h200-sxm-141gb")
    cal = load_calibration({"layout_simplicity_tolerance": 0.0})
    plan = plan_bench_layout(spec, devices=8, seq_len=8192, global_batch=32, accelerator=acc, catalog=cat,
                             calibration=cal)
    assert plan.planned is not None and runnable(plan.planned) is not None
    assert plan.fallback is not None and "not run by the bench" in plan.fallback
    run = plan.run
    assert runnable(run.to_dict()) is None and run.world == 8 and run.global_batch == 32
    # the fastest of the layouts the bench runs: DP/PP with ZeRO 0/1/3, or TP with FSDP (ZeRO-3)
    job = TrainingJob(seq_len=8192, global_batch=32, precision="bf16")
    hw = cluster_hardware(cat, acc.id, None, gpus_per_node=8)
    fastest = []
    for tp, zero in (([1], (0, 1, 3)), ([1, 2, 4, 8], (3,))):
        _, ev, i, _ = best_layout(spec, job, hw, LayoutChoices(devices=[8], tp=tp, cp=[1], ep=[1], vpp=[1],
                                                               zero=zero, recompute=("none", "full"), max_tp=8),
                                  calibration=cal)
        if i is not None:
            fastest.append(float(ev.step_s[i]))
    assert plan.predicted["step_time_s"] == pytest.approx(min(fastest))


def test_a_data_parallel_plan_is_run_as_planned(cat: Catalog) -> None:
    spec = bench_model(load_model("llama3.1-8b"), small=False)  # full width, 4 layers: the GPU bench model
    plan = plan_bench_layout(spec, devices=1, seq_len=2048, global_batch=4,
                             accelerator=cat.accelerator("h200-sxm-141gb"), catalog=cat)
    assert plan.fallback is None and plan.planned is not None
    assert layout_label(plan.planned) == layout_label(plan.run.to_dict())
    assert plan.predicted["tokens_per_s"] == pytest.approx(4 * 2048 / plan.predicted["step_time_s"])


def test_without_a_catalog_part_the_bench_runs_ddp_without_a_prediction() -> None:
    spec = bench_model(load_model("llama3.1-8b"), small=True)
    plan = plan_bench_layout(spec, devices=2, seq_len=128, global_batch=4, accelerator=None, no_plan_reason="CPU")
    assert plan.planned is None and plan.predicted == {} and plan.reason == "CPU"
    assert plan.run == BenchLayout(dp=2, zero=0, micro_batch=2, microbatches=1, recompute="none")
    assert "no catalog accelerator" in plan.planned_label
