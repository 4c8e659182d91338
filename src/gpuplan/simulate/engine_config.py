"""What the engine simulator takes and gives (simulate/engine_sim.py): the step cost it needs, the scheduler's
settings and the per-request record of one run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from gpuplan.errors import InputError
from gpuplan.simulate.arrivals import Workload

__all__ = ["EngineConfig", "EngineResult", "RawRun", "StepCost"]


@runtime_checkable
class StepCost(Protocol):
    """What the simulator needs from a per-step cost model (estimate.infer_step.StepCostModel)."""

    @property
    def kv_capacity_tokens(self) -> int: ...

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """Scheduler settings (from an engine profile, workload.engines.EngineProfile)."""

    kv_block_tokens: int = 16
    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    chunked_prefill: bool = True
    scheduling: Literal["fcfs", "prefill_first", "decode_first", "static"] = "fcfs"
    batching: bool = True

    def __post_init__(self) -> None:
        for name in ("kv_block_tokens", "max_num_seqs", "max_batched_tokens"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise InputError(field=name, value=v, allowed="a positive integer")
        if self.scheduling not in ("fcfs", "prefill_first", "decode_first", "static"):
            raise InputError(field="scheduling", value=self.scheduling,
                             allowed="fcfs, prefill_first, decode_first or static")

    @staticmethod
    def from_profile(profile: object, *, batching: bool = True) -> EngineConfig:
        """Settings from any object with the EngineProfile field names."""
        return EngineConfig(kv_block_tokens=int(getattr(profile, "kv_block_tokens", 16)),
                            max_num_seqs=int(getattr(profile, "max_num_seqs", 256)),
                            max_batched_tokens=int(getattr(profile, "max_batched_tokens", 8192)),
                            chunked_prefill=bool(getattr(profile, "chunked_prefill", True)),
                            scheduling=getattr(profile, "scheduling", "fcfs"), batching=batching)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RawRun:
    """Per-request times and run totals of one simulation (metrics.summarize turns it into figures)."""

    workload: Workload
    config: EngineConfig
    scheduled_s: np.ndarray  # first time the request entered a batch
    first_token_s: np.ndarray
    finish_s: np.ndarray
    preemptions: np.ndarray  # per request
    end_s: float
    busy_s: float
    iterations: int
    batch_sum: float  # sum over iterations of requests in the batch
    batch_max: int
    kv_token_seconds: float  # time integral of KV tokens held
    kv_peak_blocks: int
    kv_capacity_blocks: int
    kv_block_tokens: int


# per-request times (scheduled, first token, finish), preemptions, then end, busy, iterations, batch sum and max,
# KV token-seconds, KV peak and capacity in blocks
EngineResult = tuple[list[float], list[float], list[float], list[int], float, float, int, float, int, float, int,
                     int]
