"""Predict the memory rows of a ground-truth case file and compare with the measurement.

Policy for fields a row leaves empty (the ground-truth README): layout fields are chosen
as a competent team would. For recomputation: fine-tuning (full_ft, lora, qlora) uses
full activation checkpointing, the default of the common fine-tuning recipes (torchtune
`enable_activation_checkpointing`, the HF Trainer `--gradient_checkpointing` in model
authors' fine-tuning scripts); pretraining takes the cheapest recomputation that fits
the device (none, then selective, then full). Attention is flash; the optimizer AdamW.

Recipe facts come from what the row states (its `settings`, or gpuplan's overlay of the
facts its source states, validate/row_settings.py), never from its source's name or words:
`quant_format` (a GPTQ QLoRA base), `zero_impl=deepspeed` (DeepSpeed's ZeRO runtime and buckets),
`loss=full_16bit` (cross-entropy of 16-bit logits, as DeepSpeed's 16-bit engine with Qwen's
modeling code runs it), `optimizer_offload` and `optimizer_in_bwd` (where the optimizer keeps its
states and when it steps), `lora_targets`; filled columns such as `lora_rank`, `optimizer` and `zero_stage` (the
QwenLM/Qwen profiling rows ran that repository's finetune scripts: rank 64, ZeRO-2 with
ds_config_zero2.json, torch AdamW). Inference rows: `inference_settings`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.engine_profile import engine_profile_peak
from gpuplan.estimate.memory_infer import estimate_inference_memory, max_batch_that_fits
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.hardware import Catalog
from gpuplan.units import GIB
from gpuplan.validate.cases import Row, model_for_row, opt_int
from gpuplan.validate.row_settings import RowSettings, parse_settings, resolve_row
from gpuplan.workload.engines import engine
from gpuplan.workload.frameworks import framework
from gpuplan.workload.jobs import LORA_TARGETS, InferenceJob, Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec

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


def recipe_settings(row: Row, st: RowSettings) -> dict[str, object]:
    """TrainingJob settings from what the row states (`settings`, validate/row_settings.py)."""
    job: dict[str, object] = {}
    if st.quant_format is not None and row.get("method") == "qlora":
        job["quant_format"] = st.quant_format
    if st.zero_impl is not None:
        job["zero_impl"] = st.zero_impl
    if st.loss == "full_16bit":  # cross-entropy of the 16-bit logits, no fp32 upcast
        job["loss_upcast"] = False
    elif st.loss in ("chunked", "fused"):
        job["loss"] = st.loss
    if st.compile:
        job["compile"] = True
    if st.trainable_extra and row.get("method") in ("lora", "qlora"):
        job["trainable_extra"] = st.trainable_extra
    if st.optimizer_impl == "foreach" and (row.get("optimizer") or "adamw") == "adamw":
        job["optimizer"] = "adamw_foreach"  # torch AdamW with foreach=True (the default on CUDA)
    if st.optimizer_offload is not None:
        job["optimizer_offload"] = st.optimizer_offload
    if st.optimizer_in_bwd:
        job["optimizer_in_bwd"] = True
    if st.fp8_params and row.get("method") == "lora":
        job["fp8_params"] = True
    if st.lora_targets and row.get("method") in ("lora", "qlora"):
        job["lora_targets"] = _lora_targets(st.lora_targets)
    if st.zero_group is not None:
        job["zero_group"] = st.zero_group
    if st.grad_reduce_overlap is not None:
        job["grad_reduce_overlap"] = st.grad_reduce_overlap
    if st.recompute_early_stop is not None:
        job["recompute_early_stop"] = st.recompute_early_stop
    if st.recompute_modules is not None:
        job["recompute_modules"] = st.recompute_modules
    if st.pp_partition is not None:
        job["pp_partition"] = st.pp_partition
    if st.moe_dispatcher is not None:
        job["moe_dispatcher"] = st.moe_dispatcher
    return job


# the recipe keys of the settings syntax that set a training job's fields (recipe_settings)
TRAIN_RECIPE_KEYS = ("loss", "compile", "trainable_extra", "lora_targets", "quant_format", "zero_impl",
                     "optimizer_impl", "optimizer_offload", "optimizer_in_bwd", "zero_group", "grad_reduce_overlap",
                     "recompute_early_stop", "recompute_modules", "pp_partition", "moe_dispatcher", "fp8_params")


def recipe_job_fields(text: str, *, method: str, optimizer: str = "adamw") -> dict[str, object]:
    """TrainingJob fields from a `--recipe "key=value;..."` in the case files' settings syntax (one schema for
    the rows and the CLI); a key that is not a training recipe key is an InputError naming the allowed ones."""

    try:
        st = parse_settings(text)
    except InputError as exc:
        key = exc.field.removeprefix("settings").lstrip(".")  # the key whose value is bad, if one is
        unknown = exc.allowed == ", ".join(RowSettings.model_fields)  # an unknown key: name the recipe keys only
        raise InputError(field=f"recipe {key}".strip(), value=exc.value,
                         allowed=", ".join(TRAIN_RECIPE_KEYS) if unknown else exc.allowed,
                         hint='e.g. --recipe "loss=chunked;compile=true"') from None
    stated = st.model_dump(exclude_defaults=True)
    stray = [k for k in stated if k not in TRAIN_RECIPE_KEYS]
    if stray:
        raise InputError(field="recipe", value=stray[0], allowed=", ".join(TRAIN_RECIPE_KEYS),
                         hint="serving and framework facts have their own options (--framework)")
    for key, methods in (("trainable_extra", ("lora", "qlora")), ("lora_targets", ("lora", "qlora")),
                         ("quant_format", ("qlora",)), ("fp8_params", ("lora",))):
        if key in stated and method not in methods:
            raise InputError(field=f"recipe {key}", value=method, allowed=f"--method {' or '.join(methods)}",
                             hint=f"{key} applies to {' and '.join(methods)} fine-tuning only")
    try:
        return recipe_settings({"method": method, "optimizer": optimizer}, st)
    except GpuplanError as exc:
        raise InputError(field="recipe", value=text, allowed=str(exc)) from None


# module names of Hugging Face / torchtune / Megatron checkpoints -> gpuplan's LoRA target names
_TARGET_NAMES = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "output_proj": "o",
                 "gate_proj": "gate", "up_proj": "up", "down_proj": "down", "w1": "gate", "w3": "up", "w2": "down"}


def _lora_targets(names: tuple[str, ...]) -> tuple[str, ...]:
    out = tuple(_TARGET_NAMES.get(n, n) for n in names)
    unknown = [n for n in out if n not in LORA_TARGETS]
    if unknown:
        raise GpuplanError(f"settings lora_targets {unknown} are not LoRA targets gpuplan models "
                           f"({', '.join(LORA_TARGETS)} or their q_proj/... module names)")
    return out


def inference_settings(st: RowSettings) -> dict[str, object]:
    """InferenceJob settings from the row's stated serving stack.

    `framework=hf_transformers`: the KV cache grows by torch.cat (kv_layout=concat) and the prefill
    returns logits for every prompt token (prompt_logits=all: transformers before 4.45 and
    remote-code models such as modeling_qwen.py); `generated_tokens` sets the decoded share of the
    context; `quant_scope=mlp`: only the MLP matrices are in the weight format.
    """
    job: dict[str, object] = {}
    if st.framework == "hf_transformers":
        job["kv_layout"] = "concat"
        job["prompt_logits"] = "all"
        if st.generated_tokens is not None:
            job["generated"] = st.generated_tokens
    if st.quant_scope is not None:
        job["quant_scope"] = st.quant_scope
    return job


def _layout(row: Row) -> Layout:
    tp, pp = opt_int(row, "tp") or 1, opt_int(row, "pp") or 1
    n = opt_int(row, "num_accels") or tp * pp
    dp = opt_int(row, "dp") or max(n // (tp * pp), 1)
    zero = opt_int(row, "zero_stage") or 0
    return Layout(tp=tp, pp=pp, dp=dp, zero_stage=zero)


def _vllm_profile_row(row: Row, metric: str, spec: ModelSpec, layout: Layout, weights: str, seq: int | None,
                      device: float | None, version: str | None) -> CaseResult:
    """A vLLM start-up log's activation peak or KV pool: the engine version's profile run (estimate/engine_profile)
    and the pool it leaves, gpu_memory_utilization x memory - weights - that peak - non-torch memory."""
    prof = engine("vllm")
    prof = prof.at_version(version) if version else prof
    peak = engine_profile_peak(spec, layout, prof, weights=weights, max_model_len=seq)
    how = (f"vLLM {version or 'current'} start-up profile: {peak.tokens}-token forward "
           f"{peak.forward_bytes / GIB:.2f} GiB, sampler over {peak.sampler_rows} rows {peak.sampler_bytes / GIB:.2f} "
           f"GiB (peak: {peak.peak_from})")
    if metric == "activations_gib":
        return _result(row, metric, peak.peak_bytes / GIB, how)
    if device is None:
        raise GpuplanError("kv_cache_gib of an engine's KV pool needs the accelerator's memory")
    job = InferenceJob(weights=weights, context=seq or 4096, memory_fraction=prof.gpu_memory_fraction)
    one = estimate_inference_memory(spec, job, layout)
    fit = max_batch_that_fits(spec, job, device * GIB, layout,
                              reserve_bytes=max(0.0, peak.peak_bytes - one.activations_bytes))
    return _result(row, metric, fit.kv_budget_bytes / GIB,
                   f"engine KV pool at memory fraction {prof.gpu_memory_fraction} less the {how}")


def evaluate_memory_row(row: Row, catalog: Catalog, calibration: Calibration | None = None) -> CaseResult:
    """Prediction for one memory row; raises GpuplanError when the row cannot be evaluated."""
    metric = row.get("metric", "")
    if metric not in METRICS:
        raise GpuplanError(f"metric {metric!r} is not a memory metric ({', '.join(METRICS)})")
    row, st = resolve_row(row)
    spec = model_for_row(row)
    recipe = recipe_settings(row, st)
    layout = _layout(row)
    device = device_memory_gib(catalog, row.get("accelerator", ""))
    seq = opt_int(row, "seq_len")
    method = row.get("method") or "pretrain"
    if method == "inference":
        weights = row.get("precision") or "bf16"
        batch = opt_int(row, "micro_batch")
        if st.framework == "vllm" and batch is None and metric in ("activations_gib", "kv_cache_gib"):
            return _vllm_profile_row(row, metric, spec, layout, weights, seq, device, st.engine_version)
        if metric == "kv_cache_gib" and batch is None:
            if device is None:
                raise GpuplanError("kv_cache_gib of an engine's KV pool needs the accelerator's memory")
            job = InferenceJob(weights=weights, context=seq or 4096)
            fit = max_batch_that_fits(spec, job, device * GIB, layout)
            return _result(row, metric, fit.kv_budget_bytes / GIB, "engine KV pool at memory fraction 0.9")
        stack = inference_settings(st)
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
    # an unstated ZeRO stage of a data-parallel run is the lowest that fits, as a team raises it until the job
    # fits (DeepSpeed and FSDP configs are chosen per job; the run the row measured did fit its devices)
    stages = [layout.zero_stage] if row.get("zero_stage") or layout.dp <= 1 else [0, 1, 2, 3]
    mem: MemoryBreakdown | None = None
    for zero in stages:
        lay = layout.model_copy(update={"zero_stage": zero})
        for rc in choices:
            mem = estimate_training_memory(spec, TrainingJob.model_validate({**base, "recompute": rc}), lay,
                                           calibration=calibration)
            if device is None or mem.total_bytes <= device * GIB:
                break
        if device is None or mem is None or mem.total_bytes <= device * GIB:
            break
    assert mem is not None
    parts = [f"recompute={mem.assumptions['recompute']}", *(f"{k}={v}" for k, v in recipe.items())]
    if len(stages) > 1:
        parts.append(f"zero_stage={zero} (unstated: the lowest that fits)")
    value = _metric(mem, metric)
    if metric == "peak_mem_gib_per_device" and st.framework and framework(st.framework).memory_reading == \
            "torch_allocator":
        # the framework reports PyTorch's allocator counters (FrameworkProfile.memory_reading): the CUDA context the
        # device holds besides them is not in the figure
        ctx_bytes = float(mem.details.get("other", {}).get("runtime_context", 0.0))
        value -= ctx_bytes / GIB
        parts.append(f"read as {st.framework} reports it: torch allocator peak, less the "
                     f"{ctx_bytes / GIB:.2f} GiB CUDA context")
    return _result(row, metric, value, " ".join(parts))


def _result(row: Row, metric: str, predicted: float, detail: str) -> CaseResult:
    return CaseResult(id=row["id"], metric=metric, measured=float(row["value"]), predicted=predicted,
                      confidence=row.get("confidence", ""), detail=detail)
