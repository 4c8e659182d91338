"""Golden test: the measured rows of the shared ground-truth memory.csv.

Rows with confidence 'low' are the authors' own estimates, not measurements, and are left
out. Each row's error is printed (run pytest -s, or benchmarks/memory_accuracy.py).
Stated tolerance: median APE <= 25% over the evaluated rows and every row within 80%,
except rows listed in UNKNOWABLE (an unstated input decides them) or DEFERRED (they need
a model that a later issue builds), each with its reason. Those are printed, not asserted.
The figures are recorded in docs/validation.md.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from gpuplan.validate.run import validate_file

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "ground-truth" / "memory.csv"
MEDIAN_TOLERANCE = 0.25
ROW_TOLERANCE = 0.80
UNKNOWABLE = {
    # torchtune's single-device full fine-tune fits 8B in 18.9 GiB with a paged 8-bit AdamW
    # run inside backward (no gradient buffer); the row leaves the optimizer unstated.
    "M016": "optimizer not stated; the recipe pages 8-bit states to host memory",
}
DEFERRED = {
    # vLLM's KV pool is what its profiling run leaves; that run's activation peak depends on
    # the engine profile (max_num_seqs, max_num_batched_tokens, CUDA graphs): inference planner issue.
    "M071": "engine KV pool needs the serving-engine profiles of the inference planner",
}

pytestmark = pytest.mark.skipif(not CASES.exists(), reason="shared ground-truth cases not present")


def _results() -> tuple[list[tuple[str, float, float, float]], list[str]]:
    report = validate_file(CASES)
    done = [(c.id, c.measured, c.predicted, c.ape) for c in report.cases]
    return done, [f"{i}: {r}" for i, r in report.skipped]


def test_memory_rows_within_stated_tolerance() -> None:
    done, skipped = _results()
    for rid, measured, predicted, ape in done:
        print(f"{rid}: measured {measured:.2f} GiB predicted {predicted:.2f} GiB APE {ape:.1%}")
    for s in skipped:
        print("skipped", s)
    assert len(done) >= 20
    scored = [d for d in done if d[0] not in UNKNOWABLE and d[0] not in DEFERRED]
    median = statistics.median(d[3] for d in scored)
    print(f"median APE {median:.1%} over {len(scored)} rows")
    assert median <= MEDIAN_TOLERANCE
    worst = [d for d in scored if d[3] > ROW_TOLERANCE]
    assert not worst, worst
