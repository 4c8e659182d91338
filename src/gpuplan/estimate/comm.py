"""Collective communication time on the alpha-beta (latency-bandwidth) model.

A step that moves m bytes over a link costs alpha + m / beta (Hockney 1994). Ring and
pairwise algorithms (Thakur, Rabenseifner & Gropp 2005, "Optimization of collective
communication operations in MPICH", IJHPCA 19(1)) give, for a group of n ranks and a
buffer of `size_bytes`:

    all-reduce       2(n-1)/n x size / bw + 2(n-1) alpha      (reduce-scatter + all-gather)
    all-gather       (n-1)/n  x size / bw + (n-1) alpha       size = the gathered output
    reduce-scatter   (n-1)/n  x size / bw + (n-1) alpha       size = the full input
    all-to-all       (n-1)/n  x size / bw + (n-1) alpha       size = one rank's send buffer
    point-to-point   size / bw + alpha

`bw` is the link's achievable unidirectional GB/s per device, which is what nccl-tests
reports as bus bandwidth: its busbw factors 2(n-1)/n and (n-1)/n are these (nccl-tests
doc/PERFORMANCE.md). The per-step alpha matches NCCL's own tuning model, whose ring
latency is a per-step hardware latency times the step count (src/graph/tuning.cc).

The `hier_*` functions price a group that spans nodes: `ranks_per_node` of its members
share each node (over the intra-node link) and the nodes talk over the inter-node link,
each GPU using its share of the node's NICs (`links.inter_node_link`). A group that fits
in one node uses the intra-node link only; one member per node uses the inter-node link
only. Their latencies add; their bandwidth terms overlap by default (`pipelined=True`, as
NCCL pipelines chunks through NVLink and NIC hops) or add (`pipelined=False`).

Every function takes numpy arrays (broadcast together) or plain floats; n = 1 and zero
bytes cost 0. Links come from `gpuplan.estimate.links`; docs/communication.md has
the derivations.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from gpuplan.errors import InputError
from gpuplan.estimate.links import (
    BRIDGE_KINDS,
    FloatOrArray,
    Link,
    LinkCalibration,
    LinkTerm,
    default_link_calibration,
    host_link,
    inter_node_link,
    intra_node_link,
    load_link_calibration,
    node_link,
    pcie_gbyte_s,
    select_link,
)
from gpuplan.units import GB

__all__ = [
    "BRIDGE_KINDS",
    "COLLECTIVES",
    "CollectiveKind",
    "FloatOrArray",
    "Link",
    "LinkCalibration",
    "LinkTerm",
    "Placement",
    "all_gather",
    "all_reduce",
    "all_to_all",
    "all_to_all_s",
    "collective_on",
    "collective_s",
    "default_link_calibration",
    "hier_all_gather_s",
    "hier_all_reduce_s",
    "hier_all_to_all_s",
    "hier_p2p_s",
    "hier_reduce_scatter_s",
    "hierarchical",
    "host_link",
    "inter_node_link",
    "intra_node_link",
    "load_link_calibration",
    "node_link",
    "p2p",
    "p2p_s",
    "pcie_gbyte_s",
    "placement",
    "ranks_per_node",
    "reduce_scatter",
    "ring_all_gather_s",
    "ring_all_reduce_s",
    "ring_reduce_scatter_s",
    "select_link",
]

F64 = NDArray[np.float64]


# --- input handling ---------------------------------------------------------------------
def _arr(name: str, value: ArrayLike, *, minimum: float, strict: bool = False) -> F64:
    a = np.asarray(value, dtype=np.float64)
    if a.size == 0:
        return a
    # two reductions, no temporaries: NaN fails the comparison, +inf fails isfinite(max)
    lo, hi = a.min(), a.max()
    if not ((lo > minimum if strict else lo >= minimum) and np.isfinite(hi)):
        ok = np.isfinite(a) & ((a > minimum) if strict else (a >= minimum))
        bad = a[~ok][:5] if a.ndim else a  # the first few offenders
        allowed = f"finite values {'>' if strict else '>='} {minimum:g}"
        raise InputError(field=name, value=bad.tolist(), allowed=allowed)
    return a


def _out(result: F64, *inputs: ArrayLike) -> FloatOrArray:
    """A plain float when every input was a scalar, else the broadcast array."""
    if all(np.ndim(x) == 0 for x in inputs):
        return float(result)
    return result


def _bw_lat(link: Link) -> tuple[F64, F64]:
    # Link.__post_init__ already checked bandwidth > 0 and latency >= 0.
    return (np.asarray(link.bandwidth_gbyte_s, dtype=np.float64) * GB,
            np.asarray(link.latency_s, dtype=np.float64))


def _ring(size: F64, n: F64, bw_bytes_s: F64, lat_s: F64, volume_factor: float, steps_factor: float) -> F64:
    """steps_factor(n-1) steps of alpha plus volume_factor (n-1)/n x size over bw; 0 bytes or n<=1 costs 0.

    Thakur, Rabenseifner & Gropp 2005, section 4 (ring algorithms); Hockney alpha-beta cost per step.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        t = volume_factor * (n - 1) / n * size / bw_bytes_s + steps_factor * (n - 1) * lat_s
    return np.where((size > 0) & (n > 1), t, 0.0)


