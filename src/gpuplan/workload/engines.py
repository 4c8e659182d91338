"""Serving-engine profiles: scheduler settings, memory budget and cost-model terms, as data.

Each engine (vLLM, SGLang, TensorRT-LLM, LMDeploy, MindIE, generic) is one entry of
`data/engines.yaml` with its documented defaults (source cited per profile) and the
calibration terms the per-step cost model (`gpuplan.estimate.infer_step`) uses for it:
one set per engine, tuned on the dev rows of ground-truth/inference.csv as a whole.
`engine(id, terms=..., settings=...)` returns a profile with user overrides applied and
marked, through the same `override_terms` as the other calibration files.

Terms that physics ties to an engine on one hardware family (achieved HBM bandwidth, GEMM
efficiency, per-layer host overheads of vllm-ascend or MindIE on Ascend, of vLLM on ROCm)
are the file's `hardware_terms`: each entry names the engines (or "*") and the accelerator
ids (fnmatch globs) it applies to. `EngineProfile.for_accelerator(id)` returns the profile
with those terms in place of the engine defaults (engine-specific entries over "*" ones; a
user override is never replaced); an engine or part no entry names keeps the defaults.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from gpuplan import yamlio
from gpuplan.errors import InputError, unknown_name
from gpuplan.hardware.schema_devices import Accelerator, StackKind
from gpuplan.terms import override_terms
from gpuplan.workload.engine_parts import (
    ENGINE_TERMS,
    HOST_DISPATCH_TERMS,
    STRICT,
    DecodeKernelEra,
    EngineTerm,
    HardwareTerms,
    PartDefaults,
    ProfileEra,
    Scheduling,
    TunedOn,
    model_key,
    version_key,
)
from gpuplan.workload.presets import get_preset

__all__ = ["ENGINE_TERMS", "HOST_DISPATCH_TERMS", "DecodeKernelEra", "EngineProfile", "EngineTerm", "HardwareTerms",
           "PartDefaults", "ProfileEra", "Scheduling", "StackDefault", "TunedOn",
           "default_engine", "default_engines_by_stack", "engine", "engine_ids",
           "default_terms", "hardware_terms", "load_engines"]


class EngineProfile(BaseModel):
    """A serving engine's defaults and its cost-model calibration terms."""

    model_config = STRICT

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*$")
    name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    gpu_memory_fraction: float = Field(gt=0, le=1, description="share of device memory the engine budgets")
    kv_block_tokens: int = Field(gt=0, description="tokens per paged-KV block (vLLM block_size)")
    max_num_seqs: int = Field(gt=0, description="most sequences in one iteration (vLLM max_num_seqs)")
    max_batched_tokens: int = Field(gt=0, description="token budget of one iteration (max_num_batched_tokens)")
    chunked_prefill: bool = Field(description="long prompts are split into chunks of the token budget")
    scheduling: Scheduling = Field(description="how an iteration is filled (data/engines.yaml)")
    runtime_overhead_gib: float = Field(ge=0, description="device memory outside weights and KV per device")
    runtime_overhead_source: str = Field(min_length=1)
    stacks: tuple[StackKind, ...] = Field(min_length=1, description="software stacks the engine runs on")
    stacks_source: str = Field(min_length=1)
    baseline: bool = Field(default=False, description="a modelling baseline, not a product a team deploys: never "
                           "suggested in place of the engine asked")
    terms: dict[str, EngineTerm]
    custom_allreduce_stacks: tuple[StackKind, ...] = Field(
        default=(), description="stacks on which the engine all-reduces its tensor-parallel group with its own "
                                "one-shot kernel over peer memory instead of NCCL/RCCL/HCCL's ring")
    custom_allreduce_source: str = ""
    min_cuda_capability: float | None = Field(
        default=None, ge=3.0, description="lowest NVIDIA compute capability the engine runs on (None: no floor known)")
    min_cuda_capability_source: str = ""
    decode_kernels: tuple[DecodeKernelEra, ...] = Field(
        default=(), description="decode attention kernels of older versions (DecodeKernelEra); none: grouped")
    part_defaults: tuple[PartDefaults, ...] = Field(
        default=(), description="scheduler defaults the engine picks by the part it starts on (on_part)")
    profile_sampler_bytes_per_logit: float = Field(
        default=0.0, ge=0, description="device bytes per logit that the engine's start-up memory profile samples for "
                                       "max_num_seqs requests and keeps out of the KV cache (0: no sampler profile)")
    profile_sampler_source: str = ""
    profile_eras: tuple[ProfileEra, ...] = Field(
        default=(), description="start-up profiles of older versions (ProfileEra); none: the current one")
    user_settings: tuple[str, ...] = Field(default=(), exclude=True,
                                           description="settings the user set (on_part leaves them)")
    version: str | None = Field(default=None, description="the engine version a validation row states (at_version); "
                                "None: the current engine")
    graph_mode: bool = Field(
        default=False, description="the steps run as captured graphs (CloudMatrix-Infer's decode, torchair, CUDA "
                                   "graphs): no per-layer host dispatch of an eager port; graph_launch_s per step")
    # Where a documented feature runs only on some parts, models and weight formats (MindIE SplitFuse: Atlas 800I A2,
    # four models, float or W8A8; MindIE LLM "SplitFuse" constraints): empty tuples allow all
    accelerators: tuple[str, ...] = Field(default=(), description="accelerator ids or fnmatch globs it runs on "
                                          "(empty: every part of its stacks)")
    models: tuple[str, ...] = Field(default=(), description="model preset ids it serves (empty: any model)")
    weights: tuple[str, ...] = Field(default=(), description="weight formats it serves (empty: any)")
    single_node_only: bool = Field(default=False, description="replicas within one node: no multi-node layouts, "
                                   "context-parallel prefill or prefill/decode disaggregation")
    constraints_source: str = ""
    variant_of: str = Field(default="", description="the engine id this profile is a setting of (its port and "
                            "terms, another scheduler): its figures are estimated from that profile, not validated")
    enable: str = Field(default="", description="the configuration that turns the variant on")
    hardware_table: tuple[HardwareTerms, ...] | None = Field(
        default=None, exclude=True,
        description="hardware terms to use instead of the shipped table (cross-validation refits them)")

    @model_validator(mode="after")
    def _check_terms(self) -> EngineProfile:
        missing = [t for t in ENGINE_TERMS if t not in self.terms]
        extra = [t for t in self.terms if t not in ENGINE_TERMS]
        if missing or extra:
            raise ValueError(f"engine {self.id}: terms must be exactly {list(ENGINE_TERMS)}; "
                             f"missing {missing}, unknown {extra}")
        for name in ("gemm_efficiency", "gemm_efficiency_8bit", "gemm_efficiency_fp4", "memory_bw_efficiency",
                     "kv_read_efficiency",
                     "attention_efficiency"):
            if not 0 < self.terms[name].value <= 1:
                raise ValueError(f"engine {self.id}: {name} must be in (0, 1], got {self.terms[name].value}")
        return self

    def value(self, name: str) -> float:
        try:
            return self.terms[name].value
        except KeyError:
            raise unknown_name("engine term", name, self.terms) from None

    def used(self) -> dict[str, dict[str, object]]:
        """The terms as plain dicts, for an estimate's `assumptions`."""
        return {n: {"value": t.value, "unit": t.unit, "source": t.source, "overridden": t.overridden,
                    "scope": t.scope,
                    # the published spread of the term, where its source states one (a refit stays inside it)
                    **({"literature_range": list(t.literature_range),
                        "literature_range_source": t.literature_range_source}
                       if t.literature_range is not None else {})}
                for n, t in self.terms.items()}

    def outside_literature(self) -> tuple[dict[str, object], ...]:
        """The terms the user set (`overridden`) to a value outside the range their source publishes
        (`literature_range`): a typo, another unit, or a measurement worth checking before acting on it."""
        out = []
        for n, t in self.terms.items():
            if not t.overridden or t.literature_range is None:
                continue
            lo, hi = t.literature_range
            if (lo is not None and t.value < lo) or (hi is not None and t.value > hi):
                out.append({"term": n, "value": t.value, "literature_range": list(t.literature_range),
                            "literature_range_source": t.literature_range_source})
        return tuple(out)

    def for_accelerator(self, accelerator_id: str) -> EngineProfile:
        """This profile on `accelerator_id`: the matching `hardware_terms` replace the engine defaults
        (entries for every engine first, then those naming this engine); user overrides stay. Under `graph_mode`
        the host-dispatch terms (HOST_DISPATCH_TERMS: measured on eager or partly captured ports) keep the engine's
        own values."""
        table = self.hardware_table if self.hardware_table is not None else hardware_terms()
        matched = [h for h in table if h.matches(self.id, accelerator_id)]
        if not matched:
            return self
        matched.sort(key=lambda h: "*" not in h.engines)  # engine-specific entries win
        terms = dict(self.terms)
        for h in matched:
            for name, term in h.terms.items():
                if self.graph_mode and name in HOST_DISPATCH_TERMS:
                    continue
                if not terms[name].overridden:
                    terms[name] = term.model_copy(update={"scope": h.id})
        return self.model_copy(update={"terms": terms})

    def on_part(self, accelerator: Accelerator, mla: bool = False) -> EngineProfile:
        """This profile as it starts on `accelerator` for a model with (`mla`) or without multi-head latent
        attention: each matching `part_defaults` entry in turn sets max_num_seqs, max_batched_tokens, scheduling,
        chunked_prefill and kv_block_tokens where it names them (vLLM serves with a 2048-token budget below 70 GiB
        and on A100s, raises both on the other parts of 70 GiB or more; vllm-ascend pages the KV cache in
        128-token blocks and schedules prompts first, whole, for models without MLA); settings the user gave
        stay."""
        update: dict[str, int | str | bool] = {}
        for d in self.part_defaults:
            if d.applies(accelerator, self.version, mla):
                for name in ("max_num_seqs", "max_batched_tokens", "scheduling", "chunked_prefill", "kv_block_tokens"):
                    v = getattr(d, name)
                    if v is not None and name not in self.user_settings:
                        update[name] = v
        return self.model_copy(update=update) if update else self

    def profile_era(self) -> ProfileEra | None:
        """The start-up profile of the stated version (`profile_eras`), None for the current engine's."""
        if self.version is None:
            return None
        v = version_key(self.version)
        return next((e for e in self.profile_eras if v < version_key(e.before_version)), None)

    def profile_sampler_bytes(self, vocab_size: int) -> float:
        """Device bytes the start-up profile's sampler run takes (max_num_seqs rows of the whole vocabulary:
        vLLM gathers the logits on every tensor-parallel rank), kept out of the KV cache."""
        era = self.profile_era()
        per_logit = era.sampler_bytes_per_logit if era is not None else self.profile_sampler_bytes_per_logit
        return self.max_num_seqs * vocab_size * per_logit

    def profile_tokens(self, max_model_len: int | None = None) -> int:
        """Tokens of the start-up profile's dummy forward: max_batched_tokens, or in an older era the budget its
        scheduler derived from max_model_len (ProfileEra) when the length is known."""
        era = self.profile_era()
        if era is None or max_model_len is None or "max_batched_tokens" in self.user_settings:
            return self.max_batched_tokens
        if max_model_len > era.chunked_above_tokens:
            return era.chunked_budget_tokens
        return max(max_model_len, era.budget_floor_tokens)

    def at_version(self, version: str) -> EngineProfile:
        """This profile as the stated version ran it (its decode attention kernel: `decode_kernels`)."""
        if not re.search(r"\d", version):
            raise InputError(field="engine_version", value=version, allowed="a version number such as 0.6.1")
        return self.model_copy(update={"version": version})

    def decode_query_heads_per_block(self, kv_dtype: str) -> int | None:
        """Query heads one decode-attention block serves in this version, None for a GQA-grouped kernel."""
        if self.version is None:
            return None
        v = version_key(self.version)
        for era in self.decode_kernels:
            if v < version_key(era.before_version) and (not era.kv_dtypes or kv_dtype in era.kv_dtypes):
                return era.query_heads_per_block
        return None

    def runs_on(self, accelerator: Accelerator) -> bool:
        """Whether the engine runs on `accelerator`: its software stack (engines.yaml `stacks`) and, on CUDA, its
        compute capability (`min_cuda_capability`: SGLang and TensorRT-LLM need SM80, vLLM and TurboMind SM70)."""
        if accelerator.software_stack not in self.stacks:
            return False
        if self.accelerators and not any(fnmatchcase(accelerator.id, g) for g in self.accelerators):
            return False
        cc = accelerator.cuda_compute_capability
        return not (accelerator.software_stack == "cuda" and self.min_cuda_capability is not None
                    and cc is not None and cc < self.min_cuda_capability)

    def check_runs_on(self, accelerator: Accelerator) -> None:
        """InputError naming the engines that run on `accelerator` when this one does not (TensorRT-LLM is CUDA only,
        MindIE CANN only: engines.yaml `stacks`; SGLang and TensorRT-LLM need compute capability 8.0)."""
        if self.runs_on(accelerator):
            return
        able = [e.id for e in load_engines().values() if e.runs_on(accelerator)]
        if self.accelerators and accelerator.software_stack in self.stacks:
            hint = (f"{self.name} runs only on {', '.join(self.accelerators)} ({self.constraints_source}); "
                    f"choose one of those parts or another engine")
        elif accelerator.software_stack in self.stacks:
            hint = (f"{self.name} needs CUDA compute capability {self.min_cuda_capability:.1f} or higher, "
                    f"{accelerator.id} has {accelerator.cuda_compute_capability:.1f} "
                    f"({self.min_cuda_capability_source})")
        else:
            hint = f"{self.name} runs on {', '.join(self.stacks)} ({self.stacks_source})"
        raise InputError(field="engine", value=self.id,
                         allowed=f"an engine that runs on {accelerator.id} ({accelerator.software_stack}): "
                                 + ", ".join(able), hint=hint)

    def check_serves(self, model: str, weights: str | None = None) -> None:
        """InputError when the engine does not serve `model` (a ModelSpec name or preset id) or the `weights`
        format (engines.yaml `models`, `weights`: MindIE SplitFuse serves four models, float or W8A8)."""
        if self.models and model_key(model) not in {model_key(m) for m in self.model_names()}:
            raise InputError(field="model", value=model, allowed=f"a model {self.name} serves: "
                             + ", ".join(self.models),
                             hint=f"{self.constraints_source}; serve this model with --engine "
                                  f"{self.variant_of or 'vllm'}")
        if self.weights and weights is not None and weights not in self.weights:
            raise InputError(field="weights", value=weights, allowed=f"a format {self.name} serves: "
                             + ", ".join(self.weights),
                             hint=f"pass --weights {' or '.join(self.weights)} ({self.constraints_source})")

    def model_names(self) -> tuple[str, ...]:
        """The preset ids of `models` and their models' names (a spec carries its name, not its preset id)."""
        return tuple(self.models) + tuple(get_preset(m).spec.name for m in self.models)

    def custom_allreduce_on(self, accelerator: Accelerator, tp: int) -> bool:
        """Whether a TP group of `tp` devices of `accelerator` all-reduces with the engine's one-shot kernel: the
        engine ships one for the part's stack, and the group is 2, 4, 6 or 8 devices that all reach each other
        over the fast link (vLLM CustomAllreduce: _SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]; more than two devices
        need full NVLink/xGMI connectivity, PCIe-only groups fall back to NCCL)."""
        return (accelerator.software_stack in self.custom_allreduce_stacks and tp in (2, 4, 6, 8)
                and tp <= (accelerator.fully_connected_domain or 1))

    def settings(self) -> dict[str, object]:
        """The scheduler and memory settings (everything but the terms and the sources)."""
        return self.model_dump(include={"gpu_memory_fraction", "kv_block_tokens", "max_num_seqs",
                                        "max_batched_tokens", "chunked_prefill", "scheduling",
                                        "runtime_overhead_gib", "graph_mode"})


