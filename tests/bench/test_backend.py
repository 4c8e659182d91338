"""Device-event timing and NVML telemetry paths, exercised with stand-ins (no GPU here)."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from gpuplan.bench.backend import Backend, is_oom, time_op
from gpuplan.bench.telemetry import Sampler


class _Event:
    clock = 0.0

    def __init__(self, enable_timing: bool = False) -> None:
        self.t = 0.0

    def record(self) -> None:
        _Event.clock += 1.0
        self.t = _Event.clock

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _Event) -> float:
        return (end.t - self.t) * 2.0  # ms


def test_device_timing_uses_events_in_milliseconds() -> None:
    calls: list[int] = []
    fake_cuda = types.SimpleNamespace(Event=_Event, synchronize=lambda: calls.append(0))
    backend = Backend("cuda", 1, types.SimpleNamespace(cuda=fake_cuda))
    samples = time_op(lambda: calls.append(1), backend, warmup=2, repeats=3)
    assert samples == [0.002, 0.002, 0.002]  # 2 ms per call from the events
    assert calls.count(1) == 5 and calls.count(0) == 1  # warm-up calls, then one synchronize before timing
    assert backend.device == "cuda:0" and backend.dist_backend == "nccl"


def test_oom_errors_are_recognised() -> None:
    assert is_oom(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_oom(MemoryError())
    assert is_oom(RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory"))
    assert not is_oom(ValueError("shape mismatch"))


def _fake_nvml() -> Any:
    nv = types.ModuleType("pynvml")
    state = {"init": 0, "shutdown": 0}
    nv.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]
    nv.nvmlInit = lambda: state.__setitem__("init", 1)  # type: ignore[attr-defined]
    nv.nvmlShutdown = lambda: state.__setitem__("shutdown", 1)  # type: ignore[attr-defined]
    nv.nvmlDeviceGetCount = lambda: 2  # type: ignore[attr-defined]
    nv.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    nv.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=50 + 40 * h)  # type: ignore
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(used=(h + 1) * 2**30)  # type: ignore
    nv.nvmlDeviceGetPowerUsage = lambda h: 300_000  # type: ignore[attr-defined]  # mW
    nv.nvmlDeviceGetClockInfo = lambda h, kind: 1980 - 100 * h  # type: ignore[attr-defined]
    nv.state = state  # type: ignore[attr-defined]
    return nv


def test_nvml_sampling_summarises_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    nv = _fake_nvml()
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    s = Sampler("cuda", interval_s=0.01)
    assert s.source.startswith("NVML")
    row = s.sample()
    assert row == {"gpu_util_pct": 90.0, "memory_used_bytes": 2.0 * 2**30, "power_w": 600.0, "sm_clock_mhz": 1880.0}
    s.start()
    tele = s.stop()
    assert nv.state == {"init": 1, "shutdown": 1}
    assert tele.samples >= 1 and tele.peak["power_w"] == 600.0 and "util 90%" in s.describe()


def test_without_nvml_the_cuda_sampler_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(memory_allocated=lambda: 3 * 2**30))
    s = Sampler("cuda", torch_mod=fake_torch)
    assert "install nvidia-ml-py" in s.source
    assert s.sample() == {"memory_used_bytes": 3.0 * 2**30}


def test_cpu_sampler_reads_host_counters() -> None:
    s = Sampler("cpu", interval_s=0.01)
    assert s.sample()["rss_bytes"] > 0
    s.start()
    tele = s.stop()
    assert tele.source.startswith("host") and tele.peak["rss_bytes"] > 0 and "rss" in s.describe()


def test_inner_calls_are_averaged_per_call() -> None:
    calls: list[int] = []
    fake_cuda = types.SimpleNamespace(Event=_Event, synchronize=lambda: None)
    backend = Backend("cuda", 1, types.SimpleNamespace(cuda=fake_cuda))
    samples = time_op(lambda: calls.append(1), backend, warmup=0, repeats=2, inner=4)
    assert samples == [0.0005, 0.0005] and len(calls) == 8  # 2 ms per sample / 4 calls


def test_tf32_switch_restores_the_previous_setting() -> None:
    from gpuplan.bench.compute import _set_tf32

    new_api = types.SimpleNamespace(fp32_precision="ieee")
    t = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=new_api)))
    restore = _set_tf32(t, True)
    assert new_api.fp32_precision == "tf32"
    restore()
    assert new_api.fp32_precision == "ieee"
    legacy = types.SimpleNamespace(allow_tf32=False)
    t = types.SimpleNamespace(backends=types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=legacy)))
    restore = _set_tf32(t, True)
    assert legacy.allow_tf32 is True
    restore()
    assert legacy.allow_tf32 is False
