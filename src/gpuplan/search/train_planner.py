"""Training plans: pick the fastest layout that fits, and turn it into job figures.

For one hardware option, every candidate layout is evaluated at once
(`evaluate_training`); candidates over the device memory are rejected; the fastest of
the rest is the plan. Job figures follow: tokens/s, MFU and HFU (model and hardware
FLOPs over the dense peak), time to train with checkpoint and failure overhead
(Young 1974 / Daly 2006 optimal interval), device-hours, cost and energy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.memory_fit import usable_bytes
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.hardware import Catalog
from gpuplan.search.candidates import Candidates, LayoutChoices, generate
from gpuplan.search.cluster import ClusterHardware
from gpuplan.search.layout_pick import TERM as LAYOUT_TERM
from gpuplan.search.layout_pick import simplest_near_fastest
from gpuplan.search.memory_vec import candidate_memory_bytes
from gpuplan.search.pricing import DevicePrice, device_price
from gpuplan.search.train_comm import pp_cross_node_hops
from gpuplan.search.train_eval import (
    BREAKDOWN_KEYS,
    Evaluation,
    elementwise_bytes,
    evaluate_training,
    tp_overlap_on,
)
from gpuplan.units import GIB
from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.jobs import FP4_FORMATS, Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["HOURS_PER_MONTH", "Prepared", "TrainingPlan", "best_layout", "billed_by_month", "cost_figures",
           "plan_figures", "reliability"]

HOURS_PER_MONTH = 730.0  # the cloud billing month (365 x 24 / 12)


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingPlan:
    """One chosen layout on one hardware option, with everything `estimate train --json` prints."""

    hardware: ClusterHardware
    layout: dict[str, Any]
    figures: dict[str, Any]
    candidates_evaluated: int
    rejected: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Prepared:
    """Candidates with their hardware-independent arrays: per-device memory (`candidate_memory_bytes`) and the bytes
    their layers produce per step (`train_eval.elementwise_bytes`). A search computes them once per candidate set
    and every hardware option takes its rows."""

    candidates: Candidates
    memory_bytes: np.ndarray
    layer_bytes: np.ndarray

    @classmethod
    def of(cls, spec: ModelSpec, job: TrainingJob, c: Candidates, cal: Calibration) -> Prepared:
        return cls(c, candidate_memory_bytes(spec, job, c, calibration=cal), elementwise_bytes(spec, job, c))

    def take(self, keep: np.ndarray) -> Prepared:
        return Prepared(self.candidates.take(keep), self.memory_bytes[keep], self.layer_bytes[keep])


def best_layout(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, choices: LayoutChoices, *,
                calibration: Calibration | None = None, memory_limit_bytes: float | None = None,
                prepared: Prepared | None = None, simplicity_tolerance: float | None = None,
                ) -> tuple[Candidates, Evaluation, int | None, dict[str, int]]:
    """Evaluate all candidates; return them, their evaluation, the index of the layout kept among those that fit
    (the simplest within `simplicity_tolerance`, by default the calibration's `layout_simplicity_tolerance`, of the
    fastest: search/layout_pick.py) and rejections.

    `prepared` gives the candidates of `choices` and their memory, generated once by a caller that evaluates them
    on several hardware options (memory does not depend on the hardware).
    """
    cal = calibration or default_calibration()
    if prepared is None:
        prepared = Prepared.of(spec, job, generate(spec, choices, seq_len=job.seq_len,
                                                   global_batch=int(job.global_batch or 1),
                                                   batch_fixed=job.global_batch_fixed), cal)
    c, mem = prepared.candidates, prepared.memory_bytes
    rejected: dict[str, int] = {}
    if len(c) == 0:
        rejected["no_valid_layout"] = 1
        return c, _empty(), None, rejected
    limit = (memory_limit_bytes if memory_limit_bytes is not None
             else usable_bytes(_device_bytes(hw), cal))
    fits = mem <= limit
    rejected["out_of_memory"] = int((~fits).sum())
    if not fits.any():  # nothing fits: every candidate is timed (callers report the nearest miss)
        return c, evaluate_training(spec, job, hw, c, calibration=cal, memory_bytes=mem,
                                    layer_bytes=prepared.layer_bytes), None, rejected
    # only candidates that fit are timed (most do not on large models; a layout that does not fit is never chosen):
    # the others keep their memory and get an infinite step time
    ev = _scatter(evaluate_training(spec, job, hw, c.take(fits), calibration=cal, memory_bytes=mem[fits],
                                    layer_bytes=prepared.layer_bytes[fits]), fits, mem)
    step = np.where(fits, ev.step_s, np.inf)
    # the simplest layout within layout_simplicity_tolerance of the fastest (search/layout_pick.py)
    tol = cal.value(LAYOUT_TERM) if simplicity_tolerance is None else simplicity_tolerance
    return c, ev, simplest_near_fastest(c, step, tol), rejected


_MEMORY_KEY = ("tp", "pp", "dp", "cp", "ep", "vpp", "zero", "micro_batch", "recompute", "microbatches")


def _scatter(ev: Evaluation, fits: np.ndarray, mem: np.ndarray) -> Evaluation:
    """The evaluation of the fitting candidates spread over all of them (inf step, nan figures elsewhere)."""
    def full(values: np.ndarray, fill: float) -> np.ndarray:
        out = np.full(fits.shape, fill)
        out[fits] = values
        return out

    return Evaluation(memory_bytes=mem, breakdown_s={k: full(v, np.nan) for k, v in ev.breakdown_s.items()},
                      step_s=full(ev.step_s, np.inf), tokens_per_step=full(ev.tokens_per_step, np.nan),
                      model_flops_per_token=ev.model_flops_per_token,
                      hw_flops_per_token=full(ev.hw_flops_per_token, np.nan))


def _device_bytes(hw: ClusterHardware) -> float:
    acc = hw.accelerator
    gib = acc.memory_gib
    if gib is None:
        raise InputError(field="accelerator", value=acc.id, allowed="an accelerator with a known memory size")
    return float(gib) * GIB


def _empty() -> Evaluation:
    z = np.zeros(0)
    return Evaluation(memory_bytes=z, breakdown_s={k: z for k in BREAKDOWN_KEYS}, step_s=z, tokens_per_step=z,
                      model_flops_per_token=0.0, hw_flops_per_token=z)


def reliability(spec: ModelSpec, job: TrainingJob, devices: int, gpus_per_node: int,
                cal: Calibration) -> dict[str, float]:
    """Checkpoint size and write time, Young/Daly interval, expected goodput for the cluster size."""
    params = count_params(spec).total
    ckpt_bytes = params * (2 + 12 if job.method == "full" else 2)  # weights + fp32 master, m, v
    nodes = max(1, math.ceil(devices / gpus_per_node))
    write_s = ckpt_bytes / (nodes * cal.value("checkpoint_write_gbyte_s_per_node") * 1e9)
    rate_per_s = devices * cal.value("interruptions_per_device_hour") / 3600.0
    mtbf_s = 1.0 / rate_per_s if rate_per_s > 0 else math.inf
    interval_s = math.sqrt(2 * write_s * mtbf_s) if math.isfinite(mtbf_s) else math.inf  # Young 1974
    restart = cal.value("restart_overhead_s")
    lost = (write_s / interval_s if math.isfinite(interval_s) else 0.0) + (
        (interval_s / 2 + restart) / mtbf_s if math.isfinite(mtbf_s) else 0.0)
    return {"checkpoint_bytes": float(ckpt_bytes), "checkpoint_write_s": write_s, "mtbf_s": mtbf_s,
            "checkpoint_interval_s": interval_s, "goodput": 1.0 / (1.0 + lost)}


def data_pipeline(spec: ModelSpec, job: TrainingJob, tokens_per_s: float, devices: int, hw: ClusterHardware,
                  cal: Calibration) -> dict[str, Any]:
    """The token rate the job needs against storage reads and host CPU (tokenizing on the fly)."""
    token_bytes = 4 if spec.vocab_size > 65535 else 2  # pre-tokenized ids stored as uint32 / uint16
    nodes = max(1, math.ceil(devices / hw.gpus_per_node))
    per_node = tokens_per_s / nodes
    cores = per_node / cal.value("tokenizer_tokens_per_s_per_core")
    host = float(hw.host_cpu_cores or cal.value("host_cpu_cores_per_node"))
    read = per_node * token_bytes / 1e6
    storage = cal.value("storage_read_gbyte_s_per_node") * 1e3
    return {
        "mode": job.data_loading,
        "tokens_per_s_needed": tokens_per_s,
        "pretokenized_read_mbyte_s": tokens_per_s * token_bytes / 1e6,
        "pretokenized_read_mbyte_s_per_node": read,
        "storage_read_mbyte_s_per_node": storage,
        "cpu_cores_per_node_to_tokenize_online": cores,
        "host_cpu_cores_per_node": host,
        "host_cpu_cores_source": hw.host_cores_source,
        "loader_utilization": (cores / max(host - hw.gpus_per_node, 1.0) if job.data_loading == "online"
                               else read / storage),
        "note": "the loader prefetches during the step; a utilization above 1 stalls the step (in breakdown other)",
    }


def plan_figures(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, c: Candidates, ev: Evaluation, i: int, *,
                 catalog: Catalog, tokens: float | None, calibration: Calibration | None = None,
                 market: str | None = None, provider: str | None = None,
                 price: DevicePrice | None = None,
                 memory_cache: dict[tuple[Any, ...], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The JSON figures of candidate i (the `estimate train --json` contract).

    `memory_cache` (one search: same model, job and calibration) reuses the memory breakdown of a layout
    already reported on another hardware option: memory does not depend on the hardware. Plans that share a
    layout then share one (read-only) memory record.
    """
    cal = calibration or default_calibration()
    row = c.row(i)
    n = int(row["devices"])
    layout = Layout(tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]), cp=int(row["cp"]), ep=int(row["ep"]),
                    vpp=int(row["vpp"]), zero_stage=int(row["zero"]), seq_parallel=job.sequence_parallel_on())
    chosen = job.model_copy(update={"micro_batch": int(row["micro_batch"]), "recompute": row["recompute"]})
    key = tuple(row[k] for k in _MEMORY_KEY)
    if memory_cache is not None and key in memory_cache:
        memory_json = memory_cache[key]
    else:
        memory_json = estimate_training_memory(spec, chosen, layout, calibration=cal).to_json()
        if memory_cache is not None:
            memory_cache[key] = memory_json
    step = float(ev.step_s[i])
    tps = float(ev.tokens_per_step[i]) / step
    peak = hw.peak_flops("bf16" if job.precision in ("bf16", "fp8", *FP4_FORMATS) else job.precision) / 1e12
    tflops = ev.model_flops_per_token * tps / n / 1e12
    hw_tflops = float(ev.hw_flops_per_token[i]) * tps / n / 1e12
    rel = reliability(spec, job, n, hw.gpus_per_node, cal)
    out: dict[str, Any] = {
        "memory": memory_json,
        "step_time_s": step,
        "breakdown_s": {k: float(v[i]) for k, v in ev.breakdown_s.items()},
        "tokens_per_s": tps,
        "tokens_per_s_per_device": tps / n,
        "tflops_per_device": tflops,
        "hw_tflops_per_device": hw_tflops,
        "mfu": tflops / peak,
        "hfu": hw_tflops / peak,
        "layout": {**layout.model_dump(), "micro_batch": row["micro_batch"], "recompute": row["recompute"],
                   "devices": n, "gpus_per_node": hw.gpus_per_node, "microbatches": row["microbatches"],
                   # sequences per step the layout runs (the stated batch, or the default target rounded to a
                   # multiple of dp x micro_batch: TrainingJob.global_batch_fixed)
                   "global_batch": int(row["microbatches"]) * layout.dp * int(row["micro_batch"]),
                   "pp_cross_node_hops": (int(pp_cross_node_hops(c.take(slice(i, i + 1)), hw.gpus_per_node)[0])
                                          if hw.network else 0),
                   # the ranks one ZeRO shard spans (the memory and step model's; 1 without a sharded optimizer)
                   "zero_shard_ranks": int(job.zero_shard_ranks(layout.dp * layout.cp)) if layout.zero_stage else 1},
        "reliability": rel,
        "data_pipeline": data_pipeline(spec, job, tps, n, hw, cal),
    }
    price = price or device_price(catalog, hw.accelerator.id, market=market, provider=provider)
    if tokens:
        time_s = tokens / tps / rel["goodput"] / cal.value("campaign_efficiency")
        hours = n * time_s / 3600.0
        out["campaign_efficiency"] = {"value": cal.value("campaign_efficiency"),
                                      "source": cal.terms["campaign_efficiency"].source}
        out["time_to_train_s"] = time_s
        out["device_hours"] = hours
        tdp = hw.accelerator.tdp_w
        out["energy_mwh"] = tdp * hours * cal.value("pue") / 1e6 if tdp else None
        out["cost"] = cost_figures(price, n, time_s, rel)
    else:
        out["time_to_train_s"] = None
        out["device_hours"] = None
        out["cost"] = price.to_json()
    peak_note = "bf16 dense peak" if job.precision in ("bf16", "fp8", *FP4_FORMATS) else f"{job.precision} dense peak"
    out["assumptions"] = {
        "mfu_convention": f"model FLOPs (full s x s attention, Narayanan et al. 2021) over the {peak_note}",
        "accelerator": hw.accelerator.id,
        "network": hw.network.id if hw.network and n > hw.gpus_per_node else None,
        "nics_per_node": hw.nics_per_node,
        "calibration": _training_terms_used(cal),
        "framework": _framework_assumption(job),
        "provenance": "estimated",
    }
    return out


