"""The parts an engine profile is built from (workload/engines.py): its terms and what they were tuned on, decode
kernel and start-up profile eras, per-part scheduler defaults and the engine x hardware term entries of
`data/engines.yaml`. Split out of engines.py so that each module stays small; engines.py re-exports them."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuplan.hardware.schema_devices import Accelerator

__all__ = ["ENGINE_TERMS", "HOST_DISPATCH_TERMS", "STRICT", "DecodeKernelEra", "EngineTerm", "HardwareTerms",
           "PartDefaults", "ProfileEra", "Scheduling", "TunedOn", "model_key", "version_key"]

Scheduling = Literal["fcfs", "prefill_first", "decode_first", "static"]

# The calibration terms every profile carries (data/engines.yaml explains each).
ENGINE_TERMS = (
    "gemm_efficiency",
    "gemm_efficiency_8bit",
    "gemm_efficiency_fp4",
    "memory_bw_efficiency",
    "gemv_bytes_per_sm_cycle",
    "gemm_bytes_per_sm_cycle",
    "kv_read_efficiency",
    "attention_efficiency",
    "step_overhead_s",
    "seq_overhead_s",
    "layer_overhead_s",
    "moe_layer_overhead_ratio",
    "allreduce_latency_factor",
    "dequant_overhead",
    "moe_expert_half_width",
    "request_overhead_s",
    "mtp_acceptance",
    "roofline_overlap_exponent",
    "graph_launch_s",
)

# Terms of an eager (host-dispatched) step that a step captured as one graph does not pay: under `graph_mode` the
# hardware entries' values of these give way to the engine's own (CUDA-graph kernel tails), and `graph_launch_s`
# is charged once per step instead (docs/inference.md, "Captured graphs").
HOST_DISPATCH_TERMS = ("layer_overhead_s", "moe_layer_overhead_ratio")

STRICT = ConfigDict(extra="forbid", frozen=True)


class TunedOn(BaseModel):
    """The ground-truth rows a term was tuned on, as a declarative selector (for refits and cross-validation):
    every row of `file` whose accelerator and engine are in the lists (an empty list selects all)."""

    model_config = STRICT

    file: Literal["inference", "training", "memory"]
    accelerator: tuple[str, ...] = ()
    engine: tuple[str, ...] = ()
    # the value a source other than these rows gives, and that source: what a cross-validation fold holding out
    # every row that tunes the term uses (estimate.calibration.TunedOn.prior)
    prior: float | None = Field(default=None, ge=0)
    prior_source: str = ""


class EngineTerm(BaseModel):
    """One named empirical factor of an engine, with where it comes from."""

    model_config = STRICT

    value: float = Field(ge=0)
    unit: str = Field(min_length=1)
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    explanation: str = Field(min_length=1)
    note: str = ""
    tuned_on: TunedOn | None = None
    # The range the term's own source states (a kernel family's published spread, a measured interval): a refit on
    # validation rows searches inside it (validate/serving_terms.py), so a fold that holds out the rows pinning a
    # weakly identified term cannot walk it to a value no source supports. None at an end: that end is the
    # refit's default (a third / three times the value).
    literature_range: tuple[float | None, float | None] | None = None
    literature_range_source: str = ""
    scope: str = Field(default="engine", description="'engine' (the engine default) or the hardware entry's id")
    overridden: bool = False

    @model_validator(mode="after")
    def _range_holds_value(self) -> EngineTerm:
        if self.literature_range is None:
            if self.literature_range_source:
                raise ValueError("literature_range_source without literature_range: give the range [low, high]")
            return self
        if not self.literature_range_source:
            raise ValueError("literature_range needs literature_range_source: the source that states the range")
        lo, hi = self.literature_range
        if lo is None and hi is None:
            raise ValueError("literature_range: give at least one end, e.g. [0.5, 0.8] or [null, 0.8]")
        if (lo is not None and self.value < lo) or (hi is not None and self.value > hi):
            raise ValueError(f"value {self.value} lies outside its literature_range {list(self.literature_range)}: "
                             "move the value into the range or cite the source that widens it")
        return self


class DecodeKernelEra(BaseModel):
    """How an engine's decode attention read the KV cache before a version: query heads per thread block.

    A kernel that serves q query heads per block reads each KV head g / q times per step for a GQA group of g
    (TensorRT-LLM's masked multi-head attention before XQA: one head per block; LMDeploy TurboMind before its
    2024 attention rewrite: four). Current kernels serve the whole group (XQA, FlashInfer, FlashAttention):
    one read. A validation row states its engine version (`settings` engine_version); plans use current
    engines.
    """

    model_config = STRICT

    before_version: str = Field(pattern=r"^\d+(\.\d+)*$", description="versions older than this ran the kernel")
    query_heads_per_block: int = Field(ge=1)
    kv_dtypes: tuple[str, ...] = Field(default=(), description="KV-cache dtypes it applies to (empty: all)")
    source: str = Field(min_length=1)


class ProfileEra(BaseModel):
    """An engine's start-up memory profile before a version: its sampler's device bytes per logit and its token
    budget. vLLM V0 (before 0.8, when V1 became the default) ran `profile_run` over max_num_seqs prompts that
    share max_num_batched_tokens, which is max(max_model_len, `budget_floor_tokens`) while chunked prefill is
    off (vllm/config.py SchedulerConfig); prompts longer than `chunked_above_tokens` turned chunked prefill on
    with a budget of `chunked_budget_tokens`."""

    model_config = STRICT

    before_version: str = Field(pattern=r"^\d+(\.\d+)*$", description="versions older than this profiled so")
    sampler_bytes_per_logit: float = Field(gt=0)
    budget_floor_tokens: int = Field(gt=0)
    chunked_above_tokens: int = Field(gt=0)
    chunked_budget_tokens: int = Field(gt=0)
    source: str = Field(min_length=1)


class PartDefaults(BaseModel):
    """Scheduler defaults an engine picks from the part it starts on (vLLM `EngineArgs.get_batch_defaults`,
    vllm-ascend's `NPUPlatform.check_and_update_config`): devices with at least `min_memory_gib` (0: every part),
    named by `accelerators` (empty: any) and by none of `except_accelerators`, serving a model without MLA where
    `without_mla_only`, get the `max_num_seqs`, `max_batched_tokens`, `scheduling`, `chunked_prefill` and
    `kv_block_tokens` the entry names in place of the profile's, from `since_version` on."""

    model_config = STRICT

    min_memory_gib: float = Field(default=0.0, ge=0)
    accelerators: tuple[str, ...] = Field(default=(), description="only these accelerator ids or fnmatch globs "
                                                                  "(empty: every part)")
    except_accelerators: tuple[str, ...] = Field(default=(), description="accelerator ids or fnmatch globs")
    without_mla_only: bool = Field(default=False, description="only for models without multi-head latent attention")
    since_version: str = Field(pattern=r"^\d+(\.\d+)*$")
    max_num_seqs: int | None = Field(default=None, gt=0)
    max_batched_tokens: int | None = Field(default=None, gt=0)
    scheduling: Scheduling | None = None
    chunked_prefill: bool | None = None
    kv_block_tokens: int | None = Field(default=None, gt=0)
    source: str = Field(min_length=1)

    def applies(self, accelerator: Accelerator, version: str | None, mla: bool = False) -> bool:
        if version is not None and version_key(version) < version_key(self.since_version):
            return False
        if self.accelerators and not any(fnmatchcase(accelerator.id, g) for g in self.accelerators):
            return False
        if any(fnmatchcase(accelerator.id, g) for g in self.except_accelerators):
            return False
        if self.without_mla_only and mla:
            return False
        return (accelerator.memory_gib or 0.0) >= self.min_memory_gib


def model_key(name: str) -> str:
    """A model name compared loosely: lower case, letters, digits and dots only."""
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def version_key(text: str) -> tuple[int, ...]:
    """An engine version ("0.9.1", "v0.10") as up to three integers, for ordering."""
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


class HardwareTerms(BaseModel):
    """Terms of some engines on some accelerators (physics of the part under that engine's kernels)."""

    model_config = STRICT

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    engines: tuple[str, ...] = Field(min_length=1, description='engine ids, or "*" for every engine')
    accelerators: tuple[str, ...] = Field(min_length=1, description="accelerator ids or fnmatch globs")
    terms: dict[str, EngineTerm] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> HardwareTerms:
        unknown = [t for t in self.terms if t not in ENGINE_TERMS]
        if unknown:
            raise ValueError(f"hardware terms {self.id}: unknown terms {unknown}")
        return self

    def matches(self, engine_id: str, accelerator_id: str) -> bool:
        return (("*" in self.engines or engine_id in self.engines)
                and any(fnmatchcase(accelerator_id, g) for g in self.accelerators))
