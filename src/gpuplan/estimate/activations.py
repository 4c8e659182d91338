"""Activation memory: the tensors a training step saves for backward, per layer and device.

The model is an inventory of saved tensors per module, not one closed formula, so that
every term can be checked against PyTorch (tests sum the bytes that
`torch.autograd.graph.saved_tensors_hooks` sees on tiny Hugging Face models).

Reference implementation: Hugging Face transformers decoder layers (Llama, Qwen2/3,
Mixtral, DeepSeek-V3): RMSNorm upcasts to fp32 and saves the fp32 input and the
normalized 16-bit output; eager attention materialises the KV heads repeated to all
query heads and saves fp32 softmax probabilities plus their 16-bit copy; SDPA/flash
attention saves q, k, v (GQA not repeated), the output and the fp32 log-sum-exp
(FlashAttention-2, Dao 2023). Sharding follows Korthikanti et al. 2022 ("Reducing
Activation Recomputation in Large Transformer Models"): TP splits everything inside
attention and the MLP; sequence parallelism also splits the norms and layer inputs; CP
splits the sequence. Selective recomputation drops the attention core (their sec. 5),
full recomputation keeps one layer input per layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["ActivationBreakdown", "activation_breakdown", "compute_bytes", "fused_kernels", "uses_fused_kernels"]

FP32 = 4.0  # bytes
INDEX = 8.0  # bytes of an int64 index


def compute_bytes(precision: str) -> tuple[float, float]:
    """(bytes of a saved activation, bytes of a saved linear-layer input) for a training precision.

    FP8 training (Transformer Engine) keeps the inputs of linear layers in fp8 for the
    weight-gradient GEMM and everything else in bf16 (TE docs, FP8 primer).
    """
    if precision == "fp32":
        return 4.0, 4.0
    if precision == "fp8":
        return 2.0, 1.0
    return 2.0, 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivationBreakdown:
    """Saved-for-backward bytes of ONE micro-batch on one device (after TP/SP/CP sharding)."""

    dense_layer: dict[str, float]  # per dense layer, by saved tensor
    moe_layer: dict[str, float]  # per MoE layer (empty for dense models)
    first_stage_extra: dict[str, float]  # embedding-side tensors (token ids, rotary tables)
    last_stage_extra: dict[str, float]  # final norm, LM-head input, log-probs, labels
    logits_transient_bytes: float  # live during the loss only (16-bit logits + fp32 upcast)
    recompute_working_bytes: float  # one layer's activations rebuilt during backward (recompute)

    @property
    def dense_layer_bytes(self) -> float:
        return sum(self.dense_layer.values())

    @property
    def moe_layer_bytes(self) -> float:
        return sum(self.moe_layer.values())


def fused_kernels(kernels: str, tp: Any, pp: Any) -> Any:
    """Whether a step runs fused layer kernels (Megatron-Core / Transformer Engine) or HF modules;
    elementwise over numpy arrays of tp and pp, or scalars.

    "auto": TP and PP exist only in Megatron-class frameworks (Megatron-LM, NeMo, MindSpeed,
    Megatron-DeepSpeed), which fuse norms and SwiGLU; pure data-parallel runs (FSDP, ZeRO)
    are taken to run Hugging Face modules.
    """
    if kernels == "auto":
        return (np.asarray(tp) > 1) | (np.asarray(pp) > 1)
    return np.full(np.shape(tp), kernels == "fused")


def uses_fused_kernels(job: TrainingJob, layout: Layout) -> bool:
    """`fused_kernels` for one layout; a compiled model saves what fused kernels save (torch.compile: AOTAutograd's
    min-cut partitioner recomputes the norms' fp32 copies and SwiGLU's activation from their 16-bit inputs;
    tests/estimate/test_compile_memory_torch.py)."""
    return job.compile or bool(fused_kernels(job.kernels, layout.tp, layout.pp))


def _probs_in_activation(job: TrainingJob, fused: bool) -> bool:
    """Whether the routed experts apply the router's probabilities in their activation: the job's framework says
    (`moe_probs_in_activation`); without one, a fused-kernel layout is planned as current Megatron-Core (it does)
    and a Hugging Face one keeps the experts' outputs."""
    if job.framework is not None:
        return framework_profile(job.framework).moe_probs_in_activation
    return fused


def _moe_act_input_fp8(job: TrainingJob) -> bool:
    """Whether the routed experts' SwiGLU inputs are cached in fp8 (the job's framework says; fp8 runs only)."""
    return job.precision == "fp8" and job.framework is not None and framework_profile(job.framework).moe_act_input_fp8


