"""The cluster a training step runs on: one accelerator type on one scale-out network, with its node and network
links (`ClusterHardware`); the fabric and server a cluster of a part usually has (`usual_network`, `usual_server`);
and the measured link and memory-bandwidth scales `gpuplan calibrate` writes (`measured_hardware`, `hbm_scale`).
The step model (search/train_eval.py), the planners, the advisor and validation all build clusters here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.links import Link, inter_node_link, node_link
from gpuplan.hardware import Accelerator, Catalog, Network, Server

__all__ = ["ClusterHardware", "cluster_hardware", "default_gpus_per_node", "default_network", "hbm_scale",
           "measured_hardware", "usual_network", "usual_server"]


def default_gpus_per_node(accelerator: Accelerator, devices: int) -> int:
    """Devices that share one NVLink domain when a job does not say: 8 per HGX-class server; on a rack-scale part
    (fully_connected_domain above 8: GB200/GB300 NVL72, 72 GPUs on one NVLink switch fabric, NVIDIA GB200 NVL72
    product page) the largest whole number of 4-GPU compute trays that divides the job and fits the domain, so that
    tensor- and expert-parallel groups inside it talk over NVLink, not over the scale-out NICs."""
    domain = accelerator.fully_connected_domain or 8
    if domain <= 8 or devices <= 8:
        return min(8, devices)
    best = min(8, devices)
    for g in range(4, min(domain, devices) + 1, 4):
        if devices % g == 0:
            best = g
    return best


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterHardware:
    """One accelerator type on one scale-out network, with its links."""

    accelerator: Accelerator
    network: Network | None  # None: single node
    gpus_per_node: int
    nics_per_node: float
    host_cpu_cores: int | None = None  # per node; None: the calibration default
    host_cores_source: str = "calibration: host_cpu_cores_per_node"
    intra_bw_scale: float = 1.0  # measured intra-node link efficiency / the shipped one (gpuplan calibrate)

    def peak_flops(self, dtype: str) -> float:
        value = self.accelerator.dense_tflops(dtype)
        if value is None and dtype == "bf16":  # pre-Ampere parts train 16-bit in fp16
            value = self.accelerator.dense_tflops("fp16")
        if value is None:
            raise InputError(field="precision", value=dtype,
                             allowed=f"a dtype {self.accelerator.id} supports (no dense {dtype} peak in the catalog)",
                             hint="choose a precision the part supports (see gpuplan catalog show)")
        return value * 1e12

    def fp4_peak_flops(self, fmt: str) -> float:
        """FLOP/s of the part's FP4 tensor cores for a 4-bit float training format (NVFP4: NVIDIA Blackwell only;
        MXFP4: Blackwell and CDNA 4); InputError when the part has none."""
        if fmt == "nvfp4" and self.accelerator.software_stack != "cuda":
            raise InputError(field="precision", value=fmt, allowed=f"mxfp4 on {self.accelerator.id} (its FP4 tensor "
                             "cores take OCP MX formats)", hint="NVFP4 is NVIDIA Blackwell's format")
        if self.accelerator.dense_tflops("fp4") is None:
            raise InputError(field="precision", value=fmt,
                             allowed=f"bf16 or fp8 on {self.accelerator.id} (no FP4 tensor cores)",
                             hint="FP4 training runs on Blackwell (B200, GB200, B300, GB300) and MI355X")
        return self.peak_flops("fp4")

    def intra(self, ranks_per_node: Any) -> Link:
        link = node_link(self.accelerator, ranks_per_node)
        if link is None:
            raise InputError(field="accelerator", value=self.accelerator.id,
                             allowed="an accelerator with a known intra-node link",
                             hint="add intra_node_link_gbps to its catalog entry")
        if self.intra_bw_scale != 1.0:
            link = replace(link, bandwidth_gbyte_s=link.bandwidth_gbyte_s * self.intra_bw_scale,
                           terms=(*link.terms, f"link_bw_scale.{self.accelerator.id}"))
        return link

    def inter(self) -> Link | None:
        if self.network is None:
            return None
        return inter_node_link(self.network, nics_per_node=self.nics_per_node, gpus_per_node=self.gpus_per_node)


def default_network(accelerator: str) -> str:
    """The scale-out fabric usually sold with the part (when a case does not say)."""
    if accelerator.startswith(("h100", "h200", "h800", "h20", "b200", "gb200")):
        return "ib-ndr-400"
    if accelerator.startswith("ascend"):
        return "roce-200"
    return "ib-hdr-200"


def usual_server(catalog: Catalog, accelerator: str) -> Server | None:
    """The catalog server a cluster of this part is built from: the first by id that states a
    scale-out network, else the first by id; None when the catalog has none."""
    servers = sorted((sv for sv in catalog.servers.values() if sv.accelerator == accelerator), key=lambda sv: sv.id)
    pick = [sv for sv in servers if sv.network] or servers
    return pick[0] if pick else None


def usual_network(catalog: Catalog, accelerator: str) -> tuple[str, str]:
    """(network id, why) of a cluster of this part when nothing names one: its catalog server's
    fabric, else `default_network`. The one rule for `estimate train`, own-cluster plans, the
    advisor's re-plans and validation rows without a network."""
    sv = usual_server(catalog, accelerator)
    if sv is not None and sv.network:
        return sv.network, f"fabric of catalog server {sv.id}"
    return default_network(accelerator), "the part's usual fabric (no catalog server states one)"


def cluster_hardware(catalog: Catalog, accelerator: str, network: str | None, *, gpus_per_node: int | None = None,
                     nics_per_node: float | None = None) -> ClusterHardware:
    acc = catalog.accelerator(accelerator)
    net = catalog.network(network) if network else None
    g = gpus_per_node or 8  # an 8-device node unless told; bridged or PCIe parts fall back to PCIe (node_link)
    # host CPU: the catalog server that holds this part (the first by id that states its cores)
    hosts = [sv for sv in catalog.servers.values() if sv.accelerator == acc.id and sv.cpu_cores]
    host = min(hosts, key=lambda sv: sv.id) if hosts else None
    return ClusterHardware(accelerator=acc, network=net, gpus_per_node=g,
                           nics_per_node=nics_per_node if nics_per_node else float(g),
                           host_cpu_cores=host.cpu_cores if host else None,
                           host_cores_source=f"catalog server {host.id}" if host else
                           "calibration: host_cpu_cores_per_node")


def hbm_scale(cal: Calibration, accelerator: str) -> float:
    """Measured memory bandwidth relative to the shipped assumption (`gpuplan calibrate` writes
    `hbm_bandwidth_scale.<accelerator>` = measured copy fraction / reference fraction); 1 if none."""
    name = f"hbm_bandwidth_scale.{accelerator}"
    return cal.value(name) if name in cal.terms else 1.0


def measured_hardware(hw: ClusterHardware, cal: Calibration) -> ClusterHardware:
    """`hw` with a measured intra-node link scale (`link_bw_scale.<accelerator>`) applied, if any."""
    name = f"link_bw_scale.{hw.accelerator.id}"
    if name not in cal.terms:
        return hw
    return replace(hw, intra_bw_scale=cal.value(name))
