"""Predict the memory rows of a ground-truth case file and compare with the measurement.

Policy for fields a row leaves empty (the ground-truth README): layout fields are chosen
as a competent team would. For recomputation: fine-tuning (full_ft, lora, qlora) uses
full activation checkpointing, the default of the common fine-tuning recipes (torchtune
`enable_activation_checkpointing`, the HF Trainer `--gradient_checkpointing` in model
authors' fine-tuning scripts); pretraining takes the cheapest recomputation that fits
the device (none, then selective, then full). Attention is flash; the optimizer AdamW.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import GpuplanError
from gpuplan.estimate.memory_infer import estimate_inference_memory, max_batch_that_fits
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.hardware import Catalog
from gpuplan.units import GIB
from gpuplan.validate.cases import Row, model_for_row, opt_int
from gpuplan.workload.jobs import InferenceJob, Layout, TrainingJob

__all__ = ["CaseResult", "device_memory_gib", "evaluate_memory_row"]

METRICS = ("peak_mem_gib_per_device", "model_states_gib", "activations_gib", "kv_cache_gib")


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    id: str
    metric: str
    measured: float
    predicted: float
    confidence: str
    detail: str = ""

    @property
    def ape(self) -> float:
        return abs(self.predicted - self.measured) / abs(self.measured)


def device_memory_gib(catalog: Catalog, accelerator: str) -> float | None:
    """Memory of a catalog accelerator as planners budget it (GiB), None if unknown."""
    if not accelerator:
        return None
    value = catalog.accelerator(accelerator).memory_gib
    return float(value) if value else None


def _metric(mem: MemoryBreakdown, metric: str) -> float:
    if metric == "peak_mem_gib_per_device":
        return mem.total_bytes / GIB
    if metric == "model_states_gib":
        return (mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes) / GIB
    if metric == "activations_gib":
        return mem.activations_bytes / GIB
    return mem.kv_cache_bytes / GIB


def _layout(row: Row) -> Layout:
    tp, pp = opt_int(row, "tp") or 1, opt_int(row, "pp") or 1
    n = opt_int(row, "num_accels") or tp * pp
    dp = opt_int(row, "dp") or max(n // (tp * pp), 1)
    zero = opt_int(row, "zero_stage") or 0
    return Layout(tp=tp, pp=pp, dp=dp, zero_stage=zero)


def evaluate_memory_row(row: Row, catalog: Catalog) -> CaseResult:
    """Prediction for one memory row; raises GpuplanError when the row cannot be evaluated."""
    metric = row.get("metric", "")
    if metric not in METRICS:
        raise GpuplanError(f"metric {metric!r} is not a memory metric ({', '.join(METRICS)})")
    spec = model_for_row(row)
    layout = _layout(row)
    device = device_memory_gib(catalog, row.get("accelerator", ""))
    seq = opt_int(row, "seq_len")
    method = row.get("method") or "pretrain"
    if method == "inference":
        weights = row.get("precision") or "bf16"
        batch = opt_int(row, "micro_batch")
        if metric == "kv_cache_gib" and batch is None:
            if device is None:
                raise GpuplanError("kv_cache_gib of an engine's KV pool needs the accelerator's memory")
            job = InferenceJob(weights=weights, context=seq or 4096)
            fit = max_batch_that_fits(spec, job, device * GIB, layout)
            return _result(row, metric, fit.kv_budget_bytes / GIB, "engine KV pool at memory fraction 0.9")
        job = InferenceJob(weights=weights, batch=batch or 1, context=seq or 4096)
        served = estimate_inference_memory(spec, job, layout)
        return _result(row, metric, _metric(served, metric), f"inference {weights}")
    if seq is None:
        raise GpuplanError("a training memory row needs seq_len")
    base = {
        "method": {"pretrain": "full", "full_ft": "full"}.get(method, method),
        "seq_len": seq,
        "micro_batch": opt_int(row, "micro_batch") or 1,
        "precision": row.get("precision") or "bf16",
        "optimizer": row.get("optimizer") or "adamw",
        "lora_rank": opt_int(row, "lora_rank") or 16,
    }
    stated = row.get("recompute", "")
    if stated:
        choices = [stated]
    elif method in ("full_ft", "lora", "qlora"):
        choices = ["full"]
    else:
        choices = ["none", "selective", "full"]
    mem: MemoryBreakdown | None = None
    for rc in choices:
        mem = estimate_training_memory(spec, TrainingJob(**base, recompute=rc), layout)
        if device is None or mem.total_bytes <= device * GIB:
            break
    assert mem is not None
    return _result(row, metric, _metric(mem, metric), f"recompute={mem.assumptions['recompute']}")


def _result(row: Row, metric: str, predicted: float, detail: str) -> CaseResult:
    return CaseResult(id=row["id"], metric=metric, measured=float(row["value"]), predicted=predicted,
                      confidence=row.get("confidence", ""), detail=detail)
