"""The CPU backend runs every benchmark path in-process; failures give partial results, never a hang."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.bench import suite
from gpuplan.bench.backend import BenchUnavailable, detect_backend
from gpuplan.bench.collectives import add_collective_measurements, launch_local
from gpuplan.bench.context import BenchContext
from gpuplan.bench.predict import Predictor
from gpuplan.bench.records import load_result
from gpuplan.bench.suite import SuiteOptions, run_suite
from gpuplan.errors import InputError
from gpuplan.workload.presets import load_model

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.torch


def _opts(tmp_path: Path, only: tuple[str, ...], **kw: Any) -> SuiteOptions:
    return SuiteOptions(device="cpu", quick=True, only=only, directory=tmp_path, out=tmp_path / "r.json",
                        progress=False, **kw)


def test_quick_single_device_subset_validates(tmp_path: Path) -> None:
    res = run_suite(_opts(tmp_path, ("gemm", "memory", "transfer", "d2d", "storage", "dataloader"), workers=1))
    assert load_result(tmp_path / "r.json") == res
    status = {s.name: s for s in res.benchmarks}
    assert status["d2d"].status == "skipped" and "two local cpu devices" in (status["d2d"].error or "")
    assert all(status[n].status == "ok" for n in ("gemm", "memory", "transfer", "storage", "dataloader"))
    assert res.complete and res.machine.backend == "cpu" and res.accelerator is None
    names = {m.name for m in res.measurements}
    assert {"memory.copy", "memory.read", "transfer.h2d.pageable", "storage.seq_read", "storage.random_read.iops",
            "dataloader.1workers"} <= names
    assert any(n.startswith("gemm.bf16.Llama-3.1-8B.tp2.") for n in names)  # TP-sharded preset shapes
    assert any("fp8 skipped" in n for n in status["gemm"].notes)
    for m in res.measurements:
        assert m.provenance == "measured" and m.value > 0 and m.unit
        assert m.predicted.value is None and m.predicted.reason  # CPU: no catalog entry
    gemm = next(m for m in res.measurements if m.name == "gemm.bf16.square512")
    assert gemm.value == pytest.approx(2 * 512**3 / gemm.median_s / 1e12)  # value follows from the median time
    assert not list(tmp_path.glob(".gpuplan-bench-*"))  # storage files removed


def test_end_to_end_train_and_decode(tmp_path: Path) -> None:
    res = run_suite(_opts(tmp_path, ("train", "decode")))
    by = {m.name: m for m in res.measurements}
    assert "train.tokens_per_s" in by, res.benchmarks
    train = by["train.tokens_per_s"]
    assert train.params["from_preset"] == "Llama-3.1-8B" and train.params["layers"] == 2
    # no catalog part on a CPU: no plan, plain DDP over two gloo processes, null predictions
    assert (train.params["processes"], train.params["dist_backend"], train.params["strategy"]) == (2, "gloo", "DDP")
    assert str(train.params["planned_layout"]).startswith("none") and train.predicted.value is None
    assert train.value == pytest.approx(4 * 128 / by["train.step_time"].value)  # global batch 2 x 2 x 128 tokens
    flops = by["train.model_tflops"]
    assert flops.value == pytest.approx(train.value * float(str(train.params["flops_per_token"])) / 2 / 1e12)
    assert by["decode.ttft"].unit == "s" and by["decode.tokens_per_s"].value > 0
    assert by["train.peak_memory"].value > 0
    assert any("MFU not reported" in n for s in res.benchmarks for n in s.notes)


def test_two_process_training_step_at_the_planned_layout(tmp_path: Path) -> None:
    # predictions for 2 x H100 (--accelerator): the planner's PP=2 plan runs as planned (torch.distributed.pipelining)
    res = run_suite(_opts(tmp_path, ("train",), accelerator="h100-sxm5-80gb"))
    assert res.complete and load_result(tmp_path / "r.json") == res
    by = {m.name: m for m in res.measurements}
    assert set(by) == {"train.step_time", "train.tokens_per_s", "train.model_tflops", "train.mfu",
                       "train.peak_memory"}
    tps = by["train.tokens_per_s"]
    p = tps.params
    assert p["processes"] == 2 and (p["pp"], p["dp"]) == (2, 1) and p["layout_fallback"] is False
    assert str(p["planned_layout"]).startswith("tp1 pp2") and p["run_layout"] == p["planned_layout"]
    assert str(p["strategy"]).startswith("PP2 (") and "PP2" in str(p["implementation"])
    assert p["global_batch"] == 4 and int(str(p["micro_batch"])) * int(str(p["microbatches"])) == 4
    notes = next(s for s in res.benchmarks if s.name == "train").notes
    assert any("ran the planned layout tp1 pp2" in n for n in notes)
    step = by["train.step_time"]
    step_pred, tps_pred = step.predicted.value, tps.predicted.value
    assert step_pred is not None and tps_pred is not None and "layout run" in step.predicted.basis
    assert tps_pred == pytest.approx(4 * 128 / step_pred)
    assert tps.ratio == pytest.approx(tps.value / tps_pred)
    mfu = by["train.mfu"]
    assert mfu.value == pytest.approx(by["train.model_tflops"].value / 989.4)
    assert mfu.predicted.value is not None and 0 < mfu.predicted.value < 1
    mem = by["train.peak_memory"]
    assert mem.value > 0 and mem.predicted.value is None and float(str(mem.params["planned_memory_bytes"])) > 0


def test_fsdp_with_activation_checkpointing_runs_on_two_gloo_processes() -> None:
    from gpuplan.bench.e2e import bench_model
    from gpuplan.bench.layout import BenchLayout
    from gpuplan.bench.train_dist import launch_train

    spec = bench_model(load_model("llama3.1-8b"), small=True)
    for plain in (False, True):
        run = launch_train(detect_backend("cpu"), spec.model_dump_json(),
                           BenchLayout(dp=2, zero=3, micro_batch=1, microbatches=2, recompute="full"),
                           seq_len=64, warmup=1, repeats=2, timeout_s=120, use_transformers=not plain)
        assert run.error is None and len(run.samples) == 2 and (run.peak_bytes or 0) > 0
        assert ("plain PyTorch" in run.implementation) == plain


def test_a_dying_rank_or_a_timeout_leaves_a_partial_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import functools

    from gpuplan.bench import e2e, train_dist

    monkeypatch.setattr(e2e, "launch_train", functools.partial(train_dist.launch_train, fail_rank=1))
    res = run_suite(_opts(tmp_path, ("train",)))
    status = res.benchmarks[0]
    assert status.status == "partial" and "exited with" in (status.error or "")
    assert "failed on purpose" in (status.error or "") and "after 1 timed steps" in (status.error or "")
    saved = load_result(tmp_path / "r.json")
    assert not saved.complete and {m.name for m in saved.measurements} >= {"train.tokens_per_s"}
    assert next(m for m in saved.measurements if m.name == "train.step_time").repeats == 1
    monkeypatch.undo()
    res = run_suite(_opts(tmp_path, ("train",), collective_timeout_s=0.5))
    assert res.benchmarks[0].status == "failed" and "did not finish within 0.5 s" in (res.benchmarks[0].error or "")
    assert not load_result(tmp_path / "r.json").complete


def test_two_process_gloo_collectives_through_torchrun(tmp_path: Path) -> None:
    backend = detect_backend("cpu")
    ctx = BenchContext(backend=backend, predictor=Predictor(None, reason="cpu"), quick=True,
                       model=load_model("llama3.1-8b"), tp=2, directory=tmp_path, collective_timeout_s=120)
    rows, dist_backend, nproc = launch_local(ctx)
    assert (dist_backend, nproc) == ("gloo", 2)
    assert {r["kind"] for r in rows} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"}
    add_collective_measurements(ctx, rows, dist_backend, 1)
    ar = next(m for m in ctx.measurements if m.name.startswith("collective.all_reduce") and m.metric == "busbw")
    alg = next(m for m in ctx.measurements if m.name == ar.name.replace(".busbw", ".algbw"))
    assert ar.value == pytest.approx(alg.value * 1.0)  # 2(n-1)/n = 1 at n = 2
    ag = [m for m in ctx.measurements if m.name.startswith("collective.all_gather") and m.metric == "busbw"]
    ag_alg = {m.name: m for m in ctx.measurements if m.metric == "algbw"}
    for m in ag:
        assert m.value == pytest.approx(ag_alg[m.name.replace(".busbw", ".algbw")].value * 0.5)
        assert m.params["size_bytes"] == 2 * int(m.params["bytes_per_rank"])  # gathered output


def test_a_stuck_collective_run_is_killed(tmp_path: Path) -> None:
    ctx = BenchContext(backend=detect_backend("cpu"), predictor=Predictor(None), quick=True,
                       model=load_model("llama3.1-8b"), tp=2, directory=tmp_path, collective_timeout_s=0.2)
    with pytest.raises(BenchUnavailable, match="did not finish within 0.2 s"):
        launch_local(ctx)


def test_failures_are_recorded_and_the_suite_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def oom_after_one(ctx: BenchContext) -> None:
        ctx.add(benchmark="memory", name="memory.copy", metric="copy_bandwidth", value=1.0, unit="GB/s",
                samples=[1.0], predicted=ctx.predictor.none("GB/s"))
        raise RuntimeError("CUDA out of memory. Tried to allocate 80.00 GiB")

    def boom(ctx: BenchContext) -> None:
        raise ValueError("broken kernel")

    monkeypatch.setitem(suite.BENCHMARKS, "memory", oom_after_one)
    monkeypatch.setitem(suite.BENCHMARKS, "transfer", boom)
    res = run_suite(SuiteOptions(device="cpu", quick=True, only=("memory", "transfer", "storage"),
                                 directory=tmp_path / "missing", out=tmp_path / "r.json", progress=False))
    status = {s.name: s for s in res.benchmarks}
    assert status["memory"].status == "partial" and "out of memory after memory.copy" in (status["memory"].error or "")
    assert status["transfer"].status == "failed" and "ValueError" in (status["transfer"].error or "")
    assert status["storage"].status == "failed" and "not a directory" in (status["storage"].error or "")
    saved = load_result(tmp_path / "r.json")
    assert not saved.complete and [m.name for m in saved.measurements] == ["memory.copy"]


def test_bad_environments_give_clear_messages(request: pytest.FixtureRequest) -> None:
    with pytest.raises(BenchUnavailable, match="no CUDA device"):
        detect_backend("cuda")
    with pytest.raises(BenchUnavailable, match="torch_npu"):
        detect_backend("npu")
    with pytest.raises(InputError, match="only"):
        SuiteOptions(only=("gemm", "gemms"))
    request.getfixturevalue("without_torch")
    with pytest.raises(BenchUnavailable, match="needs PyTorch"):
        detect_backend("auto")


def test_the_planner_never_imports_torch() -> None:
    import subprocess
    import sys

    code = "import sys, gpuplan, gpuplan.cli.main, gpuplan.bench.calibrate; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_plain_torch_decoder_matches_the_transformers_model(tmp_path: Path) -> None:
    from gpuplan.bench.e2e import bench_model, build_model, run_decode, run_train
    from gpuplan.workload.params import count_params

    spec = bench_model(load_model("qwen2.5-7b"), small=True)  # GQA with QKV bias
    plain, impl = build_model(spec, "float32", prefer_transformers=False)
    hf, _ = build_model(spec, "float32")
    assert "plain PyTorch" in impl
    n_plain = sum(p.numel() for p in plain.parameters())
    assert n_plain == sum(p.numel() for p in hf.parameters()) == count_params(spec).total
    ctx = BenchContext(backend=detect_backend("cpu"), predictor=Predictor(None), quick=True,
                       model=load_model("llama3.1-8b"), tp=2, directory=tmp_path, use_transformers=False)
    run_train(ctx)
    run_decode(ctx)
    by = {m.name: m for m in ctx.measurements}
    assert by["train.tokens_per_s"].params["implementation"] == impl  # the torchrun processes use it too
    assert by["decode.tokens_per_s"].value > 0 and by["decode.ttft"].value > 0


def test_a_launch_failing_before_any_step_is_retried_once() -> None:
    from gpuplan.bench.layout import BenchLayout
    from gpuplan.bench.train_dist import launch_train

    run = launch_train(detect_backend("cpu"), "{}", BenchLayout(dp=2, zero=0, micro_batch=1, microbatches=1,
                                                              recompute="none"),
                       seq_len=16, warmup=1, repeats=1, timeout_s=120)
    assert run.samples == [] and run.error is not None and "ValidationError" in run.error  # not a ModelSpec
    assert run.note is not None and run.note.startswith("first launch failed, retried once")
