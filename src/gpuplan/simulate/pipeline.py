"""A pipeline-parallel serving replica as the batches it keeps in flight.

vLLM runs `pipeline_parallel_size` batches at once ("PP requires PP-size concurrent batches to fill the pipeline":
`max_concurrent_batches` of its executors and config, `EngineCore.step_with_batch_queue`): while one batch runs on
stage k, the next runs on stage k - 1. Each batch crosses every stage in a step's time (the step cost model sums the
stages), so a replica of pp stages serves as pp engines that share its KV cache and its running-request cap, each at
the full step latency. Unbalanced stages and the scheduling gaps between batches are not modelled.
"""

from __future__ import annotations

from dataclasses import replace

from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.simulate.engine_sim import EngineConfig

__all__ = ["pipeline_batch"]


def pipeline_batch(cost: StepCostModel, cfg: EngineConfig, pp: int) -> tuple[StepCostModel, EngineConfig]:
    """One of the pp batches a pipeline-parallel replica keeps in flight: its share of the KV cache and of the
    running-request cap, at the replica's step latency. pp = 1: the replica itself."""
    if pp <= 1:
        return cost, cfg
    return (replace(cost, kv_capacity_tokens=cost.kv_capacity_tokens // pp),
            replace(cfg, max_num_seqs=max(1, cfg.max_num_seqs // pp)))
