"""Which of the layouts that fit a cluster the planner keeps: the simplest one within a tolerance of the fastest.

Practitioners add model parallelism only when it pays: data parallel first, tensor parallel inside the node when
memory needs it, pipeline stages across nodes when the model does not fit otherwise (Hugging Face's Ultra-Scale
Playbook, 2025, "5D parallelism in a nutshell"; Megatron-LM's README on choosing TP/PP). Each extra pipeline stage,
interleaving or recomputation is a schedule to tune and a failure mode to debug, while the step-time model's own
error is far wider than a few percent (docs/validation.md). So among the layouts whose estimated step is within
the calibration term `layout_simplicity_tolerance` of the fastest, the planner keeps the one with the fewest
model-parallel ranks (tp x pp x cp), then the fewest pipeline stages, then no interleaving, then the least
recomputation, then the fastest. With the term at 0 it keeps the fastest.
"""

from __future__ import annotations

import numpy as np

from gpuplan.search.candidates import Candidates

__all__ = ["TERM", "simplest_near_fastest", "simplest_near_fastest_per_size"]

TERM = "layout_simplicity_tolerance"


def simplest_near_fastest(c: Candidates, step_s: np.ndarray, tolerance: float) -> int:
    """Index of the simplest layout whose step is within `tolerance` (a fraction) of the fastest finite one.

    `step_s` is infinite where a layout does not fit or is not eligible; at least one entry must be finite.
    """
    fastest = int(np.argmin(step_s))
    bound = float(step_s[fastest]) * (1.0 + max(tolerance, 0.0))
    near = np.flatnonzero(np.isfinite(step_s) & (step_s <= bound))
    if len(near) <= 1:
        return fastest
    # np.lexsort sorts by the last key first: model-parallel ranks, then pp, vpp, recomputation, then step time
    order = np.lexsort((step_s[near], c.recompute[near], c.vpp[near], c.pp[near],
                        c.tp[near] * c.pp[near] * c.cp[near]))
    return int(near[order[0]])


def simplest_near_fastest_per_size(c: Candidates, step_s: np.ndarray, tolerance: float) -> dict[int, int]:
    """`simplest_near_fastest` within each cluster size at once: {devices: index} for every size with a finite step.

    The same rule and tie order (a stable sort keeps the lower index first) as calling `simplest_near_fastest` on
    each size's steps with the other sizes masked, in one sort instead of one pass over every candidate per size."""
    ok = np.flatnonzero(np.isfinite(step_s))
    if len(ok) == 0:
        return {}
    dev, step = c.devices[ok], step_s[ok]
    sizes, group = np.unique(dev, return_inverse=True)
    fastest = np.full(len(sizes), np.inf)
    np.minimum.at(fastest, group, step)
    near = step <= fastest[group] * (1.0 + max(tolerance, 0.0))
    idx = ok[near]
    # np.lexsort sorts by the last key first: size, model-parallel ranks, then pp, vpp, recomputation, step time
    order = np.lexsort((step_s[idx], c.recompute[idx], c.vpp[idx], c.pp[idx], c.tp[idx] * c.pp[idx] * c.cp[idx],
                        c.devices[idx]))
    idx = idx[order]
    first = np.r_[True, c.devices[idx][1:] != c.devices[idx][:-1]]
    return dict(zip(c.devices[idx][first].tolist(), idx[first].tolist(), strict=True))