# --- single-link collectives ------------------------------------------------------------
def ring_all_reduce_s(size_bytes: ArrayLike, n: ArrayLike, link: Link) -> FloatOrArray:
    """Ring all-reduce of a `size_bytes` buffer among n ranks: 2(n-1)/n x size / bw + 2(n-1) alpha.

    Source: Thakur et al. 2005 (reduce-scatter then all-gather); nccl-tests PERFORMANCE.md busbw 2(n-1)/n.
    """
    size, nn = _arr("size_bytes", size_bytes, minimum=0), _arr("n", n, minimum=1)
    bw, lat = _bw_lat(link)
    return _out(_ring(size, nn, bw, lat, 2.0, 2.0), size_bytes, n, link.bandwidth_gbyte_s, link.latency_s)


def ring_all_gather_s(size_bytes: ArrayLike, n: ArrayLike, link: Link) -> FloatOrArray:
    """Ring all-gather; `size_bytes` is the gathered (output) size: (n-1)/n x size / bw + (n-1) alpha.

    Source: Thakur et al. 2005 (ring all-gather); nccl-tests PERFORMANCE.md busbw (n-1)/n.
    """
    size, nn = _arr("size_bytes", size_bytes, minimum=0), _arr("n", n, minimum=1)
    bw, lat = _bw_lat(link)
    return _out(_ring(size, nn, bw, lat, 1.0, 1.0), size_bytes, n, link.bandwidth_gbyte_s, link.latency_s)


def ring_reduce_scatter_s(size_bytes: ArrayLike, n: ArrayLike, link: Link) -> FloatOrArray:
    """Ring reduce-scatter; `size_bytes` is the full input size: (n-1)/n x size / bw + (n-1) alpha.

    Source: Thakur et al. 2005 (ring reduce-scatter); nccl-tests PERFORMANCE.md busbw (n-1)/n.
    """
    size, nn = _arr("size_bytes", size_bytes, minimum=0), _arr("n", n, minimum=1)
    bw, lat = _bw_lat(link)
    return _out(_ring(size, nn, bw, lat, 1.0, 1.0), size_bytes, n, link.bandwidth_gbyte_s, link.latency_s)


def all_to_all_s(size_bytes: ArrayLike, n: ArrayLike, link: Link) -> FloatOrArray:
    """Pairwise all-to-all; `size_bytes` is one rank's send buffer (n chunks): (n-1)/n x size / bw + (n-1) alpha.

    Source: Thakur et al. 2005 (pairwise exchange, n-1 steps); nccl-tests PERFORMANCE.md alltoall busbw (n-1)/n.
    """
    size, nn = _arr("size_bytes", size_bytes, minimum=0), _arr("n", n, minimum=1)
    bw, lat = _bw_lat(link)
    return _out(_ring(size, nn, bw, lat, 1.0, 1.0), size_bytes, n, link.bandwidth_gbyte_s, link.latency_s)


def p2p_s(size_bytes: ArrayLike, link: Link) -> FloatOrArray:
    """One send of `size_bytes` to one peer: size / bw + alpha (Hockney); 0 bytes cost 0."""
    size = _arr("size_bytes", size_bytes, minimum=0)
    bw, lat = _bw_lat(link)
    t = np.where(size > 0, size / bw + lat, 0.0)
    return _out(t, size_bytes, link.bandwidth_gbyte_s, link.latency_s)


# --- placement on nodes -----------------------------------------------------------------
def ranks_per_node(n: ArrayLike, gpus_per_node: ArrayLike, stride: ArrayLike = 1) -> FloatOrArray:
    """How many members of a group of n share a node, for ranks laid out node by node.

    Members are `stride` ranks apart (stride = product of the parallel sizes nested inside
    this group, e.g. TP for a DP group under Megatron's TP-CP-EP-DP-PP order); nodes hold
    `gpus_per_node` consecutive ranks. Result: clip(gpus_per_node // stride, 1, n). Exact
    when stride divides gpus_per_node or is a multiple of it.
    """
    nn = _arr("n", n, minimum=1)
    g = _arr("gpus_per_node", gpus_per_node, minimum=1)
    s = _arr("stride", stride, minimum=1)
    r = np.clip(np.floor(g / s), 1.0, nn)
    return _out(r, n, gpus_per_node, stride)


