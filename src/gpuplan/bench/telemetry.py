"""Device counters sampled in a background thread while the suite runs.

NVIDIA: NVML through nvidia-ml-py (optional extra `bench`): utilization %, memory used,
power W, SM clock MHz of every device. Ascend: `torch.npu` memory only (npu-smi has no
Python binding). CPU: load average and the process's resident memory from /proc.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from typing import Any

from gpuplan.bench.records import Telemetry

__all__ = ["Sampler"]


class Sampler:
    """Start with `start()`, read `latest` for the progress display, `stop()` returns the summary."""

    def __init__(self, backend_kind: str, *, interval_s: float = 0.5, torch_mod: Any = None) -> None:
        self.kind = backend_kind
        self.interval_s = interval_s
        self.torch = torch_mod
        self.latest: dict[str, float] = {}
        self._rows: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None
        self._handles: list[Any] = []
        self.source = "host /proc (load average, RSS)"
        if backend_kind == "cuda":
            try:
                nvml = importlib.import_module("pynvml")
                nvml.nvmlInit()
                self._nvml = nvml
                self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
                self.source = "NVML (nvidia-ml-py)"
            except Exception:  # noqa: BLE001 - optional: without NVML only torch memory is sampled
                self._nvml = None
                self.source = "torch.cuda memory (install nvidia-ml-py for utilization, power, clocks)"
        elif backend_kind == "npu":
            self.source = "torch.npu memory"

    def sample(self) -> dict[str, float]:
        """One reading (summed or maxed over devices)."""
        row: dict[str, float] = {}
        if self._nvml is not None:
            nv = self._nvml
            utils, mems, powers, clocks = [], [], [], []
            for h in self._handles:
                utils.append(float(nv.nvmlDeviceGetUtilizationRates(h).gpu))
                mems.append(float(nv.nvmlDeviceGetMemoryInfo(h).used))
                powers.append(nv.nvmlDeviceGetPowerUsage(h) / 1000.0)
                clocks.append(float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)))
            row = {"gpu_util_pct": max(utils), "memory_used_bytes": max(mems), "power_w": sum(powers),
                   "sm_clock_mhz": min(clocks)}
        elif self.kind in ("cuda", "npu") and self.torch is not None:
            mod = getattr(self.torch, self.kind)
            row = {"memory_used_bytes": float(mod.memory_allocated())}
        else:
            row = {"load_avg_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0,
                   "rss_bytes": float(_rss())}
        return row

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.latest = self.sample()
                self._rows.append(self.latest)
            except Exception:  # noqa: BLE001 - a failing counter never stops a benchmark
                pass

    def start(self) -> None:
        self.latest = self.sample()
        self._rows.append(self.latest)
        self._thread = threading.Thread(target=self._loop, name="gpuplan-telemetry", daemon=True)
        self._thread.start()

    def stop(self) -> Telemetry:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()
        keys = sorted({k for r in self._rows for k in r})
        peak = {k: max(r[k] for r in self._rows if k in r) for k in keys}
        mean = {k: sum(r[k] for r in self._rows if k in r) / sum(1 for r in self._rows if k in r) for k in keys}
        return Telemetry(source=self.source, interval_s=self.interval_s, samples=len(self._rows), peak=peak, mean=mean)

    def describe(self) -> str:
        """A short line of the latest reading for the progress display."""
        r = self.latest
        if "gpu_util_pct" in r:
            return (f"util {r['gpu_util_pct']:.0f}% mem {r['memory_used_bytes'] / 2**30:.1f} GiB "
                    f"{r['power_w']:.0f} W {r['sm_clock_mhz']:.0f} MHz")
        if "rss_bytes" in r:
            return f"load {r['load_avg_1m']:.1f} rss {r['rss_bytes'] / 2**30:.2f} GiB"
        if "memory_used_bytes" in r:
            return f"mem {r['memory_used_bytes'] / 2**30:.1f} GiB"
        return ""


def _rss() -> int:
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
