"""Wall time of one serving-engine iteration (prefill tokens + decoding sequences).

One iteration runs every layer once over the step's T = prefill_tokens + decode_seqs
tokens. Per device of the heaviest pipeline stage (docs/inference.md has the derivation):

* Linear layers, a roofline per group of GEMMs (Williams et al. 2009, "Roofline", CACM
  52(4)) with compute time c = FLOPs / (peak x gemm_efficiency) and weight-read time
  m = weight bytes / (HBM bw x memory_bw_efficiency), combined as (c^p + m^p)^(1/p) with p the
  engine's `roofline_overlap_exponent` (1.8): the larger of the two far from the ridge point,
  up to 2^(1/p) = 1.47 x max(c, m) at it, where a GEMM overlaps its loads and its math only
  partly (cuBLAS sweeps over M at fixed N, K run 1.3-1.5x above the sharp roofline near
  M = peak / bandwidth; Yuan et al. 2024, "LLM Inference Unveiled: Survey and Roofline Model
  Insights"). FLOPs = 2 x T x weights / tp; weights are read once per step.
  Weights stream at min(HBM bw x memory_bw_efficiency, SMs x clock x bytes per SM-cycle): by
  Little's law a kernel reaches the bandwidth only with enough bytes in flight, and each SM keeps
  a bounded amount; a one-token 16-bit GEMV keeps less than a tiled GEMM (`gemv_bytes_per_sm_cycle`
  for steps of one token with 16-bit weights, `gemm_bytes_per_sm_cycle` otherwise). The cap binds
  on parts with much bandwidth per SM (H20: 4.0 TB/s on 78 SMs) and only where the catalog gives
  the SM count and clock.
  The peak is the weight format's: fp8 and int8 (W8A8) GEMMs run on the 8-bit tensor
  cores where the part has them, else (and for int4 weight-only, GPTQ/AWQ/Marlin) at
  the 16-bit rate plus the dequantization share `dequant_overhead` (Frantar et al.
  2024, Marlin: weight-only kernels are near the memory bound at small batch and
  compute-bound at the 16-bit rate at large batch).
* Routed experts run at gemm_efficiency x f / (f + w) with f one expert's columns on a device and w
  `moe_expert_half_width` scaled by the part's tensor FLOPs per SM-cycle against the H100 SXM5's
  (`expert_half_width`): narrow tiles starve fast tensor cores, not slow ones.
* MoE layers read only the experts the step's tokens touch: with T tokens each routed
  to top_k of E experts uniformly, E x (1 - (1 - k/E)^T) distinct experts in expectation.
* Attention: prefill costs 2 x heads x (qk_dim + v_dim) FLOPs per causal query-key pair
  at attention_efficiency of the 16-bit peak (FlashAttention); decode reads every cached
  KV byte once per step at kv_read_efficiency of HBM bandwidth (PagedAttention, Kwon et
  al. 2023), with its FLOPs as the compute side of a roofline (MLA decodes absorbed, in
  the latent space: 2 x heads x (2 kv_lora_rank + rope_dim) FLOPs per key, DeepSeek-V2
  sec. 2.1.3).
* Tensor parallelism: two all-reduces of T x hidden 16-bit values per layer (Megatron-LM,
  Shoeybi et al. 2019), ring alpha-beta over the intra-node link (`comm.ring_all_reduce_s`
  terms), the engine's custom all-reduce scaling the per-step latency. Expert
  parallelism (inside the TP group, attention stays tensor-parallel) keeps each expert
  whole on one rank and replaces the FFN all-reduce of an MoE layer by a dispatch
  all-gather and a combine reduce-scatter of T x hidden values over the ep ranks.
  Attention data parallelism (ep > tp: SGLang --enable-dp-attention with --ep-size, RTP-LLM DP = EP)
  runs ep/tp attention groups of tp ranks, each with its own sequences; the routed experts are spread
  over all ep ranks (ep/E of them on one device, whole), the dense layers and shared experts are whole
  in every group. A step of one group's T tokens then meets the T x ep/tp tokens of all groups in the
  experts (expected distinct experts over the group's share of all tokens), and each token crosses a
  DeepEP all-to-all per MoE layer: top_k copies of its hidden state dispatched (fp8 for fp8 weights,
  else 16 bits) and combined in 16 bits (DeepEP README), over NVLink inside a node and over the
  scale-out NIC (pure RDMA low-latency kernels) once the group spans nodes.
  Pipeline parallelism runs the stages in turn
  (one step's latency) with a point-to-point send of T x hidden values between stages.
* Fixed costs: `layer_overhead_s` per layer (small kernels), `step_overhead_s` per
  iteration (scheduler, sampler, launch) and `seq_overhead_s` per sequence in it. A step captured
  as one graph (`EngineProfile.graph_mode`) keeps the engine's own per-layer terms in place of a
  hardware entry's eager host dispatch and pays `graph_launch_s` once per step.
* Fused expert all-to-all operators measured on a fabric (links.fused_a2a_links: CloudMatrix-Infer's
  FusedDispatch/FusedCombine on UB, Zuo et al. 2025) carry a decode token's copies at their measured
  per-rank rates instead of the link's bandwidth.
* Every term is the engine's on this accelerator: `EngineProfile.for_accelerator` puts the
  engine x hardware terms of engines.yaml (achieved bandwidth and GEMM efficiency of a part
  under an engine's kernels, host overheads of an engine port) in place of the defaults.

Everything is precomputed into plain floats of a `StepCostModel` (estimate/infer_step_model.py):
`step_s` is pure float arithmetic and `step_s_array` its numpy twin. All figures are estimates.
"""

