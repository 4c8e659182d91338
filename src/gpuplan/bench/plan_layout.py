"""`gpuplan bench --plan`: the plan's layout fitted to the local devices (torch-free; used by plan_run.py)."""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.bench.layout import BenchLayout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["Nearest", "fit_local", "tp_divides"]


@dataclass(frozen=True, kw_only=True)
class Nearest:
    """The layout before it is fitted to this machine (zero -1: ZeRO-1 that TP x DP cannot run as such)."""

    tp: int
    pp: int
    dp: int
    zero: int
    micro_batch: int
    microbatches: int
    recompute: str


def tp_divides(spec: ModelSpec, tp: int) -> bool:
    """TP splits the query and key-value heads and the FFN evenly (Megatron's column/row parallel linear)."""
    return spec.num_heads % tp == 0 and spec.kv_heads % tp == 0 and spec.ffn_hidden_size % tp == 0


def fit_local(layout: Nearest, spec: ModelSpec, local: int, where: str) -> tuple[BenchLayout, list[str]]:
    """The layout on at most `local` processes: dp cut first, then pp, then tp (each rank keeps its work)."""
    why: list[str] = []
    tp, pp = layout.tp, layout.pp
    while tp > 1 and (tp > local or not tp_divides(spec, tp)):
        tp //= 2
    pp = max(1, min(pp, local // tp, spec.num_layers))
    if (tp, pp) != (layout.tp, layout.pp):
        why.append(f"the plan's tp{layout.tp} pp{layout.pp} cut to tp{tp} pp{pp} ({where} {local}"
                   + (f"; tp{layout.tp} does not split the {spec.num_heads} query / {spec.kv_heads} key-value "
                      f"heads evenly" if not tp_divides(spec, layout.tp) else "") + ")")
    dp = min(layout.dp, max(1, local // (tp * pp)))
    if dp < layout.dp:
        why.append(f"the plan's {layout.dp} data-parallel ranks cut to {dp} ({where} {local}); each rank "
                   f"keeps the plan's micro-batch {layout.micro_batch} x {layout.microbatches} accumulation steps")
    zero = layout.zero
    if zero == -1:
        zero = 0 if tp > 1 and dp > 1 else 1
        if zero == 0:
            why.append(f"ZeRO-1 with tp{tp} x dp{dp} run as ZeRO-0: the averaged gradients all-reduced over the dp "
                       f"mesh dimension, AdamW states replicated (ZeroRedundancyOptimizer takes no DTensor "
                       f"parameters; ZeRO-1 moves the same bytes as that all-reduce)")
    return BenchLayout(tp=tp, pp=pp, dp=dp, zero=zero, micro_batch=layout.micro_batch,
                       microbatches=layout.microbatches, recompute=layout.recompute), why
