"""Hardware options of the training planner: what a team can actually rent (or build), node by node.

A plan is only as real as the offer that prices it. Each option fixes, from one source:

* the node shape: the instance's accelerator count (a 4-GPU VM is a 4-GPU node);
* the scale-out fabric: the instance's RDMA network, or, when it has none, TCP over its VPC
  bandwidth (`eth-25-tcp` / `eth-100-tcp` scaled to the stated Gbit/s; unstated: one 25 GbE
  port, the conservative default `offer_tcp_gbit_default`);
* its capacity, with its provenance: --capacity OFFER=N (user input), else the instance's stated `max_devices`,
  else its `typical_max_devices` (typical), else unknown: no cap is invented (the plan may be as large as
  --max-devices) and the recommendation carries a capacity caveat (advise/trust.capacity_caveat);
* its price: this offer's per-device-hour rates, not the cheapest of some other offer. An offer whose only rents
  are distressed (surplus-capacity) ones is kept as a scenario (`scenario: "distressed"`) at those rents: listed,
  never recommended (advise/report_train), instead of dropped.

Every accelerator sold in the market asked is also planned as the team's own cluster on the fabric of
its catalog server (or the part's usual one), at any size and without a price (owning is costed by
`gpuplan tco`); for a part no offer prices it is the only option. `--network` asks the
what-if question for every part: a cluster built on that fabric, priced at the part's cheapest
offer as a proxy (the output says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import Accelerator, Catalog, Instance, Network, Server, convert
from gpuplan.search.cluster import usual_network, usual_server
from gpuplan.search.pricing import DevicePrice, device_price, distressed_price, instance_price, price_label, used_price

__all__ = ["HardwareOption", "hardware_options", "tcp_network_for"]

NO_PRICE = DevicePrice(on_demand=None, spot=None, monthly=None, on_demand_instance=None, spot_instance=None,
                       monthly_instance=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareOption:
    """One way to get a cluster of one accelerator: an offer (instance) or an own cluster."""

    accelerator: str
    kind: str  # "offer" | "own" | "as_specified" (the user's --network)
    offer: str | None
    gpus_per_node: int
    network: str | None  # None: the option cannot span nodes
    nics_per_node: float
    network_basis: str  # why this fabric and NIC count, in words
    max_devices: int | None  # None: no cap beyond --max-devices
    capacity_basis: str
    capacity_provenance: str  # "stated" | "typical" | "unknown" | "user input" | "own" (own or as specified)
    price: DevicePrice
    price_basis: str
    billing_unit: int | None = None  # devices billed together (one instance); None: a whole node
    # an own cluster's catalog purchase price (server_purchase): what buying it costs, to compare own clusters
    # of different parts by (device-hours of different parts are not a cost); None: no list price
    purchase: Purchase | None = None
    scenario: str | None = None  # "distressed": priced at surplus-capacity rents only; listed, never recommended

    def billed_devices(self, devices: int) -> int:
        """Devices a plan of `devices` pays for: an offer bills whole instances (2 devices of an 8-GPU server
        rental pay for 8; a per-card rental pays per card), an own cluster what it uses."""
        if self.kind != "offer":
            return devices
        unit = self.billing_unit or self.gpus_per_node
        return -(-devices // unit) * unit

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "offer": self.offer, "gpus_per_node": self.gpus_per_node,
                "billing_unit": self.billing_unit or self.gpus_per_node,
                "network": self.network, "nics_per_node": self.nics_per_node, "network_basis": self.network_basis,
                "max_devices": self.max_devices, "capacity_basis": self.capacity_basis,
                "capacity_provenance": self.capacity_provenance, "scenario": self.scenario,
                "price_basis": self.price_basis,
                "purchase": self.purchase.to_json() if self.purchase is not None else None}


@dataclass(frozen=True, slots=True)
class Purchase:
    """Buying whole servers of one kind at the catalog's list price (servers.yaml `list_price`)."""

    server: str
    devices_per_server: int
    usd_per_server: float
    amount: float  # in `currency`, as the catalog quotes it
    currency: str
    source: str
    as_of: str
    confidence: str

    def servers(self, devices: int) -> int:
        return -(-devices // self.devices_per_server)

    def usd(self, devices: int) -> float:
        """Whole servers holding `devices`, USD."""
        return self.servers(devices) * self.usd_per_server

    def to_json(self) -> dict[str, object]:
        return {"server": self.server, "devices_per_server": self.devices_per_server,
                "usd_per_server": self.usd_per_server, "amount": self.amount, "currency": self.currency,
                "source": self.source, "as_of": self.as_of, "confidence": self.confidence}


def server_purchase(catalog: Catalog, sv: Server | None) -> Purchase | None:
    """The catalog list price of buying one `sv`, in USD with its source, date and confidence; None without one."""
    lp = sv.list_price if sv is not None else None
    if sv is None or lp is None or not lp.amount or not sv.accelerators_per_node:
        return None
    usd = convert(lp.amount, lp.currency, "USD", catalog.rates)
    if not usd:
        return None
    return Purchase(server=sv.id, devices_per_server=sv.accelerators_per_node, usd_per_server=float(usd),
                    amount=float(lp.amount), currency=lp.currency, source=lp.source, as_of=str(lp.as_of),
                    confidence=lp.confidence)


def _server_nics(sv: Server | None, net: Network, gpn: int) -> tuple[float, str]:
    """(NICs of `net`'s line rate per node of `gpn` devices, why): the server's compute NICs, in proportion where
    the instance holds only part of the server (a 4-GPU tray of a 72-GPU GB200 NVL72 rack has its tray's four NICs,
    one per GPU, not the rack's 72: NVIDIA GB200 NVL72 spec, one ConnectX NIC per GPU; renting trays does not say
    they share a rack's NVLink domain), else one per device."""
    total = sv.compute_gbit_per_s if sv is not None else 0.0
    if not total or sv is None:
        return float(gpn), "one NIC per device assumed"
    per_server = sv.accelerators_per_node
    if per_server and gpn < per_server:
        share = total * gpn / per_server
        return share / net.nic_gbit_per_s, (f"{share:g} Gbit/s per node: {gpn} of the {per_server} devices of server "
                                            f"{sv.id} ({total:g} Gbit/s)")
    return total / net.nic_gbit_per_s, f"{total:g} Gbit/s per node (server {sv.id})"


def tcp_network_for(inst: Instance, cal: Calibration) -> tuple[str, float, str]:
    """(network id, NICs per node, why) of an instance without RDMA: TCP over its VPC bandwidth."""
    gbit = inst.network_gbit_per_s
    if gbit is None:
        gbit = cal.value("offer_tcp_gbit_default")
        basis = (f"no RDMA; VPC bandwidth not stated: {gbit:g} Gbit/s TCP assumed "
                 f"(calibration offer_tcp_gbit_default)")
    else:
        basis = f"no RDMA: TCP over the instance's {gbit:g} Gbit/s VPC network"
    net, nic = ("eth-100-tcp", 100.0) if gbit >= 100 else ("eth-25-tcp", 25.0)
    return net, gbit / nic, basis


def _offer_option(catalog: Catalog, acc: Accelerator, inst: Instance, cal: Calibration,
                  capacity: Mapping[str, int] | None = None) -> HardwareOption | None:
    count = inst.accelerator_count
    if count < 1 or count != int(count):  # a fraction of a GPU does not train
        return None
    price = instance_price(catalog, inst)
    scenario = None
    if price.on_demand is None and price.monthly is None and price.spot is None:
        price = distressed_price(catalog, inst)  # surplus-capacity rents only: a scenario
        if price.on_demand is None and price.monthly is None and price.spot is None:
            return None
        scenario = "distressed"
    gpn = int(count)
    host = ""
    cards = catalog.host_cards(inst)
    if cards is not None:  # a per-card rental: up to `cards` cards of one machine per rental
        gpn = cards
        host = (f"; per-card rental: up to {gpn} cards of one {inst.server} host in one rental, each billed per card "
                f"({inst.source_of('cards_per_host')})")
    if inst.rdma_network:
        net = catalog.network(inst.rdma_network)
        if inst.rdma_gbit_per_s:
            nics = inst.rdma_gbit_per_s / net.nic_gbit_per_s
            basis = f"the instance's RDMA fabric {net.id}, {inst.rdma_gbit_per_s:g} Gbit/s per node"
        else:
            nics, nic_basis = _server_nics(catalog.server(inst.server), net, gpn)
            basis = f"the instance's RDMA fabric {net.id}, {nic_basis}"
        if inst.low_confidence_fields and "rdma_network" in inst.low_confidence_fields:
            basis += " (low confidence in the catalog)"
        net_id = net.id
    else:
        net_id, nics, basis = tcp_network_for(inst, cal)
    given = (capacity or {}).get(inst.id, (capacity or {}).get("*"))
    stated, prov = inst.capacity
    cap: int | None
    if given is not None:
        cap, prov, cap_basis = given, "user input", f"offer capacity: --capacity {inst.id}={given}"
    elif prov == "stated":
        cap, cap_basis = stated, f"offer capacity: {inst.source_of('max_devices')}"
    elif prov == "typical":
        cap = stated
        cap_basis = f"typical capacity, not stated for this offer: {inst.source_of('typical_max_devices')}"
    else:
        cap, cap_basis = None, ("capacity not stated: not capped (up to --max-devices); confirm with the provider "
                                "that it can supply the plan's devices, or plan within a quote with --capacity "
                                f"{inst.id}=N")
    if cap is not None:
        cap = max(gpn, cap - cap % gpn)  # whole instances
    text = _price_text(catalog, inst) if scenario is None else _price_text(catalog, inst, distressed=True)
    return HardwareOption(accelerator=acc.id, kind="offer", offer=inst.id, gpus_per_node=gpn, network=net_id,
                          nics_per_node=nics, network_basis=basis + host, max_devices=cap, capacity_basis=cap_basis,
                          capacity_provenance=prov, billing_unit=int(count), scenario=scenario,
                          price=price, price_basis=f"offer {inst.id} ({inst.provider}, {inst.market}): " + text
                          + ("; a scenario at distressed-capacity rents (surplus capacity that may not be there at "
                             "scale): listed, not recommended" if scenario else ""))


def _price_text(catalog: Catalog, inst: Instance, *, distressed: bool = False) -> str:
    """The label of the price a plan on `inst` pays (on demand, else monthly, else spot)."""
    for kind in ("on_demand_hourly", "monthly", "spot_hourly"):
        p = inst.price(kind, distressed=True) if distressed else used_price(catalog, inst, kind)
        if p is not None:
            return price_label(p)
    return "no price"


def hardware_options(catalog: Catalog, acc: Accelerator, cal: Calibration, *, market: str | None = None,
                     provider: str | None = None, network: str | None = None, nics_per_node: float | None = None,
                     gpus_per_node: int | None = None,
                     capacity: Mapping[str, int] | None = None) -> list[HardwareOption]:
    """Every way the planner may get a cluster of `acc` (see the module docstring)."""
    sv = usual_server(catalog, acc.id)
    usual_g = gpus_per_node or (sv.accelerators_per_node if sv is not None else 8)
    if network is not None:  # the user's what-if fabric: one option per part
        net = catalog.network(network)
        nics = nics_per_node if nics_per_node else float(usual_g if net.rdma else 1)
        price = device_price(catalog, acc.id, market=market, provider=provider)
        named = [i for i in (price.on_demand_instance, price.monthly_instance) if i]
        return [HardwareOption(
            accelerator=acc.id, kind="as_specified", offer=None, gpus_per_node=usual_g, network=net.id,
            nics_per_node=nics, network_basis=f"--network {net.id}, {nics:g} NIC(s) per node",
            max_devices=None, capacity_basis="your own or reserved cluster: no offer capacity applied",
            capacity_provenance="own",
            price=price, price_basis=(f"proxy: the cheapest offer ({', '.join(named)}), whatever its fabric"
                                      if named else "no offer prices this part"))]
    out: list[HardwareOption] = []
    for inst in sorted(catalog.instances.values(), key=lambda i: i.id):
        if catalog.server(inst.server).accelerator != acc.id:
            continue
        if (market and inst.market != market) or (provider and inst.provider != provider):
            continue
        opt = _offer_option(catalog, acc, inst, cal, capacity)
        if opt is not None:
            out.append(opt)
    # A team can also build (buy or lease whole servers) a cluster of any part sold in its market, at any size:
    # without this option a part that some offer rents would be capped at that offer's capacity while a part
    # no offer rents grows freely, and a large job's fastest plan would fall to whichever part has no offers.
    # With --provider the question is that provider's offers (the own cluster stays the fallback).
    if not out or (provider is None and (market is None or market in acc.markets)):
        net_id, why = usual_network(catalog, acc.id)
        own_nics, nic_basis = ((nics_per_node, "--nics-per-node") if nics_per_node
                               else _server_nics(sv if sv is not None and sv.network == net_id else None,
                                                 catalog.network(net_id), usual_g))
        rented = bool(out)
        buy = server_purchase(catalog, sv) if gpus_per_node in (None, usual_g) else None
        bought = (f"; bought as whole {buy.server} at its catalog list price, {buy.amount:,.0f} {buy.currency} "
                  f"({buy.source}, {buy.as_of}, {buy.confidence} confidence); running costs: `gpuplan tco`"
                  if buy is not None else "")
        out.append(HardwareOption(
            accelerator=acc.id, kind="own", offer=None, gpus_per_node=usual_g, network=net_id,
            nics_per_node=own_nics, network_basis=f"own cluster on {net_id} ({why}), {nic_basis}",
            max_devices=None, capacity_basis="own cluster: no offer capacity applied", capacity_provenance="own",
            price=NO_PRICE,
            purchase=buy,
            price_basis=("an own cluster has no rental price (its offers are separate options)"
                         + (bought or ": cost the purchase with `gpuplan tco`") if rented else
                         "no offer in the catalog prices this part"
                         + (f" in market {market}" if market else "")
                         + ": add one with --catalog (see docs/catalog.md)" + bought)))
    return out