from __future__ import annotations

import math
from typing import get_args

from gpuplan.errors import InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.comm import node_link
from gpuplan.estimate.engine_profile import engine_memory_calibration, engine_profile_peak
from gpuplan.estimate.gemm_shape import expert_half_width
from gpuplan.estimate.infer_step_model import StepBreakdown, StepCostModel
from gpuplan.estimate.kv_cache import kv_bytes_per_token
from gpuplan.estimate.links import FusedA2A, Link, fused_a2a_links
from gpuplan.estimate.memory_infer import (
    check_serving_layout,
    estimate_inference_memory,
    expert_ranks,
    matrix_bytes_per_param,
    max_batch_that_fits,
)
from gpuplan.estimate.memory_train import stage_layers
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.hardware.catalog import Catalog
from gpuplan.hardware.schema_devices import Accelerator
from gpuplan.i18n import tr
from gpuplan.units import GB, GIB
from gpuplan.workload.engines import EngineProfile
from gpuplan.workload.jobs import FP4_FORMATS, InferenceJob, KVDtype, Layout, WeightFormat, check_layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["StepBreakdown", "StepCostModel", "fp4_peak", "node_devices", "step_cost_model", "weight_stream_bandwidth"]

ACT_BYTES = 2.0  # activations travel in 16 bits between layers and ranks
NODE_DEVICES = 8  # devices per node the catalog assumes (docs/catalog.md)
WEIGHT_FORMATS = get_args(WeightFormat)
CUSTOM_AR_STEPS = 3  # latency steps of a one-shot all-reduce: the start barrier, then the reads of all peers
KV_DTYPES = get_args(KVDtype)  # formats always dequantized to 16 bits inside the GEMM


# --- construction -----------------------------------------------------------------------
def _peak(acc: Accelerator, dtype: str) -> float | None:
    v = acc.dense_tflops(dtype)
    return None if v is None else v * 1e12


def _gemm_rate(acc: Accelerator, weights: str) -> tuple[float, bool, str]:
    """(FLOP/s peak of the weight format's GEMMs, dequantized?, which peak: 'bf16' or the 8-bit dtype)."""
    p16 = _peak(acc, "bf16") or _peak(acc, "fp16")
    if p16 is None:
        raise InputError(field="accelerator", value=acc.id, allowed="a part with a 16-bit dense peak in the catalog")
    if weights in ("fp8", "int8"):
        p8 = _peak(acc, weights)
        if p8 is not None:
            return p8, False, weights
    if weights in FP4_FORMATS:  # W4A4 GEMMs on FP4 tensor cores (NVFP4 on Blackwell, MXFP4 on Blackwell and CDNA 4)
        return fp4_peak(acc, weights, field="weights") * 1e12, False, "fp4"
    return p16, weights != "bf16" and weights != "fp16", "bf16"


