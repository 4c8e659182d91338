"""The per-step cost of one serving deployment as records: `StepCostModel` (precomputed coefficients and the
simulator's hot path, `step_s` and its numpy twin) and `StepBreakdown` (one iteration's time by term).

`estimate.infer_step.step_cost_model` builds them; the model and its sources are described there and in
docs/inference.md. Everything here is plain float arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from math import hypot
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["StepBreakdown", "StepCostModel", "roofline", "roofline_array"]


def roofline(c: float, m: float, p: float) -> float:
    """A GEMM group's time from its compute time c and weight-read time m: (c^p + m^p)^(1/p).

    p = 2 (hypot) is 1.41 x max(c, m) at the ridge point, p = 1 no overlap of loads and math at all, a large
    p the sharp roofline max(c, m) (Williams et al. 2009); the engines' `roofline_overlap_exponent`."""
    if p == 2.0:
        return hypot(c, m)
    hi = max(c, m)
    if hi <= 0.0:
        return 0.0
    return float(hi * ((c / hi) ** p + (m / hi) ** p) ** (1.0 / p))


def roofline_array(c: npt.ArrayLike, m: npt.ArrayLike, p: float) -> npt.NDArray[np.float64]:
    """`roofline` over numpy arrays (broadcast together)."""
    ca = np.asarray(c, dtype=np.float64)
    ma = np.asarray(m, dtype=np.float64)
    if p == 2.0:
        return np.asarray(np.hypot(ca, ma), dtype=np.float64)
    hi = np.maximum(ca, ma)
    safe = np.where(hi > 0.0, hi, 1.0)
    out = hi * ((ca / safe) ** p + (ma / safe) ** p) ** (1.0 / p)
    return np.asarray(np.where(hi > 0.0, out, 0.0), dtype=np.float64)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepBreakdown:
    """One iteration's time by term, in seconds; the terms sum to `total_s`.

    `weight_read_s` and `kv_read_s` are the memory time NOT hidden under the compute of
    the same kernels (roofline: a kernel costs the larger of the two).
    """

    gemm_compute_s: float
    weight_read_s: float
    dequant_s: float
    attention_s: float
    kv_read_s: float
    tp_comm_s: float
    pp_comm_s: float
    ep_comm_s: float
    overhead_s: float
    bound: str  # "memory" or "compute": which side the linear layers sit on
    provenance: str = "estimated"
    terms: dict[str, dict[str, object]] = field(default_factory=dict)

    @property
    def total_s(self) -> float:
        return (self.gemm_compute_s + self.weight_read_s + self.dequant_s + self.attention_s + self.kv_read_s
                + self.tp_comm_s + self.pp_comm_s + self.ep_comm_s + self.overhead_s)

    def shares(self) -> dict[str, float]:
        """The step split four ways (each a share of total_s): compute (GEMMs, dequantization, attention FLOPs),
        memory (exposed weight and KV reads), communication (TP, PP, EP) and overhead (host and per-layer fixed
        time: steps of small batches on engines with high launch cost are this, whatever the roofline says)."""
        total = self.total_s
        if total <= 0:
            return {"compute": 0.0, "memory": 0.0, "communication": 0.0, "overhead": 0.0}
        return {"compute": (self.gemm_compute_s + self.dequant_s + self.attention_s) / total,
                "memory": (self.weight_read_s + self.kv_read_s) / total,
                "communication": (self.tp_comm_s + self.pp_comm_s + self.ep_comm_s) / total,
                "overhead": self.overhead_s / total}

    @property
    def dominant(self) -> str:
        """The largest of the four shares: what the step waits on."""
        sh = self.shares()
        return max(sh, key=lambda k: sh[k])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in (
            "gemm_compute_s", "weight_read_s", "dequant_s", "attention_s", "kv_read_s", "tp_comm_s",
            "pp_comm_s", "ep_comm_s", "overhead_s")}
        out["total_s"] = self.total_s
        out["bound"] = self.bound
        out["shares"] = self.shares()
        out["dominant"] = self.dominant
        out["provenance"] = self.provenance
        out["terms"] = self.terms
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCostModel:
    """Precomputed per-step coefficients of one deployment (one model replica)."""

    # linear layers: seconds per token of compute (incl. dequant), seconds of weight reads per step
    dense_compute_per_token: float
    dense_dequant_per_token: float
    dense_read: float
    moe_compute_per_token: float
    moe_dequant_per_token: float
    moe_read_all: float  # reading every routed expert once
    moe_untouched_base: float  # 1 - top_k / num_experts (0 for dense models)
    head_compute_per_row: float
    head_read: float
    # attention
    prefill_attn_per_pair: float
    decode_kv_read_per_token: float
    decode_attn_flops_per_token: float
    # communication
    tp_comm_fixed: float
    tp_comm_per_token: float
    ep_comm_fixed: float
    ep_comm_per_token: float  # per decode token
    ep_comm_per_prefill_token: float  # per prompt token (attention DP across nodes: deduplicated by node)
    pp_comm_fixed: float
    pp_comm_per_token: float
    # fixed
    pp_stages: int  # a step crosses every stage in turn: pp - 1 sends between them
    layer_overhead: float
    step_overhead: float
    seq_overhead: float  # per sequence in the step (decodes, plus one for the prefill)
    request_overhead: float  # added once to each request's time to first token (not part of a step)
    gemv_read_factor: float  # weight reads of a one-token step take this times longer (SM-bound GEMV, >= 1)
    overlap_exponent: float  # p of the GEMM roofline's (c^p + m^p)^(1/p): 2 a hypot, 1 no overlap at all
    # memory
    kv_capacity_tokens: int
    kv_bytes_per_token: float  # per device, all layers of the heaviest stage
    weights_bytes_per_device: float
    # provenance
    terms: dict[str, dict[str, object]]
    assumptions: dict[str, Any]

    # the hot path, `step_s` with positional arguments (prefill tokens, attention pairs, decode sequences, KV
    # tokens): a closure over the coefficients, built once (engine_sim calls it for every prompt step)
    step_s_args: Callable[[int, float, int, int], float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "step_s_args", _step_closure(self))

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        """Seconds of one iteration: `prefill_tokens` prompt tokens (`prefill_attn_pairs` causal
        query-key pairs) and `decode_seqs` sequences decoding one token over `decode_kv_tokens`
        cached tokens in all. An empty step costs 0."""
        return self.step_s_args(prefill_tokens, prefill_attn_pairs, decode_seqs, decode_kv_tokens)

    def step_s_array(self, *, prefill_tokens: npt.ArrayLike, prefill_attn_pairs: npt.ArrayLike,
                     decode_seqs: npt.ArrayLike, decode_kv_tokens: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """`step_s` over numpy arrays (broadcast together)."""
        p = np.asarray(prefill_tokens, dtype=np.float64)
        a = np.asarray(prefill_attn_pairs, dtype=np.float64)
        d = np.asarray(decode_seqs, dtype=np.float64)
        k = np.asarray(decode_kv_tokens, dtype=np.float64)
        t = p + d
        rows = d + (p > 0)
        f = np.where(t == 1, self.gemv_read_factor, 1.0)
        q = self.overlap_exponent
        stage = roofline_array(self.dense_compute_per_token * t, self.dense_read * f, q)
        if self.moe_read_all:
            stage = stage + roofline_array(self.moe_compute_per_token * t,
                                           self.moe_read_all * f * (1.0 - self.moe_untouched_base ** t), q)
        stage = stage + roofline_array(self.head_compute_per_row * rows, self.head_read * f, q)
        stage = stage + self.prefill_attn_per_pair * a
        stage = stage + max(self.decode_kv_read_per_token, self.decode_attn_flops_per_token) * k
        stage = stage + self.tp_comm_fixed + self.tp_comm_per_token * t
        stage = stage + self.ep_comm_fixed + self.ep_comm_per_prefill_token * p + self.ep_comm_per_token * d
        stage = stage + self.layer_overhead
        out = (stage + (self.pp_stages - 1) * (self.pp_comm_fixed + self.pp_comm_per_token * t)
               + self.step_overhead + self.seq_overhead * rows)
        return np.asarray(np.where(t > 0, out, 0.0), dtype=np.float64)

    # -- explanation ------------------------------------------------------------------
    def breakdown(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
                  decode_kv_tokens: int) -> StepBreakdown:
        """`step_s` split into its terms (they sum to the same total)."""
        t = prefill_tokens + decode_seqs
        n = 1
        if t <= 0:
            return StepBreakdown(gemm_compute_s=0.0, weight_read_s=0.0, dequant_s=0.0, attention_s=0.0,
                                 kv_read_s=0.0, tp_comm_s=0.0, pp_comm_s=0.0, ep_comm_s=0.0, overhead_s=0.0,
                                 bound="memory", terms=self.terms)
        rows = decode_seqs + (1 if prefill_tokens > 0 else 0)
        f = self.gemv_read_factor if t == 1 else 1.0
        moe_read = self.moe_read_all * f * (1.0 - self.moe_untouched_base ** t) if self.moe_read_all else 0.0
        groups = [  # (compute incl. dequant, of which dequant, memory)
            (self.dense_compute_per_token * t, self.dense_dequant_per_token * t, self.dense_read * f),
            (self.moe_compute_per_token * t, self.moe_dequant_per_token * t, moe_read),
            (self.head_compute_per_row * rows, 0.0, self.head_read * f),
        ]
        compute = sum(c - dq for c, dq, _ in groups)
        dequant = sum(dq for _, dq, _ in groups)
        exposed_read = sum(roofline(c, m, self.overlap_exponent) - c for c, _, m in groups)
        kv_bytes_s = self.decode_kv_read_per_token * decode_kv_tokens
        kv_flops_s = self.decode_attn_flops_per_token * decode_kv_tokens
        attention = self.prefill_attn_per_pair * prefill_attn_pairs + kv_flops_s
        return StepBreakdown(
            gemm_compute_s=n * compute,
            weight_read_s=n * exposed_read,
            dequant_s=n * dequant,
            attention_s=n * attention,
            kv_read_s=n * max(kv_bytes_s - kv_flops_s, 0.0),
            tp_comm_s=n * (self.tp_comm_fixed + self.tp_comm_per_token * t),
            pp_comm_s=(self.pp_stages - 1) * (self.pp_comm_fixed + self.pp_comm_per_token * t),
            ep_comm_s=n * (self.ep_comm_fixed + self.ep_comm_per_prefill_token * prefill_tokens
                           + self.ep_comm_per_token * decode_seqs),
            overhead_s=n * self.layer_overhead + self.step_overhead + self.seq_overhead * rows,
            bound="memory" if sum(m for *_, m in groups) > sum(c for c, *_ in groups) else "compute",
            terms=self.terms,
        )


def _step_closure(m: StepCostModel) -> Callable[[int, float, int, int], float]:
    """`m.step_s` as a function of positional arguments, over local copies of its coefficients (Python reads a
    closure's cells faster than a dataclass's attributes); the formula `step_s_array` vectorizes. The rooflines
    depend only on the step's tokens and rows (integers), so each is computed once and kept: the simulator asks
    for the same token budget step after step. The terms are added in the same order either way."""
    dense_c, dense_r = m.dense_compute_per_token, m.dense_read
    moe_c, moe_r, moe_u = m.moe_compute_per_token, m.moe_read_all, m.moe_untouched_base
    head_c, head_r = m.head_compute_per_row, m.head_read
    per_pair = m.prefill_attn_per_pair
    per_kv = max(m.decode_kv_read_per_token, m.decode_attn_flops_per_token)
    tp_f, tp_t = m.tp_comm_fixed, m.tp_comm_per_token
    ep_f, ep_p, ep_t = m.ep_comm_fixed, m.ep_comm_per_prefill_token, m.ep_comm_per_token
    layer, step_o, seq_o = m.layer_overhead, m.step_overhead, m.seq_overhead
    hops, pp_f, pp_t = m.pp_stages - 1, m.pp_comm_fixed, m.pp_comm_per_token
    gemv, q = m.gemv_read_factor, m.overlap_exponent
    gemm: dict[int, float] = {}  # the linear layers' rooflines by tokens in the step
    head: dict[int, float] = {}  # the LM head's by rows (-1: the one-token step, whose weight read is a GEMV)

    def step(prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int, decode_kv_tokens: int) -> float:
        t = prefill_tokens + decode_seqs
        if t <= 0:
            return 0.0
        rows = decode_seqs + (1 if prefill_tokens > 0 else 0)
        stage = gemm.get(t)
        if stage is None:
            f = gemv if t == 1 else 1.0
            stage = roofline(dense_c * t, dense_r * f, q)
            if moe_r:
                stage += roofline(moe_c * t, moe_r * f * (1.0 - moe_u ** t), q)
            gemm[t] = stage
        key = rows if t != 1 else -1
        h = head.get(key)
        if h is None:
            h = head[key] = roofline(head_c * rows, head_r * (gemv if t == 1 else 1.0), q)
        stage += h
        stage += per_pair * prefill_attn_pairs
        stage += per_kv * decode_kv_tokens
        stage += tp_f + tp_t * t
        stage += ep_f + ep_p * prefill_tokens + ep_t * decode_seqs
        stage += layer
        return stage + hops * (pp_f + pp_t * t) + step_o + seq_o * rows

    return step
