"""Networks, cloud instances and storage offerings.

A `Network` carries the terms of an alpha-beta (latency-bandwidth) model that the
training planner uses: per-NIC line rate, small-message latency and named
calibration terms (each with its own source and note). An `Instance` is a rentable
slice of a known `Server`; its prices keep their own currency, source and date.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from gpuplan.hardware.schema_base import STRICT, Confidence, CurrencyRates, Market, Price, Sourced, convert

__all__ = ["REQUIRED_TERMS", "CalibrationTerm", "Instance", "Network", "Storage"]

# Every network must calibrate these (the planner's alpha and beta efficiency).
REQUIRED_TERMS = ("alpha_us", "bw_efficiency")


class CalibrationTerm(BaseModel):
    """A named, sourced constant of the communication model."""

    model_config = STRICT

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    value: float = Field(ge=0)
    unit: str = Field(min_length=1, description="'us', 'fraction', ...")
    source: str = Field(min_length=1)
    confidence: Confidence = "medium"
    note: str = ""


class Network(Sourced):
    """A scale-out fabric, per NIC."""

    name: str = Field(min_length=1)
    kind: Literal["infiniband", "roce_v2", "tcp", "efa"]
    nic_gbit_per_s: float = Field(ge=1, le=3200, description="line rate per NIC, Gbit/s")
    latency_us: float = Field(gt=0, lt=10_000, description="small-message one-way latency, microseconds")
    rdma: bool
    gpudirect: bool = Field(
        description="GPU memory to NIC without a host copy (GPUDirect RDMA or equivalent)"
    )
    calibration: tuple[CalibrationTerm, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_terms(self) -> Network:
        names = [t.name for t in self.calibration]
        if len(names) != len(set(names)):
            raise ValueError(f"calibration term names repeat: {names}")
        missing = [n for n in REQUIRED_TERMS if n not in names]
        if missing:
            raise ValueError(f"calibration lacks required term(s) {', '.join(missing)}")
        eff = self.term("bw_efficiency")
        if not 0 < eff <= 1:
            raise ValueError(f"bw_efficiency={eff} must be a fraction in (0, 1]")
        return self

    def term(self, name: str) -> float:
        """The value of calibration term `name` (KeyError if absent)."""
        for t in self.calibration:
            if t.name == name:
                return t.value
        raise KeyError(name)

    @property
    def nic_gbyte_per_s(self) -> float:
        """Line rate per NIC in GB/s (Gbit/s / 8)."""
        return self.nic_gbit_per_s / 8

    @property
    def achievable_gbyte_per_s(self) -> float:
        """Large-message bandwidth per NIC after `bw_efficiency`, GB/s."""
        return self.nic_gbyte_per_s * self.term("bw_efficiency")


class Instance(Sourced):
    """A rentable cloud instance (or a rental offer) of a known server."""

    provider: str = Field(
        pattern=r"^[a-z0-9][a-z0-9\-]*$", description="provider slug: aws, alibaba-cloud..."
    )
    name: str = Field(min_length=1, description="the provider's exact instance type name")
    family: str = ""
    server: str = Field(description="server id this instance runs on")
    accelerator_count: float = Field(
        gt=0, description="accelerators in the instance (0.5 = half a GPU); at most its server's "
        "accelerators_per_node (checked against the server when the catalog is built: 384 on a CloudMatrix384)"
    )
    tenancy: Literal["shared", "dedicated_vm", "bare_metal"]
    vcpus: int | None = Field(default=None, ge=1)
    ram_gib: float | None = Field(default=None, gt=0)
    network_gbit_per_s: float | None = Field(default=None, gt=0, description="VPC network bandwidth")
    rdma_network: str | None = Field(default=None, description="network id of the RDMA fabric, if offered")
    rdma_gbit_per_s: float | None = Field(default=None, gt=0, description="summed RDMA bandwidth")
    regions: tuple[str, ...] = ()
    market: Market
    max_devices: int | None = Field(
        default=None, ge=1, description="largest cluster (accelerators) the offer can supply at once, as stated by "
        "the provider or a quote; cite it in field_sources.max_devices")
    typical_max_devices: int | None = Field(
        default=None, ge=1, description="the cluster such an offer typically supplies when none is stated (a "
        "provider's reservation product, a broker's usual lot); cite it in field_sources.typical_max_devices")
    cards_per_host: int | None = Field(
        default=None, ge=2, description="a per-card rental (accelerator_count 1) whose provider puts up to "
        "this many cards of one host in one rental (a pod, a lease), each billed at the per-card price: a plan of "
        "that many devices runs on one machine's own links; cite it in field_sources.cards_per_host")
    prices: tuple[Price, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Instance:
        if self.tenancy != "shared" and self.accelerator_count != int(self.accelerator_count):
            raise ValueError("accelerator_count must be whole unless tenancy is shared")
        if self.typical_max_devices is not None and "typical_max_devices" not in self.field_sources:
            raise ValueError("typical_max_devices needs its source in field_sources.typical_max_devices")
        if self.cards_per_host is not None:
            if self.accelerator_count != 1:
                raise ValueError("cards_per_host describes a per-card rental: accelerator_count must be 1")
            if "cards_per_host" not in self.field_sources:
                raise ValueError("cards_per_host needs its source in field_sources.cards_per_host")
        kinds = [p.kind for p in self.prices]
        for p in self.prices:
            if p.kind in ("purchase", "per_tib_month"):
                raise ValueError(f"an instance price cannot be of kind {p.kind!r}")
        if len(kinds) != len({(p.kind, p.region, p.as_of) for p in self.prices}):
            raise ValueError("two prices of the same kind, region and as_of (a price history needs "
                             "a different as_of for each entry)")
        return self

    @property
    def capacity(self) -> tuple[int | None, str]:
        """(the largest cluster the offer supplies, its provenance): "stated" (max_devices), "typical"
        (typical_max_devices) or "unknown" (None: nothing says; a planner must say so, not assume a size)."""
        if self.max_devices is not None:
            return self.max_devices, "stated"
        if self.typical_max_devices is not None:
            return self.typical_max_devices, "typical"
        return None, "unknown"

    def price_history(self, kind: str, region: str | None = None) -> list[Price]:
        """Every price of `kind` (optionally in `region`) with a known amount, newest `as_of` first."""
        found = [p for p in self.prices
                 if p.kind == kind and p.amount is not None and (region is None or p.region == region)]
        return sorted(found, key=lambda p: p.as_of_key, reverse=True)

    def price(self, kind: str, region: str | None = None, *, distressed: bool = False) -> Price | None:
        """The price of `kind` that planning uses: the newest `as_of` with a known amount (optionally
        in `region`). Older entries are history and never used. When the newest is a distressed
        (surplus-capacity) price it is used only with `distressed=True`; otherwise None."""
        history = self.price_history(kind, region)
        if not history:
            return None
        newest = history[0]
        if newest.distressed and not distressed:
            return None
        return newest

    def hourly(self, currency: str, rates: CurrencyRates, kind: str = "on_demand_hourly", *,
               distressed: bool = False) -> float | None:
        """The instance's hourly price of `kind` in `currency`; None when unpublished (or, without
        `distressed`, when the newest is a distressed price).

        A monthly price is turned into hourly over 730 h only when asked for kind="monthly".
        """
        p = self.price(kind, distressed=distressed)
        if p is None:
            return None
        amount = convert(p.amount, p.currency, currency, rates)
        if amount is None:
            return None
        return amount / 730.0 if kind == "monthly" else amount / 8760.0 if kind == "yearly" else amount


class Storage(Sourced):
    """A storage offering for training data and checkpoints."""

    provider: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    name: str = Field(min_length=1)
    kind: Literal["parallel_fs", "nas", "object"]
    tier: str = ""
    market: Market
    throughput_mb_s_per_tib: float | None = Field(default=None, gt=0, description="baseline MB/s per TiB")
    max_throughput_gb_s: float | None = Field(default=None, gt=0, description="per file system, GB/s")
    iops_per_tib: float | None = Field(default=None, gt=0)
    max_iops: float | None = Field(default=None, gt=0)
    latency_ms: float | None = Field(default=None, gt=0)
    regions: tuple[str, ...] = ()
    prices: tuple[Price, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> Storage:
        for p in self.prices:
            if p.kind != "per_tib_month":
                raise ValueError(f"a storage price must be of kind 'per_tib_month', not {p.kind!r}")
        return self
