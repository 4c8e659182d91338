"""Tensor and pipeline parallelism of the bench's training step, with PyTorch's own APIs (torch 2.13).

train_dist.py calls `build_parallel` for a layout with tp > 1 or pp > 1; the data-parallel
layouts keep train_dist's DDP / ZeroRedundancyOptimizer / FSDP2 path. The model is the
plain-PyTorch decoder of gpuplan.bench.llama (transformers' LlamaForCausalLM would need its
own tp_plan; the plain one is built for these splits). As torchtitan's `parallelize_llama`
and `pipeline_llama` do:

* a device mesh `init_device_mesh(device, (pp, dp, tp), ("pp", "dp", "tp"))`, TP innermost
  (the ranks of a TP group are neighbours: one node's fast links);
* TP: `parallelize_module` on every decoder layer: `ColwiseParallel` for q, k, v, gate and up,
  `RowwiseParallel` for o and down (Megatron-LM's column/row parallel linear, Shoeybi et al.
  2019: one all-reduce of the activations after attention and after the MLP, forward and
  backward); the embedding, norms and LM head stay replicated;
* PP: each rank builds only its stage's layers (`build_torch_llama(stage=...)`: the embedding
  on the first stage, the norm, LM head and loss on the last), a `PipelineStage` over the pp
  process group and `Schedule1F1B` over the plan's micro-batches (`ScheduleGPipe` when there
  are fewer micro-batches than stages, which 1F1B does not take);
* DP over the dp mesh dimension: ZeRO 3 is FSDP2 `fully_shard(mesh=mesh["dp"])` per layer and
  the root (torchtitan's 2-D FSDP + TP; with PP the pipeline stage defers the gradient
  reduce-scatter to the last micro-batch); ZeRO 0/1 all-reduce the averaged gradients over the
  dp group once per step (what DDP does, without its overlap with the backward; a TP
  gradient's local shard with the same shard of the other replicas) before AdamW /
  ZeroRedundancyOptimizer (ZeRO 1 with PP alone: that optimizer takes no DTensor parameters);
  with one DP rank there is nothing to replicate or shard: plain AdamW;
* recompute full: activation checkpointing around every decoder layer of the stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuplan.bench.layout import BenchLayout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["ParallelStep", "accumulation_step", "build_parallel", "stage_layers"]


def stage_layers(num_layers: int, pp: int, stage: int) -> tuple[int, int]:
    """Layers [first, last) of pipeline stage `stage`: an even split, the earlier stages one more when uneven."""
    if not 0 <= stage < pp <= num_layers:
        raise ValueError(f"stage {stage} of {pp} over {num_layers} layers")
    base, extra = divmod(num_layers, pp)
    first = stage * base + min(stage, extra)
    return first, first + base + (1 if stage < extra else 0)


@dataclass
class ParallelStep:
    """One optimizer step of the layout; `step()` returns this rank's share of the step's mean loss (or 0)."""

    step: Callable[[], float]
    implementation: str
    dp_rank: int


def accumulation_step(model: Any, opt: Any, ids: Any, microbatches: int, sync: Callable[[bool], None] | None,
                      autocast: Callable[[], Any]) -> Callable[[], float]:
    """One optimizer step over `microbatches` micro-batches of `ids` (gradient accumulation; `sync(True)` only
    before the last backward, so gradients are reduced once per step); the step returns this rank's mean loss."""
    def step() -> float:
        total = 0.0
        for k in range(microbatches):
            if sync is not None:
                sync(k == microbatches - 1)
            with autocast():
                loss = model(input_ids=ids, labels=ids, use_cache=False).loss / microbatches
            loss.backward()
            total += float(loss.detach())
        opt.step()
        opt.zero_grad(set_to_none=True)
        return total

    return step


def _apply_tp(layers: list[Any], tp_mesh: Any) -> None:
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    # torchtitan's parallelize_llama (apply_tp): column-parallel in, row-parallel out, per decoder layer
    plan = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(), "o": RowwiseParallel(),
            "gate": ColwiseParallel(), "up": ColwiseParallel(), "down": RowwiseParallel()}
    for layer in layers:
        parallelize_module(layer, tp_mesh, plan)


def _checkpoint(model: Any, layers: list[Any]) -> None:
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing

    ids = {id(m) for m in layers}
    apply_activation_checkpointing(model, check_fn=lambda m: id(m) in ids)


