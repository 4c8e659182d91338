"""Step time of a training job for many candidate layouts at once (numpy columns).

    step = compute + tp_comm + dp_comm (exposed) + pp_bubble + pp_comm + ep_comm + cp_comm + other

* compute: hardware FLOPs per device / (dense peak x compute efficiency x width factor
  (h/tp) / (h/tp + gemm_half_width)); FP8 runs the GEMMs at the FP8 peak and attention at the 16-bit peak; routed
  experts at `moe_gemm_efficiency` of the dense rate, narrow ones less (`gemm_shape.expert_half_width`).
* TP (Megatron-LM with sequence parallelism, Korthikanti et al. 2022 sec. 4.2.2): per
  layer and micro-batch, two all-gathers and two reduce-scatters of the b x s x h
  activation forward and the same backward (= 4 all-reduce volumes; +2 with full recompute).
* DP: gradient reduce-scatter + parameter all-gather (one all-reduce volume) per step,
  hierarchical over nodes, hidden under `dp_overlap` of the last micro-batch's backward;
  ZeRO-3: parameter all-gathers forward and backward and a gradient reduce-scatter per
  micro-batch, hidden under `zero3_overlap` of compute.
* PP: bubble (p - 1)/(v m) of the per-micro-batch work (Narayanan et al. 2021 eq. 1 and
  the interleaved schedule); point-to-point activations forward and backward per
  micro-batch and virtual stage, `pp_p2p_overlap` hidden; once the pipeline spans nodes every
  device runs at the pace of the boundary that crosses the network (`train_comm.pp_cross_node_hops`).
* EP: dispatch and combine all-to-all of the b x s x top-k x h tokens, forward and
  backward, per MoE layer and micro-batch (Megatron-Core MoE; DeepSeek-V3 report).
* CP: ring exchange of each chunk's K and V, (cp - 1) steps forward and twice backward
  per layer (Liu et al. 2023, ring attention), `cp_overlap` hidden.
* other: the optimizer step, memory-bound over the local optimizer shard, plus any data-loader
  stall: the loader prefetches during the step, so only its time beyond the step shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from gpuplan.errors import InputError
from gpuplan.estimate.activations import activation_breakdown, fused_kernels
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.comm import collective_on as collective
from gpuplan.estimate.flops import forward_flops
from gpuplan.estimate.gemm_shape import expert_half_width
from gpuplan.estimate.memory_train import expert_shard, frozen_matrix_bytes, trainable_params
from gpuplan.estimate.pipeline_split import stage_imbalance
from gpuplan.search.candidates import Candidates
from gpuplan.search.cluster import ClusterHardware, hbm_scale, measured_hardware
from gpuplan.search.memory_vec import by_unique, candidate_memory_bytes
from gpuplan.search.train_comm import group, owner_broadcasts_s, p2p, pp_hop_s
from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.jobs import FP4_FORMATS, Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import ParamCounts, count_params

__all__ = ["BREAKDOWN_KEYS", "Evaluation", "data_loading_s", "elementwise_bytes", "evaluate_training", "framework_term",
           "tp_overlap_on"]

BREAKDOWN_KEYS = ("compute", "moe_host_wait", "tp_comm", "dp_comm", "pp_bubble", "pp_comm", "ep_comm", "cp_comm",
                  "other")


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluation:
    """Per-candidate results (arrays aligned with the candidates)."""

    memory_bytes: np.ndarray
    breakdown_s: dict[str, np.ndarray]
    step_s: np.ndarray
    tokens_per_step: np.ndarray
    model_flops_per_token: float
    hw_flops_per_token: np.ndarray

    @property
    def tokens_per_s(self) -> np.ndarray:
        out: np.ndarray = self.tokens_per_step / self.step_s
        return out


def _expert_rows_factor(spec: ModelSpec, s: int, c: Candidates, cal: Calibration) -> Any:
    """Efficiency of the grouped expert GEMMs for the rows each expert gets per micro-batch, M / (M + m_half).

    An expert-parallel group of ep ranks dispatches its mb x s/cp x top-k token copies to the experts it holds, so
    each expert's GEMM has M = ep x mb x (s / cp) x top-k / experts rows (balanced routing, as the benchmarks force
    it). Few rows leave the kernel's row tiles part-empty and its waves short: DeepGEMM's FP8 grouped GEMMs on H800
    (README tables, N x K = 4096 x 7168) run 1297 TFLOPS at 8192 rows per group, 1233 at 1024, 1040 at 512 and 932 at
    256, i.e. M / (M + ~100-130); `moe_expert_rows_half` (128, one row tile) is read from those tables, not tuned.
    This is why MoE teams run EP: without it a rank's experts see a handful of rows each."""
    assert spec.moe is not None
    rows = c.ep * c.micro_batch * (s / c.cp) * spec.moe.top_k / spec.moe.num_experts
    half = cal.value("moe_expert_rows_half")
    return rows / (rows + half)


