"""Per-device training memory of many candidate layouts at once.

Uses the same elementwise rank model as `estimate_training_memory` (`rank_terms`), fed with
numpy columns: activation bytes come from `activation_breakdown` once per distinct
(tp, cp, recompute, pp > 1: the kernel choice) at one and two sequences per micro-batch and are affine in the
micro-batch size (a few per-pass buffers do not scale with it); layer counts come from
`stage_layers` once per distinct (pp, vpp). Ranks that hold
the same layers differ only by the micro-batches in flight, which fall with the rank, so
the peak is at the first rank of each group of equal ranks or at the last rank (LM head
and loss): those few ranks are evaluated and the largest is reported.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from gpuplan.estimate.activations import activation_breakdown
from gpuplan.estimate.calibration import Calibration, default_calibration
from gpuplan.estimate.memory_train import RankGeometry, rank_terms, stage_layers
from gpuplan.search.candidates import RECOMPUTE_CODES, Candidates
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.params import count_params

__all__ = ["by_unique", "candidate_memory_bytes"]

_MAX_GROUPS = 4  # distinct layer compositions per pipeline (dense/MoE boundary, uneven split)


def by_unique(keys: tuple[np.ndarray, ...], fn: Any, width: int) -> np.ndarray:
    """Evaluate fn(*key) once per distinct key tuple and scatter the results (shape [n, width])."""
    # one int64 code per row (each key < 2**20), so np.unique works on a flat array
    code = np.zeros(keys[0].shape, dtype=np.int64)
    for k in keys:
        code = code * (1 << 20) + k.astype(np.int64)
    uniq, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    table = np.array([fn(*(int(k[i]) for k in keys)) for i in first], dtype=float).reshape(len(uniq), width)
    return table[inverse.ravel()]


@lru_cache(maxsize=4096)
def _acts(spec: ModelSpec, job: TrainingJob, tp: int, cp: int, rc: int, piped: int) -> tuple[float, ...]:
    """Activation terms at one and two sequences per micro-batch (the same for every hardware option and
    search of this model and job, hence cached: spec and job are frozen records)."""
    out: list[float] = []
    for mb in (1, 2):
        j = job.model_copy(update={"micro_batch": mb, "recompute": RECOMPUTE_CODES[rc]})
        a = activation_breakdown(spec, j, Layout(tp=tp, cp=cp, pp=1 + piped, seq_parallel=j.sequence_parallel_on()))
        out += [a.dense_layer_bytes, a.moe_layer_bytes, sum(a.first_stage_extra.values()),
                sum(a.last_stage_extra.values()), a.logits_transient_bytes, a.recompute_working_bytes]
    return tuple(out)


def candidate_memory_bytes(spec: ModelSpec, job: TrainingJob, c: Candidates, *,
                           calibration: Calibration | None = None) -> np.ndarray:
    """Peak bytes per device for every candidate (max of first and last pipeline rank)."""
    if len(c) == 0:
        return np.zeros(0)
    cal = calibration or default_calibration()
    counts = count_params(spec)

    def acts(tp: int, cp: int, rc: int, piped: int) -> tuple[float, ...]:
        return _acts(spec, job, tp, cp, rc, piped)

    act = by_unique((c.tp, c.cp, c.recompute, (c.pp > 1).astype(np.int64)), acts, 12)
    one, slope = act[:, :6], act[:, 6:] - act[:, :6]
    per_mb = one + slope * (c.micro_batch[:, None] - 1)
    per_sample, recompute_working = per_mb[:, :5], per_mb[:, 5]

    def layers(pp: int, vpp: int) -> list[int]:
        split = stage_layers(spec, Layout(pp=pp, vpp=vpp))
        reps = [r for r in range(pp) if r == 0 or split[r] != split[r - 1]][:_MAX_GROUPS] + [pp - 1]
        reps += [reps[-1]] * (_MAX_GROUPS + 1 - len(reps))
        return [v for r in reps for v in (r, split[r][0], split[r][1])]

    lay = by_unique((c.pp, c.vpp), layers, 3 * (_MAX_GROUPS + 1))
    totals = []
    for k in range(_MAX_GROUPS + 1):
        rank, dense_n, moe_n = lay[:, 3 * k], lay[:, 3 * k + 1], lay[:, 3 * k + 2]
        g = RankGeometry(
            tp=c.tp, pp=c.pp, dp=c.dp, cp=c.cp, ep=c.ep, vpp=c.vpp, zero=c.zero, microbatches=c.microbatches,
            dense_n=dense_n, moe_n=moe_n, rank=rank, act_dense_layer=per_sample[:, 0],
            act_moe_layer=per_sample[:, 1], act_first_extra=per_sample[:, 2], act_last_extra=per_sample[:, 3],
            logits_transient=per_sample[:, 4], recompute_working=recompute_working,
        )
        terms = rank_terms(spec, counts, job, cal, g)
        totals.append(sum(sum(parts.values()) for parts in terms.values()))
    peak: np.ndarray = np.max(np.stack(totals), axis=0)
    return peak
