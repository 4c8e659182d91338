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


def _split(report):  # type: ignore[no-untyped-def]
    """(dev rows the serving terms were tuned on, G2I* rows added later and never tuned on)."""
    dev = sorted(c.ape for c in report.cases if not c.id.startswith("G2"))
    new = sorted(c.ape for c in report.cases if c.id.startswith("G2"))
    return dev, new


def _median(a: list[float]) -> float:
    return a[len(a) // 2]


def _p90(a: list[float]) -> float:
    return a[int(0.9 * (len(a) - 1))]


def test_inference_rows_meet_the_issue_target() -> None:
    report = validate_file(CASES)
    for c in sorted(report.cases, key=lambda c: -c.ape):
        print(f"{c.id}: {c.metric} measured {c.measured:.4g} predicted {c.predicted:.4g} APE {c.ape:.1%} {c.detail}")
    print(f"median {report.median_ape:.1%} p90 {report.p90_ape:.1%} skipped {report.skipped}")
    dev, _ = _split(report)
    assert len(dev) >= 60
    assert _median(dev) <= 0.08
    assert _p90(dev) <= 0.30
    dev_skipped = [i for i, _ in report.skipped if not i.startswith("G2")]
    assert len(dev_skipped) <= 10, dev_skipped
    assert all(reason for _, reason in report.skipped)


def test_g2i_rows_meet_issue_12_target() -> None:
    """The G2I* rows (H20, Ascend 910B, MI300X, L40S; H800 and 910C rows are disaggregated wide-EP
    deployments, skipped with the reason) were missed by a median of 56-63% (p90 124%) with terms fitted
    on NVIDIA parts. Issue 12 item 5: the engine x hardware terms of engines.yaml (one value per engine
    and part family, none per row) bring them to median 9.4%, p90 40.4% (docs/validation.md); the gate
    is the issue's median <= 25% and the observed p90 with a small margin."""
    report = validate_file(CASES)
    _, new = _split(report)
    assert len(new) >= 18
    assert len([i for i, _ in report.skipped if i.startswith("G2")]) <= 12
    assert _median(new) <= 0.25
    assert _p90(new) <= 0.45