def _moe_host_wait_s(spec: ModelSpec, job: TrainingJob, c: Candidates, cal: Calibration) -> Any:
    """Time each rank's GPU waits on the host in MoE layers whose dispatcher synchronises with it.

    Megatron-Core's alltoall dispatcher hands the grouped expert GEMMs each expert's token count as host integers
    (Transformer Engine GroupedLinear `m_splits`; MoEAlltoAllTokenDispatcher copies tokens_per_expert to the host and
    synchronises the stream, megatron/core/transformer/moe/token_dispatcher.py): per MoE layer and pass the GPU
    drains, then waits while the host launches the rest of the layer. The flex dispatcher (DeepEP/HybridEP) with CUDA
    graphs over the router and dispatch preprocessing keeps the counts on the device (Megatron-Core MoE README,
    v0.15 HybridEP; arXiv 2603.07685, the host-overhead "compute wall"). Passes: forward, backward and full
    recomputation's second forward; `moe_host_wait_s` is the wait of one layer-pass, tuned on the MoE rows."""
    if spec.moe is None or job.moe_dispatcher == "flex":
        return np.zeros(len(c))
    layer_passes = (2.0 + (c.recompute == 2)) * spec.num_moe_layers / c.pp * c.microbatches
    return layer_passes * framework_term(cal, job, "moe_host_wait_s")


