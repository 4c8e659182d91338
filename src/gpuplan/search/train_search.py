"""Plan training across the catalog: hardware option x cluster size x layout, ranked, with a Pareto front.

For each accelerator, each hardware option (an offer that prices it, with that offer's node
shape, fabric and capacity, or an own cluster where no offer exists: `search/offers.py`) and each
cluster size, the fastest layout of the job's layout family that fits is kept (`best_layout`,
vectorized over layouts); plans then face the constraints (deadline, budget, policy) and are
ranked by cost, then time; plans without a price follow, by device-hours. The Pareto front holds
the priced plans no other plan beats on both time and cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.memory_fit import usable_bytes
from gpuplan.hardware import Accelerator, Catalog
from gpuplan.search import progress
from gpuplan.search.candidates import family_choices, generate
from gpuplan.search.cluster import ClusterHardware, cluster_hardware, usual_network
from gpuplan.search.layout_pick import TERM as LAYOUT_TERM
from gpuplan.search.layout_pick import simplest_near_fastest_per_size
from gpuplan.search.memory_vec import candidate_memory_bytes
from gpuplan.search.offers import HardwareOption, hardware_options
from gpuplan.search.plan_trust import meets_trust, training_bands, training_confidence
from gpuplan.search.train_planner import Prepared, best_layout, cost_figures, plan_figures
from gpuplan.units import GIB
from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.frameworks import stack_framework
from gpuplan.workload.jobs import FP4_FORMATS, TrainingJob
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["PlanConstraints", "PlanResult", "bottleneck", "choose_layout_family", "cluster_sizes", "plan_training",
           "policy_rejection"]

DOMESTIC_VENDORS = ("Huawei", "Hygon", "Cambricon", "Kunlunxin", "Moore Threads", "Biren", "Iluvatar", "MetaX")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanConstraints:
    deadline_days: float | None = None
    budget_usd: float | None = None
    max_devices: int = 4096
    min_devices: int = 1
    market: str | None = None  # cn | global
    vendor: str | None = None
    provider: str | None = None
    domestic_only: bool = False
    framework: str | None = None
    accelerators: tuple[str, ...] = ()
    network: str | None = None  # plan every part on this fabric (own or reserved cluster), not on its offers
    nics_per_node: float | None = None
    gpus_per_node: int | None = None
    layout_family: str = "megatron"  # candidates.LAYOUT_FAMILIES
    layout_reason: str = "pretraining: every Megatron-style layout (TP, PP, CP, EP, DP/ZeRO)"
    trust: str = "low"  # plan_trust.LEVELS: keep plans whose confidence is at least this
    capacity: tuple[tuple[str, int], ...] = ()  # --capacity OFFER=N ("*" for every offer): overrides offer capacity


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
             "dp_comm": "gradient and parameter synchronisation across data-parallel replicas (network; a sharded "
                        "optimizer's parameter all-gather or, under InternEvo, one broadcast per shard owner)",
             "pp_bubble": "pipeline bubble (too few micro-batches per pipeline)",
             "pp_comm": "pipeline point-to-point transfers", "ep_comm": "expert all-to-all",
             "moe_host_wait": "GPU waiting on the host in MoE layers (the alltoall dispatcher's token-count sync; "
                              "a flex dispatcher, DeepEP/HybridEP with CUDA graphs, removes it)",
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
        level = getattr(acc.frameworks, framework_profile(cons.framework).support, None)
        if level in (None, "none", "unsupported"):
            return "policy"
    if acc.bf16_dense_tflops is None and acc.fp16_dense_tflops is None:
        return "missing_data"
    if acc.memory_gib is None or acc.hbm_bandwidth_gbps is None:
        return "missing_data"
    return None


def cluster_sizes(min_devices: int, max_devices: int, per_node: int) -> list[int]:
    """Powers of two from `min_devices` to `max_devices` that are whole nodes (or fit in one node);
    a node size that is no power of two (a 4- or 16-device instance) adds its multiples."""
    lo, hi = max(min_devices, 1), max_devices
    sizes = set()
    n = 1
    while n <= hi:
        if n >= lo:
            sizes.add(n)
        n *= 2
    k = 1  # powers of two of whole nodes
    while per_node * k <= hi:
        if per_node * k >= lo:
            sizes.add(per_node * k)
        k *= 2
    return sorted(x for x in sizes if x < per_node or x % per_node == 0)


def choose_layout_family(method: str, framework: str | None, params: float, cal: Calibration) -> tuple[str, str]:
    """(layout family, why): how the team's framework lays the job out (candidates.family_choices).

    LoRA/QLoRA and full fine-tuning of models up to `dp_only_finetune_max_params` run data parallel
    (DDP/FSDP/ZeRO with checkpointing) unless a Megatron-class framework is named; pretraining and
    larger full fine-tuning search every Megatron-style layout.
    """
    if framework is not None:
        prof = framework_profile(framework)
        axes = ", ".join(a.upper() for a in prof.axes) or "no model parallelism"
        zero = "/".join(str(z) for z in prof.zero_stages)
        return prof.id, (f"--framework {prof.id} ({prof.name}): {axes}; DP with ZeRO stage {zero}; "
                         f"recompute {'/'.join(prof.recompute)}")
    if method in ("lora", "qlora"):
        return "data_parallel", (f"{method} fine-tuning: data parallel (DDP/FSDP/ZeRO) with activation "
                                 "checkpointing, as PEFT/TRL, LLaMA-Factory, torchtune and Unsloth run it; "
                                 "--framework megatron for TP/PP layouts")
    limit = cal.value("dp_only_finetune_max_params")
    if method == "full_ft" and params <= limit:
        return "data_parallel", (f"full fine-tuning of a {params / 1e9:.1f}B model (<= {limit / 1e9:g}B, "
                                 "dp_only_finetune_max_params): FSDP/ZeRO data parallelism; --framework megatron "
                                 "for TP/PP layouts")
    return "megatron", "every Megatron-style layout (TP, PP, CP, EP, DP/ZeRO)"


def _stack_framework(acc: Accelerator, cons: PlanConstraints) -> dict[str, str] | None:
    """The framework a team on the part's stack runs a Megatron-style layout with, when no --framework was given
    (workload/data/frameworks.yaml stack_default_frameworks: MindSpeed-LLM on CANN); None elsewhere."""
    if cons.framework is not None or cons.layout_family != "megatron":
        return None
    entry = stack_framework(acc.software_stack)
    if entry is None:
        return None
    return {"id": entry.framework, "name": framework_profile(entry.framework).name, "source": entry.source}


def _rank_key(p: dict[str, Any]) -> tuple[bool, float, float]:
    """Priced plans by cost, then time; plans without a price after them by device-hours, then time."""
    if p["cost_usd"] is not None:
        return (False, p["cost_usd"], p["time_to_train_s"])
    return (True, p.get("device_hours") or 0.0, p["time_to_train_s"])


def plan_training(spec: ModelSpec, job: TrainingJob, catalog: Catalog, cons: PlanConstraints, *,
                  tokens: float, calibration: Calibration | None = None) -> PlanResult:
    """Every accelerator x hardware option (offer or own cluster) x cluster size x layout; see the module docstring."""
    cal = calibration or default_calibration()
    rejected: dict[str, int] = {}
    plans: list[dict[str, Any]] = []
    evaluated = 0
    considered = []
    nodes: dict[int, Prepared] = {}  # candidates, memory and layer bytes of every node shape
    cut: dict[tuple[int, int], Prepared] = {}  # ... of one node shape up to one size
    evals: dict[Any, Any] = {}  # options that share node shape and fabric share the evaluation
    memories: dict[Any, Any] = {}  # memory breakdown per layout (hardware-independent)
    fastest: tuple[float, str, int, int] | None = None  # the quickest plan a deadline rejected (and its node size)
    cheapest: tuple[float, str, int, float] | None = None  # the cheapest plan a budget rejected
    capped: dict[str, int] = {}  # largest offer capacity per part, where capacity cut the sizes

    def count(why: str, k: int = 1) -> None:
        rejected[why] = rejected.get(why, 0) + k

    # node shapes the catalog can offer: layouts and their memory are generated once for the sizes of all of them
    shapes = sorted({8, cons.gpus_per_node or 8, *(s.accelerators_per_node for s in catalog.servers.values()),
                     *(int(i.accelerator_count) for i in catalog.instances.values()
                       if i.accelerator_count >= 1 and float(i.accelerator_count).is_integer()),
                     *(i.cards_per_host for i in catalog.instances.values() if i.cards_per_host)})

    def node_candidates(gpn: int, top: int) -> Prepared:
        """The layouts (and their memory) of every size up to `top` on `gpn`-device nodes. Memory does not depend
        on the hardware and generate() orders rows by size first, so the layouts of every node shape's sizes are
        generated and sized once and each shape takes its rows (the same rows, in the same order, as generating
        for that shape alone: TP within the node, that shape's sizes)."""
        key = 0 if gpn in shapes else gpn
        if key not in nodes:
            group = shapes if key == 0 else [gpn]
            every = sorted({n for g in group for n in cluster_sizes(cons.min_devices, cons.max_devices, g)})
            c = generate(spec, family_choices(cons.layout_family, every, max(group)), seq_len=job.seq_len,
                         global_batch=int(job.global_batch or 1), batch_fixed=job.global_batch_fixed)
            nodes[key] = Prepared.of(spec, job, c, cal)
        if (gpn, top) not in cut:
            c = nodes[key].candidates
            keep = np.isin(c.devices, cluster_sizes(cons.min_devices, top, gpn)) & (c.tp <= gpn)
            cut[(gpn, top)] = nodes[key].take(keep)
        return cut[(gpn, top)]

    for acc in progress.each(catalog.accelerators.values()):
        why = policy_rejection(acc, cons)
        if why:
            count(why)
            continue
        if job.precision == "fp8" and acc.fp8_dense_tflops is None:
            count("precision_unsupported")
            continue
        if job.precision in FP4_FORMATS and (acc.fp4_dense_tflops is None
                                             or job.precision == "nvfp4" and acc.software_stack != "cuda"):
            count("precision_unsupported")
            continue
        options = hardware_options(catalog, acc, cal, market=cons.market, provider=cons.provider,
                                   network=cons.network, nics_per_node=cons.nics_per_node,
                                   gpus_per_node=cons.gpus_per_node, capacity=dict(cons.capacity))
        usable = usable_bytes(float(acc.memory_gib or 0) * GIB, cal)
        seen = False
        ready: list[tuple[HardwareOption, ClusterHardware, int]] = []
        for opt in options:
            try:
                hw = cluster_hardware(catalog, acc.id, opt.network, gpus_per_node=opt.gpus_per_node,
                                      nics_per_node=opt.nics_per_node)
                hw.intra(2)
            except GpuplanError:  # an incomplete catalog entry is skipped and counted
                count("missing_data")
                continue
            seen = True
            ready.append((opt, hw, min(cons.max_devices, opt.max_devices or cons.max_devices)))
        # options on the same node shape and fabric differ only in capacity: their sizes are the first ones of
        # the same list, so one evaluation up to the largest capacity serves them all
        widest: dict[Any, int] = {}
        for opt, hw, top in ready:
            fabric = (hw.gpus_per_node, opt.network, opt.nics_per_node)
            widest[fabric] = max(widest.get(fabric, 0), top)
        for opt, hw, top in ready:
            sizes = cluster_sizes(cons.min_devices, top, hw.gpus_per_node)
            if opt.max_devices is not None and opt.max_devices < cons.max_devices:
                beyond = len(cluster_sizes(top + 1, cons.max_devices, hw.gpus_per_node))
                if beyond:
                    count("offer_capacity", beyond)
                    capped[acc.id] = max(capped.get(acc.id, 0), opt.max_devices)
            if not sizes:
                continue
            fabric = (hw.gpus_per_node, opt.network, opt.nics_per_node)
            key = (acc.id, *fabric)
            if key not in evals:
                every = cluster_sizes(cons.min_devices, widest[fabric], hw.gpus_per_node)
                choices = family_choices(cons.layout_family, every, hw.gpus_per_node)
                c, ev, _, _ = best_layout(spec, job, hw, choices, calibration=cal,
                                          prepared=node_candidates(hw.gpus_per_node, widest[fabric]))
                evaluated += len(c)
                evals[key] = (c, ev, {})
                if len(c):
                    count("out_of_memory", int((ev.memory_bytes > usable).sum()))
            c, ev, figs = evals[key]
            if len(c) == 0:
                continue
            fits = (ev.memory_bytes <= usable) & (c.devices <= top)
            conf = training_confidence(catalog, cal, acc.id, job.precision, opt)  # one per option (read-only)
            picks = simplest_near_fastest_per_size(c, np.where(fits, ev.step_s, np.inf), cal.value(LAYOUT_TERM))
            for n, best in picks.items():
                if n not in figs:
                    figs[n] = plan_figures(spec, job, hw, c, ev, best, catalog=catalog, tokens=tokens,
                                           calibration=cal, price=opt.price, memory_cache=memories)
                fig = dict(figs[n])
                billed = opt.billed_devices(n)
                fig["billed_devices"] = billed
                fig["cost"] = cost_figures(opt.price, billed, fig["time_to_train_s"], fig["reliability"])
                days = fig["time_to_train_s"] / 86400.0
                cost = fig["cost"].get("usd_on_demand") or fig["cost"].get("usd_monthly_commitment")
                if cons.deadline_days is not None and days > cons.deadline_days:
                    count("deadline")
                    if fastest is None or days < fastest[0]:
                        fastest = (days, acc.id, n, hw.gpus_per_node)
                    continue
                if cons.budget_usd is not None and cost is not None and cost > cons.budget_usd and (
                        cheapest is None or cost < cheapest[0]):
                    cheapest = (cost, acc.id, n, days)
                if cons.budget_usd is not None and (cost is None or cost > cons.budget_usd):
                    count("budget" if cost is not None else "no_price")
                    continue
                if not meets_trust(conf, cons.trust):
                    count("trust")
                    continue
                fig["accelerator"] = acc.id
                fig["devices"] = n
                fig["confidence"] = conf
                fig["time_to_train_days"] = days
                fig["cost_usd"] = cost
                if cost is None and opt.purchase is not None:  # an own cluster: buying its servers (catalog)
                    fig["purchase_usd"] = opt.purchase.usd(n)
                    fig["purchase"] = {**opt.purchase.to_json(), "servers": opt.purchase.servers(n)}
                fig["bottleneck"] = bottleneck(fig["breakdown_s"])
                fig["hardware_option"] = opt.to_json()
                fig["layout_family"] = {"family": cons.layout_family, "why": cons.layout_reason}
                named = _stack_framework(acc, cons)
                if named is not None:  # MindSpeed-LLM on Ascend: the framework the plan's layout is run with
                    fig["layout_family"]["framework"] = named
                fig["band"], fig["band_basis"] = training_bands(
                    fig, efficiency=conf["efficiency"]["provenance"], moe=spec.moe is not None,
                    nodes=-(-n // hw.gpus_per_node), framework_stated=cons.framework is not None)
                plans.append(fig)
        if seen:
            considered.append(acc.id)
    plans.sort(key=_rank_key)
    # the front of real offers: a distressed-rent scenario (offers.py) is listed, not a point to choose from
    priced = sorted((p for p in plans if p["cost_usd"] is not None and not p["hardware_option"].get("scenario")),
                    key=lambda p: p["time_to_train_s"])
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
            grow = _batch_limit(spec, job, cons, catalog, cal, fastest[1], fastest[2], fastest[3])
            if grow is not None:
                nearest += grow
            if capped:
                nearest += ("; offer capacity capped the cluster size ("
                            + ", ".join(f"{a}: {n}" for a, n in sorted(capped.items()))
                            + " devices): plan your own or reserved cluster with --network")
        elif cheapest is not None:
            nearest = (f"the cheapest plan that fits costs {cheapest[0]:,.0f} USD on {cheapest[2]} x {cheapest[1]}, "
                       f"{cheapest[3]:.1f} days (--budget {cheapest[0]:,.0f} or more)")
        elif considered and rejected.get("out_of_memory"):
            nearest = _smallest_fit(spec, job, catalog, considered, cons, cal)
        elif not considered:
            nearest = "no catalog accelerator passes the policy filters (market, vendor, provider, framework)"
    return PlanResult(plans=plans, pareto=pareto, candidates_evaluated=evaluated, rejected=rejected,
                      hardware_considered=considered, nearest=nearest)


def _batch_limit(spec: ModelSpec, job: TrainingJob, cons: PlanConstraints, catalog: Catalog, cal: Calibration,
                 acc_id: str, n: int, gpn: int) -> str | None:
    """Why no larger cluster than the fastest plan's `n` devices was planned, when the default batch is the cause:
    under the ~4M-token target no layout of the family on 2n devices fits the part (the layouts that fit need
    pipeline stages, and a pipeline needs at least pp micro-batches a step), while one fits under a batch large
    enough. Raising --max-devices does not help then; a stated global batch of at least that layout's
    pp x dp x micro-batch does. None when the batch was stated or is not what binds."""
    bigger = 2 * n
    if job.global_batch_fixed or bigger > cons.max_devices:
        return None
    choices = family_choices(cons.layout_family, [bigger], gpn)
    limit = usable_bytes(float(catalog.accelerator(acc_id).memory_gib or 0) * GIB, cal)
    target = int(job.global_batch or 1)
    at_target = generate(spec, choices, seq_len=job.seq_len, global_batch=target, batch_fixed=False)
    if len(at_target) and (candidate_memory_bytes(spec, job, at_target, calibration=cal) <= limit).any():
        return None
    # the same layouts under a batch large enough for any of them (each holds pp micro-batches in flight either way)
    roomy = generate(spec, choices, seq_len=job.seq_len, global_batch=bigger * 64, batch_fixed=False)
    fits = candidate_memory_bytes(spec, job, roomy, calibration=cal) <= limit if len(roomy) else np.zeros(0, bool)
    if not fits.any():
        return None
    need = int((roomy.pp * roomy.dp * roomy.micro_batch)[fits].min())
    return (f"; no larger cluster was planned because of the default batch ({target} sequences, about 4M tokens): "
            f"on {bigger} x {acc_id} the layouts that fit need pipeline stages, each with at least pp micro-batches a "
            f"step, so a larger --max-devices changes nothing; state --global-batch {need} or more to plan them")


def _smallest_fit(spec: ModelSpec, job: TrainingJob, catalog: Catalog, considered: list[str],
                  cons: PlanConstraints, cal: Calibration) -> str:
    """The smallest cluster (beyond --max-devices) on which the job fits, on the roomiest parts."""
    roomy = sorted(considered, key=lambda a: -float(catalog.accelerator(a).memory_gib or 0))[:3]
    best: tuple[int, str] | None = None
    for acc_id in roomy:
        net, _ = usual_network(catalog, acc_id)
        hw = cluster_hardware(catalog, acc_id, net)
        sizes = cluster_sizes(cons.max_devices * 2, max(cons.max_devices * 64, 65536), hw.gpus_per_node)
        choices = family_choices(cons.layout_family, sizes, hw.gpus_per_node)
        c, ev, _, _ = best_layout(spec, job, hw, choices, calibration=cal)
        limit = usable_bytes(float(catalog.accelerator(acc_id).memory_gib or 0) * GIB, cal)
        fits = ev.memory_bytes <= limit if len(c) else np.zeros(0, dtype=bool)
        if fits.any():
            n = int(c.devices[fits].min())
            if best is None or n < best[0]:
                best = (n, acc_id)
    if best is None:
        msg = "the job fits on no catalog accelerator even at 64x --max-devices; try LoRA/QLoRA or recomputation"
        prof = framework_profile(job.framework) if job.framework else None
        if prof is not None and ("full" not in prof.recompute or "tp" not in prof.axes):
            # the profile's own layouts are what failed: say which, and that the open search has more
            msg += (f" ({prof.name} offers recompute {', '.join(prof.recompute)} and axes "
                    f"{', '.join(prof.axes) or 'data parallel only'}; without --framework the planner also searches "
                    "tensor parallelism and full recomputation)")
        return msg
    return f"the smallest cluster that fits is {best[0]} x {best[1]} (--max-devices {best[0]})"
