"""Closed forms for a fixed batch (the benchmark scenario) and for offline throughput.

Both build on the per-step model of `infer_step` (docs/inference.md):

fixed_batch (`batch` requests of `input_len` prompt and `output_len` output tokens, all
started together, as TensorRT-LLM's gptSessionBenchmark, LMDeploy's profile_generation
and vLLM's benchmark_latency run them):
    TTFT  = the engine's request_overhead_s + prefill of batch x input_len tokens (causal
            pairs batch x I(I+1)/2), in chunks of the token budget when the engine chunks;
    TPOT  = one decode step of `batch` sequences; the step is linear in the cached tokens,
            so the mean over the output equals the step at the mean context I + O/2;
    e2e   = TTFT + (O - 1) x TPOT (the prefill emits the first token);
    output tokens/s = batch x O / e2e per replica.

offline (as many requests in flight as fit; `batch` a cap): the batch is the most
sequences the KV cache holds at I + O tokens each (engines reserve the whole request, as
TensorRT-LLM's GUARANTEED_NO_EVICT), capped by the engine's max_num_seqs. In steady
state each finished request is replaced by a new one, so:
    mixing engines (fcfs, decode_first): every step decodes B sequences and prefills B/O
        new prompts' share, B x I / O tokens (Sarathi-Serve, Agrawal et al. 2024);
    prefill_first engines: a batch of B prompts is prefilled (in budget-size chunks),
        then decoded for O steps; output tokens/s = B x O / (prefill + O x decode step).
    attention data parallelism (ep > tp: `attention_groups` groups sharing the experts): the groups step
        together (every MoE layer is a collective over all of them), so a group's step also waits for the
        prompts the other groups prefill: the mixing step above stretched by simulate.lockstep's expected
        stall, at the other groups' prompt rate (groups - 1) x B / (O x step), solved as a fixed point
        (the same stall the load simulator applies; SGLang large-scale EP blog, lmsys.org 2025-05-05).
All figures are estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from gpuplan.errors import InputError
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.simulate.lockstep import lockstep_cost

__all__ = ["InferencePerf", "Scenario", "fixed_batch_perf", "offline_perf", "prefill_s"]

Scenario = Literal["fixed_batch", "offline"]


@dataclass(frozen=True, slots=True, kw_only=True)
class InferencePerf:
    """Latency and throughput of one replica's workload, scaled to `replicas` for the totals."""

    scenario: str
    batch: int  # concurrent sequences per replica
    replicas: int
    devices_per_replica: int
    input_len: float
    output_len: float
    ttft_s: float
    tpot_s: float
    e2e_s: float
    output_tokens_per_s: float  # all replicas
    requests_per_s: float  # all replicas
    decode_step: dict[str, Any] = field(default_factory=dict)  # breakdown at the mean context
    provenance: str = "estimated"
    assumptions: dict[str, Any] = field(default_factory=dict)

    @property
    def output_tokens_per_s_per_device(self) -> float:
        return self.output_tokens_per_s / (self.replicas * self.devices_per_replica)

    @property
    def total_tokens_per_s(self) -> float:
        return self.requests_per_s * (self.input_len + self.output_len)

    def metric(self, name: str) -> float:
        """A figure by the ground-truth metric names."""
        values = {
            "ttft_ms": self.ttft_s * 1e3, "tpot_ms": self.tpot_s * 1e3, "e2e_latency_s": self.e2e_s,
            "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens_per_s_per_device": self.output_tokens_per_s_per_device,
            "total_tokens_per_s": self.total_tokens_per_s, "requests_per_s": self.requests_per_s,
        }
        if name not in values:
            raise InputError(field="metric", value=name, allowed=", ".join(values))
        return values[name]


def _check_lengths(input_len: float, output_len: float, batch: int | None) -> None:
    if not input_len >= 1:
        raise InputError(field="input_len", value=input_len, allowed="a token count >= 1")
    if not output_len >= 1:
        raise InputError(field="output_len", value=output_len, allowed="a token count >= 1")
    if batch is not None and batch < 1:
        raise InputError(field="batch", value=batch, allowed="an integer >= 1")


def prefill_s(model: StepCostModel, n_seqs: float, input_len: float, budget: int, chunked: bool) -> float:
    """Time to prefill `n_seqs` prompts of `input_len` tokens with no decodes in flight."""
    tokens = n_seqs * input_len
    pairs = n_seqs * input_len * (input_len + 1) / 2
    steps = max(1, math.ceil(tokens / budget)) if chunked else 1
    per = tokens / steps
    return steps * model.step_s(prefill_tokens=max(1, round(per)), prefill_attn_pairs=pairs / steps,
                                decode_seqs=0, decode_kv_tokens=0)


def _decode_s(model: StepCostModel, batch: int, context: float) -> float:
    return model.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=batch,
                        decode_kv_tokens=round(batch * context))


