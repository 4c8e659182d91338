"""Benchmark formulas against hand-computed values (nccl-tests PERFORMANCE.md factors, 2mnk, GB/s)."""

from __future__ import annotations

import pytest

from gpuplan.bench.formulas import (
    algbw_gbyte_s,
    busbw_factor,
    collective_bytes,
    gbyte_s,
    gemm_flops,
    gemm_tflops,
    summarize,
)
from gpuplan.errors import InputError


def test_gemm_flops_is_2mnk() -> None:
    assert gemm_flops(2, 3, 4) == 48.0
    # 8192^3 in 1 ms: 2 * 8192^3 = 1.0995e12 FLOP -> 1099.5 TFLOP/s
    assert gemm_tflops(8192, 8192, 8192, 1e-3) == pytest.approx(1099.511627776)
    with pytest.raises(InputError):
        gemm_flops(0, 1, 1)


def test_bandwidth_in_gb_per_s() -> None:
    assert gbyte_s(2e9, 0.5) == 4.0
    assert algbw_gbyte_s(1 << 30, 1.0) == pytest.approx(1.073741824)
    with pytest.raises(InputError):
        gbyte_s(1.0, 0.0)


@pytest.mark.parametrize(("kind", "n", "factor"), [
    ("all_reduce", 8, 1.75),  # 2 * 7 / 8
    ("all_reduce", 2, 1.0),
    ("all_reduce", 1, 0.0),
    ("all_gather", 8, 0.875),  # 7 / 8
    ("reduce_scatter", 4, 0.75),
    ("all_to_all", 16, 0.9375),
    ("send_recv", 2, 1.0),
])
def test_busbw_factors_match_nccl_tests(kind: str, n: int, factor: float) -> None:
    assert busbw_factor(kind, n) == pytest.approx(factor)


def test_busbw_of_an_8_gpu_all_reduce_by_hand() -> None:
    # 1 GiB all-reduce in 5 ms: algbw = 1073741824 / 0.005 / 1e9 = 214.75 GB/s, busbw x 1.75 = 375.8 GB/s
    alg = algbw_gbyte_s(collective_bytes("all_reduce", 1 << 30, 8), 0.005)
    assert alg == pytest.approx(214.7483648)
    assert alg * busbw_factor("all_reduce", 8) == pytest.approx(375.8096384)


def test_collective_sizes_follow_nccl_tests() -> None:
    assert collective_bytes("all_gather", 1000, 8) == 8000  # the gathered output
    assert collective_bytes("reduce_scatter", 8000, 8) == 8000  # the full input
    assert collective_bytes("all_to_all", 4096, 4) == 4096
    with pytest.raises(InputError, match="collective"):
        collective_bytes("broadcastt", 1, 2)
    with pytest.raises(InputError):
        busbw_factor("all_reduce", 0)


def test_summarize_median_and_iqr_spread() -> None:
    med, lo, hi, spread = summarize([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (med, lo, hi) == (3.0, 1.0, 5.0)
    assert spread == pytest.approx((4.0 - 2.0) / 3.0)  # p75 = 4, p25 = 2
    assert summarize([2.0]) == (2.0, 2.0, 2.0, 0.0)
    with pytest.raises(InputError):
        summarize([])