def fp4_peak(acc: Accelerator, what: str, *, field: str) -> float:
    """The part's dense FP4 peak (TFLOPS); InputError naming the parts that have one when it has none."""
    p4 = acc.dense_tflops("fp4")
    if p4 is None:
        raise InputError(field=field, value=what,
                         allowed=f"a format {acc.id} computes in: it has no FP4 tensor cores (no fp4_dense_tflops)",
                         hint="FP4 (NVFP4, MXFP4) runs on Blackwell (B200, GB200, B300, GB300) and MI355X; use fp8 "
                              "or int4 weights here")
    if what == "nvfp4" and acc.software_stack != "cuda":
        # NVFP4 (E4M3 scale per 16 values) is NVIDIA's block format; CDNA 4's matrix cores take the OCP MX formats
        raise InputError(field=field, value=what, allowed=f"mxfp4 on {acc.id} (its FP4 tensor cores take OCP MX "
                         "formats)", hint="NVFP4 is NVIDIA Blackwell's format; AMD CDNA 4 computes MXFP4")
    return float(p4)


def _check(spec: ModelSpec, layout: Layout, acc: Accelerator, scale_out: Link | None) -> None:
    check_layout(spec, layout)
    check_serving_layout(layout)
    if acc.hbm_bandwidth_gbps is None:
        raise InputError(field="accelerator", value=acc.id, allowed="a part with a memory bandwidth in the catalog")
    node = node_devices(acc)
    across = layout.pp > 1 and layout.tp <= node and (layout.tp * layout.pp) % node == 0 and scale_out is not None
    if layout.tp * layout.pp > node and not across:
        raise InputError(field="tp", value=layout.tp, allowed=f"tp x pp <= {node} (one node of {acc.id}), or "
                         f"pipeline stages over whole nodes of {node} with the network between them",
                         hint="an attention group stays inside one node; add replicas, attention data parallelism, or "
                              "pipeline stages across nodes with a scale-out link")
    if layout.ep * layout.pp > node and scale_out is None:
        raise InputError(field="ep", value=layout.ep, allowed=f"ep x pp <= {node} without a scale-out network",
                         hint="an expert-parallel group across nodes needs the network its all-to-all crosses")


def weight_stream_bandwidth(acc: Accelerator, engine: EngineProfile, *, gemv: bool) -> float:
    """B/s at which `engine`'s kernels stream weights on `acc` (engine terms already for this part): the
    HBM share, capped by SMs x clock x the bytes one SM keeps in flight per cycle (Little's law); GEMV
    (one token, 16-bit weights) or tiled GEMM kernels. Parts without SM data keep the share alone."""
    share = float(acc.hbm_bandwidth_gbps or 0.0) * GB * engine.value("memory_bw_efficiency")
    if not acc.sm_count or not acc.sm_boost_clock_mhz:
        return share
    per_cycle = engine.value("gemv_bytes_per_sm_cycle" if gemv else "gemm_bytes_per_sm_cycle")
    return min(share, acc.sm_count * acc.sm_boost_clock_mhz * 1e6 * per_cycle)


def node_devices(acc: Accelerator) -> int:
    """Devices of one node of `acc` (the catalog's 8-device node, or its larger fast-link domain)."""
    return max(NODE_DEVICES, acc.fully_connected_domain or 1)


