"""What the user wants to run: a training or inference job and its parallel layout.

Records are pydantic models (keyword-only, frozen, unknown keys rejected) validated at
construction; `check_layout` validates a layout against a model, raising `InputError`
that names the field.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gpuplan.errors import InputError
from gpuplan.workload.frameworks import RecomputeModule
from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.model_spec import ModelSpec

__all__ = [
    "LORA_TARGETS",
    "InferenceJob",
    "Layout",
    "TrainingJob",
    "check_layout",
    "default_global_batch",
    "serving_layout",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)

Method = Literal["full", "lora", "qlora"]
Recompute = Literal["none", "selective", "full"]
Attention = Literal["flash", "triton", "eager"]
# Layer kernels that set the saved activations: "hf" = Hugging Face transformers modules (RMSNorm saves an
# fp32 copy, SwiGLU keeps three tensors); "fused" = Megatron-Core / Transformer Engine fused norm+linear and
# SwiGLU; "auto" = fused when the layout uses TP or PP (only Megatron-class frameworks offer them), else hf.
Kernels = Literal["auto", "hf", "fused"]
# Training data: token ids read from pre-tokenized files (Megatron indexed datasets), or text tokenized online.
DataLoading = Literal["pretokenized", "online"]
# QLoRA frozen-base format: bitsandbytes NF4 with double quantization (Dettmers et al. 2023) or GPTQ int4
# checkpoints run through auto-gptq (Frantar et al. 2023), which dequantize each weight to fp16 for a matmul.
QuantFormat = Literal["nf4", "gptq"]
# Who shards and steps the optimizer: "torch" (DDP/FSDP + torch.optim) or "deepspeed" (the ZeRO optimizer,
# which flattens the local gradient partition into an fp32 copy at the step and keeps bucket buffers).
ZeroImpl = Literal["torch", "deepspeed"]
TrainPrecision = Literal["bf16", "fp16", "fp32", "fp8", "nvfp4", "mxfp4"]
WeightFormat = Literal["bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4"]
KVDtype = Literal["bf16", "fp16", "fp8", "int8", "nvfp4"]
# 4-bit float formats (block-scaled): their GEMMs run on FP4 tensor cores, which only some parts have (the catalog's
# fp4_dense_tflops: Blackwell B200/GB200/B300/GB300, CDNA 4 MI355X)
FP4_FORMATS: tuple[str, ...] = ("nvfp4", "mxfp4")
# the weight formats the serving planner searches (fp16 serves as bf16 does)
SERVED_WEIGHTS: tuple[str, ...] = ("bf16", "fp8", "int8", "int4")
# How the KV cache is held: a preallocated pool (vLLM/SGLang/TRT-LLM paged blocks, a static cache) or tensors
# re-allocated one token longer per decode step by torch.cat (Hugging Face transformers generate, dynamic cache).
KVLayout = Literal["pool", "concat"]
# Which matrices a quantized weight format covers: every projection, or the MLP/expert ones only (attention
# projections kept 16-bit, as in Meta's Llama 3.1 FP8 checkpoints).
QuantScope = Literal["all", "mlp"]

# LoRA target names: attention q/k/v/o projections, FFN gate/up/down projections.
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


class Layout(BaseModel):
    """A parallel layout. Sizes are degrees; the device count is tp*pp*dp*cp (EP lives inside DP*CP)."""

    model_config = _STRICT

    tp: int = Field(default=1, gt=0, description="tensor parallel degree (Megatron-LM)")
    pp: int = Field(default=1, gt=0, description="pipeline stages")
    dp: int = Field(default=1, gt=0, description="data-parallel replicas")
    cp: int = Field(default=1, gt=0, description="context-parallel degree (sequence split for attention)")
    ep: int = Field(default=1, gt=0, description="expert-parallel degree (carved out of dp*cp)")
    vpp: int = Field(default=1, gt=0, description="interleaved virtual stages per pipeline rank")
    zero_stage: Literal[0, 1, 2, 3] = Field(default=0, description="ZeRO/FSDP sharding stage over dp*cp")
    seq_parallel: bool = Field(default=True, description="Megatron sequence parallelism with TP")

    @property
    def num_devices(self) -> int:
        return self.tp * self.pp * self.dp * self.cp


def serving_layout(tp: int = 1, pp: int = 1, ep: int = 1) -> Layout:
    """A serving replica's layout: ep <= tp spreads the experts over the TP group; ep > tp runs attention
    data-parallel over ep/tp groups of tp devices that share the experts (dp = ep / tp)."""
    return Layout(tp=tp, pp=pp, ep=ep, dp=max(ep // tp, 1))


PpPartition = Literal["balanced", "layers", "layers_and_embeddings"]  # how pipeline stages split a model


class TrainingJob(BaseModel):
    """One training step's shape and the choices that set its memory."""

    model_config = _STRICT

    method: Method = "full"
    seq_len: int = Field(default=4096, gt=0, description="tokens per sequence")
    micro_batch: int = Field(default=1, gt=0, description="sequences per micro-batch per DP rank")
    global_batch: int | None = Field(default=None, gt=0, description="sequences per optimizer step")
    global_batch_fixed: bool = Field(
        default=True, description="the global batch is the team's requirement: a layout must run exactly it (its "
        "data-parallel batch dp x micro_batch divides it). False: a target (the ~4M-token default when none is "
        "stated), which each layout rounds to the nearest multiple of its data-parallel batch, as a team sizes "
        "its batch to its cluster (a 288-device NVL72 cluster runs 1152 sequences, not 1024)")
    precision: TrainPrecision = "bf16"
    optimizer: str = "adamw"
    recompute: Recompute = "none"
    attention: Attention = "flash"
    kernels: Kernels = "auto"
    data_loading: DataLoading = "pretokenized"
    lora_rank: int = Field(default=16, gt=0)
    lora_targets: tuple[str, ...] = LORA_TARGETS
    quant_format: QuantFormat = Field(default="nf4", description="QLoRA base weights: nf4 (bitsandbytes) or gptq")
    zero_impl: ZeroImpl = Field(default="torch", description="optimizer runtime: torch (FSDP/DDP) or deepspeed")
    loss_upcast: bool = Field(default=True, description="the loss upcasts the logits to fp32 (HF loss, autocast); "
                              "False: cross-entropy of the 16-bit logits (pure fp16/bf16 without autocast)")
    loss: Literal["full", "chunked", "fused"] = Field(
        default="full", description="cross-entropy: full (the whole logits upcast at once, HF), chunked (torchtune "
        "CEWithChunkedOutputLoss: one chunk of tokens upcast at a time) or fused (Liger fused linear cross-entropy: "
        "no full logits)")
    loss_chunks: int = Field(default=8, gt=0, description="chunks of the chunked loss (torchtune num_output_chunks)")
    compile: bool = Field(
        default=False, description="the layers and the loss run under torch.compile (torchtune compile=True: "
        "training.compile_model, compile_loss): layers save what fused kernels save, and the compiled cross-entropy "
        "keeps the 16-bit logits for its backward instead of fp32 log-probabilities")
    trainable_extra: tuple[Literal["embed", "head"], ...] = Field(
        default=(), description="LoRA/QLoRA: modules trained in full beside the adapters (PEFT modules_to_save: "
        "a trainable copy of each, the original kept frozen)")
    optimizer_offload: Literal["none", "cpu", "nvme"] = Field(
        default="none", description="optimizer states and fp32 master weights off the device: cpu (DeepSpeed "
        "ZeRO-Offload; bitsandbytes paged optimizers, whose states live in unified memory the driver evicts to "
        "host RAM) or nvme (ZeRO-Infinity)")
    optimizer_in_bwd: bool = Field(
        default=False, description="each parameter is stepped as soon as its gradient is accumulated and the "
        "gradient freed (torchtune optimizer_in_bwd, torch register_post_accumulate_grad_hook): one gradient live "
        "at a time; needs one micro-batch per step")
    fp8_params: bool = Field(
        default=False, description="LoRA with precision fp8: the frozen base matrices are stored in fp8, one byte "
        "each, not 16-bit (NeMo model.fp8_params, Transformer Engine fp8_model_init; NVIDIA's MLPerf Llama 2 70B "
        "LoRA recipe sets fp8_params with FP8); embeddings, norms and the LM head stay 16-bit")
    zero_group: int | None = Field(
        default=None, ge=1, description="ranks one ZeRO shard group spans (InternEvo zero1=N, DeepSpeed hpZ/MiCS "
        "partition size): optimizer states are sharded over min(this, DP) ranks and replicated across the groups; "
        "None: the whole data-parallel group")
    framework: str | None = Field(
        default=None, description="training framework profile (workload/data/frameworks.yaml): its kernels, "
        "overlaps and gradient reduction; None: the shipped terms (Megatron-Core / FSDP at their best)")
    tp_comm_overlap: bool | None = Field(
        default=None, description="tensor-parallel collectives overlapped with the GEMMs (Transformer Engine "
        "userbuffers, --tp-comm-overlap); None: the framework's default")
    moe_dispatcher: Literal["alltoall", "flex"] | None = Field(
        default=None, description="how MoE layers dispatch tokens to experts: alltoall (Megatron-Core's alltoall "
        "token dispatcher: the grouped expert GEMMs take each expert's token count on the host, a device-to-host "
        "sync per MoE layer and pass, after which the GPU waits for the host to launch the rest of the layer) or "
        "flex (DeepEP/HybridEP, --moe-token-dispatcher-type flex, with CUDA graphs over the router and the "
        "dispatch preprocessing: no host wait); None: alltoall")
    grad_reduce_overlap: bool | None = Field(
        default=None, description="data-parallel gradient reduction overlapped with the backward (PyTorch DDP and "
        "Megatron --overlap-grad-reduce buckets, DeepSpeed overlap_comm); False: it runs after the backward, whole "
        "(Megatron-LM 2022, DeepSpeed ZeRO-1/2 with overlap_comm false); None: overlapped (calibration dp_overlap)")
    recompute_early_stop: bool | None = Field(
        default=None, description="full recomputation stops once the backward's tensors are regenerated, skipping "
        "each dense layer's MLP down projection (PyTorch non-reentrant checkpoint, torch >= 2.1: Composer/LLM Foundry, "
        "torchtitan, torchtune); False: the whole layer reruns (Megatron, DeepSpeed, reentrant checkpoint, "
        "torch < 2.1); None: the framework's default")
    recompute_modules: tuple[RecomputeModule, ...] | None = Field(
        default=None, description="submodules whose outputs are discarded after the forward and rebuilt in the "
        "backward, beside the recompute level (Megatron-Core --recompute-modules, output-discarding checkpoints): "
        "layernorm (the norms' outputs, the next linear layer's input), mla_up_proj (MLA's query and key/value up "
        "projections and RoPE: the per-head q, k and v), moe_act (the routed experts' SwiGLU output, the second "
        "expert GEMM's input); under full recompute they change nothing. None: the framework's default (DualPipe: "
        "all three, DeepSeek-V3 report sec. 3.2.3 and 3.3.2), else none")
    pp_partition: PpPartition = Field(
        default="balanced", description="how pipeline stages split the model (estimate/pipeline_split.py): "
        "balanced (each stage 1/pp of the work: uneven stage sizes, Megatron-Core "
        "account_for_embedding/loss_in_pipeline_split), "
        "layers (equal layers, the LM head on the last stage: Megatron-LM, DeepSpeed type:transformer) or "
        "layers_and_embeddings (the embedding and the head count as a layer each: DeepSpeed "
        "type:transformer|embedding, Llama 3's one layer fewer on the first and last stages)")
    sequence_parallel: bool | None = Field(
        default=None, description="Megatron sequence parallelism with TP (--sequence-parallel): norms, dropout and "
        "residual activations split over the TP ranks; False: every TP rank holds and computes them whole "
        "(Megatron-LM before 2022, Megatron-DeepSpeed before its rebase, InternEvo's default mtp mode); None: the "
        "framework's default (on without a framework)")

    @field_validator("framework")
    @classmethod
    def _known_framework(cls, v: str | None) -> str | None:
        if v is not None:
            framework_profile(v)  # InputError naming the known ids
        return v

    @model_validator(mode="before")
    @classmethod
    def _framework_kernels(cls, data: Any) -> Any:
        """A named framework runs its own kernels unless the job states them."""
        if isinstance(data, dict) and data.get("framework") and data.get("kernels", "auto") == "auto":
            data = {**data, "kernels": framework_profile(str(data["framework"])).kernels}
        return data

    @model_validator(mode="after")
    def _fp8_params_need_fp8_lora(self) -> TrainingJob:
        if self.fp8_params and (self.method != "lora" or self.precision != "fp8"):
            raise InputError(field="fp8_params", value=True, allowed="precision fp8 with method lora",
                             hint="fp8 primary weights of a frozen LoRA base (NeMo fp8_params); drop it or set "
                                  "--precision fp8 --method lora")
        return self

    def zero_shard_group(self) -> int | None:
        """The ranks one ZeRO shard group spans: the job's `zero_group`, else its framework's shipped default
        (InternEvo: 8), else None (the whole data-parallel group)."""
        if self.zero_group is not None:
            return self.zero_group
        return framework_profile(self.framework).zero_group_default if self.framework is not None else None

    def zero_shard_ranks(self, dp_group: Any) -> Any:
        """The ranks one ZeRO shard spans in a data-parallel group of `dp_group` (a number or an array): the whole
        group, or `zero_shard_group()` ranks of it, replicated across the rest."""
        group = self.zero_shard_group()
        return dp_group if group is None else np.minimum(dp_group, group)

    def sequence_parallel_on(self) -> bool:
        """Whether TP ranks split the norm, dropout and residual activations: the job's statement, else its
        framework's default (InternEvo: off), else on (Megatron-Core)."""
        if self.sequence_parallel is not None:
            return self.sequence_parallel
        return framework_profile(self.framework).sequence_parallel if self.framework is not None else True

    def recompute_early_stop_on(self) -> bool:
        """Whether full recomputation stops before each dense layer's last GEMM: the job's statement, else its
        framework's default (PyTorch non-reentrant checkpoint stacks: on), else off (Megatron-Core reruns the
        whole layer)."""
        if self.recompute_early_stop is not None:
            return self.recompute_early_stop
        return framework_profile(self.framework).recompute_early_stop if self.framework is not None else False

    def recompute_modules_on(self) -> frozenset[str]:
        """The output-discarding recompute modules: the job's statement, else its framework's default, else none."""
        if self.recompute_modules is not None:
            return frozenset(self.recompute_modules)
        return (frozenset(framework_profile(self.framework).recompute_modules) if self.framework is not None
                else frozenset())

    def optimizer_on(self) -> str:
        """The optimizer a memory estimate counts: the job's, except that the default `adamw` under a framework
        whose recipes run another AdamW variant (FrameworkProfile.adamw_variant: DualPipe's BF16 moments) is that."""
        if self.optimizer == "adamw" and self.framework is not None:
            return framework_profile(self.framework).adamw_variant or self.optimizer
        return self.optimizer

    def gradient_bytes(self) -> float:
        """Bytes per trainable parameter of the gradients a full-parameter run holds: the weights' width (2 for 16-bit
        and fp8 runs, 4 for fp32), or 4 where the framework accumulates them in fp32 main-gradient buffers
        (FrameworkProfile.main_grad_fp32: Megatron-LM's 'bf16 parameters, fp32 gradients')."""
        if self.precision == "fp32":
            return 4.0
        return 4.0 if self.framework is not None and framework_profile(self.framework).main_grad_fp32 else 2.0

    def num_microbatches(self, layout: Layout) -> int:
        """Micro-batches per step per pipeline; without a global batch, enough to fill the pipeline."""
        if self.global_batch is None:
            return max(layout.pp, 1)
        return max(1, self.global_batch // (self.micro_batch * layout.dp))


class InferenceJob(BaseModel):
    """A serving deployment's memory-relevant choices."""

    model_config = _STRICT

    weights: WeightFormat = "bf16"
    kv_dtype: KVDtype | None = Field(default=None, description="None: the weight dtype for 16-bit weights, else bf16")
    batch: int = Field(default=1, gt=0, description="concurrent requests")
    context: int = Field(default=4096, gt=0, description="tokens per request (prompt + output)")
    int4_group_size: int = Field(default=128, gt=0, description="weights per scale group (GPTQ/AWQ)")
    memory_fraction: float = Field(default=0.9, gt=0, le=1, description="engine's share of device memory")
    quant_scope: QuantScope = Field(default="all", description="matrices in the weight format: all or mlp only")
    kv_layout: KVLayout = Field(default="pool", description="KV cache preallocated (pool) or grown by torch.cat")
    generated: int = Field(default=0, ge=0, description="tokens of `context` produced by decoding")
    prompt_logits: Literal["last", "all"] = Field(
        default="last", description="prefill computes LM-head logits for the last prompt token (serving engines) "
        "or for every prompt token (Hugging Face generate before num_logits_to_keep, remote-code models)")

    @property
    def kv_cache_dtype(self) -> str:
        if self.kv_dtype is not None:
            return self.kv_dtype
        return self.weights if self.weights in ("bf16", "fp16") else "bf16"


TOKENS_PER_STEP_DEFAULT = 4 * 2**20  # about 4M tokens per optimizer step (Llama 2/3 pretraining)


def default_global_batch(seq_len: int, devices: int = 1) -> int:
    """Sequences per step when none is given: about 4M tokens, a multiple of the device count."""
    return devices * max(1, -(-TOKENS_PER_STEP_DEFAULT // (seq_len * devices)))


def check_layout(spec: ModelSpec, layout: Layout, *, seq_len: int | None = None) -> None:
    """Raise InputError when `layout` cannot split `spec`."""
    if spec.num_heads % layout.tp:
        divisors = [d for d in range(1, spec.num_heads + 1) if spec.num_heads % d == 0]
        raise InputError(field="tp", value=layout.tp,
                         allowed=f"a divisor of num_heads={spec.num_heads}: {divisors}",
                         hint="tensor parallelism splits attention heads")
    if layout.pp > spec.num_layers:
        raise InputError(field="pp", value=layout.pp, allowed=f"1..{spec.num_layers} (num_layers)",
                         hint="each pipeline stage needs at least one layer")
    if layout.vpp > 1 and (layout.pp == 1 or layout.pp * layout.vpp > spec.num_layers):
        raise InputError(field="vpp", value=layout.vpp,
                         allowed=f"1, or with pp > 1 a value with pp*vpp <= num_layers={spec.num_layers}",
                         hint="each virtual pipeline stage needs at least one layer")
    if layout.ep > 1:
        if spec.moe is None:
            raise InputError(field="ep", value=layout.ep, allowed="1 for a dense model",
                             hint="expert parallelism needs an MoE model")
        if spec.moe.num_experts % layout.ep:
            raise InputError(field="ep", value=layout.ep,
                             allowed=f"a divisor of num_experts={spec.moe.num_experts}")
        group = layout.dp * layout.cp * layout.tp
        if group % layout.ep:
            raise InputError(field="ep", value=layout.ep, allowed=f"a divisor of dp*cp*tp={group}",
                             hint="expert parallelism is carved out of the data- and tensor-parallel ranks")
    if seq_len is not None and seq_len % layout.cp:
        raise InputError(field="cp", value=layout.cp, allowed=f"a divisor of seq_len={seq_len}")
