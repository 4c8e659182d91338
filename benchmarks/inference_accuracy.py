"""Print the accuracy of the inference estimates on the shipped inference.csv (gpuplan/validate/data/ground_truth).

Every row that can be evaluated: measured vs predicted, APE, the layout and the model's
figures; then median and p90 APE (overall and by engine and metric), the worst rows and
the rows skipped with their reasons. One set of calibration terms per engine profile.

Usage: python benchmarks/inference_accuracy.py [--cases PATH] [--worst N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from gpuplan.validate.cases import read_rows
from gpuplan.validate.ground_truth import shipped_dir
from gpuplan.validate.run import validate_file

DEFAULT_CASES = shipped_dir() / "inference.csv"


def _stats(apes: list[float]) -> str:
    return f"n={len(apes):3d}  median {statistics.median(apes):6.1%}  p90 {float(np.percentile(apes, 90)):6.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    ap.add_argument("--worst", type=int, default=8)
    args = ap.parse_args()
    t0 = time.perf_counter()
    report = validate_file(args.cases)
    elapsed = time.perf_counter() - t0
    engines = {r["id"]: r.get("engine", "") for r in read_rows(args.cases)}
    parts = {r["id"]: r.get("accelerator", "") for r in read_rows(args.cases)}
    print(f"## Inference rows of {args.cases.name}: measured vs estimated")
    print(f"{'id':5s} {'metric':31s} {'measured':>11s} {'estimated':>11s} {'APE':>7s}  detail")
    for c in sorted(report.cases, key=lambda c: c.id):
        print(f"{c.id:5s} {c.metric:31s} {c.measured:11.4g} {c.predicted:11.4g} {c.ape:7.1%}  {c.detail}")
    apes = [c.ape for c in report.cases]
    print(f"\nall rows       {_stats(apes)}   ({elapsed:.1f} s for the whole file)")
    by_engine: dict[str, list[float]] = defaultdict(list)
    by_metric: dict[str, list[float]] = defaultdict(list)
    for c in report.cases:
        by_engine[engines.get(c.id, "?")].append(c.ape)
        by_metric[c.metric].append(c.ape)
    for name, group in sorted(by_engine.items()):
        print(f"engine {name:9s}{_stats(group)}")
    for name, group in sorted(by_metric.items()):
        print(f"metric {name:31s}{_stats(group)}")
    # rows added later (G2I*: H20, Ascend, MI300X, H800, L40S), overall and per part, as docs/validation.md quotes
    later = [c for c in report.cases if c.id.startswith("G2I")]
    if later:
        print(f"G2I rows       {_stats([c.ape for c in later])}")
        by_part: dict[str, list[float]] = defaultdict(list)
        for c in later:
            by_part[parts.get(c.id, "?")].append(c.ape)
        for name, group in sorted(by_part.items()):
            print(f"G2I {name:17s}{_stats(group)}")
    print(f"\n## Worst {args.worst} rows")
    for c in sorted(report.cases, key=lambda c: -c.ape)[: args.worst]:
        print(f"{c.id}: {c.metric} measured {c.measured:.4g} estimated {c.predicted:.4g} APE {c.ape:.1%} -- {c.detail}")
    print(f"\n## Skipped ({len(report.skipped)})")
    for rid, why in report.skipped:
        print(f"{rid}: {why}")


if __name__ == "__main__":
    main()
