"""PlanFacts: the small record of computed plan figures that every advisor rule reads.

A training plan and an inference plan both fill it, through one adapter per planner
(`adapt_train.training_facts`; the inference adapter follows the inference planner). Fields a
planner does not compute stay None and the rules that need them stay silent. Re-evaluations
(the same layout on another network, in FP8, with one NIC per device, with the model or data
grown) are done by the adapter with the planner itself, so that every quantified penalty is
the planner's own figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuplan.hardware import Accelerator, Network, Server

__all__ = ["Growth", "PlanFacts", "Requirements"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Requirements:
    """What the data or the buyer requires (not computed): residency region, compliance levels."""

    data_residency: str | None = None  # e.g. "cn"
    compliance: tuple[str, ...] = ()  # e.g. ("mlps3",)


@dataclass(frozen=True, slots=True, kw_only=True)
class Growth:
    """The same plan re-evaluated with the model or the data grown by `factor`."""

    factor: float
    model_fits: bool
    model_time_s: float | None  # on the same devices, if it fits
    model_devices_needed: int | None  # smallest doubling of the cluster that fits, if it does not
    data_time_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanFacts:
    """The computed facts of one plan (training or inference) that the rules judge."""

    kind: Literal["train", "infer"]
    model: str
    params_total: float
    method: str  # full | lora | qlora (training); serve (inference)
    precision: str
    accelerator: Accelerator
    server: Server | None
    network: Network | None
    devices: int
    gpus_per_node: int
    nics_per_node: float
    memory_per_device_bytes: float
    device_memory_bytes: float
    tokens_per_s: float
    step_time_s: float | None = None
    breakdown_s: Mapping[str, float] = field(default_factory=dict)
    mfu: float | None = None
    tokens: float | None = None
    seq_len: int | None = None
    time_s: float | None = None
    cost_usd: float | None = None
    price_usd_per_device_hour: Mapping[str, float | None] = field(default_factory=dict)
    checkpoint_bytes: float | None = None
    checkpoint_write_s: float | None = None
    checkpoint_interval_s: float | None = None
    mtbf_s: float | None = None
    goodput: float | None = None
    read_mbyte_s: float | None = None
    tokenize_cores_per_node: float | None = None
    # re-evaluations with the planner: step time of the same layout under a variant
    step_s_rdma: float | None = None  # on the part's RDMA fabric (multi-node only)
    step_s_tcp: float | None = None  # on TCP Ethernet (multi-node only)
    step_s_full_nics: float | None = None  # one NIC per device
    step_s_oversubscribed: float | None = None  # scale-out bandwidth divided by the checked ratio
    rdma_network: str | None = None
    tcp_network: str | None = None
    step_s_fp8: float | None = None
    memory_fp8_bytes: float | None = None
    growth: Growth | None = None
    deadline_s: float | None = None
    market: str | None = None
    provider: str | None = None
    # who houses the servers: "rented" (a provider's offer: it powers and cools the racks), "owned" (the team buys
    # and hosts them), None (not known: findings about racks and power speak conditionally)
    hosting: Literal["rented", "owned"] | None = None
    hosting_market: str | None = None  # where a rented offer's cards are (its catalog market)
    vocab_size: int | None = None  # the model's vocabulary (the width of a pre-tokenized dataset's ids)
    requirements: Requirements = field(default_factory=Requirements)
    calibration: Mapping[str, Any] = field(default_factory=dict)
    # inference: devices of one replica (the unit that talks over the network) and serving figures
    replica_devices: int | None = None
    serving: Mapping[str, Any] = field(default_factory=dict)

    @property
    def nodes(self) -> int:
        return max(1, math.ceil(self.devices / self.gpus_per_node))

    @property
    def multi_node(self) -> bool:
        """Does one job (training) or one replica (inference) span nodes?"""
        return (self.replica_devices or self.devices) > self.gpus_per_node