class StackDefault(BaseModel):
    """The engine teams on one software stack serve with (MindIE on CANN), used when the user names none."""

    model_config = STRICT

    stack: StackKind
    engine: str = Field(min_length=1)
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")


class _EngineFile(BaseModel):
    model_config = STRICT

    schema_version: int
    as_of: str
    default_terms: dict[str, EngineTerm]  # what each profile's `terms` starts from (YAML merge key)
    engines: tuple[EngineProfile, ...]
    hardware_terms: tuple[HardwareTerms, ...] = ()
    default_engine: str = "vllm"
    stack_default_engines: tuple[StackDefault, ...] = ()


_SETTINGS = ("gpu_memory_fraction", "kv_block_tokens", "max_num_seqs", "max_batched_tokens",
             "chunked_prefill", "scheduling", "runtime_overhead_gib", "graph_mode")


@cache
def _load_file() -> _EngineFile:
    path = resources.files("gpuplan.workload") / "data" / "engines.yaml"
    raw = yamlio.safe_load(path.read_text(encoding="utf-8"))
    try:
        parsed = _EngineFile.model_validate(raw)
    except ValidationError as exc:  # a broken shipped file is a bug: say which file
        raise RuntimeError(f"invalid engines.yaml: {exc}") from exc
    ids = [e.id for e in parsed.engines]
    for h in parsed.hardware_terms:
        bad = [e for e in h.engines if e != "*" and e not in ids]
        if bad:
            raise RuntimeError(f"engines.yaml hardware_terms {h.id}: unknown engines {bad}")
    for e in parsed.engines:  # a constraint naming no preset, or a setting of no engine, is a bug of the file
        for m in e.models:
            get_preset(m)
        if e.variant_of and e.variant_of not in ids:
            raise RuntimeError(f"engines.yaml {e.id}: variant_of {e.variant_of!r} is not an engine id")
    for d in (parsed.default_engine, *(s.engine for s in parsed.stack_default_engines)):
        if d not in ids:
            raise RuntimeError(f"engines.yaml default engine {d!r} is not an engine id")
    return parsed


