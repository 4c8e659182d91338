"""Prefill/decode-disaggregated instances and speculative (multi-token-prediction) decoding.

Built on the per-step model of `infer_step` (docs/inference.md, "Disaggregated instances"):

decode instance: sequences arrive with their prompt's KV cache (sent by a prefill instance:
    DistServe, Zhong et al. 2024; Splitwise, Patel et al. 2024), so every step decodes the
    whole batch. Its TTFT is the request overhead plus that transfer: each device receives its
    shard of the prompt's KV over its link (the scale-out NIC share across servers, NVLink inside
    one). TPOT = one step of `batch` sequences at the mean context I + O/2 (the step is linear in
    the cached tokens); output tokens/s = batch x tokens per step / step.
speculative decoding with d draft tokens (DeepSeek-V3 MTP, sec. 2.2 and 5.4.3; EAGLE): the
    draft module proposes d tokens in d sequential steps, one layer's work each (an MTP module
    is one transformer block sharing the embedding and head: a plain step's share 1/L of its
    layers), then the target model verifies 1 + d tokens per sequence in one step: the GEMMs
    see batch x (1 + d) tokens, the KV cache is read once per sequence and the attention FLOPs
    grow (1 + d)-fold. A chain of drafts, each kept only if the previous one was, emits
    1 + a + a^2 + ... + a^d tokens per sequence per step in expectation (Leviathan et al. 2023,
    eq. 1), a = the engine term `mtp_acceptance`.
prefill instance: a batch of prompts prefilled together (in token-budget chunks when the
    engine chunks): TTFT = request overhead + prefill; each request leaves with one token.
All figures are estimates.
"""

from __future__ import annotations

from gpuplan.errors import InputError
from gpuplan.estimate.infer_perf import InferencePerf, prefill_s
from gpuplan.estimate.infer_step_model import StepCostModel
from gpuplan.estimate.links import Link
from gpuplan.units import GB

__all__ = ["decode_instance_perf", "kv_transfer_s", "prefill_instance_perf", "speculative_tokens", "verify_step_s"]


def speculative_tokens(draft_tokens: int, acceptance: float) -> float:
    """Expected tokens one sequence emits per verify step: 1 + a + ... + a^d (a chain of d drafts)."""
    if draft_tokens < 0:
        raise InputError(field="draft_tokens", value=draft_tokens, allowed="an integer >= 0")
    if not 0.0 <= acceptance <= 1.0:
        raise InputError(field="mtp_acceptance", value=acceptance, allowed="a fraction in [0, 1]")
    return sum(acceptance ** i for i in range(draft_tokens + 1))


def verify_step_s(model: StepCostModel, batch: int, context: float, draft_tokens: int) -> float:
    """Seconds of one decode step of `batch` sequences at `context` cached tokens each, with `draft_tokens`
    drafts per sequence (0: a plain decode step)."""
    kv_tokens = round(batch * context)
    plain = model.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=batch, decode_kv_tokens=kv_tokens)
    if draft_tokens == 0:
        return plain
    q = 1 + draft_tokens
    verify = model.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=batch * q, decode_kv_tokens=kv_tokens)
    # the same KV bytes serve 1 + d queries, whose score FLOPs add up (the roofline of decode attention)
    kv_read, flops = model.decode_kv_read_per_token, model.decode_attn_flops_per_token
    verify += kv_tokens * (max(kv_read, flops * q) - max(kv_read, flops))
    layers = float(model.assumptions.get("stage_layers") or 1)
    fixed = model.step_overhead + model.seq_overhead * batch
    drafts = draft_tokens * (plain - fixed) / layers  # d steps of a one-layer draft module
    return verify + drafts


def kv_transfer_s(model: StepCostModel, input_len: float, link: Link) -> float:
    """Seconds to move one request's prompt KV cache from the prefill instance to a decode device over `link`:
    each device receives its own shard (the step model's per-device KV bytes per token) in parallel, one
    message (Mooncake / NIXL transfer engines: RDMA writes of the KV blocks; DistServe sec. 4.3)."""
    return float(link.latency_s) + model.kv_bytes_per_token * input_len / (float(link.bandwidth_gbyte_s) * GB)


def decode_instance_perf(model: StepCostModel, *, batch: int, input_len: float, output_len: float,
                         draft_tokens: int = 0, acceptance: float = 0.0, replicas: int = 1,
                         devices_per_replica: int = 1, kv_link: Link | None = None) -> InferencePerf:
    """A disaggregated decode instance: `batch` sequences per replica decoding at the mean context. `kv_link`:
    the link the prompt's KV cache arrives over (its transfer joins the TTFT); None leaves it out."""
    if batch < 1:
        raise InputError(field="batch", value=batch, allowed="an integer >= 1")
    context = input_len + output_len / 2
    step = verify_step_s(model, batch, context, draft_tokens)
    per_seq = speculative_tokens(draft_tokens, acceptance)
    tpot = step / per_seq
    transfer = kv_transfer_s(model, input_len, kv_link) if kv_link is not None else 0.0
    ttft = model.request_overhead + transfer
    e2e = ttft + (output_len - 1) * tpot
    fits = int(model.kv_capacity_tokens // (input_len + output_len))
    return InferencePerf(
        scenario="decode_instance", batch=batch, replicas=replicas, devices_per_replica=devices_per_replica,
        input_len=input_len, output_len=output_len, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e,
        output_tokens_per_s=batch * per_seq / step * replicas, requests_per_s=batch / e2e * replicas,
        decode_step=model.breakdown(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=batch * (1 + draft_tokens),
                                    decode_kv_tokens=round(batch * context)).to_json(),
        assumptions={"closed_form": "decode instance (prefill elsewhere): TPOT = verify step at context I + O/2 / "
                                    "tokens per step; tokens per step = 1 + a + ... + a^d",
                     "draft_tokens": draft_tokens, "tokens_per_step": per_seq, "max_batch_fits": fits,
                     "ttft": "the engine's request overhead plus the prompt's KV transfer from the prefill "
                             + (f"instance over {kv_link.label} ({transfer * 1e3:.2f} ms, "
                                f"{model.kv_bytes_per_token * input_len / 1e6:.1f} MB per device)"
                                if kv_link is not None else "instance (left out: no link given)")
                             + "; the prefill itself runs on the prefill instance",
                     "warnings": [] if batch <= fits else [
                         f"batch {batch} exceeds the {fits} requests the KV cache holds per attention group"]},
    )


def prefill_instance_perf(model: StepCostModel, *, batch: int, input_len: float, max_batched_tokens: int,
                          chunked_prefill: bool, replicas: int = 1, devices_per_replica: int = 1) -> InferencePerf:
    """A disaggregated prefill instance: `batch` prompts per replica prefilled together, one token out each."""
    if batch < 1:
        raise InputError(field="batch", value=batch, allowed="an integer >= 1")
    prefill = prefill_s(model, batch, input_len, max_batched_tokens, chunked_prefill)
    ttft = model.request_overhead + prefill
    return InferencePerf(
        scenario="prefill_instance", batch=batch, replicas=replicas, devices_per_replica=devices_per_replica,
        input_len=input_len, output_len=1.0, ttft_s=ttft, tpot_s=0.0, e2e_s=ttft,
        output_tokens_per_s=batch / prefill * replicas, requests_per_s=batch / prefill * replicas,
        assumptions={"closed_form": "prefill instance: TTFT = request overhead + prefill of the batch; "
                                    "requests/s = batch / prefill"},
    )