def evaluate_training(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, c: Candidates, *,
                      calibration: Calibration | None = None, memory_bytes: np.ndarray | None = None,
                      layer_bytes: np.ndarray | None = None) -> Evaluation:
    """Memory and step-time breakdown of every candidate layout on `hw`. `memory_bytes` and `layer_bytes`
    (`elementwise_bytes`) of `c` are hardware-independent: a caller that evaluates the same candidates on several
    hardware options passes them once computed."""
    cal = calibration or default_calibration()
    hw = measured_hardware(hw, cal)
    acc = hw.accelerator
    g = hw.gpus_per_node
    s = job.seq_len
    tokens_step = (c.microbatches * c.dp * c.micro_batch * s).astype(float)  # sequences actually in a step
    n = c.tp * c.pp * c.dp * c.cp
    mb = c.micro_batch
    m = c.microbatches
    e = 4.0 if job.precision == "fp32" else 2.0
    h = spec.hidden_size

    # -- compute --------------------------------------------------------------------------
    fw = forward_flops(spec, s)
    parts = fw.by_part()
    bwd = 2.0 if job.method == "full" else 1.0  # frozen weights: no weight-gradient GEMM (LoRA)
    passes = 1.0 + bwd
    model_fpt = passes * fw.total
    modules = job.recompute_modules_on()
    recompute_extra = np.select([c.recompute == 1, c.recompute == 2],
                                [fw.recomputed("selective", modules=modules),
                                 fw.recomputed("full", early_stop=job.recompute_early_stop_on())],
                                fw.recomputed("none", modules=modules))
    hw_fpt = model_fpt + recompute_extra
    dtype16 = "fp16" if job.precision == "fp16" else "bf16"
    peak16 = hw.peak_flops(dtype16 if job.precision != "fp32" else "fp32")
    eff16 = _eff(cal, acc.id, "bf16")
    w = cal.value("gemm_half_width")
    width = h / c.tp
    narrow = width / (width + w)  # GEMM efficiency falls as each (TP-sharded) matrix narrows
    core = parts["attention_core"]
    experts = parts["experts_routed"]
    gemm = fw.total - core - experts
    rc_scale = hw_fpt / model_fpt  # recomputation reruns a share of the same work
    if job.precision == "fp8":
        peak_g, eff_g = hw.peak_flops("fp8"), _eff(cal, acc.id, "fp8")
    elif job.precision in FP4_FORMATS:  # NVFP4/MXFP4 training: the linear layers' GEMMs on FP4 tensor cores
        peak_g, eff_g = hw.fp4_peak_flops(job.precision), _eff(cal, acc.id, "fp4")
    else:
        peak_g, eff_g = peak16, eff16
    moe_eff = framework_term(cal, job, "moe_gemm_efficiency")
    if spec.moe is not None:  # narrow experts (fine-grained MoE) run their grouped GEMMs less efficiently
        fe = spec.moe.expert_ffn_size
        moe_eff *= fe / (fe + expert_half_width(acc, framework_term(cal, job, "moe_expert_half_width")))
    attn_eff = eff16 * _attention_eff(cal, acc.id, ~fused_kernels(job.kernels, c.tp, c.pp))
    if job.attention == "eager":
        # Without FlashAttention, QK^T and PV run as batched GEMMs over the whole s x s score matrix, masked
        # afterwards (Megatron-LM's scaled-masked-softmax path; Dao et al. 2022 sec. 1): the full count at
        # the GEMM rate. The scores' softmax/mask/dropout passes are memory traffic, counted with the
        # saved activations in _elementwise_s.
        core_time = core / (peak16 * eff16)
    else:
        # Flash-attention kernels skip the masked half of causal attention: the executed core is
        # half the full-s^2 count that MFU uses (Dao 2023), sliding windows aside.
        core_time = forward_flops(spec, s, causal=True).attention_core / (peak16 * attn_eff)
        if job.attention == "triton":  # Triton FlashAttention: 1.3-1.5x slower forward, 2x backward (Dao 2023 4.1)
            core_time = core_time / cal.value("triton_attention_speed")
    if spec.moe is not None:  # few rows per expert leave the grouped GEMM's row tiles part-empty
        moe_eff = moe_eff * _expert_rows_factor(spec, s, c, cal)
    per_token_s = passes * (gemm / (peak_g * eff_g) + experts / (peak_g * eff_g * moe_eff) + core_time)
    gemm_s = rc_scale * per_token_s * tokens_step / n / narrow
    host_wait = _moe_host_wait_s(spec, job, c, cal)
    compute = gemm_s + _elementwise_s(spec, job, hw, c, cal, rc_scale, layer_bytes) + host_wait
    if job.pp_partition != "balanced":  # the pipeline runs at its heaviest stage's pace (estimate/pipeline_split.py)
        factors = {int(p): stage_imbalance(spec, int(s), int(p), job.pp_partition) for p in np.unique(c.pp)}
        imbalance = np.vectorize(factors.__getitem__, otypes=[float])(c.pp)
        compute = compute * imbalance
        host_wait = host_wait * imbalance
    counts = count_params(spec)
    if job.method == "qlora":
        compute = compute + _dequant_s(counts, job, hw, c, cal)

    # -- tensor parallel -----------------------------------------------------------------
    layers_rank = spec.num_layers / c.pp
    act_bytes = mb * (s / c.cp) * h * e
    k_tp = 4.0 + 2.0 * (c.recompute == 2)
    tp_inside = c.tp <= min(hw.accelerator.fully_connected_domain or 1, g)  # userbuffers need the fast link
    tp_hidden = np.where(tp_inside & tp_overlap_on(job), framework_term(cal, job, "tp_overlap"), 0.0)
    tp = np.where(c.tp > 1, layers_rank * m * k_tp * collective("all_reduce", act_bytes, group(c.tp, 1, hw))
                  * (1 - tp_hidden), 0.0)

    # -- data parallel -------------------------------------------------------------------
    expert_params = counts.routed_experts
    dense_params = counts.total - expert_params
    if job.method == "full":
        split = expert_shard(c.tp, c.dp, c.cp, c.ep)
        local_params = dense_params / (c.tp * c.pp) + expert_params / (c.pp * split)
    else:  # LoRA/QLoRA: only the adapters have gradients and optimizer states
        local_params = trainable_params(spec, counts, job) / (c.tp * c.pp)
    grad_width = framework_term(cal, job, "grad_reduce_bytes")
    grad_bytes = local_params * grad_width
    dp_group = c.dp * c.cp
    # gradients are reduced in buckets (PyTorch DDP bucket_cap_mb, Megatron DDP buckets, DeepSpeed
    # reduce_bucket_size): each bucket pays the collective's latency, which grows with the ring length
    buckets = np.maximum(np.ceil(grad_bytes / (framework_term(cal, job, "dp_bucket_mbyte") * 1e6)), 1.0)
    dp_comm = group(dp_group, c.tp, hw)
    latency = collective("all_reduce", np.ones(len(c)), dp_comm)
    # DDP all-reduces the gradients; a sharded optimizer (ZeRO-1, Megatron's distributed optimizer)
    # reduce-scatters them and all-gathers the updated 16-bit parameters (Rajbhandari et al. 2020, sec. 7;
    # Megatron-Core distributed optimizer docs): the same volume when gradients travel in 16 bits, less
    # than an fp32 all-reduce when they travel in fp32 (Megatron's default for bf16)
    plain = c.zero < 1
    if grad_width != e:  # gradients and parameters travel in different widths
        reduce = collective("reduce_scatter", grad_bytes, dp_comm) + collective(
            "all_gather", local_params * e, dp_comm)
        if plain.any():  # DDP rows all-reduce
            reduce = np.where(plain, collective("all_reduce", grad_bytes, dp_comm), reduce)
    else:
        reduce = collective("all_reduce", grad_bytes, dp_comm)
    dp_time = np.where(dp_group > 1, reduce + (buckets - 1) * latency, 0.0)
    backward_last = compute * (bwd / passes) / np.maximum(m, 1)
    # a run that reduces its gradients after the backward (Korthikanti et al. 2022 sec. 6.3: "we do not use any
    # overlapping of gradient all-reduces with back-propagation") hides none of it
    hide = 0.0 if job.grad_reduce_overlap is False else framework_term(cal, job, "dp_overlap")
    dp_exposed = np.maximum(dp_time - hide * backward_last, 0.0)
    # the ranks one shard spans: the data-parallel group, or a ZeRO group of z adjacent ranks replicated across it
    # (InternEvo zero1=N, DeepSpeed hpZ/MiCS, FSDP hybrid sharding), as the memory estimate shards
    shard_group = job.zero_shard_ranks(dp_group)
    if job.framework is not None and not framework_profile(job.framework).zero_param_overlap:
        # the sharded optimizer returns the updated 16-bit parameters after the step, not under the backward
        # (InternEvo overlap_sync_param=False): that volume, an all-gather's within the shard group, is exposed
        # whole; only the gradient reduction hides under the last backward
        param_sync = np.where((c.zero >= 1) & (dp_group > 1),
                              collective("all_gather", local_params * e, group(shard_group, c.tp, hw)), 0.0)
        dp_exposed = np.maximum(dp_time - param_sync - hide * backward_last, 0.0) + param_sync
    if job.framework is not None and framework_profile(job.framework).zero_param_sync == "broadcast":
        # after the step every owner broadcasts its shard (InternEvo HybridZeroOptimizer.broadcast_params), outside
        # the backward: a ZeRO group of z ranks pays z broadcasts, each a chain through the z ranks
        dp_exposed = dp_exposed + np.where((c.zero >= 1) & (dp_group > 1),
                                           owner_broadcasts_s(dp_group, c.tp, shard_group, hw), 0.0)
    # FSDP/ZeRO-3 rows replace that with their per-layer gathers, priced on those rows alone
    z3 = np.flatnonzero(c.zero == 3)
    dp = dp_exposed
    if len(z3):
        dp = dp_exposed.copy()
        dp[z3] = _zero3_exposed_s(spec, job, hw, c.take(z3), cal, counts, e, local_params[z3], grad_bytes[z3],
                                  compute[z3])

    # -- pipeline --------------------------------------------------------------------------
    p2p_bytes = act_bytes / c.tp  # sequence-parallel activations are sharded over TP
    pp_comm = np.where(c.pp > 1, 2 * m * c.vpp * pp_hop_s(p2p_bytes, c, hw)
                       * (1 - framework_term(cal, job, "pp_p2p_overlap")), 0.0)
    per_mb = (compute + tp) / np.maximum(m, 1)
    bubble = np.where(c.pp > 1, (c.pp - 1) / c.vpp * per_mb, 0.0)

    # -- expert parallel -------------------------------------------------------------------
    ep = np.zeros(len(c))
    if spec.moe is not None:
        moe_rank = spec.num_moe_layers / c.pp
        a2a_bytes = mb * (s / c.cp) * spec.moe.top_k * h * e / c.tp
        k_ep = 4.0 + 2.0 * (c.recompute == 2)
        ep_comm = group(c.ep, c.tp * c.cp, hw)
        ep = np.where(c.ep > 1, moe_rank * m * k_ep * collective("all_to_all", a2a_bytes, ep_comm)
                      * (1 - framework_term(cal, job, "ep_overlap")), 0.0)

    # -- context parallel ------------------------------------------------------------------
    kv_width = (spec.num_heads * (spec.attn_head_dim + spec.v_head_dim) if spec.mla is not None
                else 2 * spec.kv_heads * spec.attn_head_dim)
    kv_chunk = mb * (s / c.cp) * kv_width * e / np.minimum(c.tp, spec.kv_heads if spec.mla is None else c.tp)
    cp = np.where(c.cp > 1, layers_rank * m * 3 * (c.cp - 1) * p2p(kv_chunk, c.tp * c.cp <= g, hw)
                  * (1 - framework_term(cal, job, "cp_overlap")), 0.0)

    # -- optimizer step (memory bound) -----------------------------------------------------
    shard = np.where(c.zero >= 1, shard_group, 1)  # each rank updates its shard of the ZeRO group
    opt_bytes = local_params / shard * 32.0  # read and write fp32 master, m, v and the 16-bit copy
    if acc.hbm_bandwidth_gbps is None:
        raise InputError(field="accelerator", value=acc.id, allowed="an accelerator with a known memory bandwidth",
                         hint="add hbm_bandwidth_gbps to its catalog entry")
    other = opt_bytes / (acc.hbm_bandwidth_gbps * 1e9 * hbm_scale(cal, acc.id))

    # the GPU's wait on the host in MoE layers is timed with the compute it interrupts (communication hides under
    # both), and shown apart: an expert reads a step that mostly waits on the host as host-bound, not compute-bound
    breakdown = {"compute": compute - host_wait, "moe_host_wait": host_wait, "tp_comm": tp, "dp_comm": dp,
                 "pp_bubble": bubble, "pp_comm": pp_comm, "ep_comm": ep, "cp_comm": cp, "other": other}
    busy = sum(breakdown.values())
    # data loader workers prefetch the next step while this one runs: only a slower loader shows
    breakdown["other"] = other + np.maximum(data_loading_s(spec, job, hw, tokens_step, n, cal) - busy, 0.0)
    step = sum(breakdown.values())
    # memory does not depend on the hardware: the planner computes it once per candidate set
    memory = memory_bytes if memory_bytes is not None else candidate_memory_bytes(spec, job, c, calibration=cal)
    return Evaluation(memory_bytes=memory, breakdown_s=breakdown, step_s=np.asarray(step),
                      tokens_per_step=tokens_step, model_flops_per_token=model_fpt, hw_flops_per_token=hw_fpt)


