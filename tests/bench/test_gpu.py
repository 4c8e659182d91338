"""The CUDA/NPU paths on a real device (skipped cleanly without one: the `gpu` marker)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_quick_gpu_gemm_memory_transfer_against_the_catalog(tmp_path: Path) -> None:
    from gpuplan.bench.records import load_result
    from gpuplan.bench.suite import SuiteOptions, run_suite

    res = run_suite(SuiteOptions(device="auto", quick=True, only=("gemm", "memory", "transfer", "train"),
                                 directory=tmp_path, out=tmp_path / "r.json", progress=False))
    assert load_result(tmp_path / "r.json") == res
    assert res.machine.backend in ("cuda", "npu")
    assert {s.name: s.status for s in res.benchmarks}["gemm"] == "ok"
    if res.accelerator is not None:  # a catalog part: every GEMM has a prediction and a ratio
        gemm = [m for m in res.measurements if m.benchmark == "gemm"]
        assert all(m.predicted.value and m.ratio for m in gemm)
        assert all(0.05 < (m.ratio or 0) < 2.0 for m in gemm if str(m.params["shape"]).startswith("square8192"))
    peak = next(m for m in res.measurements if m.name == "train.peak_memory")
    assert "max_memory_allocated" in str(peak.params["source"]) and peak.value > 0
    torch = pytest.importorskip("torch")

    tps = next(m for m in res.measurements if m.name == "train.tokens_per_s")
    assert tps.params["processes"] == tps.params["dp"] == torch.cuda.device_count()  # one process per device
    if res.accelerator is not None:  # the planner's figures for the layout run, next to the measurement
        assert peak.predicted.value and tps.predicted.value and "layout run" in tps.predicted.basis
        assert 0.02 < (tps.ratio or 0) < 5.0


def test_local_nccl_collectives_on_two_or_more_gpus(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two local GPUs")
    from gpuplan.bench.suite import SuiteOptions, run_suite

    res = run_suite(SuiteOptions(device="cuda", quick=True, only=("collectives", "d2d"), directory=tmp_path,
                                 out=tmp_path / "r.json", progress=False, collective_timeout_s=300))
    assert {s.name: s.status for s in res.benchmarks} == {"collectives": "ok", "d2d": "ok"}
    busbw = [m for m in res.measurements if m.metric == "busbw" and m.params["kind"] == "all_reduce"]
    assert busbw and all(m.params["dist_backend"] == "nccl" for m in busbw)
