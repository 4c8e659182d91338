"""The layouts the inference planner tries for one accelerator, and the offers that can host each.

Inside one node: every tensor-parallel degree that divides the heads (with expert parallelism inside the TP
group for MoE models), pipeline stages where TP cannot grow, and attention data parallelism over the node's
devices (ep > tp). Across instances: attention data parallelism with the experts over 16-64 devices, on whole
instances of an offer whose catalog entry states an RDMA fabric (DeepEP's all-to-all needs RDMA), each timed
on that offer's link. A model no node holds: pipeline stages over whole instances, each hop over the offer's
network.
"""

from __future__ import annotations

from gpuplan.estimate.links import Link
from gpuplan.search.infer_fleet import Offer
from gpuplan.workload.jobs import Layout, serving_layout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["layouts", "placements"]


def layouts(spec: ModelSpec, max_node: int) -> list[Layout]:
    tps = [t for t in (1, 2, 4, 8) if t <= max_node and spec.num_heads % t == 0]
    out = []
    for tp in tps:
        eps = [1, tp] if spec.moe is not None and tp > 1 and spec.moe.num_experts % tp == 0 else [1]
        out += [Layout(tp=tp, ep=ep) for ep in eps]
    if spec.moe is not None:  # attention data-parallel over the node, the experts spread over it (ep > tp)
        out += [serving_layout(tp=1, ep=e) for e in (2, 4, 8, 16, 32, 64, 72)
                if e <= max_node and spec.moe.num_experts % e == 0]
    # a replica stays inside one node (the step cost model's rule); pipeline stages fill the node
    # only where tensor parallelism cannot grow further (the heads do not divide)
    if tps and tps[-1] * 2 <= max_node:
        pp = 2
        while tps[-1] * pp <= max_node and pp <= spec.num_layers:
            out.append(Layout(tp=tps[-1], pp=pp))
            pp *= 2
    return out


def placements(spec: ModelSpec, max_node: int, offers: list[Offer], *, node: int | None = None
               ) -> list[tuple[Layout, list[Offer], Link | None]]:
    """(layout, the offers that can host it, the scale-out link its expert all-to-all takes): every layout inside
    one node on every offer; for MoE models also attention data parallelism with the experts over 16-64 devices,
    across whole instances of one offer with an RDMA fabric (SGLang/RTP-LLM wide EP; DeepEP needs RDMA), each
    with that offer's link."""
    out: list[tuple[Layout, list[Offer], Link | None]] = [(lay, offers, None) for lay in layouts(spec, max_node)]
    if node is not None:
        out += _pipelines_across(spec, node, offers)
    if spec.moe is None:
        return out
    for o in offers:
        if o.scale_out is None:
            continue
        for e in (16, 32, 64):
            if e > max_node and e % o.accelerator_count == 0 and spec.moe.num_experts % e == 0:
                out.append((serving_layout(tp=1, ep=e), [o], o.scale_out))
    return out


def _pipelines_across(spec: ModelSpec, node: int, offers: list[Offer]
                      ) -> list[tuple[Layout, list[Offer], Link | None]]:
    """Pipeline stages over whole instances of one offer, for a model no node holds: each stage keeps its tensor
    parallelism inside an instance and passes each token's hidden state and residual to the next over the offer's
    network (vLLM --pipeline-parallel-size over a Ray cluster, SGLang --pp-size with --nnodes; RDMA or TCP: 2 x h
    values per token, a 1/tp slice from each TP rank). Only offers whose instance is a whole node of `node` devices
    (the step model's node); per-card rentals are left out: their cards of one replica share a host."""
    out: list[tuple[Layout, list[Offer], Link | None]] = []
    for o in offers:
        if o.cards_per_host is not None or o.hop_link is None or o.accelerator_count != node:
            continue
        tps = [t for t in (1, 2, 4, 8) if t <= o.accelerator_count and spec.num_heads % t == 0]
        if not tps:
            continue
        tp = tps[-1]
        eps = [1, tp] if spec.moe is not None and tp > 1 and spec.moe.num_experts % tp == 0 else [1]
        for pp in (2, 4):
            if tp * pp > node and (tp * pp) % node == 0 and pp <= spec.num_layers:
                out += [(Layout(tp=tp, pp=pp, ep=ep), [o], o.hop_link) for ep in eps]
    return out