def _zero3_exposed_s(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, c: Candidates, cal: Calibration,
                     counts: ParamCounts, e: float, local_params: Any, grad_bytes: Any, compute: Any) -> Any:
    """The data-parallel time a ZeRO-3/FSDP layout leaves exposed (`c` holds ZeRO-3 rows only; the arrays are theirs).

    FSDP/ZeRO-3 gathers and reduces one wrapped layer at a time within the shard group: three collectives per
    layer and micro-batch; with replicas, each step all-reduces the gradient shard across them (PyTorch FSDP
    HYBRID_SHARD, DeepSpeed MiCS: Zhang et al. 2022, sec. 3). They hide under the compute up to `zero3_overlap`."""
    layers_rank = spec.num_layers / c.pp
    m = c.microbatches
    dp_group = c.dp * c.cp
    shard_group = job.zero_shard_ranks(dp_group)
    shard_comm = group(shard_group, c.tp, hw)
    z3_bytes = local_params * e
    if job.method != "full":
        # ZeRO-3/FSDP shards the frozen base too (as the memory estimate does), and gathers each layer's frozen
        # weights with its adapters, forward and backward, in their storage width: 16-bit, or packed 4-bit under
        # QLoRA (FSDP-QLoRA stores the NF4 weights in a uniform dtype so FSDP can shard them: Answer.AI 2024,
        # bitsandbytes `quant_storage`). Only the adapters' gradients are reduced.
        frozen = (_local_matrices(counts, c) * frozen_matrix_bytes(job)
                  + (counts.total - counts.layer_matrices) / (c.tp * c.pp) * e)
        z3_bytes = z3_bytes + frozen
    replicas = dp_group // shard_group
    z3_latency = 3 * (layers_rank - 1) * collective("all_gather", np.ones(len(c)), shard_comm)
    z3_time = np.where(shard_group > 1, m * (2 * collective("all_gather", z3_bytes, shard_comm)
                                             + collective("reduce_scatter", grad_bytes, shard_comm)
                                             + z3_latency), 0.0)
    z3_time = z3_time + np.where(replicas > 1, collective("all_reduce", grad_bytes / shard_group,
                                                           group(replicas, c.tp * shard_group, hw)), 0.0)
    return np.maximum(z3_time - framework_term(cal, job, "zero3_overlap") * compute, 0.0)


