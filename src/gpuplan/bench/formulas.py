"""Formulas of the benchmarks: FLOPs, bandwidths and the nccl-tests bus-bandwidth factors.

Pure functions (no torch), tested against hand-computed values in tests/bench/test_formulas.py.
"""

from __future__ import annotations

from typing import Literal

from gpuplan.errors import InputError, unknown_name

__all__ = [
    "BUSBW_KINDS",
    "CollectiveName",
    "algbw_gbyte_s",
    "busbw_factor",
    "collective_bytes",
    "gbyte_s",
    "gemm_flops",
    "gemm_tflops",
    "summarize",
]

CollectiveName = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"]
BUSBW_KINDS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


def gemm_flops(m: int, n: int, k: int) -> float:
    """FLOPs of C[m,n] = A[m,k] @ B[k,n]: one multiply and one add per term, 2mnk."""
    if min(m, n, k) <= 0:
        raise InputError(field="gemm shape", value=(m, n, k), allowed="positive m, n, k")
    return 2.0 * m * n * k


def gemm_tflops(m: int, n: int, k: int, seconds: float) -> float:
    """Achieved TFLOP/s (1e12 FLOP/s) of one m x n x k GEMM that took `seconds`."""
    return gemm_flops(m, n, k) / _positive(seconds) / 1e12


def gbyte_s(nbytes: float, seconds: float) -> float:
    """Bandwidth in GB/s (1e9 bytes/s), the unit of the catalog's hbm_bandwidth_gbps."""
    return nbytes / _positive(seconds) / 1e9


def busbw_factor(kind: str, n: int) -> float:
    """nccl-tests busbw = algbw x factor (NVIDIA/nccl-tests doc/PERFORMANCE.md).

    all_reduce 2(n-1)/n; all_gather, reduce_scatter and all_to_all (n-1)/n; send_recv 1.
    The factor makes busbw comparable to the hardware's per-rank link bandwidth.
    """
    if n < 1:
        raise InputError(field="ranks", value=n, allowed="an integer >= 1")
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if kind == "send_recv":
        return 1.0
    raise unknown_name("collective", kind, BUSBW_KINDS)


def collective_bytes(kind: str, per_rank_bytes: int, n: int) -> int:
    """The `size` nccl-tests divides by time for algbw, given each rank's input buffer.

    all_reduce, all_to_all and send_recv: the buffer itself; all_gather: the gathered
    output (n x input); reduce_scatter: the full input (each rank keeps 1/n of it), so
    `per_rank_bytes` is the input there too (PERFORMANCE.md: "size" is the total size).
    """
    if kind == "all_gather":
        return per_rank_bytes * n
    if kind in BUSBW_KINDS:
        return per_rank_bytes
    raise unknown_name("collective", kind, BUSBW_KINDS)


def algbw_gbyte_s(size_bytes: float, seconds: float) -> float:
    """nccl-tests algorithm bandwidth: size / time, GB/s."""
    return gbyte_s(size_bytes, seconds)


def summarize(samples: list[float]) -> tuple[float, float, float, float]:
    """(median, min, max, relative spread) of timing samples; spread = (p75 - p25) / median (IQR)."""
    if not samples:
        raise InputError(field="samples", value=samples, allowed="at least one timing sample")
    xs = sorted(samples)
    med = _quantile(xs, 0.5)
    iqr = _quantile(xs, 0.75) - _quantile(xs, 0.25)
    return med, xs[0], xs[-1], (iqr / med if med > 0 else 0.0)


def _quantile(xs: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted `xs` (numpy's default 'linear' method)."""
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _positive(seconds: float) -> float:
    if not seconds > 0:
        raise InputError(field="seconds", value=seconds, allowed="a measured time > 0")
    return seconds
