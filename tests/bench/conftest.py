"""Shared fixtures of the bench tests: a synthetic 8 x H100 result (no GPU needed to test calibration)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.bench.records import BenchResult, load_result

# Figures made up for the tests (bf16 8192^3 GEMM 494.7 TFLOP/s, copy 2900 GB/s, all-reduce busbw 340 GB/s).
SYNTHETIC = Path(__file__).parents[1] / "fixtures" / "bench" / "h100-8gpu-synthetic.json"


def gpu_result(*, bf16_tflops: float | None = None) -> BenchResult:
    res = load_result(SYNTHETIC)
    if bf16_tflops is None:
        return res
    ms = tuple(m.model_copy(update={"value": bf16_tflops}) if m.name == "gemm.bf16.square8192" else m
               for m in res.measurements)
    return res.model_copy(update={"measurements": ms})


@pytest.fixture
def make_gpu_result() -> Any:
    return gpu_result
