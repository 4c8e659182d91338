"""Shared test configuration: the gpu marker skips cleanly where no accelerator is present."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import pytest

from gpuplan.bench.records import BenchResult, load_result
from ground_truth import GROUND_TRUTH, missing_files

# Figures made up for the tests (bf16 8192^3 GEMM 494.7 TFLOP/s, copy 2900 GB/s, all-reduce busbw 340 GB/s).
SYNTHETIC = Path(__file__).parent / "fixtures" / "bench" / "h100-8gpu-synthetic.json"


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA or NPU device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ground_truth("x.csv", ...) skips when a named case file is missing, and fails when CI is
    set (tests/ground_truth.py)."""
    for mark in item.iter_markers("ground_truth"):
        missing = missing_files(tuple(mark.args))
        if not missing:
            continue
        where = ", ".join(str(GROUND_TRUTH / n) for n in missing)
        if os.environ.get("CI"):
            pytest.fail(f"ground-truth case files missing with CI set: {where}", pytrace=False)
        pytest.skip(f"ground-truth case files not present: {where}")


@pytest.fixture(autouse=True, scope="session")
def _isolated_user_config(tmp_path_factory: pytest.TempPathFactory) -> object:
    """Point the user config folder (catalog overrides, `gpuplan calibrate` output) at an empty
    temporary folder, so files on a developer's machine never change test results."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
        yield None


def gpu_result(*, bf16_tflops: float | None = None) -> BenchResult:
    """The synthetic 8 x H100 bench result, optionally with another bf16 GEMM figure."""
    res = load_result(SYNTHETIC)
    if bf16_tflops is None:
        return res
    ms = tuple(m.model_copy(update={"value": bf16_tflops}) if m.name == "gemm.bf16.square8192" else m
               for m in res.measurements)
    return res.model_copy(update={"measurements": ms})


@pytest.fixture
def make_gpu_result() -> Any:
    """A synthetic GPU bench result (no GPU needed to test calibration and reports)."""
    return gpu_result


@pytest.fixture
def without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import torch` (through importlib, as gpuplan.bench does) fails as on a machine without it."""
    real = importlib.import_module

    def no_torch(name: str, package: str | None = None) -> Any:
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_torch)
