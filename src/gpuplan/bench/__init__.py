"""`gpuplan bench`: measure the local machine through PyTorch and compare with gpuplan's prediction.

torch is imported lazily inside the benchmark modules only (`backend`, `compute`,
`collectives`, `storage`, `e2e`, `suite`); `records`, `formulas`, `predict` and
`calibrate` work without it, so the planner and `gpuplan calibrate` never need torch.
docs/bench.md describes every benchmark and its formula.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuplan.bench.records import BenchResult, Measurement, load_result

__all__ = ["BenchResult", "Measurement", "load_result"]


def __getattr__(name: str) -> Any:
    """The record types load on first use (PEP 562): the planner reads a user's calibration
    (`calibration_files`) without building the benchmark records' schemas."""
    if name in __all__:
        from gpuplan.bench import records

        return getattr(records, name)
    raise AttributeError(f"module 'gpuplan.bench' has no attribute {name!r}")
