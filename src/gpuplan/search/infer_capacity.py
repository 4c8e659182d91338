"""Closed-form serving bounds of one replica, used to prune and size fleets before simulating.

* Unloaded latency: TTFT = the prompt's prefill step(s) alone (chunks of the engine's
  token budget, attention pairs c*o + c(c+1)/2 per chunk; past a stated prefix-cache hit); TPOT = one decode step of a
  single sequence at the mean context.
* Capacity (steady-state continuous batching, Little's law L = lambda W, Little 1961):
  with b requests decoding, each stays out_mean iterations, so requests finish at
  lambda = b / (out_mean x E[s(b)]) and mu = b / out_mean prompts join per iteration. The
  number of prompts in one iteration is taken as Poisson(mu) (0..4, tail folded into 4),
  each of in_mean tokens and E[in(in+1)/2] attention pairs, capped by the token budget, so
  E[s(b)] averages the step over that mix (a step is convex in its prompt tokens: a mean
  prompt load would understate it). Cached tokens: b x (in_mean + out_mean/2). The
  largest b with E[s(b)] x `tpot_p99_over_mean` <= the TPOT limit, b <= max_num_seqs and
  its KV within the cache gives the replica's SLO-bound capacity lambda_max. A prompt longer than the
  token budget left by the decodes joins as in_mean / room chunk-prompts (chunked prefill), and requests
  cannot finish faster than their prompts are computed: lambda = b / (out E[s]) - E[prompt tokens over the
  budget per step] / (in_mean E[s]).
* The cost split between input and output tokens follows the step time: the prompt share
  is (s(b) - s_decode_only(b)) / s(b) at the operating point.
* A pipeline-parallel replica keeps pp batches in flight, one per stage: it is sized as pp engines that share its KV
  cache and running-request cap, each at the full step latency (`simulate.pipeline.pipeline_batch`).
All estimated; the simulator checks the finalists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.simulate.engine_sim import EngineConfig, StepCost
from gpuplan.simulate.lengths import LengthDist

__all__ = ["Capacity", "LengthMoments", "capacity", "length_moments", "unloaded_latency"]



@dataclass(frozen=True, slots=True, kw_only=True)
class LengthMoments:
    in_mean: float
    in_pairs_mean: float  # E[in (in + 1) / 2]
    in_p99: float
    out_mean: float
    out_p99: float
    hit: float = 0.0  # share of each prompt found in the prefix cache (--prefix-hit)

    @property
    def in_compute_mean(self) -> float:
        """Prompt tokens computed per request: those past the cached prefix."""
        return (1.0 - self.hit) * self.in_mean

    @property
    def in_compute_pairs_mean(self) -> float:
        """Causal attention pairs computed per request: x c + x (x + 1) / 2 for x = (1 - hit) in tokens past a
        prefix of c = hit x in, from E[in^2] = 2 E[in (in + 1) / 2] - E[in]."""
        h = self.hit
        sq = 2.0 * self.in_pairs_mean - self.in_mean
        return (1.0 - h) * h * sq + ((1.0 - h) ** 2 * sq + (1.0 - h) * self.in_mean) / 2.0


def length_moments(inp: LengthDist, out: LengthDist, *, hit: float = 0.0) -> LengthMoments:
    rng = np.random.default_rng(0)
    x = inp.sample(rng, 8192).astype(np.float64)
    return LengthMoments(in_mean=inp.mean, in_pairs_mean=float((x * (x + 1) / 2).mean()),
                         in_p99=inp.quantile(0.99), out_mean=out.mean, out_p99=out.quantile(0.99), hit=hit)


def _step(cost: StepCost, p: float, pairs: float, n: float, kv: float) -> float:
    return cost.step_s(prefill_tokens=round(p), prefill_attn_pairs=pairs, decode_seqs=round(n),
                       decode_kv_tokens=round(kv))


def prefill_s(cost: StepCost, cfg: EngineConfig, tokens: int, *, cached: int = 0) -> float:
    """Time to prefill one prompt alone (in token-budget chunks when the engine chunks), past `cached` tokens."""
    chunk = cfg.max_batched_tokens if cfg.chunked_prefill else tokens - cached
    total, off = 0.0, cached
    while off < tokens:
        c = min(chunk, tokens - off)
        total += _step(cost, c, c * off + c * (c + 1) / 2.0, 0, 0)
        off += c
    return total


def unloaded_latency(cost: StepCost, cfg: EngineConfig, m: LengthMoments) -> tuple[float, float]:
    """(TTFT of a p99-length prompt, TPOT of a lone mean-length request) on an idle replica, seconds."""
    n = max(1, round(m.in_p99))
    ttft = prefill_s(cost, cfg, n, cached=min(int(m.hit * n), n - 1))
    tpot = _step(cost, 0, 0.0, 1, m.in_mean + m.out_mean / 2.0)
    return ttft, tpot


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    requests_per_s: float  # lambda_max of one replica under the TPOT limit (0: none)
    batch: int  # decoding requests at that point
    step_s: float
    prefill_share: float  # share of step time spent on prompt tokens
    limited_by: str  # "tpot", "kv_cache" or "max_num_seqs"


def _steps(cost: StepCost, p: np.ndarray, pairs: np.ndarray, n: np.ndarray, kv: np.ndarray) -> np.ndarray:
    arr = getattr(cost, "step_s_array", None)
    if arr is not None:
        return np.asarray(arr(prefill_tokens=p, prefill_attn_pairs=pairs, decode_seqs=n, decode_kv_tokens=kv),
                          dtype=np.float64)
    flat = [_step(cost, *v) for v in zip(p.ravel(), pairs.ravel(), n.ravel(), kv.ravel(), strict=True)]
    return np.array(flat, dtype=np.float64).reshape(p.shape)


def capacity(cost: StepCost, cfg: EngineConfig, m: LengthMoments, tpot_limit_s: float, *,
             tpot_p99_over_mean: float = 1.0) -> Capacity:
    """Steady-state capacity of one replica whose p99 TPOT must stay within `tpot_limit_s`."""
    b = np.arange(1, cfg.max_num_seqs + 1, dtype=np.float64)[:, None]
    out = max(m.out_mean, 1.0)
    room = np.maximum(cfg.max_batched_tokens - b, 1.0)
    # a prompt longer than the token budget left by the decodes is prefilled in chunks over several iterations
    # (chunked prefill): it joins as that many chunk-prompts, each with its share of the attention pairs
    tokens = m.in_compute_mean  # past a prefix-cache hit
    chunks = np.maximum(tokens / room, 1.0) if cfg.chunked_prefill else np.ones_like(room)
    size, chunk_pairs = tokens / chunks, m.in_compute_pairs_mean / chunks
    mu = b / out * chunks
    k = np.arange(5, dtype=np.float64)[None, :]
    fact = np.array([1.0, 1.0, 2.0, 6.0, 24.0])[None, :]
    pk = np.exp(-mu) * mu**k / fact
    pk[:, 4] += np.clip(1.0 - pk.sum(axis=1), 0.0, None)  # fold the tail into 4 prompts
    p = np.minimum(k * size, room)
    pairs = k * chunk_pairs * np.where(k > 0, p / np.maximum(k * size, 1.0), 0.0)
    kv = np.broadcast_to(b * (m.in_mean + m.out_mean / 2.0), p.shape)
    grid = _steps(cost, p, pairs, np.broadcast_to(b, p.shape), kv)
    s = (pk * grid).sum(axis=1)
    # prompt tokens beyond the budget an iteration leaves, on average: they wait for later iterations. E[K] x size
    # minus what the steps compute, E[min(K size, room)]; 0 where even 4 prompts fit (the tail folded into 4
    # would otherwise read as an excess)
    computed = (pk * p).sum(axis=1)
    excess = np.where(4.0 * size[:, 0] > room[:, 0], np.maximum(mu[:, 0] * size[:, 0] - computed, 0.0), 0.0)
    s_dec = grid[:, 0]
    b = b[:, 0]
    kv = kv[:, 0]
    ok_kv = kv <= cost.kv_capacity_tokens
    ok_t = s * tpot_p99_over_mean <= tpot_limit_s
    ok = ok_kv & ok_t
    if not ok.any():
        return Capacity(requests_per_s=0.0, batch=0, step_s=float(s[0]), prefill_share=0.0,
                        limited_by="tpot" if not ok_t[0] else "kv_cache")
    # requests finish at b / (out s) (Little), and their prompts must be computed as fast: the prompt tokens that
    # arrive per iteration beyond the budget left by the decodes are not, so lambda loses excess / (in_mean s)
    lam = np.where(ok, np.maximum(b / (out * s) - excess / (max(tokens, 1.0) * s), 0.0), 0.0)
    i = int(np.argmax(lam))
    if i + 1 == len(b):
        why = "max_num_seqs"
    elif not ok_kv[i + 1]:
        why = "kv_cache"
    else:
        why = "tpot"
    return Capacity(requests_per_s=float(lam[i]), batch=int(b[i]), step_s=float(s[i]),
                    prefill_share=float(max(s[i] - s_dec[i], 0.0) / s[i]), limited_by=why)