@lru_cache(maxsize=1024)
def _layer_bytes(spec: ModelSpec, job: TrainingJob, tp: int, cp: int, piped: int) -> tuple[float, float]:
    """Bytes a dense and a MoE layer produce per micro-batch sequence (the same for every hardware option of a
    search: spec and job are frozen records, hence cached)."""
    a = activation_breakdown(spec, job, Layout(tp=tp, cp=cp, pp=1 + piped, seq_parallel=job.sequence_parallel_on()))
    return a.dense_layer_bytes, a.moe_layer_bytes


def elementwise_bytes(spec: ModelSpec, job: TrainingJob, c: Candidates) -> np.ndarray:
    """Bytes the layers of one rank produce per step (micro-batches x the saved-for-backward tensors of its layers,
    recomputation aside): what `_elementwise_s` streams. It does not depend on the hardware, so a search computes
    it once per candidate set (train_planner.Prepared) and every hardware option takes its rows."""
    # the tensors are produced whether or not they are kept: output-discarding recompute modules do not shrink them
    j = job.model_copy(update={"micro_batch": 1, "recompute": "none", "recompute_modules": ()})

    def per_layer(tp: int, cp: int, piped: int) -> tuple[float, float]:
        return _layer_bytes(spec, j, tp, cp, piped)

    b = by_unique((c.tp, c.cp, (c.pp > 1).astype(np.int64)), per_layer, 2)
    dense_n = (spec.num_layers - spec.num_moe_layers) / c.pp
    moe_n = spec.num_moe_layers / c.pp
    out: np.ndarray = (dense_n * b[:, 0] + moe_n * b[:, 1]) * c.micro_batch * c.microbatches
    return out


