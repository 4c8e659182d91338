"""Request streams for inference rows measured on a dataset: length distributions and runs.

Rows that state no lengths were measured on a public dataset named in their settings
(`dataset=`: ShareGPT, the MLPerf datasets). Their lengths come from `data/datasets.yaml`:
the dataset's own quantiles where its token counts are public (the MLPerf prompts), else a
truncated exponential with the published mean (conversation lengths are heavy-tailed,
roughly exponential: Zheng et al. 2023, LMSYS-Chat-1M, fig. 3), cut where the benchmark
tools cut them (vLLM's benchmark drops ShareGPT prompts over 1024 tokens; MLPerf caps
llama2-70b prompts and outputs at 1024 tokens). A finite
offline run (N prompts all queued at t = 0) and a server run (Poisson arrivals at the
row's rate) go through the load simulator (`gpuplan.simulate`), so that the tail (the
longest outputs finishing alone) and the queueing are counted, not only the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuplan import yamlio
from gpuplan.errors import GpuplanError
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.simulate import EngineConfig, LengthDist, SimMetrics, Workload, simulate_engine, summarize
from gpuplan.simulate.lockstep import lockstep_cost
from gpuplan.workload.engines import EngineProfile

__all__ = ["Dataset", "dataset", "quantile_hist", "simulate_row", "truncated_exponential"]

_STRICT = ConfigDict(extra="forbid", frozen=True)

SEED = 0
SERVER_REQUESTS = 3000  # Poisson arrivals simulated for a server row
OFFLINE_REQUESTS = 3000  # prompts of an offline row that does not say how many
LOCKSTEP_RUNS = 2  # reruns of an offline run with attention groups, each at the prompt rate the last one reached


class _Side(BaseModel):
    """One side (prompts or outputs) of a dataset's lengths: published quantiles, else a mean and a cap."""

    model_config = _STRICT

    mean_tokens: float = Field(gt=0)
    quantile_tokens: tuple[int, ...] | None = None
    cap_tokens: int | None = Field(default=None, ge=1)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_shape(self) -> _Side:
        if (self.quantile_tokens is None) == (self.cap_tokens is None):
            raise ValueError("give quantile_tokens or cap_tokens (one of them)")
        q = self.quantile_tokens
        if q is not None and (q[0] < 1 or any(b < a for a, b in zip(q, q[1:], strict=False))):
            raise ValueError("quantile_tokens must rise from at least 1")
        return self


class _DatasetEntry(BaseModel):
    model_config = _STRICT

    key: str = Field(min_length=1)
    source: str = Field(min_length=1)
    input: _Side
    output: _Side


class _DatasetsFile(BaseModel):
    model_config = _STRICT

    schema_version: int
    as_of: str
    probabilities: tuple[float, ...] = Field(min_length=2)
    datasets: tuple[_DatasetEntry, ...]

    @model_validator(mode="after")
    def _grid(self) -> _DatasetsFile:
        p = self.probabilities
        if p[0] != 0.0 or p[-1] != 1.0 or any(b <= a for a, b in zip(p, p[1:], strict=False)):
            raise ValueError("probabilities must rise from 0 to 1")
        for d in self.datasets:
            for side in (d.input, d.output):
                if side.quantile_tokens is not None and len(side.quantile_tokens) != len(p):
                    raise ValueError(f"{d.key}: one quantile per probability ({len(p)})")
        return self


@dataclass(frozen=True, slots=True)
class Dataset:
    key: str  # the `dataset=` value of a row's settings
    input_mean: float
    output_mean: float
    input_lengths: LengthDist
    output_lengths: LengthDist
    source: str

    @property
    def input_max(self) -> int:
        return self.input_lengths.max


def quantile_hist(quantiles: tuple[int, ...], probabilities: tuple[float, ...], label: str) -> LengthDist:
    """Bins between consecutive quantiles, each weighted by the probability between them."""
    w = tuple(b - a for a, b in zip(probabilities, probabilities[1:], strict=False))
    return LengthDist(kind="hist", low=quantiles[:-1], high=quantiles[1:], weight=w, label=label)


def _side(s: _Side, probabilities: tuple[float, ...], what: str) -> LengthDist:
    if s.quantile_tokens is not None:
        return quantile_hist(s.quantile_tokens, probabilities, f"{what} quantiles")
    assert s.cap_tokens is not None
    return truncated_exponential(s.mean_tokens, s.cap_tokens)


