"""Plan training across the catalog: hardware x cluster size x layout, ranked, with a Pareto front.

For each accelerator (with its usual fabric) and each cluster size, the fastest layout that
fits is kept (`best_layout`, vectorized over layouts); plans then face the constraints
(deadline, budget, policy) and are ranked by cost, then time. The Pareto front holds the
plans no other plan beats on both time and cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.hardware import Accelerator, Catalog
from gpuplan.search.candidates import LayoutChoices
from gpuplan.search.pricing import device_price
from gpuplan.search.train_eval import cluster_hardware, default_network
from gpuplan.search.train_planner import best_layout, plan_figures
from gpuplan.units import GIB
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["PlanConstraints", "PlanResult", "bottleneck", "plan_training", "policy_rejection"]

DOMESTIC_VENDORS = ("Huawei", "Hygon", "Cambricon", "Kunlunxin", "Moore Threads", "Biren", "Iluvatar", "MetaX")
FRAMEWORK_FIELD = {"megatron": "megatron", "deepspeed": "deepspeed", "mindspeed": "megatron", "paddle": "paddle"}


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanConstraints:
    deadline_days: float | None = None
    budget_usd: float | None = None
    max_devices: int = 4096
    min_devices: int = 8
    market: str | None = None  # cn | global
    vendor: str | None = None
    provider: str | None = None
    domestic_only: bool = False
    framework: str | None = None
    accelerators: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanResult:
    plans: list[dict[str, Any]]
    pareto: list[dict[str, Any]]
    candidates_evaluated: int
    rejected: dict[str, int] = field(default_factory=dict)
    hardware_considered: list[str] = field(default_factory=list)
    nearest: str | None = None  # when no plan passes: the closest feasible alternative, in words


def bottleneck(breakdown: dict[str, float]) -> str:
    """The largest non-compute term of a step, in words."""
    total = sum(breakdown.values()) or 1.0
    name, value = max(((k, v) for k, v in breakdown.items() if k != "compute"), key=lambda kv: kv[1])
    share = value / total
    if share < 0.05:
        return f"compute-bound: {breakdown['compute'] / total:.0%} of the step is compute"
    words = {"tp_comm": "tensor-parallel communication (intra-node link)",
             "dp_comm": "gradient synchronisation across data-parallel replicas (network)",
             "pp_bubble": "pipeline bubble (too few micro-batches per pipeline)",
             "pp_comm": "pipeline point-to-point transfers", "ep_comm": "expert all-to-all",
             "cp_comm": "context-parallel KV exchange", "other": "optimizer step (memory bandwidth)"}
    return f"{words.get(name, name)}: {share:.0%} of the step"


def policy_rejection(acc: Accelerator, cons: PlanConstraints) -> str | None:
    """None if the accelerator passes the policy filters, else the reason."""
    if cons.accelerators and acc.id not in cons.accelerators:
        return "policy"
    if cons.market and cons.market not in acc.markets:
        return "policy"
    if cons.vendor and acc.vendor.lower() != cons.vendor.lower():
        return "policy"
    if cons.domestic_only and acc.vendor not in DOMESTIC_VENDORS:
        return "policy"
    if cons.framework:
        level = getattr(acc.frameworks, FRAMEWORK_FIELD.get(cons.framework, cons.framework), None)
        if level in (None, "none", "unsupported"):
            return "policy"
    if acc.bf16_dense_tflops is None and acc.fp16_dense_tflops is None:
        return "missing_data"
    if acc.memory_gib is None or acc.hbm_bandwidth_gbps is None:
        return "missing_data"
    return None


def _sizes(cons: PlanConstraints, per_node: int) -> list[int]:
    sizes, n = [], max(cons.min_devices, 1)
    while n <= cons.max_devices:
        sizes.append(n)
        n *= 2
    return [s for s in sizes if s % per_node == 0 or s < per_node] or [per_node]


def plan_training(spec: ModelSpec, job: TrainingJob, catalog: Catalog, cons: PlanConstraints, *,
                  tokens: float, calibration: Calibration | None = None) -> PlanResult:
    cal = calibration or default_calibration()
    rejected: dict[str, int] = {}
    plans: list[dict[str, Any]] = []
    evaluated = 0
    considered = []
    cache: dict[Any, Any] = {}
    fastest: tuple[float, str, int] | None = None  # the quickest plan a deadline rejected
    cheapest: tuple[float, str, int, float] | None = None  # the cheapest plan a budget rejected
    for acc in catalog.accelerators.values():
        why = policy_rejection(acc, cons)
        if why:
            rejected[why] = rejected.get(why, 0) + 1
            continue
        if job.precision == "fp8" and acc.fp8_dense_tflops is None:
            rejected["precision_unsupported"] = rejected.get("precision_unsupported", 0) + 1
            continue
        try:
            hw = cluster_hardware(catalog, acc.id, default_network(acc.id))
            hw.intra(2)
        except GpuplanError:  # an incomplete catalog entry is skipped and counted
            rejected["missing_data"] = rejected.get("missing_data", 0) + 1
            continue
        considered.append(acc.id)
        choices = LayoutChoices(devices=_sizes(cons, hw.gpus_per_node), max_tp=hw.gpus_per_node)
        c, ev, _, _ = best_layout(spec, job, hw, choices, calibration=cal, cache=cache)
        evaluated += len(c)
        if len(c) == 0:
            continue
        fits = ev.memory_bytes <= float(acc.memory_gib or 0) * GIB * cal.value("usable_memory_fraction")
        rejected["out_of_memory"] = rejected.get("out_of_memory", 0) + int((~fits).sum())
        price = device_price(catalog, acc.id, market=cons.market, provider=cons.provider)
        step = np.where(fits, ev.step_s, np.inf)
        for n in np.unique(c.devices[fits]).tolist():
            best = int(np.argmin(np.where(c.devices == n, step, np.inf)))
            fig = plan_figures(spec, job, hw, c, ev, best, catalog=catalog, tokens=tokens, calibration=cal,
                               market=cons.market, provider=cons.provider, price=price)
            days = fig["time_to_train_s"] / 86400.0
            cost = fig["cost"].get("usd_on_demand") or fig["cost"].get("usd_monthly_commitment")
            if cons.deadline_days is not None and days > cons.deadline_days:
                rejected["deadline"] = rejected.get("deadline", 0) + 1
                if fastest is None or days < fastest[0]:
                    fastest = (days, acc.id, n)
                continue
            if cons.budget_usd is not None and cost is not None and cost > cons.budget_usd and (
                    cheapest is None or cost < cheapest[0]):
                cheapest = (cost, acc.id, n, days)
            if cons.budget_usd is not None and (cost is None or cost > cons.budget_usd):
                rejected["budget" if cost is not None else "no_price"] = rejected.get(
                    "budget" if cost is not None else "no_price", 0) + 1
                continue
            fig["accelerator"] = acc.id
            fig["devices"] = n
            fig["time_to_train_days"] = days
            fig["cost_usd"] = cost
            fig["bottleneck"] = bottleneck(fig["breakdown_s"])
            plans.append(fig)
    plans.sort(key=lambda p: (p["cost_usd"] is None, p["cost_usd"] or 0.0, p["time_to_train_s"]))
    priced = sorted((p for p in plans if p["cost_usd"] is not None), key=lambda p: p["time_to_train_s"])
    pareto, best_cost = [], float("inf")
    for p in priced:
        if p["cost_usd"] < best_cost:
            pareto.append(p)
            best_cost = p["cost_usd"]
    nearest = None
    if not plans:
        if fastest is not None:
            nearest = (f"the fastest plan that fits takes {fastest[0]:.1f} days on {fastest[2]} x {fastest[1]} "
                       f"(--deadline {fastest[0]:.1f} or more)")
        elif cheapest is not None:
            nearest = (f"the cheapest plan that fits costs {cheapest[0]:,.0f} USD on {cheapest[2]} x {cheapest[1]}, "
                       f"{cheapest[3]:.1f} days (--budget {cheapest[0]:,.0f} or more)")
        elif considered and rejected.get("out_of_memory"):
            nearest = _smallest_fit(spec, job, catalog, considered, cons, cal)
        elif not considered:
            nearest = "no catalog accelerator passes the policy filters (market, vendor, provider, framework)"
    return PlanResult(plans=plans, pareto=pareto, candidates_evaluated=evaluated, rejected=rejected,
                      hardware_considered=considered, nearest=nearest)


def _smallest_fit(spec: ModelSpec, job: TrainingJob, catalog: Catalog, considered: list[str],
                  cons: PlanConstraints, cal: Calibration) -> str:
    """The smallest cluster (beyond --max-devices) on which the job fits, on the roomiest parts."""
    roomy = sorted(considered, key=lambda a: -float(catalog.accelerator(a).memory_gib or 0))[:3]
    best: tuple[int, str] | None = None
    for acc_id in roomy:
        hw = cluster_hardware(catalog, acc_id, default_network(acc_id))
        wider = PlanConstraints(min_devices=cons.max_devices * 2, max_devices=max(cons.max_devices * 64, 65536))
        choices = LayoutChoices(devices=_sizes(wider, hw.gpus_per_node), max_tp=hw.gpus_per_node)
        c, ev, _, _ = best_layout(spec, job, hw, choices, calibration=cal)
        limit = float(catalog.accelerator(acc_id).memory_gib or 0) * GIB * cal.value("usable_memory_fraction")
        fits = ev.memory_bytes <= limit if len(c) else np.zeros(0, dtype=bool)
        if fits.any():
            n = int(c.devices[fits].min())
            if best is None or n < best[0]:
                best = (n, acc_id)
    if best is None:
        return "the job fits on no catalog accelerator even at 64x --max-devices; try LoRA/QLoRA or recomputation"
    return f"the smallest cluster that fits is {best[0]} x {best[1]} (--max-devices {best[0]})"
