"""Refit every term tuned on one file's rows on ALL of its rows, and say how far the shipped values sit from that fit.

A fold of `benchmarks/cross_validate.py` refits the tuned terms without its held-out rows (gpuplan.validate.refit:
one sweep of golden-section searches, group by group, from the shipped values). This script runs the same refit on
every row and prints, per term, the shipped value and the refitted one, with the in-sample median and p90 of the
absolute percentage error under each. Where the two differ widely the shipped values are not the refit's optimum on
all rows, and the held-out figures measure the refit's path as much as the model (docs/validation.md, "How much the
held-out serving figures move on their own"). It writes nothing; `--json` saves the refitted values.

    python benchmarks/refit_all_rows.py --file inference
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cross_validate import DEFAULT_GT, _ape, _evaluator, base_terms, evaluate, screen  # noqa: E402

from gpuplan.estimate.calibration import Calibration  # noqa: E402
from gpuplan.validate.cases import Row, read_rows  # noqa: E402
from gpuplan.validate.ground_truth import case_files  # noqa: E402
from gpuplan.validate.refit import error_ratio, refit  # noqa: E402


def rows_of(file: str, gt: Path) -> list[Row]:
    """The rows cross_validate.py folds (`cross_validate.screen`)."""
    return [r for path in case_files(file, gt) for r in read_rows(path) if screen(file, r)[1] is not None]


def in_sample(file: str, rows: list[Row], cal: Calibration) -> tuple[float, float]:
    """Median and p90 of the absolute percentage error of `rows` under `cal`."""
    apes = []
    for r in rows:
        res = evaluate(file, r, cal)
        apes.append(_ape(error_ratio(res.metric, res.measured, res.predicted)))
    return float(np.median(apes)), float(np.percentile(apes, 90))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default="inference", choices=("inference", "training", "memory"))
    ap.add_argument("--evals", type=int, default=8, help="objective evaluations per group (the folds use 8)")
    ap.add_argument("--ground-truth", type=Path, default=DEFAULT_GT)
    ap.add_argument("--json", type=Path, default=None, help="write the refitted values here")
    args = ap.parse_args()
    rows = rows_of(args.file, args.ground_truth)
    shipped = base_terms(args.file)
    cal, fitted = refit(rows, shipped, _evaluator(args.file), file=args.file, evals=args.evals)
    print(f"| term | shipped | refitted on all {len(rows)} rows |\n|---|---|---|")
    for name, value in sorted(fitted.items()):
        old = shipped.terms[name].value
        mark = " (moved > 5%)" if abs(value - old) > 0.05 * abs(old) else ""
        print(f"| `{name}` | {old:.4g} | {value:.4g}{mark} |")
    for label, c in (("shipped", shipped), ("refitted", cal)):
        med, p90 = in_sample(args.file, rows, c)
        print(f"in sample, {label} terms: {100 * med:.2f}% / {100 * p90:.2f}% (median / p90)")
    if args.json is not None:
        args.json.write_text(json.dumps(fitted, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
