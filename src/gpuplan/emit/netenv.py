"""Collective-library environment for the plan's fabric: NCCL on NVIDIA parts, HCCL on Ascend.

The settings follow the advisor's network findings (advise/rules_net.py): RoCE needs a lossless
fabric and the RoCE v2 GID index, InfiniBand and RoCE name the RDMA devices, TCP-only clusters
must keep NCCL off the IB transport. Values a site must fill in stay as shell variables with
defaults (`${NCCL_IB_HCA:-mlx5}`), never guessed host names.
"""

from __future__ import annotations

__all__ = ["collective_env"]


def collective_env(network_kind: str | None, *, ascend: bool, multi_node: bool) -> list[tuple[str, str, str]]:
    """(variable, value, why) for the plan's fabric; empty on one node."""
    if ascend:
        out = [("HCCL_CONNECT_TIMEOUT", "1200", "HCCL link set-up on large clusters takes minutes (CANN env docs)")]
        if multi_node:
            out += [("HCCL_IF_IP", "${HCCL_IF_IP:?set to this node's host IP}", "host interface HCCL binds"),
                    ("HCCL_SOCKET_IFNAME", "${HCCL_SOCKET_IFNAME:-eth0}", "interface of the HCCL control sockets")]
        return out
    if not multi_node:
        return []
    out = [("NCCL_SOCKET_IFNAME", "${NCCL_SOCKET_IFNAME:-eth0}", "bootstrap/control interface (NCCL env docs)")]
    if network_kind == "infiniband":
        out += [("NCCL_IB_HCA", "${NCCL_IB_HCA:-mlx5}", "the InfiniBand HCAs, one per GPU (rail-optimized)"),
                ("NCCL_NET_GDR_LEVEL", "PHB", "GPUDirect RDMA when the NIC and GPU share a PCIe host bridge")]
    elif network_kind == "roce_v2":
        out += [("NCCL_IB_HCA", "${NCCL_IB_HCA:-mlx5}", "the RoCE NICs (NCCL uses its IB verbs transport on RoCE)"),
                ("NCCL_IB_GID_INDEX", "${NCCL_IB_GID_INDEX:-3}", "RoCE v2 GID (index 3 on most Mellanox setups; "
                 "check show_gids)"),
                ("NCCL_IB_TC", "${NCCL_IB_TC:-106}", "traffic class of the lossless (PFC/ECN) queue: advisor finding "
                 "net.roce_lossless"),
                ("NCCL_NET_GDR_LEVEL", "PHB", "GPUDirect RDMA when the NIC and GPU share a PCIe host bridge")]
    elif network_kind == "efa":
        out += [("FI_PROVIDER", "efa", "libfabric EFA provider (aws-ofi-nccl plugin)"),
                ("FI_EFA_USE_DEVICE_RDMA", "1", "GPUDirect RDMA over EFA")]
    elif network_kind == "tcp":
        out += [("NCCL_IB_DISABLE", "1", "no RDMA fabric: TCP sockets (advisor finding net.rdma_required)")]
    return out