def _split(n: F64, local: ArrayLike) -> tuple[F64, F64]:
    """(ranks on each node, nodes) of a group of n with `local` members per node."""
    loc = np.clip(_arr("ranks_per_node", local, minimum=1), 1.0, n)
    return loc, np.ceil(n / loc)


def _ring_parts(
    size: F64, n: F64, bw_bytes_s: F64, lat_s: F64, volume_factor: float, steps_factor: float
) -> tuple[F64, F64]:
    """(bandwidth part, latency part) of `_ring`, each 0 where size is 0 or n <= 1."""
    active = (size > 0) & (n > 1)
    beta = np.where(active, volume_factor * (n - 1) / n * size / bw_bytes_s, 0.0)
    alpha = np.where(active, steps_factor * (n - 1) * lat_s, 0.0)
    return beta, alpha


def _compose(betas: tuple[F64, ...], alphas: tuple[F64, ...], pipelined: bool) -> F64:
    """Phases one after the other (sum), or pipelined: bandwidth terms overlap (max), latencies add.

    Pipelined is how NCCL runs a ring that spans nodes: chunks flow through NVLink and NIC
    hops at once, so the slower level bounds the bandwidth (NCCL maintainer, NVIDIA/nccl-tests#319:
    2 H100 nodes with 8 x 400G 'can be aggregated to achieve up to ~396GB/s' busbw with RING).
    """
    beta = np.maximum.reduce(betas) if pipelined else np.add.reduce(betas)
    out: F64 = beta + np.add.reduce(alphas)
    return out


@dataclass(frozen=True)
class Placement:
    """A communicator's size-independent terms: n ranks, `loc` of them per node on `nodes` nodes, and each
    level's bytes/s and per-step latency (`inter` None: one node, a flat ring on the intra-node link).

    Built once (`placement`) and shared by every collective a step runs on the same group, so the group's
    checks and per-level terms are not redone per collective; `collective_on` prices one of them."""

    n: F64
    loc: F64
    nodes: F64
    bw_i: F64
    lat_i: F64
    bw_e: F64 | None
    lat_e: F64 | None

    @property
    def flat(self) -> bool:
        return self.bw_e is None


def placement(n: ArrayLike, ranks_per_node: ArrayLike, intra: Link, inter: Link | None = None) -> Placement:
    """The `Placement` of a group of n with `ranks_per_node` members per node (see `collective_s`)."""
    nn = _arr("n", n, minimum=1)
    bw_i, lat_i = _bw_lat(intra)
    if inter is None:
        if np.any(np.asarray(ranks_per_node) < np.asarray(n)):
            raise InputError(field="inter", value=None, allowed="an inter-node link for a group that spans nodes")
        return Placement(nn, nn, np.ones_like(nn), bw_i, lat_i, None, None)
    loc, nodes = _split(nn, ranks_per_node)
    bw_e, lat_e = _bw_lat(inter)
    return Placement(nn, loc, nodes, bw_i, lat_i, bw_e, lat_e)


def _all_reduce_on(size: F64, p: Placement, pipelined: bool) -> F64:
    if p.bw_e is None or p.lat_e is None:
        return _ring(size, p.n, p.bw_i, p.lat_i, 2.0, 2.0)
    # intra reduce-scatter and intra all-gather share the intra link: one phase of twice the volume
    b_i, a_i = _ring_parts(size, p.loc, p.bw_i, p.lat_i, 2.0, 2.0)
    b_e, a_e = _ring_parts(size / p.loc, p.nodes, p.bw_e, p.lat_e, 2.0, 2.0)
    return _compose((b_i, b_e), (a_i, a_e), pipelined)


