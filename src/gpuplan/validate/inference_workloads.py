"""Request streams for inference rows measured on a dataset: length distributions and runs.

Rows that state no lengths were measured on a public dataset named in their notes
(ShareGPT, the MLPerf OpenOrca subsets). Their lengths are modelled as truncated
exponential distributions with the dataset's mean prompt and output lengths (conversation
lengths are heavy-tailed, roughly exponential: Zheng et al. 2023, LMSYS-Chat-1M,
fig. 3), cut where the benchmark tools cut them (vLLM's benchmark drops ShareGPT prompts
over 1024 tokens; MLPerf caps llama2-70b prompts and outputs at 1024 tokens). A finite
offline run (N prompts all queued at t = 0) and a server run (Poisson arrivals at the
row's rate) go through the load simulator (`gpuplan.simulate`), so that the tail (the
longest outputs finishing alone) and the queueing are counted, not only the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuplan.errors import GpuplanError
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.simulate import EngineConfig, LengthDist, SimMetrics, Workload, simulate_engine, summarize
from gpuplan.workload.engines import EngineProfile

__all__ = ["DATASETS", "Dataset", "dataset", "simulate_row", "truncated_exponential"]

SEED = 0
SERVER_REQUESTS = 3000  # Poisson arrivals simulated for a server row
OFFLINE_REQUESTS = 3000  # prompts of an offline row that does not say how many


@dataclass(frozen=True, slots=True)
class Dataset:
    key: str  # the `dataset=` value of a row's settings
    input_mean: float
    output_mean: float
    input_max: int
    output_max: int
    source: str


DATASETS = (
    # MLPerf mixtral-8x7b mixes OpenOrca, GSM8K and MBXP (5k samples each): shorter answers.
    Dataset("mlperf_mixtral", 300.0, 145.0, 2048, 1024,
            "MLPerf mixtral-8x7b dataset (OpenOrca + GSM8K + MBXP); output cap 1024"),
    # LMDeploy's ShareGPT request-throughput tables give requests/s, output tokens/s and total
    # tokens/s per run: 3210.3 / 12.611 = 255 output and 6619.4 / 12.611 - 255 = 270 prompt tokens
    # per request (v0.1.0), 233 and 247 (v0.2.0): means 260 and 245 with the Llama-2 tokenizer.
    Dataset("sharegpt", 260.0, 245.0, 1024, 1024,
            "LMDeploy ShareGPT benchmark tables (total tokens / requests); vLLM benchmark drops prompts > 1024"),
    # MLPerf llama2-70b (OpenOrca): tokens/s / samples/s of the v4.1 submissions = 290 output tokens
    # per sample; prompts and outputs are capped at 1024 tokens (MLCommons llama2-70b reference).
    Dataset("mlperf_openorca", 300.0, 290.0, 1024, 1024,
            "MLPerf llama2-70b OpenOrca: tokens/s over samples/s; 1024-token caps"),
)


def dataset(key: str) -> Dataset:
    """The dataset a row's settings name (`dataset=`)."""
    for d in DATASETS:
        if d.key == key:
            return d
    raise GpuplanError(f"unknown dataset {key!r}; known: {', '.join(d.key for d in DATASETS)}")


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
    inp = truncated_exponential(d.input_mean, d.input_max).sample(rng, n)
    out = truncated_exponential(d.output_mean, d.output_max).sample(rng, n)
    return inp, out


def simulate_row(model: StepCostModel, eng: EngineProfile, d: Dataset, *, scenario: str, rate_or_cap: int | None,
                 prompts: int | None) -> SimMetrics:
    """Simulate one replica: an offline run of `prompts` queued requests, or Poisson arrivals at a rate."""
    rng = np.random.default_rng(SEED)
    seqs = eng.max_num_seqs
    if scenario == "server":
        n = SERVER_REQUESTS
        qps = float(rate_or_cap or 1)
        arrivals = np.cumsum(rng.exponential(1.0 / qps, size=n))
    else:
        n = prompts or OFFLINE_REQUESTS
        arrivals = np.zeros(n)
        if rate_or_cap:
            seqs = min(seqs, rate_or_cap)
    inp, out = _lengths(d, rng, n)
    cfg = EngineConfig(kv_block_tokens=eng.kv_block_tokens, max_num_seqs=seqs,
                       max_batched_tokens=max(eng.max_batched_tokens, int(inp.max())),
                       chunked_prefill=eng.chunked_prefill, scheduling=eng.scheduling)
    run = simulate_engine(Workload(arrival_s=arrivals, input_len=inp, output_len=out, label=d.key), model, cfg)
    return summarize(run, warmup_fraction=0.1 if scenario == "server" else 0.0)
