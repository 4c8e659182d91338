"""How a pipeline's stages share the model, and how much slower its heaviest stage runs than the mean.

A 1F1B pipeline runs at the pace of its slowest stage (Narayanan et al. 2021, sec. 2.2). The transformer layers
are alike, but the last stage also runs the LM head (and the loss) and the first the embedding lookup, so how the
layers are split decides how far the heaviest stage is above the mean (`TrainingJob.pp_partition`):

- `balanced`: every stage carries 1/pp of the work: the split that uneven stage sizes approach (Megatron-Core
  `--decoder-first/last-pipeline-num-layers`, `account_for_embedding_in_pipeline_split`,
  `account_for_loss_in_pipeline_split`): factor 1, the planner's assumption;
- `layers`: equal transformer layers per stage, the LM head on the last (Megatron-LM's split; DeepSpeed
  `PipelineModule(partition_method='type:transformer')`);
- `layers_and_embeddings`: the embedding and the LM head each count as one layer in an equal split, so the first
  and the last stage hold one transformer layer fewer (Megatron-DeepSpeed `--pp-partition-method
  'type:transformer|embedding'`, BLOOM's tr11 run; Llama 3's "we reduce one Transformer layer each from the first
  and the last stages", Dubey et al. 2024 sec. 3.3.2).

Equal splits follow DeepSpeed's `partition_uniform`: n // pp items per stage, the first n % pp stages one more.
Work is forward FLOPs per token (`estimate.flops.forward_flops`): the mean layer and the LM head.
"""

from __future__ import annotations

from typing import get_args

from gpuplan.estimate.flops import forward_flops
from gpuplan.workload.jobs import PpPartition
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["PP_PARTITIONS", "PpPartition", "balanced_split", "stage_imbalance"]

PP_PARTITIONS: tuple[str, ...] = get_args(PpPartition)


def _uniform(items: int, parts: int) -> list[int]:
    """Items per part: items // parts each, the first items % parts one more (DeepSpeed partition_uniform)."""
    base, extra = divmod(items, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def stage_imbalance(spec: ModelSpec, seq_len: int, pp: int, partition: str) -> float:
    """Heaviest stage's forward FLOPs over the mean stage's (>= 1; 1 without pipeline stages or when balanced)."""
    if pp <= 1 or partition == "balanced":
        return 1.0
    if partition not in PP_PARTITIONS:
        raise ValueError(f"pp_partition must be one of {PP_PARTITIONS}, got {partition!r}")
    fw = forward_flops(spec, seq_len, causal=True)
    layers = spec.num_layers
    layer = (fw.total - fw.lm_head) / layers
    if partition == "layers":
        loads = [n * layer for n in _uniform(layers, pp)]
    else:  # the embedding takes a layer's place on the first stage, the LM head on the last
        units = _uniform(layers + 2, pp)
        loads = [n * layer for n in units]
        loads[0] -= layer
        loads[-1] -= layer
    loads[-1] += fw.lm_head
    return max(max(loads) / ((layers * layer + fw.lm_head) / pp), 1.0)


def balanced_split(spec: ModelSpec, seq_len: int, pp: int) -> tuple[int, int] | None:
    """Layers on the first and the last pipeline stage that bring the heaviest stage nearest the mean, the middle
    stages splitting the rest evenly (Megatron-Core `--decoder-first-pipeline-num-layers` and
    `--decoder-last-pipeline-num-layers`); None when the equal split is as good (or pp < 2)."""
    if pp < 2:
        return None
    fw = forward_flops(spec, seq_len, causal=True)
    layers = spec.num_layers
    head = fw.lm_head / ((fw.total - fw.lm_head) / layers)  # the LM head in layers of work
    best: tuple[float, int, int] | None = None
    for last in range(1, layers):
        for first in range(1, layers - last + 1):
            rest = layers - first - last
            if pp == 2 and rest:
                continue
            if pp > 2 and (rest < pp - 2 or rest % (pp - 2)):
                continue
            mid = rest // (pp - 2) if pp > 2 else 0
            load = max(first, last + head, mid)
            if best is None or load < best[0] - 1e-9:
                best = (load, first, last)
    if best is None:
        return None
    equal = max(max(_uniform(layers, pp)[:-1], default=0), _uniform(layers, pp)[-1] + head)
    if best[0] >= equal * 0.99:  # under 1% better than the equal split: leave Megatron's default
        return None
    return best[1], best[2]
