"""What `plan infer` sizes for: the load (Poisson qps or a trace, length distributions), the SLO, its terms.

The planner's own terms (load headroom, shared-vs-dedicated thresholds, simulation size)
live in `data/infer_plan.yaml` with their sources, in the calibration-term schema, and
can be overridden per run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from gpuplan import yamlio
from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.i18n import tr
from gpuplan.simulate.arrivals import Workload, poisson_workload
from gpuplan.simulate.lengths import LengthDist

__all__ = ["InferLoad", "InferSlo", "planner_terms", "slo_unit_warning"]

# Beyond these a latency promise is no longer one an interactive service makes (MLPerf Inference's server
# scenarios bound TTFT at 2-6 s and TPOT at 40-200 ms; chat UIs aim lower): a value past them is most likely
# milliseconds typed into an option that takes seconds
TTFT_P99_PLAUSIBLE_S = 60.0
TPOT_P99_PLAUSIBLE_S = 1.0


@cache
def _default_terms() -> Calibration:
    path = resources.files("gpuplan.search") / "data" / "infer_plan.yaml"
    return Calibration.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))


def planner_terms(overrides: Mapping[str, float] | None = None) -> Calibration:
    """The planner's terms with `overrides` (name -> value) applied and marked."""
    return _default_terms().with_overrides(overrides)


def slo_unit_warning(ttft_p99_s: float, tpot_p99_s: float, *,
                     names: tuple[str, str] = ("--ttft-p99", "--tpot-p99")) -> dict[str, str] | None:
    """One line in English and Chinese when an SLO looks like milliseconds given as seconds, else None: the plan is
    still made as asked (a batch job may accept such latencies), but the user sees what was read. `names` are the
    options (CLI) or fields (API, web form) the values came from."""
    odd = [(flag, v) for flag, v, limit in ((names[0], ttft_p99_s, TTFT_P99_PLAUSIBLE_S),
                                            (names[1], tpot_p99_s, TPOT_P99_PLAUSIBLE_S)) if v > limit]
    if not odd:
        return None
    flag, v = odd[0]
    return {lang: tr("warn.slo_seconds", lang, option=flag, value=v, ms=v / 1000.0) for lang in ("en", "zh")}


@dataclass(frozen=True, slots=True, kw_only=True)
class InferSlo:
    """Latency promise at the 99th percentile, seconds."""

    ttft_p99_s: float
    tpot_p99_s: float

    def __post_init__(self) -> None:
        for name, flag in (("ttft_p99_s", "ttft-p99"), ("tpot_p99_s", "tpot-p99")):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise InputError(field=flag, value=v, allowed="a positive number of seconds")


