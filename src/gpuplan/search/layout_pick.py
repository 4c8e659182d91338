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

__all__ = ["TERM", "simplest_near_fastest"]

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
