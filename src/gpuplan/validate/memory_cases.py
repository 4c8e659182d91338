"""Predict the memory rows of a ground-truth case file and compare with the measurement.

Policy for fields a row leaves empty (the ground-truth README): layout fields are chosen
as a competent team would. For recomputation: fine-tuning (full_ft, lora, qlora) uses
full activation checkpointing, the default of the common fine-tuning recipes (torchtune
`enable_activation_checkpointing`, the HF Trainer `--gradient_checkpointing` in model
authors' fine-tuning scripts); pretraining takes the cheapest recomputation that fits
the device (none, then selective, then full). Attention is flash; the optimizer AdamW.

Recipe facts a row states are mapped to job settings (`recipe_settings`), never fitted:
- "GPTQ" in the precision/notes text: the QLoRA base is a GPTQ int4 checkpoint (quant_format=gptq).
- "DeepSpeed" in the quote/notes: the DeepSpeed ZeRO optimizer runtime (zero_impl=deepspeed).
- A row from the QwenLM/Qwen README profiling table (its `source`) ran Qwen's finetune.py through
  the scripts of that repository (finetune/*.sh, read at commit 00dceeb): LoRA rank 64 on c_attn,
  c_proj, w1, w2, i.e. every linear (LoraArguments defaults; the scripts pass no --lora_r);
  Q-LoRA and full-parameter runs go through DeepSpeed ZeRO-2 with finetune/ds_config_zero2.json
  (finetune_qlora_single_gpu.sh and finetune_ds.sh pass --deepspeed; reduce/allgather buckets
  2e8, overlap_comm), single-GPU LoRA through the HF Trainer with torch AdamW (optim adamw_torch,
  foreach on CUDA: optimizer=adamw_foreach).
  DeepSpeed runs the module in 16-bit without torch autocast and modeling_qwen.py takes the
  cross-entropy of the 16-bit logits (loss_upcast=False); the HF Trainer's amp keeps the fp32 loss.
- Inference rows: "HuggingFace transformers" in the notes: the KV cache grows by torch.cat
  (kv_layout=concat) and the prefill returns logits for every prompt token (prompt_logits=all;
  transformers before 4.45 and remote-code models such as modeling_qwen.py);
  "generating N tokens" sets the decoded share of the context (generated=N);
  "attention/embeddings bf16" in the precision text: only the MLP matrices are in the weight
  format (quant_scope=mlp, Meta's FP8 release).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuplan.errors import GpuplanError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.memory_infer import estimate_inference_memory, max_batch_that_fits
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.hardware import Catalog
from gpuplan.units import GIB
from gpuplan.validate.cases import Row, model_for_row, opt_int
from gpuplan.workload.jobs import InferenceJob, Layout, TrainingJob

__all__ = ["CaseResult", "device_memory_gib", "evaluate_memory_row", "inference_settings", "recipe_settings"]

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


QWEN_PROFILING_SOURCE = "github.com/QwenLM/Qwen/blob/main/README.md#profiling-of-memory-and-speed"
QWEN_LORA_RANK = 64  # finetune.py LoraArguments.lora_r default


def recipe_settings(row: Row) -> tuple[dict[str, object], int | None]:
    """(TrainingJob settings, ZeRO stage or None) that the row's stated recipe fixes (module docstring)."""
    text = " ".join(row.get(k, "") for k in ("precision", "quote", "notes")).lower()
    method = row.get("method", "")
    job: dict[str, object] = {}
    zero: int | None = None
    if method == "qlora" and "gptq" in text:
        job["quant_format"] = "gptq"
    if "deepspeed" in text:
        job["zero_impl"] = "deepspeed"
    if QWEN_PROFILING_SOURCE in row.get("source", ""):
        if method in ("lora", "qlora") and not row.get("lora_rank"):
            job["lora_rank"] = QWEN_LORA_RANK
        if method == "lora" and "deepspeed" not in text:
            job["optimizer"] = "adamw_foreach"  # HF Trainer optim adamw_torch: torch AdamW, foreach on CUDA
        if method in ("qlora", "full_ft") and not row.get("zero_stage"):
            job["zero_impl"] = "deepspeed"
            zero = 2  # finetune/ds_config_zero2.json
            # DeepSpeed's fp16/bf16 engine runs the module in 16-bit without torch autocast (the README: "we
            # have to use DeepSpeed for mixed-precision training due to ... errors caused by torch amp"), and
            # modeling_qwen.py takes CrossEntropyLoss of the 16-bit logits
            job["loss_upcast"] = False
    return job, zero


def inference_settings(row: Row) -> dict[str, object]:
    """InferenceJob settings that the row's stated serving stack fixes (module docstring)."""
    notes = row.get("notes", "").lower()
    job: dict[str, object] = {}
    if "huggingface transformers" in notes or "hugging face transformers" in notes:
        job["kv_layout"] = "concat"
        job["prompt_logits"] = "all"
        made = re.search(r"generating (\d+) tokens", notes)
        if made:
            job["generated"] = int(made.group(1))
    if "attention/embeddings bf16" in notes:
        job["quant_scope"] = "mlp"
    return job


def _layout(row: Row, zero_default: int | None = None) -> Layout:
    tp, pp = opt_int(row, "tp") or 1, opt_int(row, "pp") or 1
    n = opt_int(row, "num_accels") or tp * pp
    dp = opt_int(row, "dp") or max(n // (tp * pp), 1)
    zero = opt_int(row, "zero_stage") or zero_default or 0
    return Layout(tp=tp, pp=pp, dp=dp, zero_stage=zero)


def evaluate_memory_row(row: Row, catalog: Catalog, calibration: Calibration | None = None) -> CaseResult:
    """Prediction for one memory row; raises GpuplanError when the row cannot be evaluated."""
    metric = row.get("metric", "")
    if metric not in METRICS:
        raise GpuplanError(f"metric {metric!r} is not a memory metric ({', '.join(METRICS)})")
    spec = model_for_row(row)
    recipe, zero_default = recipe_settings(row)
    layout = _layout(row, zero_default)
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
        stack = inference_settings(row)
        context = seq or 4096
        if "generated" in stack:
            stack["generated"] = min(int(str(stack["generated"])), context)
        job = InferenceJob.model_validate({"weights": weights, "batch": batch or 1, "context": context, **stack})
        served = estimate_inference_memory(spec, job, layout)
        how = " ".join([f"inference {weights}", *(f"{k}={v}" for k, v in stack.items())])
        return _result(row, metric, _metric(served, metric), how)
    if seq is None:
        raise GpuplanError("a training memory row needs seq_len")
    base = {
        "method": {"pretrain": "full", "full_ft": "full"}.get(method, method),
        "seq_len": seq,
        "micro_batch": opt_int(row, "micro_batch") or 1,
        "precision": row.get("precision") or "bf16",
        "optimizer": row.get("optimizer") or "adamw",
        "lora_rank": opt_int(row, "lora_rank") or 16,
        **recipe,
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
        mem = estimate_training_memory(spec, TrainingJob.model_validate({**base, "recompute": rc}), layout,
                                       calibration=calibration)
        if device is None or mem.total_bytes <= device * GIB:
            break
    assert mem is not None
    parts = [f"recompute={mem.assumptions['recompute']}", *(f"{k}={v}" for k, v in recipe.items())]
    return _result(row, metric, _metric(mem, metric), " ".join(parts))


def _result(row: Row, metric: str, predicted: float, detail: str) -> CaseResult:
    return CaseResult(id=row["id"], metric=metric, measured=float(row["value"]), predicted=predicted,
                      confidence=row.get("confidence", ""), detail=detail)
