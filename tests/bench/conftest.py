"""Shared fixtures of the bench tests: a synthetic GPU result (no GPU needed to test calibration)."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.bench.records import BenchResult, BenchmarkStatus, Device, Machine, Measurement, Prediction


def gpu_result(*, accelerator: str = "h100-sxm5-80gb", bf16_tflops: float = 494.7,
               copy_gbyte_s: float = 2900.0, busbw: float = 340.0) -> BenchResult:
    """A result as an 8-GPU H100 run would write it (figures made up for the test)."""
    none = Prediction(value=None, unit="x", reason="test")

    def m(benchmark: str, name: str, metric: str, value: float, unit: str, params: dict[str, Any]) -> Measurement:
        return Measurement(benchmark=benchmark, name=name, metric=metric, value=value, unit=unit, spread=0.01,
                           repeats=10, median_s=0.001, params=params, predicted=none)

    ms = (
        m("gemm", "gemm.bf16.square8192", "tflops", bf16_tflops, "TFLOP/s",
          {"dtype": "bf16", "m": 8192, "n": 8192, "k": 8192, "shape": "square8192", "flops": 2.0 * 8192**3}),
        m("gemm", "gemm.bf16.square1024", "tflops", 100.0, "TFLOP/s",
          {"dtype": "bf16", "m": 1024, "n": 1024, "k": 1024, "shape": "square1024", "flops": 2.0 * 1024**3}),
        m("memory", "memory.copy", "copy_bandwidth", copy_gbyte_s, "GB/s", {"bytes": 2**32}),
        m("collectives", "collective.all_reduce.8ranks.1073741824B.busbw", "busbw", busbw, "GB/s",
          {"kind": "all_reduce", "bytes_per_rank": 2**30, "ranks": 8, "nodes": 1}),
    )
    machine = Machine(hostname="gpu-node", platform="Linux", python="3.11", backend="cuda", cpu="x86",
                      cpu_count=96, devices=(Device(index=0, name="NVIDIA H100 80GB HBM3"),))
    return BenchResult(gpuplan_version="0.1.0", created_at="2026-11-30T12:00:00+00:00", command="gpuplan bench",
                       quick=False, complete=True, machine=machine, accelerator=accelerator,
                       benchmarks=(BenchmarkStatus(name="gemm", status="ok", seconds=1.0, measurements=2),),
                       measurements=ms)


@pytest.fixture
def make_gpu_result() -> Any:
    return gpu_result