def _norm(spec: ModelSpec, t: float, width: float, e: float, fused: bool = False) -> float:
    """Saved bytes of one norm over `t` tokens of `width`.

    HF RMSNorm: fp32 copy of the input (kept by pow/mul), the fp32 inverse RMS per token,
    and the 16-bit normalized tensor (kept by the weight multiply). In fp32 the copy is
    the input itself and the normalized tensor is fp32, giving the same (4 + e) bytes.
    LayerNorm (native kernel), and any fused norm (Apex/TE RMSNorm): the input plus fp32
    statistics per token; the normalized output is the next linear layer's saved input.
    """
    if spec.norm == "layernorm":
        return e * t * width + 2 * FP32 * t
    if fused:
        return e * t * width + FP32 * t
    return (FP32 + e) * t * width + FP32 * t


def _attention(spec: ModelSpec, job: TrainingJob, b: float, s: float, s_full: float, tp: int,
               e: float, e_lin: float, seq_div: float, fused: bool) -> dict[str, float]:
    t = b * s
    h, a = spec.hidden_size, spec.num_heads / tp
    g = max(spec.kv_heads / tp, 1.0)  # KV heads per rank; replicated when tp > kv heads
    dq, dv = spec.attn_head_dim, spec.v_head_dim
    out: dict[str, float] = {"attn_norm": _norm(spec, t, h, e, fused) / seq_div, "qkv_input": e_lin * t * h / seq_div}
    if spec.mla is not None:
        m = spec.mla
        if m.q_lora_rank is not None:
            out["mla_q_norm"] = _norm(spec, t, m.q_lora_rank, e, fused)
            out["mla_q_up_input"] = e_lin * t * m.q_lora_rank
        out["mla_kv_norm"] = _norm(spec, t, m.kv_lora_rank, e, fused)
        out["mla_kv_up_input"] = e_lin * t * m.kv_lora_rank
        # interleaved-RoPE cos/sin halves are sliced per layer (HF apply_rotary_pos_emb_interleave)
        out["mla_rotary_tables"] = 2 * e * s * (m.qk_rope_head_dim // 2)
        g = a  # MLA expands the latent to per-head k and v
    if spec.qk_norm:
        out["qk_norm"] = _norm(spec, t * (a + g), dq, e, fused)
    eager = job.attention == "eager"
    kv_heads_saved = a if eager else g  # eager repeats KV heads to all query heads (repeat_kv)
    out["q"] = e * t * a * dq
    out["k"] = e * t * kv_heads_saved * dq
    # MLA: v is a view of the kv up-projection output, whose whole storage (k_nope and v) stays alive
    v_width = spec.mla.qk_nope_head_dim + dv if spec.mla is not None else dv
    out["v"] = e * t * kv_heads_saved * v_width
    core: dict[str, float] = {}
    if eager:
        scores = b * a * s * s_full
        core["softmax_fp32"] = FP32 * scores
        if e != FP32:
            core["attn_probs"] = e * scores  # the 16-bit copy that multiplies V
    else:
        # The flash/SDPA output is laid out (b, s, heads, d) and IS the o_proj input: one tensor.
        core["softmax_lse"] = FP32 * b * a * s
    if job.recompute != "selective":
        out.update(core)
    out["o_input"] = e_lin * t * a * dv
    return out


def _ffn(spec: ModelSpec, t: float, ffn: float, e: float, e_lin: float, fused: bool = False) -> float:
    # SwiGLU: gate output (kept by SiLU), SiLU output and up output (kept by the product),
    # the product (input of down); a plain MLP keeps the up output and the activation output.
    # Fused SwiGLU (Megatron-Core bias_swiglu, TE LayerNormMLP) keeps only the gate+up output
    # and the product (Megatron-Core fusions/fused_bias_swiglu.py).
    if spec.mlp == "swiglu":
        return (2 if fused else 3) * e * t * ffn + e_lin * t * ffn
    return e * t * ffn + e_lin * t * ffn


def _moe(spec: ModelSpec, t: float, tp: int, e: float, e_lin: float, fused: bool, seq_div: float,
         probs_in_activation: bool = False, act_recomputed: bool = False,
         act_input_fp8: bool = False) -> dict[str, float]:
    assert spec.moe is not None
    m = spec.moe
    tk = t * m.top_k  # token-expert pairs; EP moves them but each rank keeps about its own count
    # With sequence parallelism each TP rank routes and dispatches its own t/tp tokens
    # (Megatron-Core MoE token dispatcher); the expert FFN below is charged as tk x f/tp.
    out = {
        # router scores (fp32), top-k indices and weights, sort/scatter indices, expert counts
        "router_and_dispatch": (FP32 * t * m.num_experts + tk * (INDEX * 4 + FP32 * 2) + FP32 * t) / seq_div,
        "expert_input": e_lin * tk * spec.hidden_size / seq_div,
        "expert_ffn": _ffn(spec, tk, m.expert_ffn_size / tp, e, e_lin, fused),
    }
    if act_recomputed:  # moe_act: the SwiGLU output (the second expert GEMM's input) is rebuilt in the backward
        out["expert_ffn"] -= e_lin * tk * m.expert_ffn_size / tp
    if act_input_fp8 and spec.mlp == "swiglu" and fused:
        # the SwiGLU input (gate and up outputs, 2 x f per token-expert pair) cached in fp8 instead of 16 bits
        # (FrameworkProfile.moe_act_input_fp8: DeepSeek-V3 report sec. 3.3.3)
        out["expert_ffn"] -= (e - 1.0) * 2 * tk * m.expert_ffn_size / tp
    if not probs_in_activation:
        # the combine multiplies each expert's output by its routing probability, so autograd keeps the outputs
        # for the probabilities' gradient (HF MoE blocks: routing_weights * expert output; Megatron-Core before
        # April 2025: unpermute with probs). Megatron-Core now weights inside the activation (weighted SwiGLU,
        # FrameworkProfile.moe_probs_in_activation), whose saved input (the first GEMM's output) is already counted.
        out["expert_output"] = e * tk * spec.hidden_size / seq_div
    if spec.family == "deepseek_v3":
        # DeepSeek-V3's router runs in fp32: fp32 copies of the input and of the router weight,
        # plus group-limited top-k masks and indices (HF DeepseekV3TopkRouter / MoE.route_tokens)
        out["router_fp32_input"] = FP32 * t * spec.hidden_size / seq_div
        out["router_fp32_weight"] = FP32 * spec.hidden_size * m.num_experts
        out["router_group_select"] = t * (m.num_experts + 3 * INDEX) / seq_div
    if m.num_shared_experts:
        out["shared_input"] = e_lin * t * spec.hidden_size / seq_div
        out["shared_ffn"] = _ffn(spec, t, m.shared_ffn_total / tp, e, e_lin, fused)
    return out


def activation_breakdown(spec: ModelSpec, job: TrainingJob, layout: Layout) -> ActivationBreakdown:
    """Saved activations of one micro-batch on one device of `layout`."""
    e, e_lin = compute_bytes(job.precision)
    tp, cp = layout.tp, layout.cp
    b, s_full = float(job.micro_batch), float(job.seq_len)
    s = s_full / cp
    t = b * s
    h = spec.hidden_size
    seq_div = float(tp) if (layout.seq_parallel and tp > 1) else 1.0

    fused = uses_fused_kernels(job, layout)
    modules = job.recompute_modules_on() if job.recompute != "full" else frozenset()
    attn = _attention(spec, job, b, s, s_full, tp, e, e_lin, seq_div, fused)
    rebuilt: dict[str, float] = {}  # one layer's tensors the output-discarding recompute rebuilds in the backward
    if "mla_up_proj" in modules and spec.mla is not None:
        # Megatron-Core MLASelfAttention qkv_up_proj_and_rope_apply under CheckpointWithoutOutput: the per-head q,
        # k and v are dropped after the core attention and rebuilt from the saved latents (their inputs)
        rebuilt.update({k: attn.pop(k) for k in ("q", "k", "v")})
    if "layernorm" in modules and spec.mla is not None:
        # input_layernorm is its own module beside MLA's down projections (a TENorm, not a fused LayerNormLinear):
        # its output, the down projections' saved input, is rebuilt from the norm's input
        rebuilt["qkv_input"] = attn.pop("qkv_input")
    mlp_norm = {"mlp_norm": _norm(spec, t, h, e, fused) / seq_div, "mlp_input": e_lin * t * h / seq_div}
    dense = {**attn, **mlp_norm, "mlp": _ffn(spec, t, spec.ffn_hidden_size / tp, e, e_lin, fused)}
    moe = ({**attn, **mlp_norm, **_moe(spec, t, tp, e, e_lin, fused, seq_div, _probs_in_activation(job, fused),
                                       act_recomputed="moe_act" in modules,
                                       act_input_fp8=_moe_act_input_fp8(job))}
           if spec.moe is not None else {})
    if "layernorm" in modules and moe:
        # a MoE layer's pre_mlp_layernorm is a module of its own (the router and the experts both read its output)
        rebuilt["mlp_input"] = moe.pop("mlp_input")
    if job.compile and spec.position_embedding == "rope" and spec.mla is None:
        # a compiled layer saves its own cos and sin, expanded to the batch (measured), where eager layers share one
        rope = {"rotary_tables": 2 * e * t * spec.attn_head_dim}
        dense.update(rope)
        moe.update(rope if moe else {})

    full_layer = max(sum(dense.values()), sum(moe.values()))
    recompute_working = sum(rebuilt.values())  # rebuilt one layer at a time
    if job.recompute == "full":
        # Only each layer's input survives the forward pass (activation checkpointing);
        # backward rebuilds one layer at a time.
        layer_input = {"layer_input": e * t * h / seq_div}
        dense = dict(layer_input)
        moe = dict(layer_input) if spec.moe is not None else {}
        recompute_working = full_layer

    first = {"token_ids": INDEX * t}
    if spec.position_embedding == "rope" and spec.mla is None and job.recompute != "full":
        first["rotary_tables"] = 2 * e * s * spec.attn_head_dim  # cos and sin, shared by all layers
    vocab = spec.vocab_size / tp  # vocab-parallel LM head and loss (Megatron); whole vocab when tp=1
    # cross-entropy on fp32-upcast logits (HF loss, autocast); without the upcast (no autocast, model
    # code such as Qwen's modeling_qwen.py: CrossEntropyLoss()(lm_logits[..., :-1, :].contiguous(), ...))
    # the saved log-probabilities and the logits' second copy (the shifted slice) stay 16-bit
    loss_e = FP32 if job.loss_upcast else e
    last = {
        # torchtune's compile_model compiles each layer, not the final norm: it stays as the kernels run it
        "final_norm": _norm(spec, t, h, e, bool(fused_kernels(job.kernels, tp, layout.pp))) / seq_div,
        "lm_head_input": e_lin * t * h / seq_div,
        "log_probs": loss_e * t * vocab,
        "labels": INDEX * t,
    }
    # full: the 16-bit logits and their whole upcast live at once (e + loss_e per logit); the log-softmax output
    # is saved for backward either way. chunked (torchtune CEWithChunkedOutputLoss, num_output_chunks): the
    # logits stay as 16-bit chunks and one chunk at a time is upcast. Measured on the CPU with the PyTorch
    # profiler: peak beyond the logits 8 and 4.5 bytes per logit (tests/estimate/test_loss_memory_torch.py).
    logits = (e + loss_e) * t * vocab
    if job.compile and job.loss != "fused":
        # torch.compile of the loss (torchtune training.compile_loss compiles the whole loss, or each chunk's
        # upcast + cross-entropy for CEWithChunkedOutputLoss): AOTAutograd's min-cut partitioner keeps the 16-bit
        # logits (the graph's input) plus each token's max and log-sum-exp, and recomputes the softmax in backward;
        # the upcast is fused away. Measured on the CPU (inductor and aot_eager_decomp_partition agree): nothing
        # beyond the logits during the forward pass, their 16-bit gradient at the loss's backward
        # (tests/estimate/test_loss_memory_torch.py).
        del last["log_probs"]
        last["saved_logits"] = e * t * vocab + 2 * FP32 * t
        logits = e * t * vocab  # the logits' gradient, formed at the loss's backward
    elif job.loss == "chunked":
        logits = (e + loss_e / job.loss_chunks) * t * vocab
    elif job.loss == "fused":
        # Liger fused linear cross-entropy (ops/fused_linear_cross_entropy.py): logits of
        # next_pow2(ceil(BT / ceil(V / H))) tokens at a time, upcast, softmax gradient formed in the forward
        # pass; what survives for backward is the gradient of the input (BT x H), not the log-probabilities
        chunk = min(t, 2 ** math.ceil(math.log2(max(1.0, t / math.ceil(vocab / h)))))
        last["log_probs"] = e * t * h
        logits = (e + FP32) * chunk * vocab
    return ActivationBreakdown(
        dense_layer=dense,
        moe_layer=moe,
        first_stage_extra=first,
        last_stage_extra=last,
        logits_transient_bytes=logits,
        recompute_working_bytes=recompute_working,
    )
