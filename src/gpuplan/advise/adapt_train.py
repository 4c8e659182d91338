"""Training adapter: a training plan (plan_figures output) -> PlanFacts, with the re-evaluations the rules need.

Every variant is the training planner run again: the network variants (RDMA fabric vs TCP, one
NIC per device, a 2:1 oversubscribed fabric) re-plan the layout for the same device count on that
hardware (`replan_step`); FP8 re-evaluates the same layout (`pinned_step`); growth re-plans the model
with doubled layers and the data doubled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal

import numpy as np
from pydantic import ValidationError

from gpuplan.advise.facts import Growth, PlanFacts, Requirements
from gpuplan.advise.findings import Thresholds, default_thresholds
from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.hardware import Catalog, Server
from gpuplan.search.candidates import LayoutChoices, family_choices
from gpuplan.search.cluster import ClusterHardware, cluster_hardware, default_gpus_per_node, usual_network
from gpuplan.search.train_planner import best_layout, plan_figures
from gpuplan.units import GIB
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["TCP_REFERENCE", "evaluate_fixed", "pinned_step", "replan_step", "server_for", "training_facts"]

TCP_REFERENCE = "eth-100-tcp"  # the TCP fabric an RDMA plan is compared with (catalog id)


def _pinned(layout: Mapping[str, Any], gpn: int) -> LayoutChoices:
    return LayoutChoices(devices=[int(layout["devices"])], tp=[int(layout["tp"])], pp=[int(layout["pp"])],
                         cp=[int(layout["cp"])], ep=[int(layout["ep"])], vpp=[int(layout["vpp"])],
                         zero=[int(layout["zero_stage"])], micro_batch=[int(layout["micro_batch"])],
                         recompute=[str(layout["recompute"])], max_tp=gpn, dp=[int(layout["dp"])],
                         # a plan's own layout ran: FSDP inside pipeline stages came from a framework that has it
                         zero3_with_pp=int(layout["zero_stage"]) >= 2 and int(layout["pp"]) > 1)


def pinned_step(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, layout: Mapping[str, Any],
                cal: Calibration) -> tuple[float, float] | None:
    """(step time s, memory bytes per device) of exactly this layout on `hw`; None if it cannot be evaluated."""
    try:
        c, ev, _, _ = best_layout(spec, job, hw, _pinned(layout, hw.gpus_per_node), calibration=cal)
    except GpuplanError:
        return None
    if len(c) == 0:
        return None
    i = int(np.argmin(ev.step_s))
    return float(ev.step_s[i]), float(ev.memory_bytes[i])


def replan_step(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, devices: int,
                cal: Calibration, layout_family: str = "megatron") -> float | None:
    """Step time of the fastest fitting layout of `devices` on `hw` (the planner re-run on other hardware)."""
    try:
        _, ev, best, _ = best_layout(spec, job, hw, family_choices(layout_family, [devices], hw.gpus_per_node),
                                     calibration=cal)
    except GpuplanError:
        return None
    return float(ev.step_s[best]) if best is not None else None


def server_for(catalog: Catalog, accelerator: str, gpus_per_node: int, offer: str | None = None) -> Server | None:
    """The server the plan runs on: its offer's server (the node a rental supplies), else the catalog server
    for this part and node size with the most host data (CPU, RAM, NVMe, power)."""
    inst = catalog.instances.get(offer) if offer else None
    if inst is not None:
        sv = catalog.servers.get(inst.server)
        if sv is not None and inst.cards_per_host is not None:  # a pod of a host: what the rental supplies of it
            return catalog.rented_server(inst, gpus_per_node)
        if sv is not None and sv.accelerators_per_node == gpus_per_node:
            return sv
    options = [s for s in catalog.servers.values()
               if s.accelerator == accelerator and s.accelerators_per_node == gpus_per_node]
    if not options:
        return None

    def known(s: Server) -> int:
        return sum(v is not None for v in (s.cpu_cores, s.ram_gib, s.local_nvme_tb, s.power_kw))

    return max(options, key=known)


def evaluate_fixed(spec: ModelSpec, job: TrainingJob, catalog: Catalog, accelerator: str, devices: int, *,
                   tokens: float | None, network: str | None = None, gpus_per_node: int | None = None,
                   nics_per_node: float | None = None, calibration: Calibration | None = None,
                   market: str | None = None, provider: str | None = None,
                   ) -> tuple[ClusterHardware, dict[str, Any]] | None:
    """The fastest fitting layout of one fixed cluster (what `estimate train` does); None if nothing fits."""
    cal = calibration or default_calibration()
    acc = catalog.accelerator(accelerator)
    gpn = gpus_per_node or default_gpus_per_node(acc, devices)
    net = network or (usual_network(catalog, acc.id)[0] if devices > gpn else None)
    hw = cluster_hardware(catalog, acc.id, net, gpus_per_node=gpn, nics_per_node=nics_per_node)
    c, ev, best, _ = best_layout(spec, job, hw, LayoutChoices(devices=[devices], max_tp=gpn), calibration=cal)
    if best is None:
        return None
    fig = plan_figures(spec, job, hw, c, ev, best, catalog=catalog, tokens=tokens, calibration=cal, market=market,
                       provider=provider)
    fig["accelerator"] = acc.id
    fig["devices"] = devices
    return hw, fig


def _growth(spec: ModelSpec, job: TrainingJob, catalog: Catalog, hw: ClusterHardware, fig: Mapping[str, Any],
            tokens: float | None, factor: float, cal: Calibration) -> Growth | None:
    n = int(fig["layout"]["devices"])
    data_time = fig["time_to_train_s"] * factor if fig.get("time_to_train_s") else None
    try:
        grown = spec.model_copy(update={"num_layers": int(round(spec.num_layers * factor))})
        ModelSpec.model_validate(grown.model_dump())
    except (ValidationError, GpuplanError):
        return Growth(factor=factor, model_fits=True, model_time_s=None, model_devices_needed=None,
                      data_time_s=data_time)
    net = hw.network.id if hw.network else None
    for k in (1, 2, 4, 8):
        size = n * k
        try:
            out = evaluate_fixed(grown, job, catalog, hw.accelerator.id, size, tokens=tokens,
                                 network=net or (usual_network(catalog, hw.accelerator.id)[0] if size > hw.gpus_per_node
                                                 else None),
                                 gpus_per_node=hw.gpus_per_node, calibration=cal)
        except GpuplanError:
            out = None
        if out is not None:
            time_s = out[1].get("time_to_train_s")
            if k == 1:
                return Growth(factor=factor, model_fits=True, model_time_s=time_s, model_devices_needed=None,
                              data_time_s=data_time)
            return Growth(factor=factor, model_fits=False, model_time_s=None, model_devices_needed=size,
                          data_time_s=data_time)
    return Growth(factor=factor, model_fits=False, model_time_s=None, model_devices_needed=None,
                  data_time_s=data_time)


def _offer_market(catalog: Catalog, offer: object) -> str | None:
    """The catalog market of a rented offer (where its cards are), None for none."""
    inst = catalog.instances.get(offer) if isinstance(offer, str) else None
    return inst.market if inst is not None else None


def training_facts(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, fig: Mapping[str, Any], *,
                   catalog: Catalog, tokens: float | None, calibration: Calibration | None = None,
                   thresholds: Thresholds | None = None, deadline_days: float | None = None,
                   market: str | None = None, provider: str | None = None,
                   requirements: Requirements | None = None, growth: bool = True,
                   layout_family: str = "megatron", fabric_variants: bool = True) -> PlanFacts:
    """PlanFacts of one training plan (the figures of `plan_figures` for the chosen layout on `hw`).

    `growth` and `fabric_variants` (the plan re-run on RDMA, TCP, full NICs, an oversubscribed fabric and FP8) feed the
    advice on the recommended plan; a plan checked only for blocking findings (market, residency, compliance)
    needs neither."""
    cal = calibration or default_calibration()
    th = thresholds or default_thresholds()
    layout = fig["layout"]
    gpn = hw.gpus_per_node
    step = float(fig["step_time_s"])
    n = int(layout["devices"])
    rel = fig["reliability"]
    pipe = fig["data_pipeline"]
    variants: dict[str, Any] = {}
    if fabric_variants and n > gpn and hw.network is not None:
        rdma_id = hw.network.id if hw.network.rdma else usual_network(catalog, hw.accelerator.id)[0]
        tcp_id = hw.network.id if not hw.network.rdma else TCP_REFERENCE
        for key, net_id in (("rdma", rdma_id), ("tcp", tcp_id)):
            if net_id == hw.network.id:
                variants[key] = step
            else:
                # the RDMA fabric as sold has one NIC per device; the TCP reference keeps the plan's NICs
                nics = float(gpn) if key == "rdma" else hw.nics_per_node
                variants[key] = replan_step(spec, job, replace(hw, network=catalog.network(net_id),
                                                               nics_per_node=nics), n, cal, layout_family)
        variants["rdma_network"], variants["tcp_network"] = rdma_id, tcp_id
        if hw.nics_per_node < gpn:
            variants["full_nics"] = replan_step(spec, job, replace(hw, nics_per_node=float(gpn)), n, cal,
                                                layout_family)
        ratio = th.value("oversubscription_ratio_checked")
        variants["oversub"] = replan_step(spec, job, replace(hw, nics_per_node=hw.nics_per_node / ratio), n, cal,
                                          layout_family)
    if fabric_variants and job.precision in ("bf16", "fp16") and hw.accelerator.fp8_dense_tflops is not None:
        r = pinned_step(spec, job.model_copy(update={"precision": "fp8"}), hw, layout, cal)
        if r:
            variants["fp8"], variants["fp8_mem"] = r
    acc = hw.accelerator
    option = fig.get("hardware_option") or {}
    offer = option.get("offer")
    kind = option.get("kind")  # search.offers.HardwareOption: an offer is rented, an own cluster is owned
    hosting: Literal["rented", "owned"] | None = "rented" if kind == "offer" else "owned" if kind == "own" else None
    cost = fig.get("cost") or {}
    price = cost.get("usd_per_device_hour", {})
    return PlanFacts(
        kind="train", model=spec.name, params_total=float(count_params(spec).total), method=job.method,
        precision=job.precision, accelerator=acc, server=server_for(catalog, acc.id, gpn, offer), network=hw.network,
        devices=n, gpus_per_node=gpn, nics_per_node=hw.nics_per_node,
        memory_per_device_bytes=float(fig["memory"]["total_bytes"]),
        device_memory_bytes=float(acc.memory_gib or 0) * GIB, tokens_per_s=float(fig["tokens_per_s"]),
        step_time_s=step, breakdown_s=dict(fig["breakdown_s"]), mfu=float(fig["mfu"]), tokens=tokens,
        seq_len=job.seq_len, time_s=fig.get("time_to_train_s"),
        cost_usd=cost.get("usd_on_demand") or cost.get("usd_monthly_commitment"),
        price_usd_per_device_hour=dict(price),
        checkpoint_bytes=rel["checkpoint_bytes"], checkpoint_write_s=rel["checkpoint_write_s"],
        checkpoint_interval_s=rel["checkpoint_interval_s"], mtbf_s=rel["mtbf_s"], goodput=rel["goodput"],
        read_mbyte_s=pipe["pretokenized_read_mbyte_s"], tokenize_cores_per_node=pipe[
            "cpu_cores_per_node_to_tokenize_online"],
        step_s_rdma=variants.get("rdma"), step_s_tcp=variants.get("tcp"), step_s_full_nics=variants.get("full_nics"),
        step_s_oversubscribed=variants.get("oversub"), rdma_network=variants.get("rdma_network"),
        tcp_network=variants.get("tcp_network"), step_s_fp8=variants.get("fp8"),
        memory_fp8_bytes=variants.get("fp8_mem"),
        growth=_growth(spec, job, catalog, hw, fig, tokens, th.value("growth_factor"), cal) if growth else None,
        deadline_s=deadline_days * 86400.0 if deadline_days else None, market=market, provider=provider,
        hosting=hosting, hosting_market=_offer_market(catalog, offer), vocab_size=spec.vocab_size,
        requirements=requirements or Requirements(),
        calibration=fig.get("assumptions", {}).get("calibration", {}),
    )