def fixed_batch_perf(model: StepCostModel, *, batch: int, input_len: int, output_len: int, replicas: int = 1,
                     devices_per_replica: int = 1, max_batched_tokens: int = 8192,
                     chunked_prefill: bool = False) -> InferencePerf:
    """TTFT, TPOT, e2e and throughput of `batch` requests started together on each replica."""
    _check_lengths(input_len, output_len, batch)
    fits = model.kv_capacity_tokens // (input_len + output_len)
    ttft = model.request_overhead + prefill_s(model, batch, input_len, max_batched_tokens, chunked_prefill)
    mean_ctx = input_len + output_len / 2
    tpot = _decode_s(model, batch, mean_ctx) if output_len > 1 else 0.0
    e2e = ttft + (output_len - 1) * tpot
    per_replica = batch * output_len / e2e
    bd = model.breakdown(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=batch,
                         decode_kv_tokens=round(batch * mean_ctx))
    return InferencePerf(
        scenario="fixed_batch", batch=batch, replicas=replicas, devices_per_replica=devices_per_replica,
        input_len=input_len, output_len=output_len, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        output_tokens_per_s=per_replica * replicas, requests_per_s=batch / e2e * replicas,
        decode_step=bd.to_json(),
        assumptions={"closed_form": "TTFT = request overhead + prefill of the batch; "
                                    "TPOT = decode step at context I + O/2; e2e = TTFT + (O-1) TPOT",
                     "max_batch_fits": fits,
                     "warnings": [] if batch <= fits else [
                         f"batch {batch} exceeds the {fits} requests of {input_len}+{output_len} tokens the KV cache "
                         f"holds ({model.kv_capacity_tokens} tokens per replica): the engine would preempt or fail"]},
    )


def offline_batch(model: StepCostModel, *, input_len: float, output_len: float, max_num_seqs: int,
                  kv_block_tokens: int = 1, cap: int | None = None) -> int:
    """Sequences in flight: what the KV cache holds at input+output tokens each (block-rounded), capped."""
    per_req = math.ceil((input_len + output_len) / kv_block_tokens) * kv_block_tokens
    fit = int(model.kv_capacity_tokens // per_req)
    return max(0, min(fit, max_num_seqs, cap or max_num_seqs))


def _lockstep_step(model: StepCostModel, *, groups: int, step: float, b_step: int, new: float, input_len: float,
                   output_len: float, max_batched_tokens: int, chunked_prefill: bool) -> float:
    """The mixing step of one of `groups` attention groups in lock-step: `step` (the group's own, with its prompt
    share) stretched by the other groups' prefills, whose rate depends on the stretched step (fixed point)."""
    mean_ctx = input_len + output_len / 2
    own = step
    for _ in range(50):  # the stall grows with the rate, the rate shrinks with the step: a contraction
        cost = lockstep_cost(model, groups=groups, group_qps=b_step / (output_len * step), input_len_mean=input_len,
                             output_len_mean=output_len, max_batched_tokens=max_batched_tokens,
                             chunked_prefill=chunked_prefill)
        nxt = cost.step_s(prefill_tokens=max(1, round(new * input_len)),
                          prefill_attn_pairs=new * input_len * (input_len + 1) / 2, decode_seqs=b_step,
                          decode_kv_tokens=round(b_step * mean_ctx))
        if abs(nxt - step) <= 1e-9 * own:
            return nxt
        step = nxt
    return step


def offline_perf(model: StepCostModel, *, input_len: float, output_len: float, max_num_seqs: int,
                 max_batched_tokens: int, scheduling: str, chunked_prefill: bool, kv_block_tokens: int = 1,
                 cap: int | None = None, replicas: int = 1, devices_per_replica: int = 1,
                 attention_groups: int = 1) -> InferencePerf:
    """Steady-state throughput with as many requests in flight as fit (continuous batching); `replicas` counts
    the attention groups when there are several (`attention_groups`, each with its own sequences)."""
    _check_lengths(input_len, output_len, cap)
    b = offline_batch(model, input_len=input_len, output_len=output_len, max_num_seqs=max_num_seqs,
                      kv_block_tokens=kv_block_tokens, cap=cap)
    if b < 1:
        raise InputError(field="input_len", value=input_len,
                         allowed=f"a request of at most {model.kv_capacity_tokens} tokens (the KV cache per replica)",
                         hint="use more devices (--tp) or an fp8 KV cache")
    mean_ctx = input_len + output_len / 2
    pairs_per_req = input_len * (input_len + 1) / 2
    if scheduling == "prefill_first":
        prefill = prefill_s(model, b, input_len, max_batched_tokens, chunked_prefill)
        decode = _decode_s(model, b, mean_ctx)
        cycle = prefill + output_len * decode
        tokens_per_s = b * output_len / cycle
        ttft, tpot = prefill, decode
    else:
        # each step: b decodes and the prompt share of b / output_len new requests, within the token budget
        b_step = min(b, max(1, int(max_batched_tokens / (1.0 + input_len / output_len))))
        new = b_step / output_len
        step = model.step_s(prefill_tokens=max(1, round(new * input_len)), prefill_attn_pairs=new * pairs_per_req,
                            decode_seqs=b_step, decode_kv_tokens=round(b_step * mean_ctx))
        if attention_groups > 1:
            step = _lockstep_step(model, groups=attention_groups, step=step, b_step=b_step, new=new,
                                  input_len=input_len, output_len=output_len, max_batched_tokens=max_batched_tokens,
                                  chunked_prefill=chunked_prefill)
        tokens_per_s = b_step / step
        b = b_step
        ttft, tpot = step, step
    bd = model.breakdown(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=b,
                         decode_kv_tokens=round(b * mean_ctx))
    return InferencePerf(
        scenario="offline", batch=b, replicas=replicas, devices_per_replica=devices_per_replica,
        input_len=input_len, output_len=output_len, ttft_s=ttft, tpot_s=tpot,
        e2e_s=ttft + (output_len - 1) * tpot,
        output_tokens_per_s=tokens_per_s * replicas, requests_per_s=tokens_per_s / output_len * replicas,
        decode_step=bd.to_json(),
        assumptions={"closed_form": f"steady-state continuous batching, {scheduling} scheduling, "
                                    f"{b} sequences in flight per replica",
                     "note": "TTFT and TPOT here are one step's time at saturation, not a latency under a "
                             "request rate (use --qps for that)"},
    )