def _empirical(x: np.ndarray, label: str) -> LengthDist:
    vals, counts = np.unique(x, return_counts=True)
    return LengthDist(kind="hist", low=tuple(int(v) for v in vals), high=tuple(int(v) for v in vals),
                      weight=tuple(float(c) for c in counts), label=label)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class InferLoad:
    """Requests per second with length distributions, or a trace (whose lengths define the distributions)."""

    qps: float
    input_len: LengthDist
    output_len: LengthDist
    trace: Workload | None = None
    # share of each prompt found in the prefix cache (a shared system prompt, a document asked about again), as
    # the user states it for the router they run (`--prefix-hit`)
    prefix_hit: float = 0.0
    # tokens every prompt starts with (a shared system prompt): each replica keeps them cached after its first
    # request, so they are found in cache whatever the router (vLLM automatic prefix caching, SGLang RadixAttention)
    shared_prefix_tokens: int = 0
    # distinct prefix tokens the stated hit reuses (documents, sessions: `--prefix-set`): where a replica's HBM does
    # not hold them, the hit rests on a host-memory tier or is lost (search/infer_offload.py); 0: not stated
    prefix_set_tokens: int = 0

    def __post_init__(self) -> None:
        if not (self.qps > 0 and math.isfinite(self.qps)):
            raise InputError(field="qps", value=self.qps, allowed="a positive number of requests per second",
                             hint="zero or negative loads need no hardware")
        if not 0.0 <= self.prefix_hit < 1.0:
            raise InputError(field="prefix-hit", value=self.prefix_hit, allowed="a share from 0 up to (not incl.) 1",
                             hint="e.g. 0.5 when half of each prompt repeats a cached prefix")
        if not (isinstance(self.shared_prefix_tokens, int) and self.shared_prefix_tokens >= 0):
            raise InputError(field="shared-prefix", value=self.shared_prefix_tokens,
                             allowed="a whole number of tokens, 0 or more", hint="e.g. 2000 for a shared system prompt")
        if not (isinstance(self.prefix_set_tokens, int) and self.prefix_set_tokens >= 0):
            raise InputError(field="prefix-set", value=self.prefix_set_tokens,
                             allowed="a whole number of tokens, 0 or more",
                             hint="e.g. 20000000 for 500 documents of 40,000 tokens asked about again")

    @property
    def cached_share(self) -> float:
        """The share of the mean prompt found in cache: the stated hit, or the shared prefix where larger (the
        closed forms' view; the simulation caps the prefix per request below its prompt)."""
        shared = min(self.shared_prefix_tokens, max(self.input_len.mean - 1.0, 0.0)) / max(self.input_len.mean, 1.0)
        return max(self.prefix_hit, shared)

    @staticmethod
    def from_trace(trace: Workload) -> InferLoad:
        if trace.n < 2 or not trace.duration_s > 0:
            raise InputError(field="trace", value=trace.label, allowed="at least two requests at distinct times")
        return InferLoad(qps=trace.qps, input_len=_empirical(trace.input_len, f"trace:{trace.label}:input"),
                         output_len=_empirical(trace.output_len, f"trace:{trace.label}:output"), trace=trace)

    @property
    def max_request_tokens(self) -> int:
        if self.trace is not None:
            return int((self.trace.input_len + self.trace.output_len).max())
        return self.input_len.max + self.output_len.max

    def replica_workload(self, replicas: int, *, load_factor: float, num_requests: int | None,
                         seed: int = 0) -> Workload:
        """The stream one of `replicas` replicas sees at `load_factor` x the load (round-robin for a trace).

        `num_requests` Poisson requests; for a trace, the replica's share cut to its first
        `num_requests` (None: all of it).
        """
        if self.trace is None:
            if num_requests is None:
                raise InputError(field="num_requests", value=None, allowed="a positive integer for Poisson load")
            return poisson_workload(qps=self.qps * load_factor / replicas, num_requests=num_requests,
                                    input_len=self.input_len, output_len=self.output_len, seed=seed)
        tr = self.trace
        idx = np.arange(seed % replicas, tr.n, replicas)[:num_requests]
        return Workload(arrival_s=tr.arrival_s[idx] / load_factor, input_len=tr.input_len[idx],
                        output_len=tr.output_len[idx], label=f"{tr.label} 1/{replicas} x{load_factor:g}")

    def fleet_workload(self, *, load_factor: float, num_requests: int, seed: int = 0) -> Workload:
        """The stream the whole fleet sees at `load_factor` x the load: `num_requests` Poisson requests, or the
        trace's first `num_requests` with its gaps divided by `load_factor`."""
        if self.trace is None:
            return poisson_workload(qps=self.qps * load_factor, num_requests=num_requests,
                                    input_len=self.input_len, output_len=self.output_len, seed=seed)
        tr = self.trace
        m = min(num_requests, tr.n)
        return Workload(arrival_s=tr.arrival_s[:m] / load_factor, input_len=tr.input_len[:m],
                        output_len=tr.output_len[:m], label=f"{tr.label} x{load_factor:g}")

    def to_json(self) -> dict[str, object]:
        return {"qps": self.qps, "input_len": self.input_len.label, "output_len": self.output_len.label,
                "input_len_mean": self.input_len.mean, "output_len_mean": self.output_len.mean,
                "trace": self.trace.label if self.trace is not None else None, "prefix_hit": self.prefix_hit,
                "shared_prefix_tokens": self.shared_prefix_tokens,
                **({"prefix_set_tokens": self.prefix_set_tokens} if self.prefix_set_tokens else {})}
