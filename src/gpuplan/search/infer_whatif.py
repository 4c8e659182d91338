"""What an RDMA fabric would buy: wide expert parallelism across instances that lack one.

An MoE model served attention data-parallel with its experts over 16-64 devices (SGLang/RTP-LLM wide EP)
needs an RDMA fabric between the instances: DeepEP's all-to-all runs over RDMA (IBGDA), so the planner
never plans such groups on an offer whose catalog entry states none (`infer_layouts.placements`). Many
rentals (the Chinese H20 whole-server market among them) state no fabric, and the cheapest plan there
may cost twice what the same servers with RDMA would. This module sizes that fleet in closed form, on
the RDMA fabric and compute NICs of the part's catalog server (a part whose servers state none is
skipped), for the advisor to say what asking the provider for RDMA is worth. It is never a plan: not
simulated, and the fabric is assumed, not offered.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.estimate.infer_step import node_devices, step_cost_model
from gpuplan.estimate.links import inter_node_link
from gpuplan.hardware import Accelerator, Catalog
from gpuplan.search.cluster import usual_server
from gpuplan.search.infer_capacity import LengthMoments
from gpuplan.search.infer_fleet import Offer
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_size import size_fleet
from gpuplan.simulate import EngineConfig
from gpuplan.workload.engines import EngineProfile
from gpuplan.workload.jobs import serving_layout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["WIDE_EP", "rdma_what_if"]

WIDE_EP = (16, 32, 64)  # expert-parallel group sizes across instances


def rdma_what_if(spec: ModelSpec, acc: Accelerator, offers: list[Offer], *, weights: tuple[str, ...],
                 kv_dtype: str, engine: EngineProfile, cfg: EngineConfig, moments: LengthMoments, load: InferLoad,
                 slo: InferSlo, headroom: float, tpot_p99_over_mean: float, need_tokens: float, max_devices: int,
                 catalog: Catalog) -> dict[str, Any] | None:
    """The cheapest closed-form wide-EP fleet on `acc`'s offers without RDMA, as if each had the part's usual
    RDMA fabric; None for a dense model, a part whose usual fabric is not RDMA, or no fleet that fits."""
    if spec.moe is None:
        return None
    sv = usual_server(catalog, acc.id)  # only a fabric the part's own servers are sold with is assumed
    if sv is None or not sv.network or not catalog.network(sv.network).rdma:
        return None
    net = catalog.network(sv.network)
    best: dict[str, Any] | None = None
    for o in offers:
        if o.scale_out is not None:
            continue
        server = catalog.server(catalog.instances[o.instance].server)
        if o.accelerator_count < server.accelerators_per_node:
            # a per-card or partial-server rental: wide EP runs on whole servers, whose NICs a slice does not get
            # (SGLang/RTP-LLM large-scale EP deployments span whole 8-GPU nodes), so there is no RDMA to ask for
            continue
        total = server.compute_gbit_per_s
        nics = total / net.nic_gbit_per_s if total else float(o.accelerator_count)
        link = inter_node_link(net, nics_per_node=nics, gpus_per_node=o.accelerator_count)
        assumed = replace(o, scale_out=link)
        for e in WIDE_EP:
            if (e <= node_devices(acc) or e % o.accelerator_count or spec.moe.num_experts % e
                    or e > max_devices):
                continue
            lay = serving_layout(tp=1, ep=e)
            for w in weights:
                if w == "fp8" and acc.dense_tflops("fp8") is None:
                    continue
                try:
                    cm = step_cost_model(spec, accelerator=acc, layout=lay, weights=w, kv_dtype=kv_dtype,
                                         engine=engine, catalog=catalog, scale_out=link)
                except GpuplanError:
                    continue
                sz = size_fleet(cm, lay, [assumed], cfg=cfg, moments=moments, slo=slo, qps=load.qps,
                                headroom=headroom, tpot_p99_over_mean=tpot_p99_over_mean, need_tokens=need_tokens,
                                max_devices=max_devices, span=True)
                if sz.rejected is not None:
                    continue
                usd, instances, groups = sz.usd_per_hour, sz.instances, sz.replicas
                if best is None or usd < best["usd_per_hour"]:
                    best = {"accelerator": acc.id, "instance": o.instance, "instances": instances, "weights": w,
                            "layout": {"tp": lay.tp, "pp": lay.pp, "ep": lay.ep}, "devices": groups,
                            "usd_per_hour": usd, "network": net.id, "nics_per_node": nics,
                            "basis": "closed form (not simulated): SLO-bound capacity of one attention group at "
                                     f"{headroom:.0%} headroom, on {net.id} ({link.label}) assumed"}
    return best
