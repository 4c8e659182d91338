"""Shared checks of the golden tests: pinned skips, per-family error figures and the per-row bound."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["ROW_BOUND", "check_excluded", "check_skips", "family", "gate", "off_by", "outside_row_bound",
           "stats"]

# No row may be more than this factor off (predicted / measured or measured / predicted) unless excluded by name.
ROW_BOUND = 3.0


def off_by(case: Any) -> float:
    """How many times off a row is: max(predicted / measured, measured / predicted)."""
    return float(max(case.predicted / case.measured, case.measured / case.predicted))


def family(report: Any, metrics: Iterable[str], *, skip: Iterable[str] = ()) -> list[Any]:
    """The evaluated rows of these metrics, less the ids in `skip`."""
    ms, out = set(metrics), set(skip)
    return [c for c in report.cases if c.metric in ms and c.id not in out]


def stats(cases: list[Any]) -> tuple[float, float, float]:
    """(median, p90, max) APE of `cases`, with numpy's percentile as `gpuplan validate` reports them."""
    apes = [c.ape for c in cases]
    return float(np.median(apes)), float(np.percentile(apes, 90)), float(max(apes))


def outside_row_bound(report: Any, excluded: Mapping[str, str]) -> list[str]:
    """Rows more than ROW_BOUND off that are not excluded by name."""
    return [f"{c.id} {c.metric}: measured {c.measured:.4g}, predicted {c.predicted:.4g} ({off_by(c):.2f}x)"
            for c in report.cases if off_by(c) > ROW_BOUND and c.id not in excluded]


def check_excluded(report: Any, excluded: Mapping[str, str]) -> None:
    """Every excluded row is still evaluated and still beyond the bound: a row the model now gets within it
    comes back (remove it from the exclusions)."""
    by_id = {c.id: c for c in report.cases}
    for rid, reason in excluded.items():
        assert reason, rid
        assert rid in by_id, f"{rid} is excluded by hand but no longer evaluated"
        assert off_by(by_id[rid]) > ROW_BOUND, (f"{rid} is now {off_by(by_id[rid]):.2f}x off: within the "
                                                f"{ROW_BOUND:g}x bound, take it out of the exclusions")


def check_skips(report: Any, pinned: Mapping[str, str]) -> None:
    """The rows `gpuplan validate` skips are exactly the pinned ones, each for the pinned reason (a substring
    of the reason it gives): a new skip fails until it is named here with its reason."""
    got = dict(report.skipped)
    new = {i: r for i, r in got.items() if i not in pinned}
    assert not new, f"rows newly skipped (name each in the test with its reason): {new}"
    gone = sorted(set(pinned) - set(got))
    assert not gone, f"pinned skips no longer skipped (evaluate them, drop them from the list): {gone}"
    wrong = {i: got[i] for i, reason in pinned.items() if reason not in got[i]}
    assert not wrong, f"skipped for another reason than pinned: {wrong}"


def gate(cases: list[Any], n: int, median: float, spread: float, *, use_max: bool = False) -> None:
    """A metric family's gate: at least `n` rows, median APE <= `median`, p90 (or, with `use_max`, the worst
    row) <= `spread`; the figures are printed (pytest -s)."""
    med, p90, worst = stats(cases)
    print(f"n={len(cases)} median {med:.1%} p90 {p90:.1%} max {worst:.1%}")
    assert len(cases) >= n
    assert med <= median
    assert (worst if use_max else p90) <= spread