_TERMS_USED: dict[int, tuple[Calibration, dict[str, dict[str, Any]]]] = {}


def _training_terms_used(cal: Calibration) -> dict[str, dict[str, Any]]:
    """The training terms of `cal` as an estimate's `assumptions` list them, built once per calibration (a search
    reports hundreds of plans on one frozen calibration; every plan shares this read-only record, as plans that
    share a layout share one memory record). Keyed by identity, holding the calibration so its id is not reused."""
    hit = _TERMS_USED.get(id(cal))
    if hit is not None and hit[0] is cal:
        return hit[1]
    used = cal.used(*[t for t in cal.terms if "train" in cal.terms[t].applies_to])
    if len(_TERMS_USED) >= 16:
        _TERMS_USED.clear()
    _TERMS_USED[id(cal)] = (cal, used)
    return used


def _framework_assumption(job: TrainingJob) -> dict[str, Any]:
    """The framework profile the step time assumed (its terms replace the calibration's of the same name)."""
    used = {"tp_comm_overlap": tp_overlap_on(job), "kernels": job.kernels,
            "sequence_parallel": job.sequence_parallel_on(), "zero_group": job.zero_shard_group(),
            "moe_dispatcher": job.moe_dispatcher or "alltoall"}  # MoE layers' host wait (train_eval._moe_host_wait_s)
    if job.framework is None:
        return {"id": None, "note": "no framework named: the shipped terms, Megatron-Core with TP overlap and bf16 "
                "gradient reduction for model-parallel layouts, FSDP/ZeRO for data-parallel ones (--framework "
                "to plan with one)", **used}
    return {**framework_profile(job.framework).describe(), **used}


