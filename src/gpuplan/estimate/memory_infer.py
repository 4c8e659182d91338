"""Inference memory per device: weights by format, KV cache, activation workspace, overhead.

Weight formats: bf16/fp16 2 bytes; fp8 and int8 (W8A8, SmoothQuant, Xiao et al. 2023)
1 byte plus one fp32 scale per output channel; int4 weight-only (GPTQ, Frantar et al.
2023; AWQ, Lin et al. 2024) 0.5 byte plus an fp16 scale and a 4-bit zero point per group
of `int4_group_size` weights. Embeddings, norms, routers and the LM head stay 16-bit, as
in the common GPTQ/AWQ/FP8 checkpoints; with quant_scope="mlp" the attention projections stay
16-bit too (Meta's Llama 3.1 FP8 checkpoints quantize the feed-forward weights only). A KV
cache grown by torch.cat at every decode step (Hugging Face generate) leaves the caching
allocator holding the freed, one-token-shorter blocks it cannot reuse for the next, longer
request: `concat_kv_reserved_extra` of the generated part of the cache on top of it (PyTorch
CUDA semantics docs, "expandable_segments": allocations whose size changes step to step
fragment the cache). With prompt_logits="all" the prefill's LM head returns 16-bit logits for
every prompt token, not only the last. The largest batch that fits follows vLLM's
budget: device memory x gpu_memory_utilization, minus weights, the activation peak of
one forward pass and non-torch memory, left to the paged KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.kv_cache import kv_cache
from gpuplan.estimate.memory_train import stage_layers
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.i18n import tr
from gpuplan.units import GIB, dtype_bytes
from gpuplan.workload.jobs import InferenceJob, Layout, check_layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import ParamCounts, count_params

INFER_NOTES = ("infer_16bit", "infer_kv_replicated")  # i18n keys memory.note.*, in assumptions in both languages

__all__ = ["InferenceFit", "check_serving_layout", "estimate_inference_memory", "expert_ranks",
           "matrix_bytes_per_param", "max_batch_that_fits"]


def matrix_bytes_per_param(spec: ModelSpec, job: InferenceJob) -> float:
    """Bytes per projection-matrix weight in the job's weight format, scales included."""
    w = job.weights
    if w in ("bf16", "fp16"):
        return 2.0
    if w in ("fp8", "int8"):
        return 1.0 + 4.0 / spec.hidden_size  # per-output-channel fp32 scale (rows ~ hidden)
    if w in ("nvfp4", "mxfp4"):  # block-scaled 4-bit floats: the scale of each block of 16 (NVFP4) or 32 (MXFP4)
        return dtype_bytes(w)
    return 0.5 + (2.0 + 0.5) / job.int4_group_size  # fp16 scale + 4-bit zero per group


def expert_ranks(layout: Layout) -> int:
    """Devices a serving replica spreads its routed experts over: max(tp, ep).

    ep <= tp keeps the experts inside the tensor-parallel group (whole experts on ep of its ranks,
    each expert's FFN split over tp/ep of them: vLLM/SGLang --enable-expert-parallel under TP
    attention); ep > tp is attention data parallelism: ep/tp attention groups of tp ranks each,
    the experts spread over all ep ranks (SGLang --enable-dp-attention with --ep-size, RTP-LLM
    DP = EP). Either way one device holds 1/max(tp, ep) of the expert weights.
    """
    return max(layout.tp, layout.ep)


def check_serving_layout(layout: Layout) -> None:
    """ep and tp must divide one another (experts inside the TP group, or attention data-parallel over ep)."""
    if layout.ep % layout.tp and layout.tp % layout.ep:
        raise InputError(field="ep", value=layout.ep,
                         allowed=f"a divisor or a multiple of tp={layout.tp}",
                         hint="ep <= tp spreads the experts over the TP group; ep > tp runs attention data-parallel "
                              "over ep/tp groups")


def _weights_on_rank(spec: ModelSpec, counts: ParamCounts, job: InferenceJob, layout: Layout,
                     rank: int, dense_n: int, moe_n: int) -> tuple[float, float]:
    """(matrix bytes, 16-bit other bytes) on pipeline rank `rank`."""
    tp, pp = layout.tp, layout.pp
    experts_over = expert_ranks(layout)
    mb = matrix_bytes_per_param(spec, job)
    matrix = other = 0.0
    for lp, n in ((counts.dense_layer, dense_n), (counts.moe_layer, moe_n)):
        if lp is None or n == 0:
            continue
        matrix += n * ((lp.mlp_matrix + lp.shared_matrix) / tp + lp.experts_matrix / experts_over)
        if job.quant_scope == "all":
            matrix += n * lp.attention_matrix / tp
        else:  # attention projections kept 16-bit
            other += n * lp.attention_matrix / tp
        other += n * (lp.attention_other + lp.norms + lp.mlp_other + lp.router)
    if rank == 0:
        other += counts.embedding / tp + counts.position_embedding
    if rank == pp - 1:
        other += counts.final_norm + (counts.lm_head or (counts.embedding if pp > 1 else 0)) / tp
    return matrix * mb, other * 2.0


