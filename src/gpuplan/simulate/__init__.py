"""Load simulation of an inference engine: arrivals, lengths, continuous batching, serving figures."""

from gpuplan.simulate.arrivals import Workload, poisson_workload, read_trace
from gpuplan.simulate.engine_sim import EngineConfig, RawRun, StepCost, simulate_engine
from gpuplan.simulate.lengths import LengthDist, parse_length_dist
from gpuplan.simulate.metrics import Percentiles, SimMetrics, Slo, summarize

__all__ = [
    "EngineConfig",
    "LengthDist",
    "Percentiles",
    "RawRun",
    "SimMetrics",
    "Slo",
    "StepCost",
    "Workload",
    "parse_length_dist",
    "poisson_workload",
    "read_trace",
    "simulate_engine",
    "summarize",
]