def _elementwise_s(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, c: Candidates, cal: Calibration,
                   rc_scale: Any, produced: np.ndarray | None = None) -> Any:
    """Memory-bound kernels (norms, activations, residual adds, rotary, MoE permutation, softmax).

    Their traffic scales with the tensors a layer produces, which the activation inventory
    counts (the saved-for-backward bytes, fused or HF kernels): the forward writes them, the
    backward reads them and writes and reads gradients of the same size. `elementwise_passes`
    (calibration) is the number of passes over those bytes per micro-batch, at the HBM
    bandwidth (roofline: Williams et al. 2009). Small hidden sizes and FP8 GEMMs make this
    term a large share of the step (their GEMMs shrink faster than the per-token bytes).
    `produced` is `elementwise_bytes` of `c` when the caller has it.
    """
    acc = hw.accelerator
    if acc.hbm_bandwidth_gbps is None:
        raise InputError(field="accelerator", value=acc.id, allowed="an accelerator with a known memory bandwidth",
                         hint="add hbm_bandwidth_gbps to its catalog entry")
    bytes_mb = elementwise_bytes(spec, job, c) if produced is None else produced
    return rc_scale * framework_term(cal, job, "elementwise_passes") * bytes_mb / (acc.hbm_bandwidth_gbps * 1e9
                                                                    * hbm_scale(cal, acc.id))


def _local_matrices(counts: ParamCounts, c: Candidates) -> Any:
    """Layer projection weights on one rank: dense ones split by TP and PP, routed experts by PP and EP x TP."""
    experts = counts.routed_experts
    return (counts.layer_matrices - experts) / (c.tp * c.pp) + experts / (c.pp * expert_shard(c.tp, c.dp, c.cp, c.ep))