def _gather_like_on(size: F64, p: Placement, pipelined: bool) -> F64:
    # AG_inter(size / l, N) and AG_intra(size, l): each local rank gathers its 1/l slice from
    # the other nodes, and the node gathers the slices (reduce-scatter runs the reverse).
    if p.bw_e is None or p.lat_e is None:
        return _ring(size, p.n, p.bw_i, p.lat_i, 1.0, 1.0)
    b_i, a_i = _ring_parts(size, p.loc, p.bw_i, p.lat_i, 1.0, 1.0)
    b_e, a_e = _ring_parts(size / p.loc, p.nodes, p.bw_e, p.lat_e, 1.0, 1.0)
    if pipelined:
        # NCCL runs all-gather and reduce-scatter only as one ring through every rank (no tree; NVLS and CollNet
        # aside): n - 1 steps, of which N - 1 cross the network, the other n - N stay on a node (NCCL
        # src/graph/tuning.cc: nsteps = nRanks - 1, nInterSteps = nNodes - 1 for these two; latency =
        # (nsteps - nInterSteps) x intraLat + nInterSteps x interLat), not the (l - 1) + (N - 1) steps of two levels
        active = (size > 0) & (p.n > 1)
        a_i = np.where(active, (p.n - p.nodes) * p.lat_i, 0.0)
        a_e = np.where(active, (p.nodes - 1) * p.lat_e, 0.0)
    return _compose((b_i, b_e), (a_i, a_e), pipelined)


def _all_to_all_on(size: F64, p: Placement, pipelined: bool) -> F64:
    if p.bw_e is None or p.lat_e is None:
        return _ring(size, p.n, p.bw_i, p.lat_i, 1.0, 1.0)
    nn, loc = p.n, p.loc
    active = (size > 0) & (nn > 1)
    zero = np.zeros((), dtype=np.float64)
    b_i = np.where(active, (loc - 1) / nn * size / p.bw_i, zero)
    b_e = np.where(active, (nn - loc) / nn * size / p.bw_e, zero)
    a_i = np.where(active, (loc - 1) * p.lat_i, zero)
    a_e = np.where(active, (nn - loc) * p.lat_e, zero)
    return _compose((b_i, b_e), (a_i, a_e), pipelined)


def _links_in(intra: Link, inter: Link) -> tuple[ArrayLike, ...]:
    return intra.bandwidth_gbyte_s, intra.latency_s, inter.bandwidth_gbyte_s, inter.latency_s


def hier_all_reduce_s(
    size_bytes: ArrayLike, n: ArrayLike, ranks_per_node: ArrayLike, intra: Link, inter: Link,
    *, pipelined: bool = True,
) -> FloatOrArray:
    """All-reduce of a group spanning nodes: intra-node reduce-scatter, inter-node all-reduce, intra all-gather.

    With l = ranks_per_node and N = ceil(n / l) nodes, the phases are
      RS_intra(size, l), AR_inter(size / l, N), AG_intra(size, l)
    (the two-level scheme of Horovod's hierarchical all-reduce; each local rank all-reduces
    its 1/l shard across nodes over its NIC share, all local ranks at once). Latencies add;
    bandwidth terms add (pipelined=False) or overlap, the slowest bounding (pipelined=True,
    the default, as NCCL pipelines chunks across levels). l = n (the group fits in a node)
    is a flat intra ring; l = 1 a flat inter ring.
    """
    t = _all_reduce_on(_arr("size_bytes", size_bytes, minimum=0), placement(n, ranks_per_node, intra, inter),
                       pipelined)
    return _out(t, size_bytes, n, ranks_per_node, *_links_in(intra, inter))


def hier_all_gather_s(
    size_bytes: ArrayLike, n: ArrayLike, ranks_per_node: ArrayLike, intra: Link, inter: Link,
    *, pipelined: bool = True,
) -> FloatOrArray:
    """All-gather (size = gathered output) spanning nodes: phases AG_inter(size/l, N) and AG_intra(size, l).

    Source: Thakur et al. 2005 ring all-gather applied per level; composed as in hier_all_reduce_s.
    """
    t = _gather_like_on(_arr("size_bytes", size_bytes, minimum=0), placement(n, ranks_per_node, intra, inter),
                        pipelined)
    return _out(t, size_bytes, n, ranks_per_node, *_links_in(intra, inter))


def hier_reduce_scatter_s(
    size_bytes: ArrayLike, n: ArrayLike, ranks_per_node: ArrayLike, intra: Link, inter: Link,
    *, pipelined: bool = True,
) -> FloatOrArray:
    """Reduce-scatter (size = full input) spanning nodes: phases RS_intra(size, l) and RS_inter(size/l, N).

    Source: Thakur et al. 2005 ring reduce-scatter applied per level; the mirror of all-gather.
    """
    t = _gather_like_on(_arr("size_bytes", size_bytes, minimum=0), placement(n, ranks_per_node, intra, inter),
                        pipelined)
    return _out(t, size_bytes, n, ranks_per_node, *_links_in(intra, inter))