def _profile_reserve(spec: ModelSpec, job: InferenceJob, layout: Layout, engine: EngineProfile, cal: Calibration,
                     one_token: MemoryBreakdown) -> float:
    """Bytes an engine that sizes its KV cache from a start-up profile keeps out of it beyond the activations of one
    token: the larger of its dummy forward over max_batched_tokens and its sampler run over max_num_seqs rows
    (vLLM V1 profile_run: _dummy_run(max_num_tokens), then _dummy_sampler_run; the KV cache gets
    gpu_memory_utilization x memory minus weights, the torch peak and non-torch memory). 0 for engines that keep
    activations in the headroom of their memory fraction (SGLang mem_fraction_static, TensorRT-LLM)."""
    if engine.profile_sampler_bytes_per_logit <= 0:
        return 0.0
    peak = engine_profile_peak(spec, layout, engine, weights=job.weights, calibration=cal).peak_bytes
    return max(0.0, peak - one_token.activations_bytes)


# The step model's simplifications a run is told of (i18n keys infer.note.*), each only where it applies: sliding
# windows to a model with window layers, uniform routing to a MoE model, pipeline batches to pp > 1.
STEP_NOTES = ("sliding_windows", "uniform_routing", "pipeline_batches")


def _step_notes(spec: ModelSpec, pp: int) -> tuple[str, ...]:
    applies = (spec.sliding_window is not None, spec.moe is not None, pp > 1)
    return tuple(k for k, on in zip(STEP_NOTES, applies, strict=True) if on)