def _dequant_s(counts: ParamCounts, job: TrainingJob, hw: ClusterHardware, c: Candidates, cal: Calibration) -> Any:
    """QLoRA's weight dequantization: a memory-bound pass over the rank's frozen matrices before each GEMM.

    bitsandbytes' MatMul4Bit dequantizes the packed 4-bit weight to 16 bits in the forward and again for the input
    gradient in the backward (`F.dequantize_4bit` in `MatMul4Bit.forward` and `.backward`; Dettmers et al. 2023
    sec. 3), and a full recomputation reruns the forward: 2 or 3 passes per micro-batch, each reading the packed
    weight with its scales and writing the 16-bit copy (the GEMM's own read of it is in the GEMM's time).
    """
    acc = hw.accelerator
    if acc.hbm_bandwidth_gbps is None:
        raise InputError(field="accelerator", value=acc.id, allowed="an accelerator with a known memory bandwidth",
                         hint="add hbm_bandwidth_gbps to its catalog entry")
    passes = 2.0 + (c.recompute == 2)
    nbytes = c.microbatches * passes * _local_matrices(counts, c) * (frozen_matrix_bytes(job) + 2.0)
    return nbytes / (acc.hbm_bandwidth_gbps * 1e9 * hbm_scale(cal, acc.id))


def data_loading_s(spec: ModelSpec, job: TrainingJob, hw: ClusterHardware, tokens_step: Any, devices: Any,
                   cal: Calibration) -> Any:
    """Seconds one node's data loader needs for its share of a step's tokens.

    Pre-tokenized ids are read at the storage rate per node (`storage_read_gbyte_s_per_node`);
    online tokenization runs on the host cores (`tokenizer_tokens_per_s_per_core`), the
    catalog server's core count less one core per accelerator for the training processes.
    """
    nodes = np.maximum(np.ceil(devices / hw.gpus_per_node), 1)
    per_node = tokens_step / nodes
    if job.data_loading == "online":
        cores = float(hw.host_cpu_cores or cal.value("host_cpu_cores_per_node"))
        free = max(cores - hw.gpus_per_node, 1.0)
        return per_node / (free * cal.value("tokenizer_tokens_per_s_per_core"))
    token_bytes = 4 if spec.vocab_size > 65535 else 2  # ids stored as uint32 / uint16
    return per_node * token_bytes / (cal.value("storage_read_gbyte_s_per_node") * 1e9)


def _attention_eff(cal: Calibration, accelerator: str, hf: np.ndarray) -> Any:
    """Attention kernel efficiency relative to the GEMMs; FlashAttention-2 on some parts has its own term.

    FlashAttention-2 reaches about 35% of the H100 peak against 70% on A100 (Shah et al. 2024,
    FlashAttention-3, sec. 1); Megatron-class frameworks run cuDNN/FA3-class kernels on Hopper.
    """
    base = cal.value("attention_kernel_efficiency")
    name = f"attention_kernel_efficiency.{accelerator}.hf"
    if name not in cal.terms:
        return base
    return np.where(hf, cal.value(name), base)


def framework_term(cal: Calibration, job: TrainingJob, name: str) -> float:
    """A calibration term under the job's framework: the profile's value (workload/data/frameworks.yaml) where it
    names the term and the user did not override it, else the calibration's."""
    if job.framework is not None and not cal.terms[name].overridden:
        prof = framework_profile(job.framework)
        if name in prof.terms:
            return prof.terms[name].value
    return cal.value(name)


def tp_overlap_on(job: TrainingJob) -> bool:
    """Whether TP collectives run under the GEMMs: the job's statement, else its framework's default; a job
    without a framework is planned as Megatron-Core with --tp-comm-overlap."""
    if job.tp_comm_overlap is not None:
        return job.tp_comm_overlap
    return framework_profile(job.framework).tp_comm_overlap if job.framework is not None else True


def _eff(cal: Calibration, accelerator: str, dtype: str) -> float:
    name = f"compute_efficiency.{accelerator}.{dtype}"
    if name in cal.terms:
        return cal.value(name)
    return cal.value(f"compute_efficiency.default.{dtype}")

