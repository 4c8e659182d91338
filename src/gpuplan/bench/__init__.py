"""`gpuplan bench`: measure the local machine through PyTorch and compare with gpuplan's prediction.

torch is imported lazily inside the benchmark modules only (`backend`, `compute`,
`collectives`, `storage`, `e2e`, `suite`); `records`, `formulas`, `predict` and
`calibrate` work without it, so the planner and `gpuplan calibrate` never need torch.
docs/bench.md describes every benchmark and its formula.
"""

from __future__ import annotations

from gpuplan.bench.records import BenchResult, Measurement, load_result

__all__ = ["BenchResult", "Measurement", "load_result"]