def step_cost_model(spec: ModelSpec, *, accelerator: Accelerator, layout: Layout, weights: str, kv_dtype: str,
                    engine: EngineProfile, catalog: Catalog | None = None,
                    scale_out: Link | None = None, attention_fp8: bool = False) -> StepCostModel:
    """The per-step cost coefficients of serving `spec` on one attention group of `layout` (tp x pp devices;
    with ep > tp, one of the ep/tp groups that share an expert-parallel group of ep x pp devices).

    `catalog` is accepted for callers that hold one. `scale_out` is one device's share of the
    node's scale-out NICs (links.inter_node_link), needed when an expert-parallel group spans nodes.
    `attention_fp8`: the attention kernels compute in fp8 over an fp8 KV cache (FlashMLA FP8,
    FlashAttention-3 FP8, Shah et al. 2024): their FLOPs run at the part's fp8 peak.
    """
    acc = accelerator
    _check(spec, layout, acc, scale_out)
    engine.check_runs_on(acc)  # TensorRT-LLM is CUDA only, MindIE CANN only (engines.yaml stacks)
    engine.check_serves(spec.name, weights)  # MindIE SplitFuse: four models, float or W8A8 (engines.yaml)
    engine = engine.for_accelerator(acc.id)  # the engine's terms on this hardware family, else its defaults
    engine = engine.on_part(acc, mla=spec.mla is not None)  # scheduler defaults on this part (get_batch_defaults)
    tp, pp, ep = layout.tp, layout.pp, layout.ep
    groups = max(ep // tp, 1)  # attention data-parallel groups sharing the experts (1: experts inside TP)
    if weights not in WEIGHT_FORMATS:
        raise InputError(field="weights", value=weights, allowed=", ".join(WEIGHT_FORMATS))
    if kv_dtype not in KV_DTYPES:
        raise InputError(field="kv_dtype", value=kv_dtype, allowed=", ".join(KV_DTYPES))
    if kv_dtype in FP4_FORMATS:  # an NVFP4 KV cache is read by Blackwell-only attention kernels (TensorRT-LLM)
        fp4_peak(acc, kv_dtype, field="kv_dtype")
    job = InferenceJob(weights=weights, kv_dtype=kv_dtype)
    e = engine.value
    bw = float(acc.hbm_bandwidth_gbps or 0.0) * GB
    stream = weight_stream_bandwidth(acc, engine, gemv=False)  # B/s of weight reads, GEMM kernels
    gemv_factor = stream / weight_stream_bandwidth(acc, engine, gemv=weights in ("bf16", "fp16"))
    rate, dequantized, rate_label = _gemm_rate(acc, weights)
    eff16 = e("gemm_efficiency")
    gemm_eff = (eff16 if rate_label == "bf16" else e("gemm_efficiency_fp4") if rate_label == "fp4"
                else e("gemm_efficiency_8bit"))
    p16 = _peak(acc, "bf16") or _peak(acc, "fp16") or rate
    dq = e("dequant_overhead") if dequantized else 0.0
    flop_s = rate * gemm_eff
    mb = matrix_bytes_per_param(spec, job)

    counts = count_params(spec)
    # One step crosses every stage in turn, so its latency sums all layers; each device
    # of a stage holds 1/tp of its layers' weights.
    dense_n, moe_n = spec.num_dense_layers, spec.num_moe_layers
    n_layers = dense_n + moe_n
    dl, ml = counts.dense_layer, counts.moe_layer

    # linear layers on this device: attention projections, dense FFN, shared experts, router
    dense_params = dense_n * (dl.attention_matrix + dl.mlp_matrix) / tp
    if ml is not None:
        dense_params += moe_n * (ml.attention_matrix + ml.shared_matrix) / tp
        dense_params += moe_n * ml.router  # replicated, 16-bit, tiny
    dense_compute = 2.0 * dense_params / flop_s  # 2 FLOPs per weight per token
    # one device holds 1/max(tp, ep) of the experts; per token of its group it computes the same share of the
    # active experts either way (groups x T tokens x top_k spread over ep = tp x groups devices)
    routed_params_all = moe_n * ml.experts_matrix / expert_ranks(layout) if ml is not None else 0.0
    routed_active = moe_n * ml.experts_active_matrix / tp if ml is not None else 0.0
    moe_eff = gemm_eff
    half_width: float | None = None
    if spec.moe is not None:  # narrow experts run grouped GEMMs below the dense efficiency
        f = spec.moe.expert_ffn_size / max(tp // ep, 1)  # one expert's columns on one device
        half_width = expert_half_width(acc, e("moe_expert_half_width"))
        moe_eff = gemm_eff * f / (f + half_width)
    moe_compute = 2.0 * routed_active / (rate * moe_eff)
    # the experts meet every group's tokens: (1 - k/E)^(T x groups) of them stay untouched
    untouched = (1.0 - spec.moe.top_k / spec.moe.num_experts) ** groups if spec.moe is not None and moe_n else 0.0

    head_params = (counts.lm_head or counts.embedding) / tp  # the LM head (tied or not) multiplies

    # attention
    heads_dev = spec.num_heads / tp
    prefill_pair_flops = 2.0 * heads_dev * (spec.attn_head_dim + spec.v_head_dim) * n_layers
    kv_bytes_layer_token = kv_bytes_per_token(spec, job.kv_cache_dtype, tp=tp, layers=1)
    if spec.mla is not None:  # absorbed MLA decode: scores and values in the latent space
        decode_flops_key = 2.0 * heads_dev * (2 * spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim)
    else:
        decode_flops_key = 2.0 * heads_dev * (spec.attn_head_dim + spec.v_head_dim)
    # An older engine's decode kernel that serves q query heads per thread block reads each KV head g / q times
    # for a GQA group of g (workload/engines.py DecodeKernelEra: TensorRT-LLM before XQA, TurboMind before v0.3);
    # L2 hits between those reads are not counted. Current kernels read it once per group.
    per_block = engine.decode_query_heads_per_block(job.kv_cache_dtype)
    kv_heads_dev = max((spec.num_kv_heads or spec.num_heads) / tp, 1.0)
    kv_reads = (max(1.0, math.ceil(heads_dev / kv_heads_dev / per_block))
                if per_block is not None and spec.mla is None else 1.0)
    p8 = _peak(acc, "fp8")
    if attention_fp8 and (kv_dtype != "fp8" or p8 is None):
        raise InputError(field="attention_fp8", value=True, allowed="an fp8 KV cache on a part with an fp8 peak",
                         hint="fp8 attention kernels read an fp8 KV cache on fp8 tensor cores")
    attn_rate = (p8 if attention_fp8 and p8 else p16) * e("attention_efficiency")

    # communication
    # The replica's ranks share one node, or its pipeline stages span whole nodes; bridged pairs (NVLink bridge,
    # MLU-Link) fall back to PCIe for larger groups (links.node_link).
    node = node_devices(acc)
    local = min(tp * pp, node)
    link = node_link(acc, local) if local > 1 else None
    if tp * pp > 1 and link is None:
        raise InputError(field="accelerator", value=acc.id, allowed="a part with a known intra-node link",
                         hint="tensor and pipeline parallelism need the GPU-to-GPU link speed")
    h = spec.hidden_size
    tp_fixed = tp_tok = ep_fixed = ep_tok = pp_fixed = pp_tok = 0.0
    one_shot = tp > 1 and engine.custom_allreduce_on(acc, tp)  # the engine's one-shot all-reduce, else NCCL's ring
    if link is not None:
        link_bw = float(link.bandwidth_gbyte_s) * GB
        alpha = float(link.latency_s)
        if tp > 1:
            ar_calls = 2 * n_layers - (moe_n if ep > 1 else 0)
            # NCCL's ring steps 2(tp - 1) times; an engine's one-shot kernel (vLLM custom_all_reduce.cuh
            # cross_device_reduce_1stage) signals every peer, reads all their buffers at once and signals again:
            # CUSTOM_AR_STEPS whatever the group size, each `allreduce_latency_factor` x the link's alpha
            steps = CUSTOM_AR_STEPS * e("allreduce_latency_factor") if one_shot else 2 * (tp - 1)
            tp_fixed = ar_calls * steps * alpha
            tp_tok = ar_calls * 2 * (tp - 1) / tp * h * ACT_BYTES / link_bw
        if 1 < ep <= tp and spec.moe is not None:
            # Tokens are replicated over the TP group after attention, so dispatch is an all-gather
            # and combine a reduce-scatter of T x hidden values over the ep ranks (vLLM's
            # all-gather/reduce-scatter all2all backend for EP under TP attention)
            ep_fixed = moe_n * 2 * (ep - 1) * alpha
            ep_tok = moe_n * 2 * (ep - 1) / ep * h * ACT_BYTES / link_bw
        if pp > 1:
            # of the pp - 1 sends a step makes between stages, tp x pp / node - 1 cross to the next node over the
            # scale-out link, the rest stay on the node's link; the two fields hold the mean send. A stage passes
            # the hidden state and the residual, 2 x h values per token, each TP rank sending its 1/tp slice over
            # its own link share (vLLM send_tensor_dict(..., all_gather_group=get_tp_group()))
            cross = tp * pp // node - 1 if tp * pp > node and scale_out is not None else 0
            sends = [(float(link.latency_s), link_bw, pp - 1 - cross)]
            if cross and scale_out is not None:
                sends.append((float(scale_out.latency_s), float(scale_out.bandwidth_gbyte_s) * GB, cross))
            pp_fixed = sum(lat * n for lat, _, n in sends) / (pp - 1)
            pp_tok = sum(2 * h * ACT_BYTES / tp / bw * n for _, bw, n in sends) / (pp - 1)

    a2a_link: Link | None = None
    fused: FusedA2A | None = None
    ep_prefill_tok: float | None = None  # None: a prompt token moves as a decode token does
    if ep > tp and spec.moe is not None:
        # DeepEP all-to-all per MoE layer: each token's top_k copies dispatched (fp8 with fp8 weights, else 16
        # bits) and combined in 16 bits; the tp ranks of a group send 1/tp of its tokens each. Inside one node
        # over NVLink, across nodes over the device's scale-out NIC share (DeepEP README: low-latency kernels
        # move 128 tokens x top-8 x 7168 at 39-46 GB/s per H800 on 400 Gb/s CX7, i.e. at the NIC's rate)
        spans = ep * pp > node_devices(acc)
        a2a_link = scale_out if spans else node_link(acc, ep * pp)
        if a2a_link is None:
            raise InputError(field="accelerator", value=acc.id, allowed="a part with a known intra-node link",
                             hint="expert parallelism needs the GPU-to-GPU link speed")
        copy_bytes = (1.0 if weights == "fp8" else ACT_BYTES) + ACT_BYTES  # dispatch + combine of one copy
        k = spec.moe.top_k
        ep_fixed = moe_n * 2 * float(a2a_link.latency_s)
        # decode (low-latency kernels, pure RDMA): every one of a token's top_k copies crosses the link
        ep_tok = moe_n * k * h * copy_bytes / tp / (float(a2a_link.bandwidth_gbyte_s) * GB)
        fused = None if spans else fused_a2a_links(acc, ep)
        if fused is not None:
            # a fabric whose fused decode operators were measured (CloudMatrix-Infer's FusedDispatch/FusedCombine on
            # UB, links.yaml ub_a2a_*): decode copies at their effective rates, dispatched in INT8 with scales and
            # combined in 16 bits (Zuo et al. 2025); prompt tokens (other kernels) keep the link's alpha-beta
            ep_prefill_tok = ep_tok
            dispatch_bw = float(fused.dispatch.bandwidth_gbyte_s) * GB
            combine_bw = float(fused.combine.bandwidth_gbyte_s) * GB
            ep_tok = moe_n * k * h / tp * (fused.dispatch_bytes_per_value / dispatch_bw + ACT_BYTES / combine_bw)
        if spans:
            # prefill (normal kernels, NVLink and RDMA forwarding): a token crosses the network once per remote
            # node that holds one of its experts, E = (N - 1)(1 - (1 - 1/N)^k) of the N nodes for uniform routing,
            # and reaches its experts over NVLink; the slower of the two paths sets the time (DeepEP README)
            nodes = ep * pp / node_devices(acc)
            remote = (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** k)
            nvlink = node_link(acc, node_devices(acc))
            rdma_s = remote * h * copy_bytes / (float(a2a_link.bandwidth_gbyte_s) * GB)
            nvl_s = k * h * copy_bytes / (float(nvlink.bandwidth_gbyte_s) * GB) if nvlink is not None else 0.0
            ep_prefill_tok = moe_n * max(rdma_s, nvl_s) / tp

    # memory: the engine's budget, workspace and runtime overhead
    cal = engine_memory_calibration(engine)
    mem_gib = acc.memory_gib
    if mem_gib is None:
        raise InputError(field="accelerator", value=acc.id, allowed="a part with a memory size in the catalog")
    mem = estimate_inference_memory(spec, job.model_copy(update={"context": 1}), layout, calibration=cal)
    profile_reserve = _profile_reserve(spec, job, layout, engine, cal, mem)
    fit = max_batch_that_fits(spec, job.model_copy(update={"memory_fraction": engine.gpu_memory_fraction,
                                                           "context": 1}),
                              mem_gib * GIB, layout, calibration=cal, reserve_bytes=profile_reserve)
    heavy_layers = max(d + m for d, m in stage_layers(spec, layout))

    terms = engine.used()
    skip = {"dequant_overhead"} if not dequantized else set()
    skip |= {"moe_expert_half_width", "moe_layer_overhead_ratio"} if spec.moe is None else set()
    skip |= {"gemm_efficiency_8bit"} if rate_label in ("bf16", "fp4") else set()
    skip |= {"gemm_efficiency_fp4"} if rate_label != "fp4" else set()
    skip |= {"gemv_bytes_per_sm_cycle", "gemm_bytes_per_sm_cycle"} if not acc.sm_count else set()
    skip |= {"allreduce_latency_factor"} if not one_shot else set()
    skip |= {"graph_launch_s"} if not engine.graph_mode else set()
    used_terms = {k: v for k, v in terms.items() if k not in skip}
    assumptions = {
        "engine": engine.id,
        "gemm_peak": rate_label + (" (weights dequantized to 16 bits in the GEMM)" if dequantized else ""),
        "gemm_peak_tflops": rate / 1e12,
        "hbm_bandwidth_gbps": acc.hbm_bandwidth_gbps,
        "weight_stream_gbps": {"gemm": stream / GB, "one_token": stream / gemv_factor / GB},
        "tp_link": link.label if link is not None else None,
        # the TP all-reduce's latency: the engine's one-shot kernel (fixed steps) or the ring (2(tp - 1) steps)
        "tp_all_reduce": None if tp == 1 else "one-shot kernel" if one_shot else "ring",
        "attention_groups": groups,
        "attention_peak": "fp8" if attention_fp8 else "bf16",
        "ep_link": fused.label if fused is not None else a2a_link.label if a2a_link is not None else None,
        # a step captured as one graph: the engine's own per-layer kernel tails and one graph dispatch per step
        "graph_mode": engine.graph_mode,
        # the expert width at half the dense efficiency on this part's SMs, and the routed experts' GEMM efficiency
        "expert_half_width_columns": half_width,
        "expert_gemm_efficiency": moe_eff if spec.moe is not None else None,
        # reads of each KV head per decode step: 1 for GQA-grouped kernels, more for an older engine's per-head ones
        "decode_kv_reads_per_kv_head": kv_reads,
        "engine_version": engine.version,
        "max_num_seqs": engine.max_num_seqs,
        # device bytes the engine's start-up sampler profile keeps out of the KV cache beyond the forward's peak
        "profile_sampler_reserve_gib": profile_reserve / GIB,
        "stage_layers": n_layers,
        "kv_dtype": job.kv_cache_dtype,
        "hardware_terms": sorted({str(t["scope"]) for t in used_terms.values() if t["scope"] != "engine"}),
        # the step model's own simplifications, in both languages (i18n infer.note.*), as memory estimates give theirs
        "notes": [tr(f"infer.note.{k}", "en") for k in _step_notes(spec, pp)],
        "notes_zh": [tr(f"infer.note.{k}", "zh") for k in _step_notes(spec, pp)],
        "pp_link": (scale_out.label if tp * pp > node and scale_out is not None else link.label if link else None)
        if pp > 1 else None,
    }
    return StepCostModel(
        dense_compute_per_token=dense_compute * (1.0 + dq),
        dense_dequant_per_token=dense_compute * dq,
        dense_read=dense_params * mb / stream,
        moe_compute_per_token=moe_compute * (1.0 + dq),
        moe_dequant_per_token=moe_compute * dq,
        moe_read_all=routed_params_all * mb / stream,
        moe_untouched_base=untouched,
        head_compute_per_row=2.0 * head_params / (p16 * eff16),
        head_read=head_params * 2.0 / stream,
        prefill_attn_per_pair=prefill_pair_flops / attn_rate,
        decode_kv_read_per_token=kv_reads * kv_bytes_layer_token * n_layers / (bw * e("kv_read_efficiency")),
        decode_attn_flops_per_token=decode_flops_key * n_layers / attn_rate,
        tp_comm_fixed=tp_fixed,
        tp_comm_per_token=tp_tok,
        ep_comm_fixed=ep_fixed,
        ep_comm_per_token=ep_tok,
        ep_comm_per_prefill_token=ep_prefill_tok if ep_prefill_tok is not None else ep_tok,
        pp_comm_fixed=pp_fixed,
        pp_comm_per_token=pp_tok,
        pp_stages=pp,
        # a MoE layer launches more operators than a dense one (routing, permutation, grouped GEMMs): where each
        # costs host dispatch time (eager or partly captured stacks) its fixed time scales with their count
        layer_overhead=e("layer_overhead_s") * (dense_n + moe_n * e("moe_layer_overhead_ratio")),
        # a captured graph's dispatch once per step (Zuo et al. 2025: 0.6-0.8 ms per graph dispatch on CANN)
        step_overhead=e("step_overhead_s") + (e("graph_launch_s") if engine.graph_mode else 0.0),
        seq_overhead=e("seq_overhead_s"),
        request_overhead=e("request_overhead_s"),
        gemv_read_factor=gemv_factor,
        overlap_exponent=e("roofline_overlap_exponent"),
        kv_capacity_tokens=fit.max_tokens,
        kv_bytes_per_token=kv_bytes_layer_token * heavy_layers,
        weights_bytes_per_device=mem.weights_bytes,
        terms=used_terms,
        assumptions=assumptions,
    )


