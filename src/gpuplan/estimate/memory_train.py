"""Training memory per device: weights, gradients, optimizer states, activations, overhead.

Model states follow the ZeRO paper (Rajbhandari et al. 2020, arXiv:1910.02054): with
mixed-precision Adam a parameter costs 2 (16-bit weight) + 2 (16-bit gradient) + 12 (fp32
master, m, v) bytes; ZeRO stage 1 shards the optimizer states over the data-parallel group,
stage 2 also the gradients, stage 3 (= FSDP full shard) also the weights. Tensor
parallelism splits projection matrices and the vocabulary (Megatron-LM, Shoeybi et al.
2019); pipeline parallelism places layers per stage with the embedding on the first and
the LM head on the last stage (Narayanan et al. 2021); expert parallelism splits the
routed experts. LoRA (Hu et al. 2021) trains rank-r adapters on frozen 16-bit weights;
QLoRA (Dettmers et al. 2023) stores the frozen linear weights in NF4 with block-wise
quantization constants (sec. 3: block 64; double quantization: 8-bit constants with an
fp32 second level per 256 blocks).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.activations import ActivationBreakdown, activation_breakdown
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.optimizers import get_optimizer
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.units import GIB
from gpuplan.workload.jobs import Layout, TrainingJob, check_layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import LayerParams, ParamCounts, count_params

__all__ = ["NF4_BYTES_PER_PARAM", "estimate_training_memory", "lora_params_per_layer", "stage_layers"]

# NF4 with double quantization: 4 bits + 8-bit absmax per 64 + fp32 per 256*64 (QLoRA sec. 3).
NF4_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
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


@dataclass(frozen=True, slots=True)
class _Params:
    """Parameters on one device before ZeRO sharding."""

    dense_matrix: float  # non-expert projection weights (quantizable)
    dense_other: float  # embeddings, norms, biases, router
    expert: float  # routed-expert weights
    adapters: float  # LoRA adapters (trainable under lora/qlora)
    largest_layer: float  # params of the largest layer on this rank (ZeRO-3 gather unit)


def _layer_on_device(lp: LayerParams, layout: Layout) -> tuple[float, float, float]:
    tp, ep = layout.tp, layout.ep
    matrix = (lp.attention_matrix + lp.mlp_matrix + lp.shared_matrix) / tp
    other = lp.attention_other + lp.norms + lp.mlp_other + lp.router
    expert = lp.experts_matrix / (ep * tp)  # expert tensor parallel = tp (Megatron-Core default)
    return matrix, other, expert


def _rank_params(spec: ModelSpec, counts: ParamCounts, job: TrainingJob, layout: Layout,
                 rank: int, dense_n: int, moe_n: int) -> _Params:
    pp, tp = layout.pp, layout.tp
    dm, do, ex, ad, largest = 0.0, 0.0, 0.0, 0.0, 0.0
    for lp, n, is_moe in ((counts.dense_layer, dense_n, False), (counts.moe_layer, moe_n, True)):
        if lp is None or n == 0:
            continue
        m, o, e = _layer_on_device(lp, layout)
        dm, do, ex = dm + n * m, do + n * o, ex + n * e
        largest = max(largest, m + o + e)
        if job.method != "full":
            ad += n * lora_params_per_layer(spec, job.lora_rank, job.lora_targets, is_moe) / tp
    if rank == 0:
        do += counts.embedding / tp + counts.position_embedding
    if rank == pp - 1:
        do += counts.final_norm
        head = counts.lm_head or (counts.embedding if pp > 1 else 0)  # tied: a copy on the last stage
        do += head / tp
    return _Params(dm, do, ex, ad, largest)


def _in_flight(job: TrainingJob, layout: Layout, rank: int) -> float:
    """Micro-batches whose activations rank `rank` holds at its peak under 1F1B."""
    if layout.pp == 1:
        return 1.0
    m = job.num_microbatches(layout)
    n = float(min(layout.pp - rank, m))
    if layout.vpp > 1:  # interleaved 1F1B (Korthikanti et al. 2022, sec. 4.2.3)
        n *= 1 + (layout.pp - 1) / (layout.pp * layout.vpp)
    return n


def _rank_memory(spec: ModelSpec, counts: ParamCounts, job: TrainingJob, layout: Layout,
                 acts: ActivationBreakdown, cal: Calibration, rank: int, dense_n: int,
                 moe_n: int) -> MemoryBreakdown:
    p = _rank_params(spec, counts, job, layout, rank, dense_n, moe_n)
    opt = get_optimizer(job.optimizer)
    shard_dense = layout.dp * layout.cp
    shard_expert = max(shard_dense // layout.ep, 1)
    zero = layout.zero_stage
    pbytes = 4.0 if job.precision == "fp32" else 2.0

    def sharded(dense: float, expert: float, stage: int) -> float:
        return dense / shard_dense + expert / shard_expert if zero >= stage else dense + expert

    weights: dict[str, float] = {}
    grads: dict[str, float] = {}
    optim: dict[str, float] = {}
    master = 4.0 if (opt.fp32_master_weights and pbytes < 4) else 0.0
    if job.method == "full":
        weights["trainable"] = sharded((p.dense_matrix + p.dense_other) * pbytes, p.expert * pbytes, 3)
        grads["trainable"] = sharded((p.dense_matrix + p.dense_other) * pbytes, p.expert * pbytes, 2)
        per = opt.state_bytes_per_param + master
        optim["states"] = sharded((p.dense_matrix + p.dense_other) * opt.state_bytes_per_param,
                                  p.expert * opt.state_bytes_per_param, 1)
        if master:
            optim["fp32_master"] = sharded((p.dense_matrix + p.dense_other) * master, p.expert * master, 1)
        del per
    else:
        base_matrix = NF4_BYTES_PER_PARAM if job.method == "qlora" else pbytes
        weights["frozen_base"] = sharded(p.dense_matrix * base_matrix + p.dense_other * pbytes,
                                         p.expert * base_matrix, 3)
        weights["adapters"] = sharded(p.adapters * ADAPTER_BYTES, 0.0, 3)
        grads["adapters"] = sharded(p.adapters * ADAPTER_BYTES, 0.0, 2)
        optim["states"] = sharded(p.adapters * opt.state_bytes_per_param, 0.0, 1)

    other: dict[str, float] = {}
    if zero == 3 and shard_dense > 1:
        unit = p.largest_layer * (NF4_BYTES_PER_PARAM if job.method == "qlora" else pbytes)
        other["zero3_gathered_layers"] = cal.value("zero3_prefetch_layers") * unit

    n_flight = _in_flight(job, layout, rank)
    act: dict[str, float] = {}
    if dense_n:
        act["dense_layers"] = n_flight * dense_n * acts.dense_layer_bytes
    if moe_n:
        act["moe_layers"] = n_flight * moe_n * acts.moe_layer_bytes
    if rank == 0:
        act["embedding_side"] = n_flight * sum(acts.first_stage_extra.values())
    if rank == layout.pp - 1:
        act["loss_side"] = sum(acts.last_stage_extra.values())
        other["logits_transient"] = acts.logits_transient_bytes
    if acts.recompute_working_bytes:
        other["recompute_working_layer"] = acts.recompute_working_bytes
    transient = sum(other.values())
    other["allocator_fragmentation"] = cal.value("allocator_fragmentation") * (sum(act.values()) + transient)
    other["runtime_context"] = cal.value("runtime_context_gib") * GIB
    if layout.num_devices > 1:
        other["collective_buffers"] = cal.value("collective_buffers_gib") * GIB

    return MemoryBreakdown(
        params_total=counts.total,
        params_active=counts.active,
        params_trainable=0,
        weights_bytes=sum(weights.values()),
        gradients_bytes=sum(grads.values()),
        optimizer_bytes=sum(optim.values()),
        activations_bytes=sum(act.values()),
        kv_cache_bytes=0.0,
        other_bytes=sum(other.values()),
        details={"weights": weights, "gradients": grads, "optimizer": optim, "activations": act,
                 "other": other},
    )


def trainable_params(spec: ModelSpec, counts: ParamCounts, job: TrainingJob) -> int:
    if job.method == "full":
        return counts.total
    per_dense = lora_params_per_layer(spec, job.lora_rank, job.lora_targets, False)
    per_moe = lora_params_per_layer(spec, job.lora_rank, job.lora_targets, True)
    return spec.num_dense_layers * per_dense + spec.num_moe_layers * per_moe


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
    cal = calibration or default_calibration()
    counts = count_params(spec)
    acts = activation_breakdown(spec, job, layout)
    per_rank = [
        _rank_memory(spec, counts, job, layout, acts, cal, r, d, m)
        for r, (d, m) in enumerate(stage_layers(spec, layout))
    ]
    worst = max(range(len(per_rank)), key=lambda r: per_rank[r].total_bytes)
    chosen = per_rank[worst]
    assumptions = {
        "kind": "train",
        "model": spec.name,
        "method": job.method,
        "precision": job.precision,
        "optimizer": job.optimizer,
        "recompute": job.recompute,
        "attention": job.attention,
        "seq_len": job.seq_len,
        "micro_batch": job.micro_batch,
        "layout": layout.model_dump(),
        "pipeline_rank_reported": worst,
        "pipeline_rank_totals_bytes": [round(r.total_bytes) for r in per_rank],
        "in_flight_microbatches": _in_flight(job, layout, worst),
        "lora": {"rank": job.lora_rank, "targets": list(job.lora_targets)} if job.method != "full" else None,
        "activation_model": "saved-tensor inventory of Hugging Face transformers layers (docs/memory.md)",
        "calibration": cal.used("runtime_context_gib", "collective_buffers_gib", "allocator_fragmentation",
                                "zero3_prefetch_layers"),
        "notes": _notes(spec, job, layout),
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


def _notes(spec: ModelSpec, job: TrainingJob, layout: Layout) -> list[str]:
    notes = []
    if job.method != "full":
        notes.append("LoRA adapters, their gradients and optimizer states in fp32; base weights frozen")
    if job.method == "qlora":
        notes.append(f"frozen linear weights in NF4 with double quantization: {NF4_BYTES_PER_PARAM * 8:.3f} "
                     "bits/param; embeddings, norms and LM head stay 16-bit")
    if spec.moe is not None and layout.ep > 1:
        notes.append("expert activations assume balanced routing: each EP rank keeps about its own "
                     "tokens x top-k")
    if job.recompute == "selective" and job.attention == "flash":
        notes.append("selective recomputation with flash attention only drops the attention output and LSE")
    if layout.tp > spec.kv_heads and spec.mla is None:
        notes.append(f"tp={layout.tp} exceeds {spec.kv_heads} KV heads: KV projections are replicated")
    return notes