def billed_by_month(plan: Mapping[str, Any]) -> bool:
    """Whether a plan's cost is a monthly commitment (its offer has no hourly price): `cost_figures` bills whole
    months, so a short job on such an offer costs a month of every device. A plan summary states it."""
    if "billed_by_month" in plan:
        return bool(plan["billed_by_month"])
    cost = plan.get("cost") or {}
    return not cost.get("usd_on_demand") and bool(cost.get("usd_monthly_commitment"))


def cost_figures(price: DevicePrice, devices: int, time_s: float, rel: dict[str, float]) -> dict[str, Any]:
    """Job cost under each price kind of `price` for `devices` running `time_s` (the plan's `cost`)."""
    hours = devices * time_s / 3600.0
    spot_overhead = 1.0 + rel["checkpoint_write_s"] / max(rel["checkpoint_interval_s"], 1.0)
    months = math.ceil(time_s / 3600.0 / HOURS_PER_MONTH)
    return {
        "usd_on_demand": price.on_demand * hours if price.on_demand else None,
        "usd_spot": price.spot * hours * spot_overhead if price.spot else None,
        # a monthly commitment bills whole months (730 h) per device
        "usd_monthly_commitment": (price.monthly * HOURS_PER_MONTH * devices * months if price.monthly else None),
        **price.to_json(),
    }
