"""Golden test: the published inference measurements of the shared ground-truth inference.csv.

One set of calibration terms per engine profile, nothing fitted per row. Issue 5's target
is median APE <= 15% and p90 <= 35% on the dev rows; the figures reached (docs/inference.md)
are median 5.6% and p90 22.0% over 63 rows, so the stated regression tolerance is median
<= 8% and p90 <= 30%, with at most 10 rows skipped (each with its reason).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuplan.validate.run import validate_file

CASES = Path(__file__).resolve().parents[2].parent / "shared" / "ground-truth" / "inference.csv"

pytestmark = pytest.mark.skipif(not CASES.exists(), reason="shared ground-truth cases not present")


def test_inference_rows_meet_the_issue_target() -> None:
    report = validate_file(CASES)
    for c in sorted(report.cases, key=lambda c: -c.ape):
        print(f"{c.id}: {c.metric} measured {c.measured:.4g} predicted {c.predicted:.4g} APE {c.ape:.1%} {c.detail}")
    print(f"median {report.median_ape:.1%} p90 {report.p90_ape:.1%} skipped {report.skipped}")
    assert len(report.cases) >= 60
    assert report.median_ape is not None and report.median_ape <= 0.08
    assert report.p90_ape is not None and report.p90_ape <= 0.30
    assert len(report.skipped) <= 10
    assert all(reason for _, reason in report.skipped)
