"""Training memory per device: weights, gradients, optimizer states, activations, overhead.

Model states follow the ZeRO paper (Rajbhandari et al. 2020, arXiv:1910.02054): with
mixed-precision Adam a parameter costs 2 (16-bit weight) + 2 (16-bit gradient) + 12 (fp32
master, m, v) bytes (Megatron-LM-style frameworks: 4-byte fp32 main gradients, 18 bytes, Megatron-LM
docs dist_optimizer.md); ZeRO stage 1 shards the optimizer states over the data-parallel group,
stage 2 also the gradients, stage 3 (= FSDP full shard) also the weights. Tensor
parallelism splits projection matrices and the vocabulary (Megatron-LM, Shoeybi et al.
2019); pipeline parallelism places layers per stage with the embedding on the first and
the LM head on the last stage (Narayanan et al. 2021); expert parallelism splits the
routed experts. LoRA (Hu et al. 2021) trains rank-r adapters on frozen 16-bit weights;
QLoRA (Dettmers et al. 2023) stores the frozen linear weights in NF4 with block-wise
quantization constants (sec. 3: block 64; double quantization: 8-bit constants with an
fp32 second level per 256 blocks), or as GPTQ int4 checkpoints (Frantar et al. 2023) run by
auto-gptq, whose QuantLinear dequantizes each weight to fp16 for torch.matmul once a call has
at least kernel_switch_threshold (128) tokens (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py),
so autograd keeps that fp16 weight for the backward pass.

The optimizer step runs after the last backward pass, when activations are freed: its
temporaries (torch foreach AdamW's sqrt(v) list; DeepSpeed's flattened fp32 gradient
partition) count only where they exceed the backward working set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.estimate.activations import (
    ActivationBreakdown,
    activation_breakdown,
    uses_fused_kernels,
)
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.optimizers import get_optimizer
from gpuplan.estimate.records import MemoryBreakdown, memory_total
from gpuplan.i18n import both
from gpuplan.units import GIB
from gpuplan.workload.jobs import Layout, TrainingJob, check_layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import ParamCounts, count_params

__all__ = [
    "GPTQ_BYTES_PER_PARAM",
    "NF4_BYTES_PER_PARAM",
    "RankGeometry",
    "frozen_matrix_bytes",
    "estimate_training_memory",
    "expert_shard",
    "geometry",
    "lora_params_per_layer",
    "rank_terms",
    "stage_layers",
    "trainable_params",
]

# NF4 with double quantization: 4 bits + 8-bit absmax per 64 + fp32 per 256*64 (QLoRA sec. 3).
NF4_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
# GPTQ int4, group 128 (Qwen-*-Int4, TheBloke GPTQ checkpoints): packed 4-bit weight + fp16 scale and
# packed 4-bit zero point per group (auto-gptq QuantLinear qweight/scales/qzeros); g_idx (int32 per
# input feature) is under 0.1% and left out.
GPTQ_GROUP = 128
GPTQ_BYTES_PER_PARAM = 0.5 + (2 + 0.5) / GPTQ_GROUP
DEQUANT_BYTES = 2.0  # auto-gptq dequantizes to fp16 (weight = scales * (weight - zeros))
ADAPTER_BYTES = 4.0  # PEFT keeps LoRA adapters in fp32 (autocast_adapter_dtype default)


def stage_layers(spec: ModelSpec, layout: Layout) -> list[tuple[int, int]]:
    """(dense layers, MoE layers) held by each pipeline rank, in rank order.

    Non-interleaved: contiguous blocks, any remainder on the later stages. Interleaved
    (vpp > 1): rank r holds model chunks r, r + pp, r + 2pp, ... (Narayanan et al. 2021).
    """
    n_layers, pp, vpp = spec.num_layers, layout.pp, layout.vpp
    first_moe = spec.num_dense_layers  # dense layers come first (DeepSeek first_k_dense_replace)
    chunks = pp * vpp
    base, rem = divmod(n_layers, chunks)
    sizes = [base + (1 if c >= chunks - rem else 0) for c in range(chunks)]
    starts = [sum(sizes[:c]) for c in range(chunks)]
    out = []
    for r in range(pp):
        dense = moe = 0
        for c in range(r, chunks, pp):
            for layer in range(starts[c], starts[c] + sizes[c]):
                if layer < first_moe:
                    dense += 1
                else:
                    moe += 1
        out.append((dense, moe))
    return out


def lora_params_per_layer(spec: ModelSpec, rank: int, targets: tuple[str, ...], moe_layer: bool) -> int:
    """LoRA adapter parameters in one layer: r * (in + out) per targeted linear (Hu et al. 2021).

    MoE layers adapt the attention and shared experts; routed experts are not targeted
    (PEFT's all-linear does not reach fused expert weights).
    """
    h, a = spec.hidden_size, spec.num_heads
    t = set(targets)
    n = 0
    if spec.mla is not None:
        m = spec.mla
        if "q" in t:
            n += rank * (h + m.q_lora_rank) + rank * (m.q_lora_rank + a * m.qk_head_dim) \
                if m.q_lora_rank else rank * (h + a * m.qk_head_dim)
        if t & {"k", "v"}:
            n += rank * (h + m.kv_lora_rank + m.qk_rope_head_dim)
            n += rank * (m.kv_lora_rank + a * (m.qk_nope_head_dim + m.v_head_dim))
        if "o" in t:
            n += rank * (a * m.v_head_dim + h)
    else:
        d, g = spec.attn_head_dim, spec.kv_heads
        n += rank * (h + a * d) * ("q" in t) + rank * (h + g * d) * ("k" in t) + rank * (h + g * d) * ("v" in t)
        n += rank * (a * d + h) * ("o" in t)
    ffn = spec.ffn_hidden_size
    if moe_layer:
        ffn = spec.moe.shared_ffn_total if spec.moe is not None else 0
    if ffn:
        if spec.mlp == "swiglu":
            n += rank * (h + ffn) * ("gate" in t)
        n += rank * (h + ffn) * ("up" in t) + rank * (ffn + h) * ("down" in t)
    return n


@dataclass(frozen=True, slots=True, kw_only=True)
class RankGeometry:
    """One pipeline rank of one or many candidate layouts; every field may be a numpy array.

    The same arithmetic serves `estimate_training_memory` (one layout, every rank) and the
    planner (millions of layouts at once, first and last rank).
    """

    tp: Any
    pp: Any
    dp: Any
    cp: Any
    ep: Any
    vpp: Any
    zero: Any
    microbatches: Any  # per pipeline per step
    dense_n: Any  # dense layers on this rank
    moe_n: Any  # MoE layers on this rank
    rank: Any  # pipeline rank index (0 = first)
    # saved activation bytes of ONE micro-batch (already scaled by its size)
    act_dense_layer: Any
    act_moe_layer: Any
    act_first_extra: Any
    act_last_extra: Any
    logits_transient: Any
    recompute_working: Any


def expert_shard(tp: Any, dp: Any, cp: Any, ep: Any) -> Any:
    """Ways the routed experts are split: EP x TP when EP fits inside DP x CP (expert tensor
    parallel = TP, Megatron-Core's default), else EP alone (an EP group spanning TP runs ETP = 1)."""
    return np.where((dp * cp) % ep == 0, ep * tp, ep)


def _in_flight(g: RankGeometry) -> Any:
    """Micro-batches whose activations a rank holds at its peak under 1F1B (stage i: min(pp - i, m))."""
    n = np.minimum(g.pp - g.rank, g.microbatches).astype(float)
    # interleaved 1F1B (Korthikanti et al. 2022, sec. 4.2.3)
    n = np.where(g.vpp > 1, n * (1 + (g.pp - 1) / (g.pp * g.vpp)), n)
    return np.where(g.pp == 1, 1.0, n)


def rank_terms(spec: ModelSpec, counts: ParamCounts, job: TrainingJob, cal: Calibration,
               g: RankGeometry) -> dict[str, dict[str, Any]]:
    """Memory terms (bytes) of one rank, by part: elementwise over numpy arrays or scalars."""
    first = g.rank == 0
    last = g.rank == g.pp - 1
    experts_split = expert_shard(g.tp, g.dp, g.cp, g.ep)
    # -- parameters on this device before ZeRO (TP splits matrices and vocabulary; EP x TP experts)
    dm: Any = 0.0
    do: Any = 0.0
    ex: Any = 0.0
    ad: Any = 0.0
    largest: Any = 0.0
    largest_matrix: Any = 0.0
    for lp, n, is_moe in ((counts.dense_layer, g.dense_n, False), (counts.moe_layer, g.moe_n, True)):
        if lp is None:
            continue
        m = (lp.attention_matrix + lp.mlp_matrix + lp.shared_matrix) / g.tp
        o = float(lp.attention_other + lp.norms + lp.mlp_other + lp.router)
        e = lp.experts_matrix / experts_split
        dm, do, ex = dm + n * m, do + n * o, ex + n * e
        largest = np.maximum(largest, np.where(n > 0, m + o + e, 0.0))
        largest_matrix = np.maximum(largest_matrix, np.where(n > 0, m + e, 0.0))
        if job.method != "full":
            ad = ad + n * lora_params_per_layer(spec, job.lora_rank, job.lora_targets, is_moe) / g.tp
    do = do + np.where(first, counts.embedding / g.tp + counts.position_embedding, 0.0)
    head = counts.lm_head or counts.embedding  # tied: a copy on the last stage when pp > 1
    do = do + np.where(last, counts.final_norm + np.where((g.pp > 1) | (counts.lm_head > 0), head, 0) / g.tp, 0.0)

    opt = get_optimizer(job.optimizer_on())
    # ZeRO shards over the whole data-parallel group, or over groups of `zero_group` ranks replicated across it
    # (InternEvo zero1=N, DeepSpeed hpZ/MiCS)
    shard_dense = job.zero_shard_ranks(g.dp * g.cp)
    shard_expert = np.maximum(g.dp * g.cp * g.tp // experts_split, 1)
    pbytes = 4.0 if job.precision == "fp32" else 2.0

    def sharded(dense: Any, expert: Any, stage: int) -> Any:
        return np.where(g.zero >= stage, dense / shard_dense + expert / shard_expert, dense + expert)

    weights: dict[str, Any] = {}
    grads: dict[str, Any] = {}
    optim: dict[str, Any] = {}
    master = 4.0 if (opt.fp32_master_weights and pbytes < 4) else 0.0
    quant = frozen_matrix_bytes(job)
    if job.method == "full":
        weights["trainable"] = sharded((dm + do) * pbytes, ex * pbytes, 3)
        gbytes = job.gradient_bytes()  # fp32 main gradients under Megatron-LM-style frameworks
        grads["trainable"] = sharded((dm + do) * gbytes, ex * gbytes, 2)
        optim["states"] = sharded((dm + do) * opt.state_bytes_per_param, ex * opt.state_bytes_per_param, 1)
        if master:
            optim["fp32_master"] = sharded((dm + do) * master, ex * master, 1)
    else:
        weights["frozen_base"] = sharded(dm * quant + do * pbytes, ex * quant, 3)
        weights["adapters"] = sharded(ad * ADAPTER_BYTES, 0.0, 3)
        grads["adapters"] = sharded(ad * ADAPTER_BYTES, 0.0, 2)
        optim["states"] = sharded(ad * opt.state_bytes_per_param, 0.0, 1)
        if job.trainable_extra:
            # PEFT modules_to_save (tuners_utils ModulesToSaveWrapper): a deep copy of each listed module is
            # trained, the original stays frozen; the copy keeps the module's dtype, fp32 after QLoRA's
            # prepare_model_for_kbit_training (which casts the non-quantized parameters to fp32); torch
            # AdamW keeps its two states in the parameter's dtype
            cb = 4.0 if job.method == "qlora" else pbytes
            full = extra_trainable(counts, job, first, last, g.tp)
            weights["trainable_copies"] = sharded(full * cb, 0.0, 3)
            grads["trainable_copies"] = sharded(full * cb, 0.0, 2)
            optim["trainable_copies"] = sharded(full * opt.state_bytes_per_param * cb / 4.0, 0.0, 1)

    if job.optimizer_in_bwd:
        # torchtune optimizer_in_bwd (training/_optimizer_in_bwd: torch register_post_accumulate_grad_hook steps each
        # parameter once its gradient is accumulated, then frees it): only the largest single gradient is live
        one = largest_gradient_bytes(spec, counts, job, first, last, g.tp, pbytes, experts_split)
        grads = {k: np.minimum(v, one) for k, v in grads.items()}
    if job.optimizer_offload != "none":
        # ZeRO-Offload (Ren et al. 2021) keeps fp32 master weights and optimizer states in host memory (ZeRO-Infinity:
        # NVMe) and steps on the CPU; bitsandbytes paged optimizers (is_paged) allocate their states in CUDA unified
        # memory, outside PyTorch's allocator, which the driver evicts to host RAM when the device needs the room
        optim = {k: 0.0 * g.tp for k in optim}
    other: dict[str, Any] = {}
    unit = largest * quant
    other["zero3_gathered_layers"] = np.where((g.zero == 3) & (shard_dense > 1),
                                              cal.value("zero3_prefetch_layers") * unit, 0.0)
    if job.method == "qlora" and job.quant_format == "gptq":
        # torch.matmul keeps the fp16 dequantized weight of every GPTQ linear for backward: one layer's
        # worth while full recomputation rebuilds it (recompute_working > 0), else every layer on the rank
        other["gptq_dequantized_weights"] = DEQUANT_BYTES * np.where(g.recompute_working > 0, largest_matrix,
                                                                     dm + ex)
    n_flight = _in_flight(g)
    act = {
        "dense_layers": n_flight * g.dense_n * g.act_dense_layer,
        "moe_layers": n_flight * g.moe_n * g.act_moe_layer,
        "embedding_side": np.where(first, n_flight * g.act_first_extra, 0.0),
        "loss_side": np.where(last, g.act_last_extra, 0.0),
    }
    other["logits_transient"] = np.where(last, g.logits_transient, 0.0)
    other["recompute_working_layer"] = g.recompute_working + 0.0 * g.tp
    transient = sum(other.values())
    other["allocator_fragmentation"] = cal.value("allocator_fragmentation") * (sum(act.values()) + transient)
    # -- the optimizer step, after the last backward: activations and transients are free by then
    if job.method == "full":
        train_dense, train_expert = dm + do, ex
    else:
        train_dense, train_expert = ad + extra_trainable(counts, job, first, last, g.tp), 0.0
    if job.zero_impl == "deepspeed":
        # DeepSpeed ZeRO-1/2 step (runtime/zero/stage_1_and_2.py step()): the local 16-bit gradient
        # partition is flattened (a copy) and cast to an fp32 copy for the fp32 master update
        # (self.flatten(self.averaged_gradients[i]).to(fp32)); ZeRO-3 does the same per sub-group
        # (stage3.py _prepare_fp32_grad_for_sub_group; sub_group_size 1e9 by default, not capped here).
        # fp32 training: the cast is a no-op, only the flattened copy remains.
        per_param = pbytes + (4.0 if pbytes < 4 else 0.0) + 0.0 * g.tp
    else:
        per_param = opt.step_temp_bytes_per_param + 0.0 * g.tp
    if job.optimizer_offload != "none" or job.optimizer_in_bwd:
        per_param = 0.0 * g.tp  # the step runs off the device, or one parameter at a time inside backward
    step = sharded(train_dense * per_param, train_expert * per_param, 1)
    other["optimizer_step_excess"] = np.maximum(step - (sum(act.values()) + transient), 0.0)
    other["runtime_context"] = cal.value("runtime_context_gib") * GIB + 0.0 * g.tp
    n_devices = g.tp * g.pp * g.dp * g.cp
    other["collective_buffers"] = np.where(n_devices > 1, cal.value("collective_buffers_gib") * GIB, 0.0)
    if job.zero_impl == "deepspeed":
        # contiguous-gradient and all-gather bucket buffers with overlap_comm (stage 1/2)
        other["deepspeed_buckets"] = np.where(g.zero <= 2, cal.value("deepspeed_buckets_gib") * GIB, 0.0)
    return {"weights": weights, "gradients": grads, "optimizer": optim, "activations": act, "other": other}


def _as_breakdown(counts: ParamCounts, terms: dict[str, dict[str, Any]]) -> MemoryBreakdown:
    details = {k: {p: float(v) for p, v in parts.items() if float(v)} for k, parts in terms.items()}
    return MemoryBreakdown(
        params_total=counts.total,
        params_active=counts.active,
        params_trainable=0,
        weights_bytes=sum(details["weights"].values()),
        gradients_bytes=sum(details["gradients"].values()),
        optimizer_bytes=sum(details["optimizer"].values()),
        activations_bytes=sum(details["activations"].values()),
        kv_cache_bytes=0.0,
        other_bytes=sum(details["other"].values()),
        details=details,
    )


def _rank_total(sums: dict[str, float]) -> float:
    """A rank's total from its term sums, as MemoryBreakdown.total_bytes adds them (no KV cache in training)."""
    return memory_total(sums["weights"], sums["gradients"], sums["optimizer"], sums["activations"], 0.0, sums["other"])


def geometry(layout: Layout, job: TrainingJob, acts: ActivationBreakdown, rank: Any, dense_n: Any,
             moe_n: Any) -> RankGeometry:
    """The RankGeometry of one rank of one layout (or of several: rank and layer counts as arrays)."""
    return RankGeometry(
        tp=layout.tp, pp=layout.pp, dp=layout.dp, cp=layout.cp, ep=layout.ep, vpp=layout.vpp,
        zero=layout.zero_stage, microbatches=job.num_microbatches(layout), dense_n=dense_n, moe_n=moe_n,
        rank=rank, act_dense_layer=acts.dense_layer_bytes, act_moe_layer=acts.moe_layer_bytes,
        act_first_extra=sum(acts.first_stage_extra.values()), act_last_extra=sum(acts.last_stage_extra.values()),
        logits_transient=acts.logits_transient_bytes, recompute_working=acts.recompute_working_bytes,
    )


def largest_gradient_bytes(spec: ModelSpec, counts: ParamCounts, job: TrainingJob, first: Any, last: Any,
                           tp: Any, pbytes: float, experts_split: Any = 1) -> Any:
    """Bytes of the largest single gradient on a rank: a projection or FFN matrix, the routed experts' stacked
    gate-and-up tensor, the embedding (first stage) or LM head (last stage); LoRA: the larger adapter factor
    (fp32) or a module trained in full beside it (its dtype: fp32 after QLoRA's kbit preparation).

    Routed experts are one parameter per layer across the experts on the rank: transformers' MoE experts hold
    `gate_up_proj` [experts, 2 x expert FFN, hidden] (torchtune's GroupedExperts keep gate, up and down apart,
    half that: this is the larger of the two)."""
    h = spec.hidden_size
    head = counts.lm_head or counts.embedding
    if job.method != "full":
        width = max(h, spec.ffn_hidden_size, spec.moe.expert_ffn_size if spec.moe else 0)
        out: Any = job.lora_rank * width * ADAPTER_BYTES + 0.0 * tp
        cb = 4.0 if job.method == "qlora" else pbytes
        if "embed" in job.trainable_extra:
            out = np.maximum(out, np.where(first, counts.embedding / tp, 0.0) * cb)
        if "head" in job.trainable_extra:
            out = np.maximum(out, np.where(last, head / tp, 0.0) * cb)
        return out
    matrix = max(h * spec.ffn_hidden_size, h * spec.num_heads * spec.attn_head_dim) / tp
    if spec.moe is not None:
        matrix = np.maximum(matrix, spec.moe.num_experts * 2 * spec.moe.expert_ffn_size * h / experts_split)
    vocab = np.maximum(np.where(first, counts.embedding, 0), np.where(last, head, 0)) / tp
    return np.maximum(matrix, vocab) * pbytes


def extra_trainable(counts: ParamCounts, job: TrainingJob, first: Any, last: Any, tp: Any) -> Any:
    """Parameters of the modules trained in full beside LoRA (`trainable_extra`) on a rank: the input
    embedding on the first pipeline stage, the output layer (the embedding when tied) on the last."""
    n: Any = 0.0
    if "embed" in job.trainable_extra:
        n = n + np.where(first, counts.embedding / tp, 0.0)
    if "head" in job.trainable_extra:
        n = n + np.where(last, (counts.lm_head or counts.embedding) / tp, 0.0)
    return n


def frozen_matrix_bytes(job: TrainingJob) -> float:
    """Bytes per parameter of a LoRA/QLoRA run's frozen layer matrices: the 16-bit (or fp32) weights, or the
    packed 4-bit storage with its scales under QLoRA (NF4, or GPTQ with `quant_format=gptq`)."""
    if job.method == "qlora":
        return GPTQ_BYTES_PER_PARAM if job.quant_format == "gptq" else NF4_BYTES_PER_PARAM
    if job.fp8_params and job.method == "lora" and job.precision == "fp8":
        # Transformer Engine fp8_model_init (NeMo fp8_params): the primary weights of its linear layers are fp8
        # tensors with one fp32 scale each; a frozen weight needs no 16-bit master copy
        return 1.0
    return 4.0 if job.precision == "fp32" else 2.0


def trainable_params(spec: ModelSpec, counts: ParamCounts, job: TrainingJob) -> int:
    if job.method == "full":
        return counts.total
    per_dense = lora_params_per_layer(spec, job.lora_rank, job.lora_targets, False)
    per_moe = lora_params_per_layer(spec, job.lora_rank, job.lora_targets, True)
    extra = int(float(extra_trainable(counts, job, True, True, 1)))
    return spec.num_dense_layers * per_dense + spec.num_moe_layers * per_moe + extra


def estimate_training_memory(
    spec: ModelSpec,
    job: TrainingJob,
    layout: Layout | None = None,
    *,
    calibration: Calibration | None = None,
) -> MemoryBreakdown:
    """Peak memory of the most loaded device (pipeline rank) for one training step."""
    layout = layout or Layout()
    check_layout(spec, layout, seq_len=job.seq_len)
    get_optimizer(job.optimizer)  # validates the name early
    if job.optimizer_in_bwd and (job.num_microbatches(layout) > 1 or layout.pp > 1):
        # torchtune: "optimizer_in_bwd ... Requires gradient_accumulation_steps=1" (a gradient freed inside
        # backward cannot accumulate over micro-batches, which a pipeline also runs)
        raise InputError(field="optimizer-in-bwd", value="true",
                         allowed="one micro-batch per step and no pipeline parallelism",
                         hint="set --global-batch to micro-batch x dp, use --pp 1, or drop --optimizer-in-bwd")
    cal = calibration or default_calibration()
    counts = count_params(spec)
    acts = activation_breakdown(spec, job, layout)
    # every pipeline rank at once: the same elementwise arithmetic over arrays of rank and layer counts
    split = stage_layers(spec, layout)
    ranks = np.arange(len(split))
    g = geometry(layout, job, acts, ranks, np.array([d for d, _ in split]), np.array([m for _, m in split]))
    terms = {k: {p: np.broadcast_to(np.asarray(v, dtype=float), ranks.shape).tolist() for p, v in parts.items()}
             for k, parts in rank_terms(spec, counts, job, cal, g).items()}
    # each rank's total as MemoryBreakdown.total_bytes adds it (term sums in the same order); the breakdown itself
    # is built for the most loaded rank only
    totals = [_rank_total({k: sum(v[r] for v in parts.values() if v[r]) for k, parts in terms.items()})
              for r in range(len(split))]
    worst = max(range(len(totals)), key=totals.__getitem__)
    chosen = _as_breakdown(counts, {k: {p: v[worst] for p, v in parts.items()} for k, parts in terms.items()})
    notes = _notes(spec, job, layout)
    assumptions = {
        "kind": "train",
        "model": spec.name,
        "method": job.method,
        "precision": job.precision,
        "optimizer": job.optimizer_on(),
        "recompute": job.recompute,
        "attention": job.attention,
        "seq_len": job.seq_len,
        "micro_batch": job.micro_batch,
        "layout": layout.model_dump(),
        "pipeline_rank_reported": worst,
        "pipeline_rank_totals_bytes": [round(t) for t in totals],
        "in_flight_microbatches": float(_in_flight(geometry(layout, job, acts, worst, 0, 0))),
        "lora": {"rank": job.lora_rank, "targets": list(job.lora_targets)} if job.method != "full" else None,
        "activation_model": ("saved-tensor inventory of torch.compile'd layers (as fused kernels save)"
                             if job.compile else
                             "saved-tensor inventory of fused Megatron-Core/Transformer Engine layers"
                             if uses_fused_kernels(job, layout) else
                             "saved-tensor inventory of Hugging Face transformers layers") + " (docs/memory.md)",
        "quant_format": job.quant_format if job.method == "qlora" else None,
        "zero_impl": job.zero_impl,
        "loss_upcast": job.loss_upcast,
        "trainable_extra": list(job.trainable_extra),
        "loss": (job.loss if job.loss != "chunked" else f"chunked ({job.loss_chunks} chunks)")
        + (" under torch.compile" if job.compile and job.loss != "fused" else ""),
        "optimizer_offload": job.optimizer_offload,
        "optimizer_in_bwd": job.optimizer_in_bwd,
        "fp8_params": job.fp8_params,
        "optimizer_step": ("DeepSpeed ZeRO step: flattened 16-bit and fp32 copies of the local gradient partition"
                           if job.zero_impl == "deepspeed" else
                           f"{get_optimizer(job.optimizer_on()).step_temp_source}"),
        "calibration": cal.used("runtime_context_gib", "collective_buffers_gib", "allocator_fragmentation",
                                "zero3_prefetch_layers",
                                *(("deepspeed_buckets_gib",) if job.zero_impl == "deepspeed" else ())),
        "notes": [n["en"] for n in notes],
        "notes_zh": [n["zh"] for n in notes],
    }
    return MemoryBreakdown(
        params_total=chosen.params_total,
        params_active=chosen.params_active,
        params_trainable=trainable_params(spec, counts, job),
        weights_bytes=chosen.weights_bytes,
        gradients_bytes=chosen.gradients_bytes,
        optimizer_bytes=chosen.optimizer_bytes,
        activations_bytes=chosen.activations_bytes,
        kv_cache_bytes=0.0,
        other_bytes=chosen.other_bytes,
        details=chosen.details,
        assumptions=assumptions,
    )


# the notes a training estimate can carry: i18n keys memory.note.<key>
TRAIN_NOTES = ("lora_fp32", "fp8_params", "gptq", "nf4", "step_temps", "main_grad_fp32", "balanced_routing",
               "selective_flash", "kv_replicated")


def _notes(spec: ModelSpec, job: TrainingJob, layout: Layout) -> list[dict[str, str]]:
    """The estimate's notes in every language (`i18n.both`): assumptions carry `notes` (en) and `notes_zh`."""
    keys: list[tuple[str, dict[str, Any]]] = []
    if job.method != "full":
        keys.append(("lora_fp32", {}))
    if frozen_matrix_bytes(job) == 1.0:
        keys.append(("fp8_params", {}))
    if job.method == "qlora" and job.quant_format == "gptq":
        keys.append(("gptq", {"group": GPTQ_GROUP, "bits": GPTQ_BYTES_PER_PARAM * 8}))
    elif job.method == "qlora":
        keys.append(("nf4", {"bits": NF4_BYTES_PER_PARAM * 8}))
    keys.append(("step_temps", {}))
    if job.method == "full" and job.precision != "fp32" and job.gradient_bytes() == 4.0:
        keys.append(("main_grad_fp32", {"framework": job.framework}))
    if spec.moe is not None and layout.ep > 1:
        keys.append(("balanced_routing", {}))
    if job.recompute == "selective" and job.attention != "eager":
        keys.append(("selective_flash", {}))
    if layout.tp > spec.kv_heads and spec.mla is None:
        keys.append(("kv_replicated", {"tp": layout.tp, "kv_heads": spec.kv_heads}))
    assert all(k in TRAIN_NOTES for k, _ in keys)
    return [both(f"memory.note.{k}", **p) for k, p in keys]