def default_engine(accelerator: Accelerator | None = None) -> tuple[str, str]:
    """The engine a part serves with when the user names none, and why: its stack's entry in engines.yaml
    `stack_default_engines` (MindIE on CANN), else `default_engine` (vLLM). Returns (engine id, source)."""
    data = _load_file()
    if accelerator is not None:
        for entry in data.stack_default_engines:
            if entry.stack == accelerator.software_stack:
                return entry.engine, entry.source
    return data.default_engine, "engines.yaml default_engine"


def default_engines_by_stack(accelerators: Iterable[Accelerator]) -> dict[str, tuple[str, str]]:
    """Each stack of `accelerators` -> (the engine its parts serve with when the user names none, why): a search
    across stacks plans each part with its own stack's engine (MindIE on CANN, vLLM on CUDA/ROCm)."""
    out: dict[str, tuple[str, str]] = {}
    for a in accelerators:
        if a.software_stack not in out:
            out[a.software_stack] = default_engine(a)
    return out


@cache
def load_engines() -> dict[str, EngineProfile]:
    """The shipped engine profiles by id."""
    out: dict[str, EngineProfile] = {}
    for e in _load_file().engines:
        if e.id in out:
            raise RuntimeError(f"duplicate engine id {e.id!r} in engines.yaml")
        out[e.id] = e
    return out


