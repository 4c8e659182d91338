"""Device backends of `gpuplan bench`: CUDA, Ascend (torch_npu) and the CPU, detected at run time.

torch is imported here lazily (inside functions); importing this module does not need it.
Timing follows the usual GPU practice: warm-up calls first, then each repeat timed with
device events (CUDA/NPU) or perf_counter after a synchronize (CPU).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from gpuplan.errors import GpuplanError, InputError

__all__ = ["Backend", "BackendKind", "BenchUnavailable", "NotApplicable", "detect_backend", "host_peak_bytes",
           "import_torch", "is_oom", "machine_facts", "time_op"]

BackendKind = Literal["cuda", "npu", "cpu"]


class BenchUnavailable(GpuplanError):
    """The environment cannot run a benchmark (no torch, no such device); the message says what to do."""


class NotApplicable(BenchUnavailable):
    """A benchmark that this machine cannot run by design (one device for a two-device test): skipped."""


def import_torch() -> Any:
    """torch, or BenchUnavailable with the install command."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        raise BenchUnavailable(
            "gpuplan bench needs PyTorch, which is not installed: pip install torch "
            "(CPU build: pip install torch --index-url https://download.pytorch.org/whl/cpu); "
            "the planner commands work without it"
        ) from None


def _npu_available(torch: Any) -> bool:
    try:
        importlib.import_module("torch_npu")  # registers torch.npu (Ascend CANN)
    except ImportError:
        return False
    npu = getattr(torch, "npu", None)
    return bool(npu is not None and npu.is_available())


@dataclass(frozen=True)
class Backend:
    """One device kind with its torch module handle; device 0 runs the single-device benchmarks."""

    kind: BackendKind
    count: int
    torch: Any

    @property
    def device(self) -> str:
        return "cpu" if self.kind == "cpu" else f"{self.kind}:0"

    @property
    def module(self) -> Any:
        """torch.cuda / torch.npu (None on the CPU)."""
        return getattr(self.torch, self.kind) if self.kind != "cpu" else None

    @property
    def dist_backend(self) -> str:
        return {"cuda": "nccl", "npu": "hccl", "cpu": "gloo"}[self.kind]

    def sync(self) -> None:
        if self.module is not None:
            self.module.synchronize()

    def reset_peak(self) -> None:
        if self.module is not None:
            self.module.empty_cache()
            self.module.reset_peak_memory_stats()

    def peak_bytes(self) -> int | None:
        """Peak bytes the allocator handed out since `reset_peak`; None on the CPU (see host_peak_bytes)."""
        if self.module is None:
            return None
        return int(self.module.max_memory_allocated())

    def free(self) -> None:
        import gc

        gc.collect()
        if self.module is not None:
            self.module.empty_cache()

    def supports(self, dtype: str) -> tuple[bool, str]:
        """Whether a GEMM in `dtype` runs natively here, and why not."""
        t = self.torch
        if dtype == "fp8":
            if self.kind != "cuda":
                return False, f"fp8 GEMMs need an NVIDIA GPU with fp8 tensor cores (backend {self.kind})"
            major, minor = self.module.get_device_capability(0)
            if (major, minor) < (8, 9) or not hasattr(t, "_scaled_mm"):
                return False, f"fp8 needs compute capability >= 8.9 and torch._scaled_mm (have {major}.{minor})"
            return True, ""
        if dtype == "tf32" and self.kind == "npu":
            return False, "tf32 is an NVIDIA tensor-core mode"
        if dtype == "bf16" and self.kind == "cuda" and not self.module.is_bf16_supported():
            return False, "this GPU has no bf16 support"
        return True, ""

    def device_names(self) -> list[str]:
        if self.kind == "cpu":
            return [platform.processor() or platform.machine()]
        return [str(self.module.get_device_name(i)) for i in range(self.count)]


