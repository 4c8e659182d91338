"""Accelerators (one chip or card) and servers (one node of them).

Conventions (docs/catalog.md has the full table):
- `hbm_gib`: device memory as the vendor states it (HBM stacks are binary sizes, so
  "80 GB" is 80 GiB); the field is named for HBM but holds GDDR/LPDDR parts too, and
  `memory_type` says which. `hbm_gib_visible` is what the driver shows, where sourced.
- `hbm_bandwidth_gbps`: memory bandwidth in GB/s (1e9 bytes/s).
- `*_dense_tflops` / `*_dense_tops`: DENSE peaks. NVIDIA prints tensor figures "with
  sparsity"; those are halved here. `flops_basis` says how each record's peaks were read.
- `intra_node_link_gbps`: GPU-to-GPU bandwidth per device in GB/s, both directions
  summed, as vendors quote it (NVLink 4 = 900). Unidirectional is half.
- `fully_connected_domain`: the largest group of devices that all reach each other at
  `intra_node_link_gbps` (8 on an HGX board, 72 in GB200 NVL72, 1 for PCIe-only cards).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from gpuplan.hardware.schema_base import STRICT, Market, Price, Sourced

__all__ = ["DENSE_FIELDS", "Accelerator", "FrameworkSupport", "Nic", "Server", "SupportLevel"]

SupportLevel = Literal["native", "plugin", "vendor_fork", "partial", "none", "unknown"]
LinkKind = Literal["nvlink", "nvlink_bridge", "pcie", "hccs", "ub", "mlu_link", "xgmi", "mtlink", "other"]
StackKind = Literal["cuda", "rocm", "cann", "dtk", "neuware", "xpu", "musa", "other"]
FlopsBasis = Literal["dense_published", "sparse_halved", "not_stated", "measured"]

# dtype -> field holding its dense peak (TFLOPS for floats, TOPS for ints)
DENSE_FIELDS: dict[str, str] = {
    "fp64": "fp64_dense_tflops",
    "fp32": "fp32_dense_tflops",
    "tf32": "tf32_dense_tflops",
    "bf16": "bf16_dense_tflops",
    "fp16": "fp16_dense_tflops",
    "fp8": "fp8_dense_tflops",
    "fp4": "fp4_dense_tflops",
    "int8": "int8_dense_tops",
    "int4": "int4_dense_tops",
}
FRAMEWORKS = ("pytorch", "deepspeed", "megatron", "vllm", "mindspore", "paddlepaddle")


def _peak() -> float | None:
    peak: float | None = Field(default=None, gt=0, lt=100_000)
    return peak


class FrameworkSupport(BaseModel):
    """How each framework runs on the part: native, through a plugin, or not at all.

    `via` names the plugin or fork (torch_npu, vllm-ascend, MindSpeed-LLM, torch_mlu...).
    `megatron` covers Megatron-LM and its ports (MindSpeed on Ascend).
    """

    model_config = STRICT

    pytorch: SupportLevel = "unknown"
    deepspeed: SupportLevel = "unknown"
    megatron: SupportLevel = "unknown"
    vllm: SupportLevel = "unknown"
    mindspore: SupportLevel = "unknown"
    paddlepaddle: SupportLevel = "unknown"
    via: dict[str, str] = Field(default_factory=dict)
    note: str = ""

    @model_validator(mode="after")
    def _check_via(self) -> FrameworkSupport:
        for key in self.via:
            if key not in FRAMEWORKS:
                raise ValueError(f"frameworks.via key {key!r} is not one of {', '.join(FRAMEWORKS)}")
        return self


class Accelerator(Sourced):
    """One accelerator part (a GPU/NPU chip or card as sold)."""

    vendor: str = Field(min_length=1)
    name: str = Field(min_length=1)
    architecture: str = ""
    form_factor: str = ""
    release_year: int | None = Field(default=None, ge=2010, le=2035)

    hbm_gib: float | None = Field(default=None, description="device memory, GiB (vendor figure)")
    hbm_gib_visible: float | None = Field(default=None, gt=0, description="as the driver reports it")
    memory_type: str = ""
    hbm_bandwidth_gbps: float | None = Field(default=None, description="memory bandwidth, GB/s")
    sm_count: int | None = Field(default=None, ge=1, le=1024,
                                 description="streaming multiprocessors (compute units) enabled on the part")
    sm_boost_clock_mhz: float | None = Field(default=None, ge=100, le=5000, description="SM boost clock, MHz")
    cuda_compute_capability: float | None = Field(
        default=None, ge=3.0, le=20.0, description="NVIDIA CUDA compute capability (SM version, e.g. 8.0 for GA100); "
        "engines state the lowest they run on (workload/data/engines.yaml min_cuda_capability)")

    fp64_dense_tflops: float | None = _peak()
    fp32_dense_tflops: float | None = _peak()
    tf32_dense_tflops: float | None = _peak()
    bf16_dense_tflops: float | None = _peak()
    fp16_dense_tflops: float | None = _peak()
    fp8_dense_tflops: float | None = _peak()
    fp4_dense_tflops: float | None = _peak()
    int8_dense_tops: float | None = _peak()
    int4_dense_tops: float | None = _peak()
    flops_basis: FlopsBasis

    intra_node_link: LinkKind
    intra_node_link_gen: str = Field(default="", description="e.g. 'NVLink 4', 'PCIe Gen4 x16', 'HCCS'")
    intra_node_link_gbps: float | None = Field(
        default=None, gt=0, description="GB/s per device, bidirectional"
    )
    fully_connected_domain: int | None = Field(default=None, ge=1)
    host_interface: str = ""
    tdp_w: float | None = Field(default=None, description="board power, W")

    software_stack: StackKind
    software_stack_detail: str = ""
    frameworks: FrameworkSupport = Field(default_factory=FrameworkSupport)
    markets: tuple[Market, ...] = Field(min_length=1, description="where it is sold or rented")
    export_note: str = ""

    @field_validator("hbm_gib")
    @classmethod
    def _check_gib(cls, v: float | None) -> float | None:
        if v is not None and not 1 <= v <= 2048:
            raise ValueError(f"{v} is outside 1..2048 GiB; is it in MiB or bytes?")
        return v

    @field_validator("hbm_bandwidth_gbps")
    @classmethod
    def _check_bw(cls, v: float | None) -> float | None:
        if v is not None and not 50 <= v <= 50_000:
            raise ValueError(f"{v} is outside 50..50000 GB/s; the field is GB/s (4.8 TB/s is 4800)")
        return v

    @field_validator("tdp_w")
    @classmethod
    def _check_tdp(cls, v: float | None) -> float | None:
        if v is not None and not 10 <= v <= 5000:
            raise ValueError(f"{v} is outside 10..5000 W; the field is watts, not kW")
        return v

    @model_validator(mode="after")
    def _check_units(self) -> Accelerator:
        bf16, fp8 = self.bf16_dense_tflops, self.fp8_dense_tflops
        if bf16 is not None and fp8 is not None and fp8 < bf16:
            raise ValueError(f"fp8_dense_tflops={fp8} < bf16_dense_tflops={bf16}: one of them is wrong")
        if self.intra_node_link == "pcie" and (self.fully_connected_domain or 1) > 1:
            raise ValueError("a PCIe-only part has fully_connected_domain 1 (no GPU-to-GPU link)")
        return self

    def dense_tflops(self, dtype: str) -> float | None:
        """Dense peak for `dtype` (fp64..fp4 in TFLOPS, int8/int4 in TOPS); None if unsupported."""
        from gpuplan.errors import unknown_name

        if dtype not in DENSE_FIELDS:
            raise unknown_name("dtype", dtype, DENSE_FIELDS)
        value = getattr(self, DENSE_FIELDS[dtype])
        return float(value) if value is not None else None

    @property
    def memory_gib(self) -> float | None:
        """Device memory the planners budget against: as the driver reports it, else the vendor figure."""
        return self.hbm_gib_visible or self.hbm_gib

    @property
    def nvlink_gbps(self) -> float | None:
        """NVLink GB/s per device, or None where the part has no NVLink (L40S, L4, 4090...)."""
        return self.intra_node_link_gbps if self.intra_node_link in ("nvlink", "nvlink_bridge") else None


Topology = Literal[
    "nvswitch_all_to_all",
    "nvlink_hybrid_cube_mesh",
    "nvlink_bridge_pairs",
    "pcie_switch_p2p",
    "pcie_no_p2p",
    "hccs_full_mesh",
    "ub_supernode",
    "mlu_link_mesh",
    "xgmi_full_mesh",
    "mtlink_mesh",
    "other",
]
RdmaKind = Literal["infiniband", "roce_v2", "efa", "erdma", "none", "unknown"]


class Nic(BaseModel):
    """A group of identical network ports on a node."""

    model_config = STRICT

    count: int = Field(ge=1)
    speed_gbit_per_s: float = Field(ge=1, le=3200, description="per port, Gbit/s")
    rdma: RdmaKind
    role: Literal["compute", "storage", "management", "mixed"] = "compute"


class Server(Sourced):
    """One node model: the accelerators it holds and how they are wired."""

    vendor: str = Field(min_length=1)
    name: str = Field(min_length=1)
    accelerator: str = Field(description="accelerator id")
    accelerators_per_node: int = Field(ge=1)
    topology: Topology
    nics: tuple[Nic, ...] = ()
    network: str | None = Field(default=None, description="scale-out network id (ib-ndr-400, roce-200...)")
    cpu: str = ""
    cpu_cores: int | None = Field(default=None, ge=1)
    ram_gib: float | None = Field(default=None, gt=0)
    local_nvme_tb: float | None = Field(default=None, gt=0)
    power_kw: float | None = Field(default=None, gt=0, le=200)
    form_factor: str = ""
    racks: int | None = Field(default=None, ge=1, description="racks one unit fills, for rack-scale systems (GB200 "
                              "NVL72: 1; CloudMatrix 384: 16); None: a server that shares a rack with others")
    list_price: Price | None = None

    @model_validator(mode="after")
    def _check_price(self) -> Server:
        if self.list_price is not None and self.list_price.kind != "purchase":
            raise ValueError("list_price.kind must be 'purchase'")
        return self

    @property
    def compute_gbit_per_s(self) -> float:
        """Summed scale-out (compute-role) NIC bandwidth of the node, Gbit/s."""
        return float(sum(n.count * n.speed_gbit_per_s for n in self.nics if n.role in ("compute", "mixed")))
