"""Request streams: Poisson arrivals with sampled lengths, or a CSV trace.

A `Workload` holds three equal-length arrays sorted by arrival time. Poisson arrivals
use exponential inter-arrival gaps of mean 1/qps (a Poisson process, e.g. Kleinrock,
Queueing Systems vol. 1, ch. 2) from a seeded numpy Generator, so runs are reproducible.
A trace is CSV with header `arrival_s,input_len,output_len`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpuplan.errors import InputError
from gpuplan.simulate.lengths import LengthDist

__all__ = ["Workload", "poisson_workload", "read_trace"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Workload:
    """Requests in arrival order: arrival time (s), prompt tokens, output tokens."""

    arrival_s: np.ndarray
    input_len: np.ndarray
    output_len: np.ndarray
    label: str = ""
    # prompt tokens found in the prefix cache when the request arrives (None: none); under its input_len, since an
    # engine computes at least the prompt's last token (vLLM automatic prefix caching)
    cached_len: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        if n == 0 or len(self.input_len) != n or len(self.output_len) != n:
            raise InputError(field="workload", value=self.label or n, allowed="at least one request, equal columns")
        if (self.input_len < 1).any() or (self.output_len < 1).any():
            raise InputError(field="workload lengths", value=self.label, allowed="input_len >= 1 and output_len >= 1",
                             hint="zero or negative lengths cannot be served")
        if self.cached_len is not None and (len(self.cached_len) != n or (self.cached_len < 0).any()
                                            or (self.cached_len >= self.input_len).any()):
            raise InputError(field="cached_len", value=self.label, allowed="0 <= cached_len < input_len per request",
                             hint="an engine computes at least the last prompt token; lower the prefix hit")
        if (np.diff(self.arrival_s) < 0).any() or not np.isfinite(self.arrival_s).all() or self.arrival_s[0] < 0:
            raise InputError(field="arrival_s", value=self.label, allowed="finite, >= 0, non-decreasing times")

    @property
    def n(self) -> int:
        return len(self.arrival_s)

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1] - self.arrival_s[0])

    @property
    def qps(self) -> float:
        """Mean arrival rate (requests per second)."""
        return (self.n - 1) / self.duration_s if self.duration_s > 0 else float("inf")


def poisson_workload(*, qps: float, num_requests: int, input_len: LengthDist, output_len: LengthDist,
                     seed: int = 0) -> Workload:
    """`num_requests` Poisson arrivals at `qps` with independently drawn lengths."""
    if not qps > 0 or not np.isfinite(qps):
        raise InputError(field="qps", value=qps, allowed="a positive number of requests per second")
    if num_requests < 1:
        raise InputError(field="num_requests", value=num_requests, allowed="a positive integer")
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / qps, size=num_requests))
    return Workload(arrival_s=arrivals, input_len=input_len.sample(rng, num_requests),
                    output_len=output_len.sample(rng, num_requests),
                    label=f"poisson qps={qps:g} in={input_len.label} out={output_len.label} seed={seed}")


def read_trace(path: str | Path) -> Workload:
    """A trace CSV (header arrival_s,input_len,output_len), sorted by arrival."""
    p = Path(path)
    try:
        with p.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        arr = np.array([float(r["arrival_s"]) for r in rows], dtype=np.float64)
        inp = np.array([int(r["input_len"]) for r in rows], dtype=np.int64)
        out = np.array([int(r["output_len"]) for r in rows], dtype=np.int64)
    except OSError as exc:
        raise InputError(field="trace", value=str(p), allowed="a readable CSV file", hint=str(exc)) from None
    except (KeyError, TypeError, ValueError):
        raise InputError(field="trace", value=str(p),
                         allowed="CSV with header arrival_s,input_len,output_len and numeric rows") from None
    order = np.argsort(arr, kind="stable")
    return Workload(arrival_s=arr[order] - (arr.min() if len(arr) else 0.0), input_len=inp[order],
                    output_len=out[order], label=str(p))
