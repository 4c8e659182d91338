"""FLOPs of a training step: model FLOPs (for MFU) and hardware FLOPs (with recomputation).

Conventions (see docs/flops.md):

* Only matrix multiplications count, and each multiply-add is 2 FLOPs. Norms, softmax,
  activations, RoPE and biases are elementwise and left out, as in Megatron-LM
  (Narayanan et al. 2021, appendix) and `torch.utils.flop_counter.FlopCounterMode`.
* A linear layer with N weights costs 2N FLOPs per token forward (Kaplan et al. 2020,
  "6N" = forward 2N + backward 4N). MoE layers count the top-k routed experts a token
  visits, the shared experts and the router; the LM head counts, the embedding (a
  gather) does not.
* Attention scores (Q K^T) and probabilities times V count the FULL s x s products by
  default: 2 * heads * keys * (qk_head_dim + v_head_dim) per token and layer, keys = s.
  This is the convention of Narayanan et al. 2021 (96 B s l h^2 (1 + s/6h + V/16lh)) and
  PaLM appendix B (6N + 12 L H Q T), and what eager attention executes. `causal=True`
  halves the keys, as FlashAttention's causal kernels (and current Megatron-LM) count.
  Sliding-window layers see min(s, window) keys.
* Model FLOPs = forward + backward = 3 x forward (backward: one GEMM for the input
  gradient and one for the weight gradient). MFU divides model FLOPs by peak; HFU adds
  the recomputed forward (Korthikanti et al. 2022): full recompute reruns every layer's
  forward (not the LM head); selective recompute reruns the attention core only. With
  early stop (PyTorch's non-reentrant checkpoint, torch >= 2.1, its default), full recompute
  stops once every tensor the backward needs is regenerated: a dense layer's last GEMM (the MLP
  down projection, whose input is saved before it runs) is skipped (torch.utils.checkpoint docs,
  set_checkpoint_early_stop; pytorch/pytorch#96866).

Everything here is pure and cheap; `flops_per_token` takes a numpy array of sequence
lengths for the vectorized planner.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gpuplan.workload.jobs import Recompute, TrainingJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params, ffn_matrices

__all__ = [
    "ForwardFlops",
    "StepFlops",
    "attention_keys",
    "flops_per_token",
    "forward_flops",
    "step_flops",
    "training_flops",
]

FLOPS_PER_MAC = 2  # one multiply-add
BACKWARD_FACTOR = 2  # backward = input-gradient GEMM + weight-gradient GEMM (Narayanan et al. 2021)


def attention_keys(seq_len: npt.ArrayLike, *, window: int | None = None,
                   causal: bool = False) -> npt.NDArray[np.float64]:
    """Keys each query is counted against, averaged over the sequence (broadcasts over arrays).

    Full convention: min(s, window). Causal: half of that for a full layer (s / 2); with a
    window w < s the mean over queries of min(i, w), i.e. w - w^2 / (2 s).
    """
    s = np.asarray(seq_len, dtype=np.float64)
    if window is None:
        return s / 2 if causal else s
    w = float(window)
    if not causal:
        return np.minimum(s, w)
    return np.where(s <= w, s / 2, w - w * w / (2 * np.maximum(s, 1.0)))


@dataclass(frozen=True, slots=True)
class _Coefficients:
    """Per-token forward FLOPs of a spec that do not depend on the sequence length."""

    attention_proj: float
    core_per_key: float  # per token, per layer, per key: 2 * heads * (qk_head_dim + v_head_dim)
    full_layers: int  # layers attending over the whole sequence
    swa_layers: int
    window: int | None
    mlp_dense: float
    mlp_dense_last: float  # the dense MLPs' down projections (their last GEMM)
    experts_routed: float
    experts_shared: float
    router: float
    lm_head: float
    mla_up_proj: float  # MLA's query and key/value up projections, a share of attention_proj

    @property
    def static(self) -> float:
        return (self.attention_proj + self.mlp_dense + self.experts_routed + self.experts_shared
                + self.router + self.lm_head)

    def core(self, seq_len: npt.ArrayLike, causal: bool) -> npt.NDArray[np.float64]:
        keys = self.full_layers * attention_keys(seq_len, causal=causal)
        if self.swa_layers:
            keys = keys + self.swa_layers * attention_keys(seq_len, window=self.window, causal=causal)
        return self.core_per_key * keys


def _coefficients(spec: ModelSpec) -> _Coefficients:
    p = count_params(spec)
    f = FLOPS_PER_MAC
    layer_attn = p.dense_layer.attention_matrix  # same attention in dense and MoE layers
    # MLA (DeepSeek-V2 sec. 2.1) is covered by `attention_matrix`: q down/up (or plain q),
    # kv down (with the shared rope key), kv up to per-head nope-k and v, output projection.
    routed = shared = router = 0.0
    if p.moe_layer is not None and spec.moe is not None:
        n = p.num_moe_layers
        routed = f * p.moe_layer.experts_active_matrix * n  # top-k experts only
        shared = f * p.moe_layer.shared_matrix * n  # includes a shared-expert gate (Qwen2-MoE)
        router = f * spec.hidden_size * spec.moe.num_experts * n
    up = 0.0
    if spec.mla is not None:  # Megatron-Core qkv_up_proj_and_rope_apply: q up (or q_proj without q LoRA) and kv up
        m = spec.mla
        up = f * spec.num_layers * spec.num_heads * ((m.q_lora_rank or spec.hidden_size) * m.qk_head_dim
                                                     + m.kv_lora_rank * (m.qk_nope_head_dim + m.v_head_dim))
    return _Coefficients(
        attention_proj=f * layer_attn * spec.num_layers,
        # Q K^T: heads x keys x qk_head_dim MACs; probs x V: heads x keys x v_head_dim MACs.
        # GQA/MQA share K and V between heads but every query head still multiplies.
        core_per_key=f * spec.num_heads * (spec.attn_head_dim + spec.v_head_dim),
        full_layers=spec.num_layers - spec.num_swa_layers,
        swa_layers=spec.num_swa_layers,
        window=spec.sliding_window,
        mlp_dense=f * p.dense_layer.mlp_matrix * p.num_dense_layers,
        mlp_dense_last=f * p.dense_layer.mlp_matrix * p.num_dense_layers / ffn_matrices(spec),  # one of its matrices
        experts_routed=routed,
        experts_shared=shared,
        router=router,
        # The LM head multiplies even when tied to the embedding; the embedding is a gather.
        lm_head=f * spec.vocab_size * spec.hidden_size,
        mla_up_proj=up,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ForwardFlops:
    """Forward FLOPs PER TOKEN of the whole model (all layers), by part."""

    seq_len: int  # tokens per sequence, which sets the attention core
    causal: bool  # True: causal half of the s x s products; False: full products (MFU default)
    attention_proj: float  # q/k/v/o (or MLA down/up) projections
    attention_core: float  # Q K^T and probabilities x V
    mlp_dense: float  # dense FFN layers
    mlp_dense_last: float  # their down projections (the last GEMM of a dense layer), a share of mlp_dense
    experts_routed: float  # the top-k routed experts a token visits
    experts_shared: float  # always-on shared experts
    router: float  # MoE gating projection
    lm_head: float  # output projection to the vocabulary
    mla_up_proj: float = 0.0  # MLA's up projections (inside attention_proj): what recompute module mla_up_proj reruns

    @property
    def layers(self) -> float:
        """Everything inside the transformer layers (what full recomputation reruns)."""
        return self.total - self.lm_head

    def recomputed(self, recompute: Recompute, *, early_stop: bool = False,
                   modules: frozenset[str] = frozenset()) -> float:
        """The forward work rerun during backward (Korthikanti et al. 2022): full recomputation reruns every
        layer (not the LM head), less each dense layer's down projection under early stop; selective
        recomputation the attention core; the output-discarding module mla_up_proj (Megatron-Core
        recompute_modules) MLA's up projections besides (layernorm and moe_act rerun elementwise kernels only)."""
        if recompute == "full":
            return self.layers - (self.mlp_dense_last if early_stop else 0.0)
        extra = self.mla_up_proj if "mla_up_proj" in modules else 0.0
        if recompute == "selective":
            return self.attention_core + extra
        return extra

    @property
    def total(self) -> float:
        return (self.attention_proj + self.attention_core + self.mlp_dense + self.experts_routed
                + self.experts_shared + self.router + self.lm_head)

    def by_part(self) -> dict[str, float]:
        """Parts in a fixed order (sums to `total`)."""
        return {
            "attention_proj": self.attention_proj,
            "attention_core": self.attention_core,
            "mlp_dense": self.mlp_dense,
            "experts_routed": self.experts_routed,
            "experts_shared": self.experts_shared,
            "router": self.router,
            "lm_head": self.lm_head,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class StepFlops:
    """FLOPs of one training step of `tokens` tokens: model FLOPs (MFU) and hardware FLOPs (HFU)."""

    forward: ForwardFlops  # per token
    tokens: int  # tokens in the step (sequences x seq_len)
    recompute: Recompute
    early_stop: bool = False  # full recomputation stops before each dense layer's last GEMM (torch >= 2.1)
    modules: frozenset[str] = frozenset()  # output-discarding recompute modules (TrainingJob.recompute_modules)

    @property
    def model_flops_per_token(self) -> float:
        """Forward + backward = 3 x forward, no recomputation (the MFU numerator per token)."""
        return (1 + BACKWARD_FACTOR) * self.forward.total

    @property
    def recompute_flops_per_token(self) -> float:
        """The forward work rerun during backward (Korthikanti et al. 2022; ForwardFlops.recomputed)."""
        return self.forward.recomputed(self.recompute, early_stop=self.early_stop, modules=self.modules)

    @property
    def hardware_flops_per_token(self) -> float:
        return self.model_flops_per_token + self.recompute_flops_per_token

    @property
    def model_flops(self) -> float:
        return self.model_flops_per_token * self.tokens

    @property
    def hardware_flops(self) -> float:
        return self.hardware_flops_per_token * self.tokens

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary (FLOPs as floats)."""
        return {
            "tokens": self.tokens,
            "seq_len": self.forward.seq_len,
            "causal": self.forward.causal,
            "recompute": self.recompute,
            "forward_per_token": self.forward.by_part(),
            "model_flops_per_token": self.model_flops_per_token,
            "hardware_flops_per_token": self.hardware_flops_per_token,
            "model_flops": self.model_flops,
            "hardware_flops": self.hardware_flops,
        }


def forward_flops(spec: ModelSpec, seq_len: int, *, causal: bool = False) -> ForwardFlops:
    """Forward FLOPs per token of `spec` at `seq_len` tokens per sequence, by part."""
    if seq_len <= 0:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    c = _coefficients(spec)
    return ForwardFlops(
        seq_len=seq_len, causal=causal, attention_proj=c.attention_proj,
        attention_core=float(c.core(seq_len, causal)), mlp_dense=c.mlp_dense, mlp_dense_last=c.mlp_dense_last,
        experts_routed=c.experts_routed, experts_shared=c.experts_shared, router=c.router, lm_head=c.lm_head,
        mla_up_proj=c.mla_up_proj,
    )


def step_flops(spec: ModelSpec, *, seq_len: int, tokens: int, recompute: Recompute = "none",
               causal: bool = False, early_stop: bool = False, modules: frozenset[str] = frozenset()) -> StepFlops:
    """FLOPs of a training step over `tokens` tokens cut into sequences of `seq_len`."""
    if tokens < 0:
        raise ValueError(f"tokens must be non-negative, got {tokens}")
    return StepFlops(forward=forward_flops(spec, seq_len, causal=causal), tokens=tokens, recompute=recompute,
                     early_stop=early_stop, modules=modules)


def training_flops(spec: ModelSpec, job: TrainingJob, *, tokens: int | None = None,
                   causal: bool = False) -> StepFlops:
    """FLOPs of one optimizer step of `job`: `tokens` default to the global batch (else the micro-batch).

    Counts full-parameter training; the job's `attention` (flash/eager) does not change the
    count: the convention is chosen by `causal`.
    """
    if tokens is None:
        tokens = (job.global_batch or job.micro_batch) * job.seq_len
    return step_flops(spec, seq_len=job.seq_len, tokens=tokens, recompute=job.recompute, causal=causal,
                      early_stop=job.recompute_early_stop_on(), modules=job.recompute_modules_on())


def flops_per_token(spec: ModelSpec, seq_len: npt.ArrayLike, *, recompute: Recompute = "none",
                    causal: bool = False, early_stop: bool = False
                    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(model, hardware) training FLOPs per token for each sequence length; broadcasts over arrays.

    Equal to `step_flops(...).model_flops_per_token` / `.hardware_flops_per_token` element-wise.
    """
    c = _coefficients(spec)
    core = c.core(seq_len, causal)
    forward = c.static + core
    model = (1 + BACKWARD_FACTOR) * forward
    if recompute == "full":
        extra = forward - c.lm_head - (c.mlp_dense_last if early_stop else 0.0)
    elif recompute == "selective":
        extra = core
    else:
        extra = np.zeros_like(core)
    return model, model + extra
