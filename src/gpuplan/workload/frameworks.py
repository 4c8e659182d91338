"""Training-framework profiles: the layouts a framework offers, its kernels, overlaps and gradient reduction.

Each framework (Megatron-Core, NeMo, MindSpeed, Megatron-DeepSpeed, DeepSpeed, FSDP, torchtitan, LLM Foundry,
InternEvo, MindFormers, DualPipe...) is one entry of `data/frameworks.yaml`, with its source. A profile says
- which parallel axes, ZeRO stages and recomputation the framework offers (the planner searches only those:
  `layout_axes`);
- which kernels it runs (`fused` Megatron/Transformer Engine-class kernels or `hf` modules), which set both
  the saved activations and the attention kernel efficiency;
- whether its tensor-parallel collectives overlap the GEMMs by default (`tp_comm_overlap`);
- the calibration terms whose value differs under it (`terms`: gradient reduction in fp32 under Megatron,
  DualPipe's overlapped all-to-all), each sourced. `Calibration` terms not named keep their shipped values.

A job that names no framework (`TrainingJob.framework = None`) runs on the shipped terms: the best a
competent team reaches with Megatron-Core (TP overlap on, bf16 gradient reduction) or FSDP.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpuplan import yamlio
from gpuplan.errors import unknown_name
from gpuplan.hardware.schema_devices import StackKind
from gpuplan.terms import Term

# Megatron-Core's output-discarding recompute modules (TransformerConfig.recompute_modules): the module's output is
# not kept for the backward and is rebuilt from its saved input; "core_attn" is the `selective` recompute level
RecomputeModule = Literal["layernorm", "mla_up_proj", "moe_act"]

__all__ = ["Axis", "FrameworkId", "FrameworkProfile", "FrameworkTerm", "RecomputeModule", "StackFramework", "framework",
           "framework_ids", "load_frameworks", "stack_framework"]

_STRICT = ConfigDict(extra="forbid", frozen=True)

Axis = Literal["tp", "pp", "vpp", "cp", "ep"]
# The ids of data/frameworks.yaml, for option and request schemas (the loader checks that they agree).
FrameworkId = Literal["megatron", "nemo", "mindspeed", "paddle", "megatron_deepspeed", "deepspeed", "fsdp",
                      "hf_trainer", "llamafactory", "torchtune", "unsloth", "llmfoundry", "torchtitan", "internevo",
                      "mindformers", "dualpipe", "nanotron", "colossalai"]
Support = Literal["pytorch", "deepspeed", "megatron", "mindspore", "paddlepaddle"]


class FrameworkTerm(Term):
    """A calibration term's value under one framework (a `Term`: value, unit, source), with its date."""

    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")


