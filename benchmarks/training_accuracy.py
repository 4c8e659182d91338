"""Print the training estimator's accuracy on the published runs (ground-truth training.csv).

Per row: measured, predicted, error, and the layout the planner chose where the row left it
open; then the median and 90th-percentile APE, the worst rows and the skipped rows.
Usage: python benchmarks/training_accuracy.py [--cases PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuplan.validate.ground_truth import shipped_dir
from gpuplan.validate.run import validate_file

DEFAULT = shipped_dir() / "training.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=DEFAULT)
    args = ap.parse_args()
    report = validate_file(args.cases)
    print(f"{'id':48s} {'metric':26s} {'measured':>12s} {'predicted':>12s} {'error':>8s}  layout")
    for c in report.cases:
        err = (c.predicted - c.measured) / c.measured
        print(f"{c.id[:48]:48s} {c.metric:26s} {c.measured:12.4g} {c.predicted:12.4g} {err:+8.1%}  {c.detail}")
    print(f"\nrows {len(report.cases)}  median APE {report.median_ape:.1%}  p90 APE {report.p90_ape:.1%}  "
          f"skipped {len(report.skipped)}")
    worst = sorted(report.cases, key=lambda c: c.ape, reverse=True)[:10]
    print("worst: " + ", ".join(f"{c.id} {c.ape:.0%}" for c in worst))
    by_metric: dict[str, list[float]] = {}
    for c in report.cases:
        by_metric.setdefault(c.metric, []).append(c.ape)
    for m, v in sorted(by_metric.items()):
        v.sort()
        print(f"  {m:26s} rows {len(v):3d}  median APE {v[len(v) // 2]:.1%}")
    for rid, reason in report.skipped:
        print(f"skipped {rid}: {reason}")


if __name__ == "__main__":
    main()