def _data_parallel(t: Any, model: Any, layers: list[Any], layout: BenchLayout, mesh: Any) -> tuple[Any, Any, Any]:
    """(module, optimizer, gradient-sync switch or None) over the mesh's dp dimension."""
    if layout.dp == 1:
        return model, t.optim.AdamW(model.parameters(), lr=1e-4), None
    if layout.zero == 3:
        from torch.distributed.fsdp import fully_shard

        dp_mesh = mesh["dp"]
        for layer in layers:
            fully_shard(layer, mesh=dp_mesh)
        fully_shard(model, mesh=dp_mesh)
        return model, t.optim.AdamW(model.parameters(), lr=1e-4), model.set_requires_gradient_sync
    # ZeRO 0/1: DDP's averaged gradients, all-reduced over the dp group once per step. DistributedDataParallel
    # itself takes no DTensor (TP) parameters, and its reducer under the pipeline schedule's per-micro-batch
    # backward fails in torch 2.13 ("rebuilt parameter indices size is not same as original model parameters")
    import torch.distributed as dist

    group = mesh["dp"].get_group()
    params = [p for p in model.parameters() if p.requires_grad]
    if layout.zero == 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt: Any = ZeroRedundancyOptimizer(params, optimizer_class=t.optim.AdamW, process_group=group, lr=1e-4)
    else:
        opt = t.optim.AdamW(params, lr=1e-4)

    class _AllReduceThenStep:
        def step(self) -> None:
            # a TP parameter's gradient is a DTensor: its local shard is reduced with the same shard of the replicas
            grads = [p.grad.to_local() if hasattr(p.grad, "to_local") else p.grad for p in params if p.grad is not None]
            flat = t._utils._flatten_dense_tensors(grads)
            dist.all_reduce(flat, group=group)
            flat /= layout.dp
            for g, synced in zip(grads, t._utils._unflatten_dense_tensors(flat, grads), strict=True):
                g.copy_(synced)
            opt.step()

        def zero_grad(self, set_to_none: bool = True) -> None:
            opt.zero_grad(set_to_none=set_to_none)

    return model, _AllReduceThenStep(), None


def build_parallel(t: Any, spec: ModelSpec, layout: BenchLayout, *, device: Any, device_type: str, seq_len: int,
                   autocast: Callable[[], Any]) -> ParallelStep:
    """Build this rank's part of the model for a TP and/or PP layout and its training step."""
    from torch.distributed.device_mesh import init_device_mesh

    from gpuplan.bench.llama import build_torch_llama, causal_lm_loss

    if layout.tp > 1 and (spec.num_heads % layout.tp or spec.kv_heads % layout.tp
                          or spec.ffn_hidden_size % layout.tp):
        raise ValueError(f"tp={layout.tp} does not divide the heads ({spec.num_heads}/{spec.kv_heads}) and FFN "
                         f"({spec.ffn_hidden_size}) of {spec.name}")
    mesh = init_device_mesh(device_type, (layout.pp, layout.dp, layout.tp), mesh_dim_names=("pp", "dp", "tp"))
    pp_rank, dp_rank, tp_rank = (mesh.get_local_rank(k) for k in ("pp", "dp", "tp"))
    first, last = stage_layers(spec.num_layers, layout.pp, pp_rank) if layout.pp > 1 else (0, spec.num_layers)
    with t.device(device):
        model = build_torch_llama(spec, stage=(first, last) if layout.pp > 1 else None)
    layers = list(model.layers.values() if layout.pp > 1 else model.layers)
    if layout.tp > 1:
        _apply_tp(layers, mesh["tp"])
    if layout.recompute == "full":
        _checkpoint(model, layers)
    model, opt, sync = _data_parallel(t, model, layers, layout, mesh)
    gen = t.Generator(device=device).manual_seed(1000 + dp_rank)  # the ranks of one DP replica share its data
    ids = t.randint(0, spec.vocab_size, (layout.micro_batch, seq_len), device=device, generator=gen)
    keeps_loss = tp_rank == 0 and pp_rank == layout.pp - 1  # one rank per DP replica reports the loss
    parts = [f"TP{layout.tp} (DTensor ColwiseParallel/RowwiseParallel)"] if layout.tp > 1 else []
    if layout.pp == 1:
        run = accumulation_step(model, opt, ids, layout.microbatches, sync, autocast)

        def step() -> float:
            total = run()
            return total if keeps_loss else 0.0

        return ParallelStep(step=step, implementation=_impl(parts, layout), dp_rank=dp_rank)

    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    stage = PipelineStage(model, pp_rank, layout.pp, device, group=mesh["pp"].get_group())
    # 1F1B (Narayanan et al. 2021, PipeDream-Flush) takes at least as many micro-batches as stages; else GPipe
    kind = Schedule1F1B if layout.microbatches >= layout.pp else ScheduleGPipe
    schedule = kind(stage, n_microbatches=layout.microbatches, loss_fn=causal_lm_loss)
    parts.append(f"PP{layout.pp} ({kind.__name__}, {layout.microbatches} micro-batches, layers {first}-{last - 1} "
                 f"on stage {pp_rank})" if pp_rank == 0 else f"PP{layout.pp} ({kind.__name__})")
    batch = ids.repeat(layout.microbatches, 1)  # the micro-batches of a step: the same sequences as accumulation

    def pp_step() -> float:
        losses: list[Any] = []
        with autocast():
            if pp_rank == 0:
                schedule.step(batch, target=batch if layout.pp == 1 else None, losses=losses)
            elif pp_rank == layout.pp - 1:
                schedule.step(target=batch, losses=losses)
            else:
                schedule.step()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if not keeps_loss or not losses:
            return 0.0
        return float(sum(float(x.detach()) for x in losses) / len(losses))

    return ParallelStep(step=pp_step, implementation=_impl(parts, layout), dp_rank=dp_rank)


def _impl(parts: list[str], layout: BenchLayout) -> str:
    how = {0: "gradient all-reduce", 1: "ZeroRedundancyOptimizer", 3: "FSDP2"}[layout.zero]
    dp = f", DP{layout.dp} ({how} over the dp mesh)" if layout.dp > 1 else ""
    return f"gpuplan.bench.llama (plain PyTorch), {' x '.join(parts)}{dp}"
