"""The activation peak of a serving engine's start-up memory profile, which it keeps out of its KV cache.

vLLM sizes its KV cache at start-up: gpu_memory_utilization x device memory, minus the weights, the torch
peak of one profile run and non-torch memory (vllm/worker/worker.py determine_num_available_blocks in V0,
v1/worker/gpu_worker.py determine_available_memory in V1). The profile run is a dummy forward over the
engine's token budget with no KV cache, then a sampler run over max_num_seqs rows of the whole vocabulary
(V0: worker/model_runner.py profile_run, top_k = vocab - 1 and top_p = 0.99; V1: v1/worker/gpu_model_runner.py
profile_run, _dummy_run(max_num_tokens) then _dummy_sampler_run). The torch peak is the larger of the two:
the forward's activations are freed before sampling. The budget and the sampler's bytes per logit come from
the engine version's profile (workload/data/engines.yaml `profile_eras`, `profile_sampler_bytes_per_logit`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.memory_infer import estimate_inference_memory
from gpuplan.workload.engines import EngineProfile
from gpuplan.workload.jobs import InferenceJob, Layout
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["ProfilePeak", "engine_memory_calibration", "engine_profile_peak"]


def engine_memory_calibration(engine: EngineProfile) -> Calibration:
    """The shipped calibration with the serving engine's runtime overhead and token budget set, each sourced to the
    engine's settings (they were labelled "user override" in every serving answer, with no override given)."""
    return default_calibration().with_overrides(
        {"runtime_context_gib": engine.runtime_overhead_gib,
         "inference_workspace_tokens": float(engine.max_batched_tokens)},
        source=f"engine {engine.id} settings: runtime_overhead_gib and max_batched_tokens "
               "(workload/data/engines.yaml, on this part)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfilePeak:
    """The start-up profile of one device: its token budget, sampler rows and the two candidate peaks (bytes)."""

    engine: str
    version: str | None
    tokens: int  # tokens of the dummy forward
    sampler_rows: int  # rows of logits the sampler run takes (max_num_seqs)
    forward_bytes: float  # activations of the dummy forward (memory_infer workspace over `tokens` tokens)
    sampler_bytes: float  # the sampler run over max_num_seqs x vocabulary logits

    @property
    def peak_bytes(self) -> float:
        return max(self.forward_bytes, self.sampler_bytes)

    @property
    def peak_from(self) -> str:
        return "sampler" if self.sampler_bytes >= self.forward_bytes else "forward"


def engine_profile_peak(spec: ModelSpec, layout: Layout, engine: EngineProfile, *, weights: str = "bf16",
                        max_model_len: int | None = None, calibration: Calibration | None = None) -> ProfilePeak:
    """The torch activation peak of `engine`'s start-up profile on one device of `layout` (vLLM V0/V1
    profile_run); an engine without a sampler profile (profile_sampler_bytes_per_logit 0) profiles only its
    forward. `max_model_len` sets the budget of an era whose scheduler derived it from the model length."""
    tokens = engine.profile_tokens(max_model_len)
    base = calibration if calibration is not None else default_calibration()
    cal = base.with_overrides({"inference_workspace_tokens": float(tokens)},
                              source=f"engine {engine.id} start-up profile: {tokens} tokens")
    full = estimate_inference_memory(spec, InferenceJob(weights=weights, context=tokens), layout, calibration=cal)
    forward = float(full.details["activations"]["forward_activations"])
    sampler = engine.profile_sampler_bytes(spec.vocab_size) if engine.profile_sampler_bytes_per_logit > 0 else 0.0
    return ProfilePeak(engine=engine.id, version=engine.version, tokens=tokens, sampler_rows=engine.max_num_seqs,
                       forward_bytes=forward, sampler_bytes=sampler)
