"""Fleets of catalog instances for inference replicas, and the shared-vs-dedicated advice.

A replica of tp x pp devices runs inside one instance when it fits (tensor parallelism
needs the intra-node link), several replicas sharing an instance; a pipeline-parallel
replica larger than an instance spans whole instances. The fleet's hourly price is the
cheapest catalog offer that hosts it (on-demand, else a monthly commitment over 730 h),
from the instances' own prices and sources (`Instance.hourly`, as `pricing.device_price`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.links import Link, inter_node_link
from gpuplan.hardware import Catalog, Instance
from gpuplan.i18n import tr
from gpuplan.search.offers import tcp_network_for
from gpuplan.workload.jobs import Layout

__all__ = ["Offer", "advice", "attention_groups", "fleet_offers", "layout_shape", "price_fleet", "price_layout",
           "priced_groups", "whole_groups"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    instance: str
    accelerator_count: int
    usd_per_hour: float
    kind: str  # on_demand_hourly | monthly
    tenancy: str
    scale_out: Link | None = None  # one device's share of the instance's RDMA NICs; None: no RDMA fabric
    cards_per_host: int | None = None  # a per-card rental: up to this many cards of one host per rental
    hop_link: Link | None = None  # one device's share of the link between two instances: RDMA, else TCP over the VPC
    market: str = ""  # the offer's market (cn | global): a buyer rents in its own market (advise.trust)

    @property
    def host_devices(self) -> int:
        """The most devices of one machine a replica can get from this offer."""
        return self.cards_per_host or self.accelerator_count


def fleet_offers(catalog: Catalog, accelerator: str, *, market: str | None = None,
                 provider: str | None = None) -> list[Offer]:
    """Priced whole-device instances of `accelerator` under the market/provider filters."""
    out = []
    for inst in catalog.instances.values():
        if catalog.server(inst.server).accelerator != accelerator:
            continue
        if inst.accelerator_count < 1 or inst.accelerator_count != int(inst.accelerator_count):
            continue
        if (market and inst.market != market) or (provider and inst.provider != provider):
            continue
        for kind in ("on_demand_hourly", "monthly"):
            usd = inst.hourly("USD", catalog.rates, kind, distressed=catalog.pricing.use_distressed)
            if usd is not None:
                rdma = _rdma_link(catalog, inst)
                out.append(Offer(instance=inst.id, accelerator_count=int(inst.accelerator_count), usd_per_hour=usd,
                                 kind=kind, tenancy=inst.tenancy, scale_out=rdma,
                                 cards_per_host=catalog.host_cards(inst), hop_link=rdma or _tcp_link(catalog, inst),
                                 market=inst.market))
                break
    return out


def _tcp_link(catalog: Catalog, inst: Instance) -> Link:
    """One device's share of TCP between two instances without RDMA, over their VPC bandwidth (the same default a
    training plan on the offer assumes: offers.tcp_network_for)."""
    net, nics, _ = tcp_network_for(inst, default_calibration())
    return inter_node_link(catalog.network(net), nics_per_node=nics, gpus_per_node=int(inst.accelerator_count))


def _rdma_link(catalog: Catalog, inst: Instance) -> Link | None:
    """One device's share of the instance's RDMA fabric (its stated Gbit/s, else its server's compute NICs);
    None when the instance has no RDMA: an expert all-to-all across instances needs RDMA (DeepEP: IBGDA)."""
    if not inst.rdma_network:
        return None
    net = catalog.network(inst.rdma_network)
    count = int(inst.accelerator_count)
    if inst.rdma_gbit_per_s:
        nics = inst.rdma_gbit_per_s / net.nic_gbit_per_s
    else:
        total = catalog.server(inst.server).compute_gbit_per_s
        nics = total / net.nic_gbit_per_s if total else float(count)
    return inter_node_link(net, nics_per_node=nics, gpus_per_node=count)


def price_fleet(offers: list[Offer], replicas: int, tp: int, pp: int, *,
                span: bool = False) -> tuple[float, Offer, int] | None:
    """(USD per hour, offer, instances) of the cheapest way to host `replicas` replicas; None if none can.
    `span`: a replica may fill several whole instances of an offer with an RDMA fabric (an expert group)."""
    per_replica = tp * pp
    best: tuple[float, Offer, int] | None = None
    for o in offers:
        if per_replica <= o.accelerator_count:
            n = math.ceil(replicas / (o.accelerator_count // per_replica))
        elif o.cards_per_host and per_replica <= o.cards_per_host:  # per-card: each replica's cards on one host
            n = replicas * per_replica
        elif per_replica % o.accelerator_count == 0 and (
                pp > 1 and tp <= o.accelerator_count or span and o.scale_out is not None):
            n = replicas * (per_replica // o.accelerator_count)
        else:
            continue
        usd = n * o.usd_per_hour
        if best is None or usd < best[0]:
            best = (usd, o, n)
    return best


def attention_groups(layout: Layout) -> int:
    """Attention groups that share one expert-parallel group (ep > tp: attention data parallelism), else 1."""
    return max(layout.ep // layout.tp, 1)


def layout_shape(layout: Mapping[str, int], lang: str) -> str:
    """A serving layout in words: 'tp8 ep8', or for attention data parallelism (ep > tp) 'DP8 attention, EP8'
    (zh: '注意力 DP8，EP8'), with the TP of each group and the PP where above 1."""
    tp, pp, ep = int(layout["tp"]), int(layout.get("pp", 1)), int(layout.get("ep", 1))
    if ep > tp:
        shape = tr("layout.dp_attention", lang, dp=ep // tp, ep=ep) + (f" tp{tp}" if tp > 1 else "")
    else:
        shape = f"tp{tp}" + (f" ep{ep}" if ep > 1 else "")
    cp = int(layout.get("cp", 1))  # prefill context parallelism (search/infer_cp.py)
    return shape + (f" pp{pp}" if pp > 1 else "") + (f" cp{cp}" if cp > 1 else "")


def whole_groups(replicas: int, layout: Layout) -> int:
    """`replicas` attention groups rounded up to whole expert-parallel groups."""
    g = attention_groups(layout)
    return -(-replicas // g) * g


def price_layout(offers: list[Offer], replicas: int, layout: Layout, *,
                 span: bool = False) -> tuple[float, Offer, int] | None:
    """`price_fleet` for `replicas` attention groups of `layout`: an expert-parallel group (max(tp, ep) x pp
    devices) is the unit priced; it must fit one instance unless `span` (a group timed on the offers' RDMA link
    across instances)."""
    g = attention_groups(layout)
    return price_fleet(offers, -(-replicas // g), max(layout.tp, layout.ep) * layout.cp, layout.pp, span=span)


def priced_groups(offers: list[Offer], layout: Layout, needed: float, *, max_devices: int,
                  span: bool = False) -> tuple[int, float, Offer, int] | None:
    """(attention groups rounded up to whole expert-parallel groups, USD/h, offer, instances) for `needed` groups
    of `layout` on `offers` within `max_devices`; None when they exceed it or no offer hosts them."""
    groups = whole_groups(max(1, math.ceil(needed)), layout)
    if groups * layout.tp * layout.pp * layout.cp > max_devices:
        return None
    priced = price_layout(offers, groups, layout, span=span)
    return None if priced is None else (groups, *priced)


def advice(utilization: float, p99_growth: float, offer: Offer, terms: Calibration) -> dict[str, object]:
    """Shared or dedicated instances, with the reason (thresholds are named planner terms)."""
    u_max = terms.value("dedicated_utilization")
    g_max = terms.value("dedicated_p99_growth")
    if utilization > u_max:
        choice = "dedicated"
        reason = (f"estimated utilization {utilization:.0%} stays above {u_max:.0%} of the SLO-bound capacity: "
                  f"reserve dedicated instances (no noisy neighbours, capacity held for you)")
    elif p99_growth > g_max:
        choice = "dedicated"
        reason = (f"p99 end-to-end latency grows {p99_growth:.0%} when the load rises by the headroom "
                  f"(more than {g_max:.0%}): the fleet is latency-sensitive, so keep it on dedicated instances")
    else:
        choice = "shared"
        reason = (f"utilization {utilization:.0%} (<= {u_max:.0%}) and p99 growth {p99_growth:.0%} under the "
                  f"headroom load (<= {g_max:.0%}): shared or on-demand instances are fine; move to dedicated if "
                  f"measured utilization stays above {u_max:.0%} or p99 grows by more than {g_max:.0%}")
    return {"tenancy": choice, "reason": reason, "utilization": utilization, "p99_growth_at_headroom": p99_growth,
            "offer_tenancy": offer.tenancy,
            "thresholds": terms.used("dedicated_utilization", "dedicated_p99_growth")}