def _workspace(spec: ModelSpec, job: InferenceJob, layout: Layout, tokens: float) -> dict[str, float]:
    """Activation peak of one forward pass over `tokens` tokens (16-bit), plus fp32 logits of the batch."""
    tp, h = layout.tp, spec.hidden_size
    ffn = spec.ffn_hidden_size
    if spec.moe is not None and spec.num_moe_layers:
        ffn = max(ffn, spec.moe.expert_ffn_size * spec.moe.top_k + spec.moe.shared_ffn_total)
    qkv = (spec.num_heads + 2 * spec.kv_heads) * spec.attn_head_dim
    per_token = 2.0 * (2 * h + qkv / tp + 3 * ffn / tp)  # residual in/out, qkv, gate+up and product
    out = {
        "forward_activations": tokens * per_token,
        "sampler_logits": job.batch * spec.vocab_size / tp * 4.0,
    }
    if job.prompt_logits == "all":
        # the LM head runs over every prompt token at prefill and returns 16-bit logits for all of them
        # (HF generate before num_logits_to_keep, transformers 4.45; Qwen's modeling_qwen.py lm_head(hidden_states))
        prompt = max(job.context - job.generated, 1)
        out["prompt_logits"] = 2.0 * job.batch * prompt * spec.vocab_size / tp
    return out


def estimate_inference_memory(spec: ModelSpec, job: InferenceJob, layout: Layout | None = None, *,
                              calibration: Calibration | None = None) -> MemoryBreakdown:
    """Per-device memory for serving `job.batch` requests of `job.context` tokens."""
    layout = layout or Layout()
    check_layout(spec, layout)
    check_serving_layout(layout)
    cal = calibration or default_calibration()
    counts = count_params(spec)
    ranks = stage_layers(spec, layout)
    best: MemoryBreakdown | None = None
    totals = []
    for r, (dense_n, moe_n) in enumerate(ranks):
        matrix_b, other_b = _weights_on_rank(spec, counts, job, layout, r, dense_n, moe_n)
        kv = kv_cache(spec, context=job.context, batch=job.batch, kv_dtype=job.kv_cache_dtype,
                      tp=layout.tp, layers=dense_n + moe_n)
        ws_tokens = min(job.batch * job.context, cal.value("inference_workspace_tokens"))
        act = _workspace(spec, job, layout, ws_tokens)
        other = {"runtime_context": cal.value("runtime_context_gib") * GIB}
        if job.kv_layout == "concat" and job.generated:
            grown = kv.bytes_total * min(job.generated, job.context) / job.context
            other["kv_concat_fragmentation"] = cal.value("concat_kv_reserved_extra") * grown
        if layout.tp * layout.pp * layout.ep > 1:
            other["collective_buffers"] = cal.value("collective_buffers_gib") * GIB
        m = MemoryBreakdown(
            params_total=counts.total, params_active=counts.active, params_trainable=0,
            weights_bytes=matrix_b + other_b, gradients_bytes=0.0, optimizer_bytes=0.0,
            activations_bytes=sum(act.values()), kv_cache_bytes=kv.bytes_total,
            other_bytes=sum(other.values()),
            details={"weights": {"matrices": matrix_b, "embeddings_norms_head_16bit": other_b},
                     "kv_cache": {"per_token_all_layers": kv.bytes_per_token_full,
                                  "per_request": kv.bytes_per_request},
                     "activations": act, "other": other},
        )
        totals.append(round(m.total_bytes))
        if best is None or m.total_bytes > best.total_bytes:
            best, worst = m, r
    assert best is not None
    assumptions = {
        "kind": "infer",
        "model": spec.name,
        "weights": job.weights,
        "kv_dtype": job.kv_cache_dtype,
        "batch": job.batch,
        "context": job.context,
        "attention_kind": spec.attention_kind,
        "layout": layout.model_dump(include={"tp", "pp", "ep"}),
        "pipeline_rank_reported": worst,
        "pipeline_rank_totals_bytes": totals,
        "matrix_bytes_per_param": matrix_bytes_per_param(spec, job),
        "int4_group_size": job.int4_group_size if job.weights == "int4" else None,
        "quant_scope": job.quant_scope,
        "kv_layout": job.kv_layout,
        "generated": job.generated,
        "prompt_logits": job.prompt_logits,
        "calibration": cal.used("runtime_context_gib", "collective_buffers_gib", "inference_workspace_tokens",
                                *(("concat_kv_reserved_extra",) if job.kv_layout == "concat" else ())),
        "notes": [tr(f"memory.note.{k}", "en") for k in INFER_NOTES],
        "notes_zh": [tr(f"memory.note.{k}", "zh") for k in INFER_NOTES],
    }
    return replace(best, assumptions=assumptions)


@dataclass(frozen=True, slots=True, kw_only=True)
class InferenceFit:
    """What fits in one device's memory budget for a deployment."""

    device_memory_bytes: float
    budget_bytes: float  # device memory x memory_fraction
    kv_budget_bytes: float  # left for the KV cache after weights, workspace and overhead
    max_tokens: int  # KV-cache tokens that fit
    max_batch: int  # requests of `context` tokens that fit (0: none)


def max_batch_that_fits(spec: ModelSpec, job: InferenceJob, device_memory_bytes: float,
                        layout: Layout | None = None, *, calibration: Calibration | None = None,
                        reserve_bytes: float = 0.0) -> InferenceFit:
    """Largest batch of `job.context`-token requests under the engine's memory fraction; `reserve_bytes` more
    are kept out of the KV cache (an engine's start-up profile peak beyond the forward's activations)."""
    one = estimate_inference_memory(spec, job.model_copy(update={"batch": 1}), layout, calibration=calibration)
    budget = device_memory_bytes * job.memory_fraction
    per_request = one.kv_cache_bytes
    per_token = one.details["kv_cache"]["per_token_all_layers"]
    kv_budget = budget - one.weights_bytes - one.activations_bytes - one.other_bytes - reserve_bytes
    kv_budget = max(kv_budget, 0.0)
    return InferenceFit(
        device_memory_bytes=device_memory_bytes, budget_bytes=budget, kv_budget_bytes=kv_budget,
        max_tokens=int(kv_budget // per_token) if per_token else 0,
        max_batch=int(kv_budget // per_request) if per_request else 0,
    )
