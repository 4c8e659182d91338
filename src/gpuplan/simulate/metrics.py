"""Serving figures from one simulated run: latency percentiles, throughput, goodput, KV use, batches.

Definitions follow vLLM's benchmark_serving: TTFT = first token time - arrival; TPOT =
(finish - first token) / (output tokens - 1), per request, for requests with more than
one output token; E2E = finish - arrival; queueing delay = first scheduled - arrival.
Goodput (DistServe, Zhong et al. 2024) counts requests meeting both the TTFT and the TPOT
limit. All figures are simulated (estimated), never measured.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from gpuplan.errors import InputError
from gpuplan.simulate.engine_sim import RawRun

__all__ = ["Percentiles", "SimMetrics", "Slo", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Slo:
    """Latency limits a request must meet to count as good (seconds)."""

    ttft_s: float = float("inf")
    tpot_s: float = float("inf")

    def __post_init__(self) -> None:
        for name in ("ttft_s", "tpot_s"):
            v = getattr(self, name)
            if not v > 0:
                raise InputError(field=name, value=v, allowed="a positive number of seconds")


@dataclass(frozen=True, slots=True, kw_only=True)
class Percentiles:
    mean: float
    p50: float
    p90: float
    p99: float

    @staticmethod
    def of(x: np.ndarray) -> Percentiles:
        x = x[np.isfinite(x)]
        if x.size == 0:
            return Percentiles(mean=0.0, p50=0.0, p90=0.0, p99=0.0)
        p50, p90, p99 = np.percentile(x, [50.0, 90.0, 99.0])
        return Percentiles(mean=float(x.mean()), p50=float(p50), p90=float(p90), p99=float(p99))


@dataclass(frozen=True, slots=True, kw_only=True)
class SimMetrics:
    """What one simulated replica delivers (all estimated by simulation)."""

    requests: int
    requests_measured: int  # after the warm-up requests left out of the latency figures
    makespan_s: float
    ttft_s: Percentiles
    tpot_s: Percentiles
    e2e_s: Percentiles
    queue_s: Percentiles
    requests_per_s: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    goodput_fraction: float
    goodput_requests_per_s: float
    slo: Slo
    kv_used_mean_fraction: float  # time-averaged tokens held / capacity tokens
    kv_peak_blocks: int
    kv_capacity_blocks: int
    batch_mean: float  # requests per iteration
    batch_max: int
    iterations: int
    preemptions: int
    busy_fraction: float
    # mean queueing delay of the later half of the measured requests minus that of the earlier half: a replica
    # that keeps up holds it near 0; one that falls behind (a queue that does not drain) grows it with the run
    queue_growth_s: float = 0.0

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["provenance"] = "estimated: discrete-event simulation (docs/inference_planner.md)"
        return d


def summarize(run: RawRun, slo: Slo | None = None, *, warmup_fraction: float = 0.0) -> SimMetrics:
    """Figures of `run`; latency figures skip the first `warmup_fraction` of requests."""
    slo = slo or Slo()
    w = run.workload
    n = w.n
    skip = int(n * warmup_fraction)
    sl = slice(skip, None)
    arr = w.arrival_s
    out = w.output_len
    ttft = run.first_token_s - arr
    e2e = run.finish_s - arr
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (run.finish_s - run.first_token_s) / np.maximum(out - 1, 1), np.nan)
    queue = run.scheduled_s - arr
    span = max(run.end_s - float(arr[0]), 1e-12)
    good = (ttft[sl] <= slo.ttft_s) & ((tpot[sl] <= slo.tpot_s) | np.isnan(tpot[sl]))
    frac = float(good.mean()) if good.size else 0.0
    rps = n / span
    cap_tokens = run.kv_capacity_blocks * run.kv_block_tokens
    q = queue[sl][np.isfinite(queue[sl])]
    half = q.size // 2
    growth = float(q[half:].mean() - q[:half].mean()) if half else 0.0
    return SimMetrics(
        requests=n, requests_measured=n - skip, makespan_s=span,
        ttft_s=Percentiles.of(ttft[sl]), tpot_s=Percentiles.of(tpot[sl]), e2e_s=Percentiles.of(e2e[sl]),
        queue_s=Percentiles.of(queue[sl]), requests_per_s=rps,
        input_tokens_per_s=float(w.input_len.sum()) / span, output_tokens_per_s=float(out.sum()) / span,
        goodput_fraction=frac, goodput_requests_per_s=frac * rps, slo=slo,
        kv_used_mean_fraction=run.kv_token_seconds / span / cap_tokens if cap_tokens else 0.0,
        kv_peak_blocks=run.kv_peak_blocks, kv_capacity_blocks=run.kv_capacity_blocks,
        batch_mean=run.batch_sum / run.iterations if run.iterations else 0.0, batch_max=run.batch_max,
        iterations=run.iterations, preemptions=int(run.preemptions.sum()), busy_fraction=run.busy_s / span,
        queue_growth_s=growth)