def default_terms() -> dict[str, EngineTerm]:
    """The shared defaults every engine profile starts from (data/engines.yaml `default_terms`)."""
    return _load_file().default_terms


def hardware_terms() -> tuple[HardwareTerms, ...]:
    """The shipped engine x hardware terms (data/engines.yaml `hardware_terms`)."""
    return _load_file().hardware_terms


def engine_ids() -> tuple[str, ...]:
    return tuple(load_engines())


def _check_term(name: str, value: float) -> None:
    if value < 0 or (name.endswith("efficiency") and not 0 < value <= 1):
        allowed = "a fraction in (0, 1]" if name.endswith("efficiency") else "a value >= 0"
        raise InputError(field=f"engine term {name}", value=value, allowed=allowed)


def engine(engine_id: str, *, terms: Mapping[str, float] | None = None,
           settings: Mapping[str, Any] | None = None) -> EngineProfile:
    """The profile `engine_id` with term overrides (name -> value) and setting overrides applied.

    Unknown ids, term names or setting names raise InputError with close matches.
    """
    profiles = load_engines()
    if engine_id not in profiles:
        raise unknown_name("engine", engine_id, profiles)
    prof = profiles[engine_id]
    if terms:
        prof = prof.model_copy(update={"terms": override_terms(prof.terms, terms, label="engine term",
                                                               check=_check_term)})
    if settings:
        for key in settings:
            if key not in _SETTINGS:
                raise unknown_name("engine setting", key, _SETTINGS)
        try:
            given = tuple(sorted(set(prof.user_settings) | set(settings)))
            prof = EngineProfile.model_validate({**prof.model_dump(), **dict(settings), "user_settings": given})
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "engine setting"
            raise InputError(field=field, value=err.get("input"), allowed=err["msg"]) from None
    return prof
