"""Inference adapter: one plan of `gpuplan plan infer --json` -> PlanFacts.

The inference planner already chose the weight format, layout and replica count by simulation;
the adapter only maps its figures: the instance gives the server, market and provider; memory
per device is what the engine preallocates (its memory fraction of the device); the token rate
is qps x (mean input + mean output); tokenizer cores per node use the training calibration term
`tokenizer_tokens_per_s_per_core`. Multi-node questions are asked per server: its tensor-parallel group,
or its whole expert-parallel group when attention runs data-parallel (max(tp, ep) x pp devices).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpuplan.advise.facts import PlanFacts, Requirements
from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.hardware import Catalog
from gpuplan.units import GIB
from gpuplan.workload.engines import engine
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import load_model

__all__ = ["inference_facts"]

def inference_facts(run: Mapping[str, Any], plan: Mapping[str, Any], *, catalog: Catalog,
                    calibration: Calibration | None = None, requirements: Requirements | None = None,
                    growth: Mapping[str, Any] | None = None, what_if: Mapping[str, Any] | None = None,
                    wider: Mapping[str, Any] | None = None) -> PlanFacts:
    """PlanFacts of one inference plan; `run` is the whole `plan infer --json` object (model, load, slo, engine).
    `growth` is the re-plan at the grown load (report_infer.serve_growth), read by the growth rule; `wider` the
    re-plan with wider weights on the same part (report_infer.serve_wider), read by the precision rule."""
    cal = calibration or default_calibration()
    acc = catalog.accelerator(plan["accelerator"])
    inst = catalog.instances[plan["instance"]]
    lay = plan["layout"]
    host = catalog.host_cards(inst)
    # a per-card rental is one pod per replica, of the replica's cards on one host (the node its host findings size);
    # a whole-node instance is the node
    # and an instance smaller than its server (a VM slice: 1 x B200 of a DGX) is a node of its own cards
    gpn = (min(host, max(int(lay["tp"]), int(lay.get("ep", 1))) * int(lay["pp"])) if host
           else min(max(1, int(inst.accelerator_count)), catalog.server(inst.server).accelerators_per_node))
    server = catalog.rented_server(inst, gpn)  # a per-card pod: the instance's CPU and RAM per card, no host NVMe
    load = run["load"]
    tokens_per_s = float(load["qps"]) * (float(load["input_len_mean"]) + float(load["output_len_mean"]))
    devices = int(plan["devices"])
    nodes = max(1, math.ceil(devices / gpn))
    try:
        params = float(count_params(load_model(str(run["model"]))).total)
    except GpuplanError:
        params = 0.0
    plan_engine = str(plan.get("engine") or run.get("engine") or "vllm")  # the row's: each part's stack's engine
    fraction = engine(plan_engine).gpu_memory_fraction
    device_bytes = float(acc.memory_gib or 0.0) * GIB
    per_hour = float(plan["cost_usd_per_hour"])  # for whole instances: the fleet may leave devices idle
    billed = max(devices, int(plan["instances"]) * int(inst.accelerator_count))
    kind = "monthly" if plan.get("price_kind") == "monthly" else "on_demand"
    return PlanFacts(
        kind="infer", model=str(run["model"]), params_total=params, method="serve", precision=str(plan["weights"]),
        accelerator=acc, server=server, network=catalog.network(inst.rdma_network) if inst.rdma_network else None,
        devices=devices, gpus_per_node=gpn, nics_per_node=float(gpn), memory_per_device_bytes=device_bytes * fraction,
        device_memory_bytes=device_bytes, tokens_per_s=tokens_per_s,
        price_usd_per_device_hour={kind: per_hour / billed},
        tokenize_cores_per_node=tokens_per_s / nodes / cal.value("tokenizer_tokens_per_s_per_core"),
        # the buyer's market is the run's (--market), else inferred by the rules (rules_market.effective_market);
        # the cards are where the offer is: export rules read that
        market=run.get("market"), provider=inst.provider, hosting="rented", hosting_market=inst.market,
        requirements=requirements or Requirements(),
        calibration=dict(run.get("terms", {})),
        replica_devices=max(int(lay["tp"]), int(lay.get("ep", 1))) * int(lay["pp"]),
        serving={"qps": float(load["qps"]), "usd_per_hour": per_hour,
                 "usd_per_million_tokens": float(plan["cost_usd_per_million_tokens"]),
                 "ttft_p99_s": float(plan["ttft_s"]["p99"]), "tpot_p99_s": float(plan["tpot_s"]["p99"]),
                 "utilization": float(plan["utilization"]), "replicas": int(plan["replicas"]),
                 "engine": plan_engine, "memory_fraction": fraction,
                 "billed_devices": billed, **({"growth": dict(growth)} if growth else {}),
                 **({"what_if_rdma": dict(what_if)} if what_if else {}),
                 **({"wider_weights": dict(wider)} if wider is not None else {}),
                 **({"kv_forced_tp": dict(plan["kv_forced_tp"])} if plan.get("kv_forced_tp") else {}),
                 "kv_dtype": str(run.get("kv_dtype") or "bf16")},
    )