@cache
def _datasets() -> tuple[Dataset, ...]:
    path = resources.files("gpuplan.validate") / "data" / "datasets.yaml"
    f = _DatasetsFile.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))
    return tuple(Dataset(key=d.key, input_mean=d.input.mean_tokens, output_mean=d.output.mean_tokens,
                         input_lengths=_side(d.input, f.probabilities, f"{d.key} prompt"),
                         output_lengths=_side(d.output, f.probabilities, f"{d.key} output"), source=d.source)
                 for d in f.datasets)


def dataset(key: str) -> Dataset:
    """The dataset a row's settings name (`dataset=`), from `data/datasets.yaml`."""
    for d in _datasets():
        if d.key == key:
            return d
    raise GpuplanError(f"unknown dataset {key!r}; known: {', '.join(d.key for d in _datasets())}")


def truncated_exponential(mean: float, cap: int, *, bins: int = 48, low: int = 4) -> LengthDist:
    """A histogram of an exponential length distribution cut to [low, cap] whose mean is `mean`."""
    edges = np.unique(np.round(np.geomspace(low, cap + 1, bins + 1)).astype(np.int64))

    def hist(scale: float) -> tuple[np.ndarray, float]:
        cdf = 1.0 - np.exp(-(edges - low) / scale)
        w = np.diff(cdf)
        mids = (edges[:-1] + edges[1:] - 1) / 2.0
        return w, float((w * mids).sum() / w.sum())

    lo, hi = 1.0, 50.0 * mean  # the truncated mean grows with the scale: bisect for it
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        if hist(mid)[1] < mean:
            lo = mid
        else:
            hi = mid
    w, _ = hist(math.sqrt(lo * hi))
    return LengthDist(kind="hist", low=tuple(int(x) for x in edges[:-1]), high=tuple(int(x) - 1 for x in edges[1:]),
                      weight=tuple(float(x) for x in w), label=f"exp(mean {mean:g}) in [{low}, {cap}]")


def _lengths(d: Dataset, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    return d.input_lengths.sample(rng, n), d.output_lengths.sample(rng, n)


def simulate_row(model: StepCostModel, eng: EngineProfile, d: Dataset, *, scenario: str,
                 rate_or_cap: float | None, prompts: int | None, groups: int = 1) -> SimMetrics:
    """Simulate one replica: an offline run of `prompts` queued requests, or `prompts` Poisson arrivals at a
    rate (requests/s, not rounded: a replica's share of a deployment's rate is rarely whole).

    Without `prompts` an offline run queues `OFFLINE_REQUESTS` and a server run draws `SERVER_REQUESTS`; a run's
    length matters near saturation, where the batch climbs for as long as the run lasts (an MLPerf Server run
    lasts its min_duration of 2400 s, tens of thousands of requests per replica).
    With `groups` attention groups (ep > tp) one group is simulated, its steps stretched by the other groups'
    prefills (simulate.lockstep, as `estimate infer --qps` does): at the row's rate for a server row; for an
    offline run at the rate the run itself reaches, found by running it again (`LOCKSTEP_RUNS` times)."""
    rng = np.random.default_rng(SEED)
    seqs = eng.max_num_seqs
    if scenario == "server":
        n = prompts or SERVER_REQUESTS
        qps = float(rate_or_cap or 1.0)
        arrivals = np.cumsum(rng.exponential(1.0 / qps, size=n))
    else:
        n = prompts or OFFLINE_REQUESTS
        arrivals = np.zeros(n)
        if rate_or_cap:
            seqs = min(seqs, int(rate_or_cap))
    inp, out = _lengths(d, rng, n)
    cfg = EngineConfig(kv_block_tokens=eng.kv_block_tokens, max_num_seqs=seqs,
                       max_batched_tokens=max(eng.max_batched_tokens, int(inp.max())),
                       chunked_prefill=eng.chunked_prefill, scheduling=eng.scheduling)
    wl = Workload(arrival_s=arrivals, input_len=inp, output_len=out, label=d.key)
    warmup = 0.1 if scenario == "server" else 0.0

    def run(group_qps: float) -> SimMetrics:
        cost = lockstep_cost(model, groups=groups, group_qps=group_qps, input_len_mean=float(inp.mean()),
                             output_len_mean=float(out.mean()), max_batched_tokens=cfg.max_batched_tokens,
                             chunked_prefill=eng.chunked_prefill)
        return summarize(simulate_engine(wl, cost, cfg), warmup_fraction=warmup)

    if scenario == "server" or groups <= 1:
        return run(float(rate_or_cap or 0) if scenario == "server" else 0.0)
    m = run(0.0)
    for _ in range(LOCKSTEP_RUNS):  # the stall slows the run, which lowers the other groups' prompt rate
        m = run(m.requests_per_s)
    return m
