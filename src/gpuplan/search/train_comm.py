"""The collectives and sends of a training step on a cluster: which links a parallel group's members use and
what each collective costs on them (estimate/comm.py has the formulas; train_eval.py the step that adds them up).

Ranks are laid out in Megatron-Core's order TP-CP-EP-DP-PP (megatron/core/parallel_state.py) over nodes of
`gpus_per_node` consecutive ranks, so a group's members sit `stride` ranks apart.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuplan.estimate import comm
from gpuplan.estimate.links import Link
from gpuplan.search.candidates import Candidates
from gpuplan.search.cluster import ClusterHardware

__all__ = ["group", "owner_broadcasts_s", "p2p", "pp_cross_node_hops", "pp_hop_s"]


def group(n: Any, stride: Any, hw: ClusterHardware) -> comm.Placement:
    """A communicator of n ranks that sit `stride` ranks apart (Megatron order TP-CP-EP-DP-PP) on the cluster: its
    members per node and its links, worked out once and shared by every collective the step runs on it
    (`comm.collective_on` prices one)."""
    n = np.maximum(n, 1)
    rpn = comm.ranks_per_node(n, hw.gpus_per_node, stride)
    inter = hw.inter()
    if inter is None:  # a single node: every group is inside it
        rpn = n
    return comm.placement(n, rpn, hw.intra(rpn), inter)


def owner_broadcasts_s(dp_group: Any, stride: Any, shard_ranks: Any, hw: ClusterHardware) -> Any:
    """The latency of one broadcast per rank of a ZeRO group of z = `shard_ranks` ranks, one after the other
    on the communicator's stream. NCCL broadcasts along its ring through every member: z - 1 steps, of which
    (nodes - 1) cross the network and the rest stay on a node (NCCL src/graph/tuning.cc ring latency: nsteps =
    nRanks - 1 for broadcast, (nsteps - nInterSteps) x intraLat + nInterSteps x interLat). The volume is an
    all-gather's, counted beside the gradient reduction (exposed whole where the framework does not overlap its
    parameter return: `zero_param_overlap`); this is what the z sequential chains add: nothing for 8 ranks in a
    node, seconds for 1024 ranks over 128 nodes."""
    z = np.maximum(np.asarray(shard_ranks, dtype=float), 1)
    rpn = np.minimum(comm.ranks_per_node(dp_group, hw.gpus_per_node, stride), z)
    inter = hw.inter()
    nodes = np.ceil(z / rpn) if inter is not None else np.ones_like(z)
    lat_i = np.asarray(hw.intra(rpn).latency_s, dtype=float)
    lat_e = np.asarray(inter.latency_s, dtype=float) if inter is not None else 0.0
    return z * ((z - nodes) * lat_i + (nodes - 1) * lat_e)


def p2p(nbytes: Any, same_node: Any, hw: ClusterHardware) -> Any:
    inter = hw.inter()
    intra = hw.intra(2)
    if inter is None:
        return comm.p2p_s(nbytes, intra)
    return comm.hier_p2p_s(nbytes, same_node, intra, inter)


def pp_cross_node_hops(c: Candidates, gpus_per_node: int) -> np.ndarray:
    """Stage-to-stage sends per micro-batch and direction that cross a node boundary.

    Stage k holds ranks [kR, (k+1)R) with R = tp x cp x dp (Megatron's TP-CP-EP-DP-PP rank
    order, megatron/core/parallel_state.py), nodes hold `gpus_per_node` consecutive ranks.
    The boundary after stage k crosses nodes when (k+1)R is a multiple of the node size (R < g)
    or always (R >= g). With v virtual stages per device (interleaved 1F1B, Narayanan et al.
    2021 sec. 2.2) a micro-batch passes every boundary v times and wraps from the last stage
    back to the first v - 1 times; that wrap crosses nodes whenever the pipeline spans nodes.
    """
    r = (c.tp * c.cp * c.dp).astype(np.int64)
    g = int(gpus_per_node)
    pp = c.pp.astype(np.int64)
    k = np.arange(1, int(pp.max(initial=1)), dtype=np.int64)  # boundaries after stages 0..pp-2
    bound = r[:, None] * k[None, :]
    crosses = ((r[:, None] >= g) | (bound % g == 0)) & (k[None, :] < pp[:, None])
    linear = crosses.sum(axis=1)
    wrap = (r * pp > g) & (pp > 1)
    out: np.ndarray = c.vpp * linear + (c.vpp - 1) * wrap
    return out


def pp_hop_s(nbytes: Any, c: Candidates, hw: ClusterHardware) -> Any:
    """One activation (or gradient) send between neighbouring stages, at the pace of the slowest hop.

    A 1F1B pipeline runs at the pace of its slowest stage: once any boundary crosses nodes
    (the pipeline spans nodes, tp x cp x dp x pp > gpus per node) the devices on that boundary
    send and receive every micro-batch over the network. All ranks of a stage send at once,
    so a crossing stage of R < g ranks shares the node's NICs R ways, not g ways.
    """
    intra = hw.intra(2)
    inter = hw.inter()
    if inter is None:
        return comm.p2p_s(nbytes, intra)
    g = hw.gpus_per_node
    senders = np.minimum(c.tp * c.cp * c.dp, g)
    across = Link(np.asarray(inter.bandwidth_gbyte_s) * g / senders, inter.latency_s,
                  label=inter.label, terms=inter.terms)
    return np.where(c.tp * c.cp * c.dp * c.pp > g, comm.p2p_s(nbytes, across), comm.p2p_s(nbytes, intra))
