"""Links of the alpha-beta communication model, derived from the hardware catalog.

A `Link` is what one device gets from a fabric: achievable unidirectional bandwidth
(GB/s, 1e9 bytes/s) and a per-step latency alpha (s). `gpuplan.estimate.comm` prices
collectives on them.

* Intra-node: the catalog's `intra_node_link_gbps` is the vendors' BIDIRECTIONAL
  per-device figure (NVLink 4 = 900); one direction is half, times the link kind's
  `<kind>_bw_efficiency` term from `data/links.yaml`. PCIe-only cards use the PCIe figure
  (their `intra_node_link_gbps`, or the host interface parsed from the catalog).
* Inter-node: the NICs of a node are shared by its GPUs, so one GPU gets
  nics_per_node x NIC line rate x `bw_efficiency` / gpus_per_node, with the network's
  `alpha_us` as per-step latency (docs/catalog.md: networks carry the alpha-beta terms).

Every efficiency and latency is a named, sourced calibration term in data; none is a
constant in this file. docs/communication.md lists them and how to override them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import Field

from gpuplan import yamlio
from gpuplan.errors import InputError
from gpuplan.hardware.schema_devices import Accelerator
from gpuplan.hardware.schema_offers import Network
from gpuplan.terms import Term, TermTable

__all__ = [
    "BRIDGE_KINDS",
    "FloatOrArray",
    "Link",
    "LinkCalibration",
    "LinkTerm",
    "FusedA2A",
    "default_link_calibration",
    "fused_a2a_links",
    "host_link",
    "inter_node_link",
    "intra_node_link",
    "load_link_calibration",
    "node_link",
    "pcie_gbyte_s",
    "select_link",
]

FloatOrArray: TypeAlias = float | NDArray[np.float64]

# Link kinds that join only the cards of one bridge set (fully_connected_domain of them);
# traffic to cards outside the set crosses PCIe. Switched or meshed kinds (nvlink via
# NVSwitch or cube mesh, hccs, xgmi, ub, mtlink) are taken to reach the whole node.
BRIDGE_KINDS: frozenset[str] = frozenset({"nvlink_bridge", "mlu_link"})

US_PER_S = 1e6  # microseconds per second


@dataclass(frozen=True)
class Link:
    """One device's share of a fabric: achievable GB/s in one direction, alpha in seconds.

    Fields may be numpy arrays (one link per candidate) as long as they broadcast with the
    other inputs of a collective; `Link.stack` builds such a link. `label` says where the
    figures come from and `terms` names the calibration terms used, for `assumptions`.
    """

    bandwidth_gbyte_s: FloatOrArray
    latency_s: FloatOrArray
    label: str = ""
    terms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bw = np.asarray(self.bandwidth_gbyte_s, dtype=np.float64)
        lat = np.asarray(self.latency_s, dtype=np.float64)
        if not np.all(np.isfinite(bw) & (bw > 0)):
            raise InputError(field="bandwidth_gbyte_s", value=self.bandwidth_gbyte_s, allowed="finite values > 0")
        if not np.all(np.isfinite(lat) & (lat >= 0)):
            raise InputError(field="latency_s", value=self.latency_s, allowed="finite values >= 0")

    @classmethod
    def stack(cls, links: Sequence[Link]) -> Link:
        """One link whose fields are arrays, element i from links[i] (vectorising over hardware)."""
        if not links:
            raise InputError(field="links", value=[], allowed="at least one Link")
        return cls(
            np.array([float(lk.bandwidth_gbyte_s) for lk in links]),
            np.array([float(lk.latency_s) for lk in links]),
            label="stacked",
            terms=tuple(sorted({t for lk in links for t in lk.terms})),
        )


def select_link(use_first: ArrayLike, first: Link, second: Link) -> Link:
    """Elementwise choice: `first` where `use_first` is true, else `second` (np.where on both fields)."""
    cond = np.asarray(use_first, dtype=bool)
    return Link(
        np.where(cond, first.bandwidth_gbyte_s, second.bandwidth_gbyte_s),
        np.where(cond, first.latency_s, second.latency_s),
        label=f"{first.label} | {second.label}",
        terms=tuple(sorted(set(first.terms) | set(second.terms))),
    )


# --- calibration terms ------------------------------------------------------------------
class LinkTerm(Term):
    """A named, sourced factor of the intra-node link model."""

    value: float = Field(ge=0)
    unit: str = Field(min_length=1)
    confidence: Literal["high", "medium", "low", "none"] = "medium"
    as_of: str = Field(default="", pattern=r"^(\d{4}-\d{2}(-\d{2})?)?$")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "confidence": self.confidence}


class LinkCalibration(TermTable):
    """The terms of `data/links.yaml` (plus the PCIe per-lane rates they apply to)."""

    label: ClassVar[str] = "link calibration term"
    pcie_gbyte_s_per_lane: dict[str, float]
    pcie_default_lanes: int = Field(ge=1, le=32)
    pcie_source: str
    terms: dict[str, LinkTerm]


@cache
def default_link_calibration() -> LinkCalibration:
    path = resources.files("gpuplan.estimate") / "data" / "links.yaml"
    return LinkCalibration.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))


def load_link_calibration(overrides: Mapping[str, float] | None = None) -> LinkCalibration:
    """The shipped link terms with `overrides` (name -> value) applied and marked as such."""
    base = default_link_calibration()
    if not overrides:
        return base

    def check(name: str, value: float) -> None:
        if name.endswith("_bw_efficiency") and not 0 < value <= 1:
            raise InputError(field=name, value=value, allowed="a fraction in (0, 1]")
        if value < 0:
            raise InputError(field=name, value=value, allowed="a value >= 0")

    return base.with_overrides(overrides, check=check)


# --- intra-node ---------------------------------------------------------------------------
_PCIE_GEN = re.compile(r"(?:gen\s*|\b)([3-6])(?:\.0)?\b", re.IGNORECASE)
_PCIE_LANES = re.compile(r"\bx\s*(1|2|4|8|16)\b", re.IGNORECASE)


def pcie_gbyte_s(text: str, calibration: LinkCalibration | None = None) -> float | None:
    """Nominal per-direction GB/s of a PCIe interface described as text, or None if unread.

    'PCIe Gen5 x16 (128 GB/s bidirectional)' -> 64; 'PCIe 4.0/5.0' -> 32 (first generation
    named, default lane count). Rates per lane are data (`pcie_gbyte_s_per_lane`).
    """
    cal = calibration or default_link_calibration()
    lowered = text.lower()
    if "pcie" not in lowered:
        return None
    after = lowered[lowered.index("pcie") + 4:]
    gen = _PCIE_GEN.search(after)
    if gen is None or gen.group(1) not in cal.pcie_gbyte_s_per_lane:
        return None
    lanes_match = _PCIE_LANES.search(after)
    lanes = int(lanes_match.group(1)) if lanes_match else cal.pcie_default_lanes
    return cal.pcie_gbyte_s_per_lane[gen.group(1)] * lanes


def host_link(acc: Accelerator, *, p2p: bool = True, calibration: LinkCalibration | None = None) -> Link | None:
    """GPU-to-GPU over PCIe (the host interface), or None when the catalog does not say.

    For PCIe-only parts the catalog's `intra_node_link_gbps` is the PCIe figure itself;
    otherwise `host_interface` (then `intra_node_link_gen`) is parsed. `p2p=False` models a
    driver without peer-to-peer (bytes bounce through host memory).
    """
    cal = calibration or default_link_calibration()
    if acc.intra_node_link == "pcie" and acc.intra_node_link_gbps is not None:
        peak = acc.intra_node_link_gbps / 2  # vendor figure is both directions summed
    else:
        peak_or_none = pcie_gbyte_s(acc.host_interface, cal) or pcie_gbyte_s(acc.intra_node_link_gen, cal)
        if peak_or_none is None:
            return None
        peak = peak_or_none
    eff_name = "pcie_bw_efficiency" if p2p else "pcie_no_p2p_bw_efficiency"
    eff = cal.value(eff_name)
    return Link(
        peak * eff,
        cal.value("pcie_alpha_us") / US_PER_S,
        label=f"{acc.id} PCIe {peak:g} GB/s per direction x {eff:g}{'' if p2p else ' (no P2P)'}",
        terms=(eff_name, "pcie_alpha_us"),
    )


def intra_node_link(
    acc: Accelerator, *, p2p: bool = True, calibration: LinkCalibration | None = None
) -> Link | None:
    """The peer link inside the accelerator's fully connected domain; None when unknown.

    NVLink/NVSwitch, HCCS, XGMI...: `intra_node_link_gbps` / 2 x `<kind>_bw_efficiency`,
    alpha `<kind>_alpha_us`. PCIe-only parts have no peer link beyond PCIe: `host_link`.
    """
    cal = calibration or default_link_calibration()
    kind = acc.intra_node_link
    if kind == "pcie":
        return host_link(acc, p2p=p2p, calibration=cal)
    if acc.intra_node_link_gbps is None:
        return None
    peak = acc.intra_node_link_gbps / 2  # vendor figure is both directions summed (docs/catalog.md)
    eff_name, alpha_name = f"{kind}_bw_efficiency", f"{kind}_alpha_us"
    eff = cal.value(eff_name)
    return Link(
        peak * eff,
        cal.value(alpha_name) / US_PER_S,
        label=f"{acc.id} {kind} {peak:g} GB/s per direction x {eff:g}",
        terms=(eff_name, alpha_name),
    )


def node_link(
    acc: Accelerator,
    ranks_per_node: ArrayLike,
    *,
    p2p: bool = True,
    calibration: LinkCalibration | None = None,
) -> Link | None:
    """The intra-node link a group with `ranks_per_node` members on each node runs at.

    Within `fully_connected_domain` it is `intra_node_link`. A group larger than a bridge
    set (`BRIDGE_KINDS`: NVLink bridge pairs, MLU-Link) runs its ring through PCIe, so the
    PCIe link applies there. Vectorised over `ranks_per_node`; None when a needed link is
    unknown.
    """
    fast = intra_node_link(acc, p2p=p2p, calibration=calibration)
    if fast is None:
        return None
    if acc.intra_node_link not in BRIDGE_KINDS:
        return fast
    slow = host_link(acc, p2p=p2p, calibration=calibration)
    if slow is None:
        return None
    domain = acc.fully_connected_domain or 1
    within = np.asarray(ranks_per_node) <= domain
    if within.ndim == 0:
        return fast if bool(within) else slow
    return select_link(within, fast, slow)


@dataclass(frozen=True)
class FusedA2A:
    """A fused expert all-to-all operator measured on a fabric: its dispatch and combine rates per device (each a
    Link whose alpha is the fabric's), and the bytes per hidden value it dispatches."""

    dispatch: Link
    combine: Link
    dispatch_bytes_per_value: float
    label: str


_A2A_POINTS = (8, 256)  # the EP degrees the fused operators were measured at (links.yaml `<kind>_a2a_*_ep<N>`)


def fused_a2a_links(acc: Accelerator, ep: int, *, calibration: LinkCalibration | None = None) -> FusedA2A | None:
    """The fused dispatch/combine operators of `acc`'s fabric at an expert-parallel group of `ep` devices, where
    data/links.yaml measures them (`<kind>_a2a_*`: CloudMatrix-Infer's FusedDispatch/FusedCombine on UB), else None.

    Per device: the per-rank rate x `<kind>_a2a_ranks_per_device` (a 910C package is two die ranks), at the EP
    degree ep x that (EP128 packages = 256 die ranks, the table's EP256). Between the two measured degrees the rate
    is interpolated in log2(EP) (each rank's traffic spreads over more peers; two points only, so a straight line
    in log degree is an assumption), outside them the nearer figure is held."""
    cal = calibration or default_link_calibration()
    kind = acc.intra_node_link
    names = {f"{kind}_a2a_{op}_gbyte_s_ep{n}" for op in ("dispatch", "combine") for n in _A2A_POINTS}
    if not names <= set(cal.terms):
        return None
    per_device = cal.value(f"{kind}_a2a_ranks_per_device")
    ranks = max(ep * per_device, 1.0)
    lo, hi = _A2A_POINTS
    x = min(max((np.log2(ranks) - np.log2(lo)) / (np.log2(hi) - np.log2(lo)), 0.0), 1.0)
    alpha = cal.value(f"{kind}_alpha_us") / US_PER_S

    def rate(op: str) -> Link:
        a, b = cal.value(f"{kind}_a2a_{op}_gbyte_s_ep{lo}"), cal.value(f"{kind}_a2a_{op}_gbyte_s_ep{hi}")
        per_rank = a + (b - a) * float(x)
        return Link(per_rank * per_device, alpha, label=f"fused {op} {per_rank:.0f} GB/s per rank x {per_device:g}",
                    terms=(f"{kind}_a2a_{op}_gbyte_s_ep{lo}", f"{kind}_a2a_{op}_gbyte_s_ep{hi}",
                           f"{kind}_a2a_ranks_per_device", f"{kind}_alpha_us"))

    dispatch, combine = rate("dispatch"), rate("combine")
    return FusedA2A(dispatch=dispatch, combine=combine,
                    dispatch_bytes_per_value=cal.value(f"{kind}_a2a_dispatch_bytes_per_value"),
                    label=f"{acc.id} {kind} fused all-to-all at EP{ranks:g} ranks: {dispatch.label}, {combine.label}")


# --- inter-node ---------------------------------------------------------------------------
def inter_node_link(
    network: Network,
    *,
    nics_per_node: float,
    gpus_per_node: int,
    gpudirect: bool | None = None,
) -> Link:
    """One GPU's share of the node's scale-out NICs.

    bandwidth = nics_per_node x nic_gbit_per_s / 8 x bw_efficiency / gpus_per_node (GB/s),
    alpha = the network's `alpha_us` term. Passing gpudirect=False on a network that has a
    `bw_efficiency_no_gdr` term uses it (NIC behind the CPU, NVIDIA/nccl#412).
    """
    if not nics_per_node > 0:
        raise InputError(field="nics_per_node", value=nics_per_node, allowed="a number > 0")
    if gpus_per_node < 1:
        raise InputError(field="gpus_per_node", value=gpus_per_node, allowed="an integer >= 1")
    eff_name = "bw_efficiency"
    if gpudirect is False:
        names = {t.name for t in network.calibration}
        if "bw_efficiency_no_gdr" in names:
            eff_name = "bw_efficiency_no_gdr"
    eff = network.term(eff_name)
    per_gpu = nics_per_node * network.nic_gbyte_per_s * eff / gpus_per_node
    return Link(
        per_gpu,
        network.term("alpha_us") / US_PER_S,
        label=(f"{network.id} {nics_per_node:g} x {network.nic_gbit_per_s:g} Gbit/s x {eff:g}"
               f" / {gpus_per_node} GPUs"),
        terms=(f"{network.id}.{eff_name}", f"{network.id}.alpha_us"),
    )
