"""What every benchmark gets: the backend, the predictor, sizes, and the list it appends to.

Benchmarks append each measurement as soon as it is made, so a failure later in the same
benchmark keeps the earlier figures (a partial result).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuplan.bench.backend import Backend, time_op
from gpuplan.bench.formulas import summarize
from gpuplan.bench.predict import Predictor, ratio
from gpuplan.bench.records import Measurement, Param, Prediction
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["BenchContext"]


@dataclass
class BenchContext:
    """Mutable run state shared by the benchmarks of one `gpuplan bench` run."""

    backend: Backend
    predictor: Predictor
    quick: bool
    model: ModelSpec  # the preset whose (TP-sharded) shapes and scaled-down copy the suite uses
    tp: int
    directory: Path  # storage benchmarks read and write here
    collective_timeout_s: float = 120.0
    dataloader_workers: int = 2
    dataloader_token_rate: float = 1e6  # tokens/s the loader must sustain
    use_transformers: bool = True  # False: the plain-torch decoder (bench/llama.py) even when transformers exists
    measurements: list[Measurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    status: Callable[[str], None] = lambda _msg: None

    @property
    def warmup(self) -> int:
        return 1 if self.quick else 3

    @property
    def repeats(self) -> int:
        return 3 if self.quick else 10

    def time(self, fn: Callable[[], Any], *, warmup: int | None = None, repeats: int | None = None,
             inner: int = 1) -> list[float]:
        return time_op(fn, self.backend, warmup=self.warmup if warmup is None else warmup,
                       repeats=self.repeats if repeats is None else repeats, inner=inner)

    def add(self, *, benchmark: str, name: str, metric: str, value: float, unit: str, samples: list[float],
            predicted: Prediction, params: dict[str, Param] | None = None) -> Measurement:
        """Record one figure: value is derived from the median of `samples` (seconds) by the caller."""
        med, _lo, _hi, spread = summarize(samples)
        m = Measurement(benchmark=benchmark, name=name, metric=metric, value=value, unit=unit, spread=spread,
                        repeats=len(samples), median_s=med, params=params or {}, predicted=predicted,
                        ratio=ratio(value, predicted))
        self.measurements.append(m)
        self.status(f"{name}: {value:,.3g} {unit}")
        return m

    def note(self, text: str) -> None:
        self.notes.append(text)
