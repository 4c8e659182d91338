"""Attention groups in lock-step: the expected stall a group's steps take from the other groups' prefills.

With attention data parallelism and wide expert parallelism (SGLang `--enable-dp-attention` with DeepEP,
RTP-LLM DP = EP) every MoE layer is an all-to-all across all the groups of an expert group, so the groups
step together: a step lasts as long as the slowest group's (DeepEP's normal kernels for a prefill and its
low-latency kernels for decoding cannot run in one communication group at once; SGLang runs idle groups
as dummy batches: the SGLang large-scale EP blog, lmsys.org 2025-05-05, and the reason DeepSeek-V3 is
served prefill/decode-disaggregated). The simulator runs one group; this wraps its step cost:

    step = own + p x max(0, foreign - own),   p = 1 - exp(-rate x own)

`own` is the group's step, `foreign` the same step with one prompt (a chunk of the token budget when the
engine chunks) added, which is what another group runs when it prefills; `rate` is the prompt arrival
rate of the other groups, so p is the chance that at least one of them received a prompt during the
previous step (Poisson arrivals). The expectation is taken per step: a request's TPOT averages many steps,
so its mean stretch is what the p99 TPOT of long outputs sees; single-step spikes are not modelled. For a
pure decode step, p is taken at the batch's typical context (`typical_context` tokens per sequence), so the
step stays affine in the cached tokens and the simulator keeps its closed-form decode runs.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np
import numpy.typing as npt

from gpuplan.simulate.engine_sim import StepCost, positional_step

__all__ = ["ArrayStepCost", "LockstepCost", "lockstep_cost"]


class ArrayStepCost(StepCost, Protocol):
    """A step cost with its numpy twin (estimate.infer_step.StepCostModel)."""

    def step_s_array(self, *, prefill_tokens: npt.ArrayLike, prefill_attn_pairs: npt.ArrayLike,
                     decode_seqs: npt.ArrayLike, decode_kv_tokens: npt.ArrayLike) -> npt.NDArray[np.float64]: ...


class LockstepCost:
    """`base` (a StepCostModel: `step_s`, `step_s_array`, `kv_capacity_tokens`) with the expected stall of
    `foreign_rate_per_s` prompts per second arriving at the other attention groups, each `prompt_tokens` long
    (`prompt_pairs` causal query-key pairs) in the step that prefills it."""

    def __init__(self, base: ArrayStepCost, *, foreign_rate_per_s: float, prompt_tokens: int,
                 prompt_pairs: float, typical_context: float) -> None:
        self.base = base
        self.rate = max(float(foreign_rate_per_s), 0.0)
        self.prompt_tokens = int(prompt_tokens)
        self.prompt_pairs = float(prompt_pairs)
        self.context = max(float(typical_context), 1.0)
        self._p: dict[int, float] = {}
        self._base_step = positional_step(base)

    def _p_decode(self, n: int) -> float:
        """The stall probability of a pure decode step of `n` sequences, at the typical context."""
        if n not in self._p:
            own = self.base.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=n,
                                   decode_kv_tokens=round(n * self.context))
            self._p[n] = 1.0 - math.exp(-self.rate * own)
        return self._p[n]

    @property
    def kv_capacity_tokens(self) -> int:
        return int(self.base.kv_capacity_tokens)

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        return self.step_s_args(prefill_tokens, prefill_attn_pairs, decode_seqs, decode_kv_tokens)

    def step_s_args(self, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
                    decode_kv_tokens: int) -> float:
        """`step_s` with positional arguments (the simulator's hot path, simulate.engine_sim)."""
        base = self._base_step
        own = base(prefill_tokens, prefill_attn_pairs, decode_seqs, decode_kv_tokens)
        if own <= 0.0 or self.rate == 0.0:
            return own
        foreign = base(self.prompt_tokens, self.prompt_pairs, decode_seqs, decode_kv_tokens)
        p = self._p_decode(decode_seqs) if prefill_tokens == 0 else 1.0 - math.exp(-self.rate * own)
        return own + p * max(0.0, foreign - own)

    def step_s_array(self, *, prefill_tokens: npt.ArrayLike, prefill_attn_pairs: npt.ArrayLike,
                     decode_seqs: npt.ArrayLike, decode_kv_tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        arr = self.base.step_s_array
        own = np.asarray(arr(prefill_tokens=prefill_tokens, prefill_attn_pairs=prefill_attn_pairs,
                             decode_seqs=decode_seqs, decode_kv_tokens=decode_kv_tokens), dtype=np.float64)
        if self.rate == 0.0:
            return own
        d = np.asarray(decode_seqs)
        foreign = np.asarray(arr(prefill_tokens=np.full(d.shape, self.prompt_tokens),
                                 prefill_attn_pairs=np.full(d.shape, self.prompt_pairs), decode_seqs=d,
                                 decode_kv_tokens=decode_kv_tokens), dtype=np.float64)
        p = 1.0 - np.exp(-self.rate * own)
        pre = np.broadcast_to(np.asarray(prefill_tokens), d.shape)
        if (pre == 0).any():
            p_dec = np.array([self._p_decode(int(n)) for n in np.unique(d)])
            p = np.where(pre == 0, p_dec[np.searchsorted(np.unique(d), d)], p)
        stretched = own + p * np.maximum(0.0, foreign - own)
        return np.asarray(np.where(own > 0.0, stretched, 0.0), dtype=np.float64)


def lockstep_cost(base: ArrayStepCost, *, groups: int, group_qps: float, input_len_mean: float,
                  output_len_mean: float, max_batched_tokens: int, chunked_prefill: bool) -> StepCost:
    """`base` for one of `groups` attention groups in lock-step, each receiving `group_qps` prompts per second of
    mean length `input_len_mean` (prefilled whole, or in chunks of the token budget) and `output_len_mean` output
    tokens (a decoding sequence holds input + output / 2 tokens on average); `base` itself for one group."""
    typical_context = input_len_mean + output_len_mean / 2.0
    if groups <= 1:
        return base
    n = max(1, math.ceil(input_len_mean / max_batched_tokens)) if chunked_prefill else 1
    pairs = input_len_mean * (input_len_mean + 1.0) / 2.0 / n  # causal pairs of the prompt, per chunk
    return LockstepCost(base, foreign_rate_per_s=(groups - 1) * group_qps, prompt_tokens=round(input_len_mean / n),
                        prompt_pairs=pairs, typical_context=typical_context)