def hier_all_to_all_s(
    size_bytes: ArrayLike, n: ArrayLike, ranks_per_node: ArrayLike, intra: Link, inter: Link,
    *, pipelined: bool = True,
) -> FloatOrArray:
    """All-to-all (size = one rank's send buffer) of a group spanning nodes.

    Each rank sends size/n to every peer: (l-1) peers on its node over the intra link,
    (n-l) on other nodes over its NIC share (pairwise exchange, Thakur et al. 2005):
      intra: (l-1)/n x size / bw_intra + (l-1) alpha_intra
      inter: (n-l)/n x size / bw_inter + (n-l) alpha_inter
    Latencies add; bandwidth parts overlap (pipelined, NCCL posts all sends at once) or add.
    """
    t = _all_to_all_on(_arr("size_bytes", size_bytes, minimum=0), placement(n, ranks_per_node, intra, inter),
                       pipelined)
    return _out(t, size_bytes, n, ranks_per_node, *_links_in(intra, inter))


def hier_p2p_s(size_bytes: ArrayLike, same_node: ArrayLike, intra: Link, inter: Link) -> FloatOrArray:
    """Point-to-point over the intra link where `same_node` is true, else over the inter link (Hockney)."""
    size = _arr("size_bytes", size_bytes, minimum=0)
    same = np.asarray(same_node, dtype=bool)
    bw_i, lat_i = _bw_lat(intra)
    bw_e, lat_e = _bw_lat(inter)
    t = np.where(same, size / bw_i + lat_i, size / bw_e + lat_e)
    t = np.where(size > 0, t, 0.0)
    return _out(t, size_bytes, same_node, intra.bandwidth_gbyte_s, intra.latency_s,
                inter.bandwidth_gbyte_s, inter.latency_s)


# --- short names and dispatch by kind ------------------------------------------------------
# Short aliases of the single-link functions (same signatures, results in seconds).
all_reduce = ring_all_reduce_s
all_gather = ring_all_gather_s
reduce_scatter = ring_reduce_scatter_s
all_to_all = all_to_all_s
p2p = p2p_s

CollectiveKind = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
_Flat = Callable[[ArrayLike, ArrayLike, Link], FloatOrArray]
_Hier = Callable[..., FloatOrArray]
COLLECTIVES: dict[str, tuple[_Flat, _Hier]] = {
    "all_reduce": (ring_all_reduce_s, hier_all_reduce_s),
    "all_gather": (ring_all_gather_s, hier_all_gather_s),
    "reduce_scatter": (ring_reduce_scatter_s, hier_reduce_scatter_s),
    "all_to_all": (all_to_all_s, hier_all_to_all_s),
}


def _kind(kind: str) -> tuple[_Flat, _Hier]:
    try:
        return COLLECTIVES[kind]
    except KeyError:
        from gpuplan.errors import unknown_name

        raise unknown_name("collective", kind, COLLECTIVES) from None


def hierarchical(
    kind: str, size_bytes: ArrayLike, n: ArrayLike, ranks_per_node: ArrayLike, intra: Link, inter: Link,
    *, pipelined: bool = True,
) -> FloatOrArray:
    """`hier_<kind>_s` by name: kind is all_reduce, all_gather, reduce_scatter or all_to_all."""
    return _kind(kind)[1](size_bytes, n, ranks_per_node, intra, inter, pipelined=pipelined)


_ON: dict[str, Callable[[F64, Placement, bool], F64]] = {
    "all_reduce": _all_reduce_on, "all_gather": _gather_like_on, "reduce_scatter": _gather_like_on,
    "all_to_all": _all_to_all_on,
}


def collective_on(kind: str, size_bytes: ArrayLike, where: Placement, *, pipelined: bool = True) -> F64:
    """`collective_s` on a prepared `Placement` (the same formulas; a step's collectives on one group share it)."""
    _kind(kind)  # an unknown kind is an InputError naming the allowed ones
    return _ON[kind](_arr("size_bytes", size_bytes, minimum=0), where, pipelined)


def collective_s(
    kind: str,
    size_bytes: ArrayLike,
    n: ArrayLike,
    ranks_per_node: ArrayLike,
    intra: Link,
    inter: Link | None = None,
    *,
    pipelined: bool = True,
) -> FloatOrArray:
    """A collective of a group of n with `ranks_per_node` members per node.

    With an inter-node link it is `hierarchical` (which reduces to the flat intra ring
    when the group fits in a node). Without one (a single node), the group must fit:
    ranks_per_node >= n everywhere, else InputError.
    """
    t = collective_on(kind, size_bytes, placement(n, ranks_per_node, intra, inter), pipelined=pipelined)
    links = (intra.bandwidth_gbyte_s, intra.latency_s) if inter is None else _links_in(intra, inter)
    return _out(t, size_bytes, n, ranks_per_node, *links)