class FrameworkProfile(BaseModel):
    """One training framework (data/frameworks.yaml explains each field)."""

    model_config = _STRICT

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")  # one of FrameworkId (load_frameworks checks the set)
    name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    support: Support
    family: Literal["megatron", "data_parallel"]
    axes: tuple[Axis, ...] = ()
    zero_stages: tuple[Literal[0, 1, 2, 3], ...] = Field(min_length=1)
    recompute: tuple[Literal["none", "selective", "full"], ...] = Field(min_length=1)
    kernels: Literal["fused", "hf"]
    tp_comm_overlap: bool
    memory_reading: Literal["device", "torch_allocator"] = Field(
        default="device", description="what the framework's reported peak memory counts: `device`, all the device "
        "memory the job holds (nvidia-smi); `torch_allocator`, PyTorch's caching-allocator counters "
        "(torch.cuda.max_memory_allocated / reserved), which leave out the CUDA context and library workspaces")
    memory_reading_source: str = ""
    zero_param_sync: Literal["all_gather", "broadcast"] = Field(
        default="all_gather", description="how a sharded optimizer returns the updated 16-bit parameters: one "
        "all-gather per bucket (Megatron-Core, DeepSpeed), or one broadcast from every shard owner (InternEvo)")
    zero_param_sync_source: str = ""
    zero_param_overlap: bool = Field(
        default=True, description="whether a sharded optimizer's parameter return overlaps compute (bucketed "
        "all-gathers under the next forward or the backward); False: it follows the step, exposed whole "
        "(InternEvo's shipped configs: hybrid_zero_optimizer overlap_sync_param=False)")
    zero_param_overlap_source: str = ""
    zero_group_default: int | None = Field(
        default=None, ge=1, description="the ZeRO shard group the framework's shipped configs use when a job states "
        "none (InternEvo zero1=dict(size=8)); None: the whole data-parallel group")
    zero_group_default_source: str = ""
    sequence_parallel: bool = Field(
        default=True, description="whether the framework splits norms, dropout and residual activations over the TP "
        "ranks (Megatron sequence parallelism) unless a job says otherwise; False: its default TP mode replicates "
        "them on every TP rank (InternEvo's mtp)")
    sequence_parallel_source: str = ""
    recompute_early_stop: bool = Field(
        default=False, description="whether full recomputation stops before each dense layer's last GEMM: PyTorch's "
        "non-reentrant checkpoint (torch >= 2.1, early stop on by default) stops once every tensor the backward needs "
        "is regenerated, so the MLP down projection is not rerun; reentrant checkpoints (Megatron, DeepSpeed, "
        "torch.utils.checkpoint(use_reentrant=True)) rerun the whole layer")
    recompute_early_stop_source: str = ""
    zero3_with_pp: bool = Field(
        default=False, description="whether the framework shards parameters (ZeRO-3/FSDP) inside pipeline stages "
        "(torchtitan: FSDP2 + PP); Megatron's distributed optimizer is ZeRO-1 and DeepSpeed's pipeline engine "
        "refuses ZeRO-2/3")
    zero3_with_pp_source: str = ""
    moe_probs_in_activation: bool = Field(
        default=False, description="whether the routed experts weight their outputs by the router's probabilities "
        "inside the activation (weighted SwiGLU before the second expert GEMM), so the experts' outputs are not "
        "saved for the probabilities' gradient; False: the combine multiplies the outputs by the probabilities and "
        "autograd keeps them (Hugging Face MoE blocks, Megatron-Core before April 2025)")
    moe_probs_in_activation_source: str = ""
    recompute_modules: tuple[RecomputeModule, ...] = Field(
        default=(), description="output-discarding recompute modules the framework's recipes set unless a job states "
        "them (TrainingJob.recompute_modules)")
    recompute_modules_source: str = ""
    main_grad_fp32: bool = Field(
        default=False, description="whether a 16-bit (or fp8) run accumulates its gradients in an fp32 buffer, 4 bytes "
        "per parameter held next to the 16-bit weights (Megatron-LM's main_grad: 'bf16 parameters, fp32 gradients' "
        "= 6 + 12/d bytes per parameter with the distributed optimizer); False: gradients in the weights' width")
    main_grad_fp32_source: str = ""
    moe_act_input_fp8: bool = Field(
        default=False, description="whether an fp8 run caches the routed experts' SwiGLU inputs (the first expert "
        "GEMM's gate and up outputs) in fp8 for the backward instead of 16 bits")
    moe_act_input_fp8_source: str = ""
    adamw_variant: str | None = Field(
        default=None, description="the AdamW variant (an optimizers.yaml id) the framework's recipes run, counted "
        "when a job asks for the default `adamw`")
    adamw_variant_source: str = ""
    terms: dict[str, FrameworkTerm] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _storage_facts_sourced(self) -> FrameworkProfile:
        """A profile that sets one of the storage facts names its source."""
        for name in ("main_grad_fp32", "moe_act_input_fp8", "adamw_variant"):
            if getattr(self, name) and not getattr(self, f"{name}_source"):
                raise ValueError(f"framework {self.id}: {name} needs {name}_source")
        return self

    def has(self, axis: Axis) -> bool:
        return axis in self.axes

    def describe(self) -> dict[str, object]:
        """The profile as plain data, for a plan's assumptions."""
        return {"id": self.id, "name": self.name, "source": self.source, "family": self.family,
                "axes": list(self.axes), "zero_stages": list(self.zero_stages), "recompute": list(self.recompute),
                "kernels": self.kernels, "tp_comm_overlap": self.tp_comm_overlap,
                "zero_param_sync": self.zero_param_sync, "zero_param_overlap": self.zero_param_overlap,
                "zero_group_default": self.zero_group_default,
                "sequence_parallel": self.sequence_parallel, "recompute_early_stop": self.recompute_early_stop,
                "zero3_with_pp": self.zero3_with_pp, "main_grad_fp32": self.main_grad_fp32,
                "moe_act_input_fp8": self.moe_act_input_fp8, "adamw_variant": self.adamw_variant,
                "terms": {k: {"value": t.value, "unit": t.unit, "source": t.source} for k, t in self.terms.items()}}


class StackFramework(BaseModel):
    """The framework teams on one software stack train with (MindSpeed-LLM on CANN), named when none is given."""

    model_config = _STRICT

    stack: StackKind
    framework: FrameworkId
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")


class _FrameworkFile(BaseModel):
    model_config = _STRICT

    schema_version: Literal[1]
    as_of: str
    frameworks: tuple[FrameworkProfile, ...]
    stack_default_frameworks: tuple[StackFramework, ...] = ()


@cache
def _load_file() -> _FrameworkFile:
    path = resources.files("gpuplan.workload") / "data" / "frameworks.yaml"
    try:
        return _FrameworkFile.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))
    except ValidationError as exc:  # a shipped-data defect: say where
        raise RuntimeError(f"workload/data/frameworks.yaml: {exc}") from None


def stack_framework(stack: str) -> StackFramework | None:
    """The framework a team on `stack` trains with when it names none (frameworks.yaml stack_default_frameworks:
    MindSpeed-LLM on CANN); None where the plan names no framework (Megatron-style layouts on CUDA/ROCm)."""
    return next((f for f in _load_file().stack_default_frameworks if f.stack == stack), None)


@cache
def load_frameworks() -> dict[str, FrameworkProfile]:
    """Every shipped profile by id (data/frameworks.yaml)."""
    data = _load_file()
    out: dict[str, FrameworkProfile] = {p.id: p for p in data.frameworks}
    if len(out) != len(data.frameworks) or set(out) != set(get_args(FrameworkId)):
        raise RuntimeError("workload/data/frameworks.yaml: duplicate ids, or ids that differ from FrameworkId")
    return out


def framework_ids() -> tuple[str, ...]:
    return tuple(load_frameworks())


def framework(framework_id: str) -> FrameworkProfile:
    """The profile of `framework_id`; an InputError naming the field, the known ids and the closest ones."""
    profiles = load_frameworks()
    if framework_id not in profiles:
        raise unknown_name("framework", framework_id, profiles)
    return profiles[framework_id]