def detect_backend(requested: str = "auto") -> Backend:
    """The backend for `requested` (auto, cuda, npu, cpu); BenchUnavailable if that device is absent."""
    if requested not in ("auto", "cuda", "npu", "cpu"):
        raise InputError(field="device", value=requested, allowed="auto, cuda, npu or cpu")
    torch = import_torch()
    cuda = bool(torch.cuda.is_available())
    if requested in ("auto", "cuda") and cuda:
        return Backend("cuda", int(torch.cuda.device_count()), torch)
    if requested == "cuda":
        raise BenchUnavailable(f"--device cuda: no CUDA device visible to torch {torch.__version__} "
                               f"(CUDA build: {torch.version.cuda or 'no, a CPU build'}); use --device cpu")
    if requested in ("auto", "npu") and _npu_available(torch):
        return Backend("npu", int(torch.npu.device_count()), torch)
    if requested == "npu":
        raise BenchUnavailable("--device npu: torch_npu is not installed or sees no Ascend device; use --device cpu")
    return Backend("cpu", 1, torch)


def time_op(fn: Callable[[], Any], backend: Backend, *, warmup: int, repeats: int, inner: int = 1) -> list[float]:
    """Seconds per call of `fn`: `repeats` samples, each timing `inner` back-to-back calls, after `warmup` calls.

    CUDA/NPU: device events around each sample (host launch gaps hidden by the queue), one
    synchronize per sample; CPU: perf_counter around each sample.
    """
    for _ in range(warmup):
        fn()
    backend.sync()
    out: list[float] = []
    mod = backend.module
    for _ in range(repeats):
        if mod is not None:
            start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            out.append(float(start.elapsed_time(end)) / 1e3 / inner)  # elapsed_time is in ms
        else:
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            out.append((time.perf_counter() - t0) / inner)
    return out


def is_oom(exc: BaseException) -> bool:
    """True for a device or host out-of-memory error of any backend."""
    name = type(exc).__name__
    text = str(exc).lower()
    return name == "OutOfMemoryError" or "out of memory" in text or "can't allocate memory" in text or \
        isinstance(exc, MemoryError)


def host_peak_bytes() -> int:
    """Peak resident memory of this process (ru_maxrss), bytes; the CPU backend's 'peak memory'."""
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss) * (1 if platform.system() == "Darwin" else 1024)


def machine_facts(backend: Backend) -> dict[str, Any]:
    """Facts for `records.Machine`: host, devices, driver, libraries, topology (best effort, never raises)."""
    t = backend.torch
    libs = {"torch": str(t.__version__)}
    for mod in ("transformers", "numpy", "torch_npu"):
        with contextlib.suppress(Exception):  # optional library
            libs[mod] = str(importlib.import_module(mod).__version__)
    driver = None
    topology = None
    devices: list[dict[str, Any]] = []
    if backend.kind == "cuda":
        libs["cuda"] = str(t.version.cuda)
        if t.backends.cudnn.is_available():
            libs["cudnn"] = str(t.backends.cudnn.version())
        nccl = getattr(t.cuda, "nccl", None)
        if nccl is not None:
            with contextlib.suppress(Exception):
                libs["nccl"] = ".".join(str(x) for x in nccl.version())
        driver = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        driver = driver.splitlines()[0].strip() if driver else None
        topology = _run(["nvidia-smi", "topo", "-m"])
        for i in range(backend.count):
            p = t.cuda.get_device_properties(i)
            devices.append({"index": i, "name": str(p.name), "memory_bytes": int(p.total_memory),
                            "detail": {"capability": f"{p.major}.{p.minor}", "sms": int(p.multi_processor_count)}})
    elif backend.kind == "npu":
        driver = _run(["npu-smi", "info"])
        driver = driver.splitlines()[1].strip() if driver and len(driver.splitlines()) > 1 else None
        for i in range(backend.count):
            devices.append({"index": i, "name": str(t.npu.get_device_name(i)), "memory_bytes": None, "detail": {}})
    else:
        devices.append({"index": 0, "name": _cpu_name(), "memory_bytes": _host_memory(),
                        "detail": {"threads": int(t.get_num_threads())}})
    return {
        "hostname": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
        "backend": backend.kind, "cpu": _cpu_name(), "cpu_count": os.cpu_count() or 1,
        "host_memory_bytes": _host_memory(), "devices": devices, "driver": driver, "libraries": libs,
        "topology": topology,
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _run(cmd: list[str]) -> str | None:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None
