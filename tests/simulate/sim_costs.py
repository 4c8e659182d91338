"""Hand-made step cost models for the simulator tests (no dependence on the real cost model)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class AffineCost:
    """step = fixed + per_token*prefill + per_pair*pairs + per_seq*decodes + per_kv*kv (0 when empty)."""

    kv_capacity_tokens: int = 200_000
    fixed: float = 0.010
    per_token: float = 2e-5
    per_pair: float = 1e-9
    per_seq: float = 5e-5
    per_kv: float = 2e-8

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        if prefill_tokens + decode_seqs <= 0:
            return 0.0
        return (self.fixed + self.per_token * prefill_tokens + self.per_pair * prefill_attn_pairs
                + self.per_seq * decode_seqs + self.per_kv * decode_kv_tokens)


@dataclass(frozen=True, slots=True, kw_only=True)
class RooflineCost(AffineCost):
    """Not affine in kv tokens: decode attention is max(a*kv, b*kv^2/n) so the exact fallback runs."""

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        base = AffineCost.step_s(self, prefill_tokens=prefill_tokens, prefill_attn_pairs=prefill_attn_pairs,
                                 decode_seqs=decode_seqs, decode_kv_tokens=0)
        if decode_seqs <= 0:
            return base
        return base + max(self.per_kv * decode_kv_tokens, 3e-12 * decode_kv_tokens**2 / decode_seqs)
