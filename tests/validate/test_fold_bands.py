"""Nested coverage per fold type and the novelty factor that widens bands (validate/fold_bands.py, issue 35
item 4), on made-up entries whose figures are worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.estimate import uncertainty
from gpuplan.estimate.uncertainty import EstimateClass, band, novelty_factor
from gpuplan.validate.fold_bands import fold_summary, min_scale, scaled_band


def test_the_least_factor_that_covers_a_row() -> None:
    q = (0.8, 1.0, 1.25)
    assert min_scale(1.1, q) == 1.0  # inside already
    assert min_scale(1.5, q) == pytest.approx(1.5 / 1.25)
    assert min_scale(0.4, q) == pytest.approx(2.0)
    assert scaled_band(q, 2.0) == pytest.approx((0.4, 2.5))


def _entry(i: int, source: str, ratio: float, fold: str = "source", part: str = "a") -> dict[str, Any]:
    return {"id": f"r{i}", "fold": fold, "kind": "train", "efficiency": "validated", "family": "throughput",
            "arch": "dense", "scale": "single", "stack": "unstated", "source": source, "accelerator": part,
            "stack_key": "x", "metric": "tokens_per_s_per_device", "cv_ratio": ratio, "file": "training"}


def test_coverage_is_nested_and_the_factor_is_learned_without_the_rows_source() -> None:
    # 10 sources of 3 rows each: ratios 1.0 +- 0.05, except source s9 whose rows run 2x faster than predicted
    entries = [_entry(3 * k + j, f"s{k}", 2.0 if k == 9 else 1.0 + 0.05 * (j - 1)) for k in range(10) for j in range(3)]
    out = fold_summary(entries, entries)["source"]["train"]
    assert out["rows"] == 30 and out["sources"] == 10
    # the band of a row comes from the other sources only: s9's rows are far outside theirs, every other row inside
    # (the nine others' quantiles include s9's 2.0 at the top, source-weighted: q90 > 1.05)
    assert out["coverage_plain"] == pytest.approx(27 / 30)
    assert out["scale"] == 1.0  # 90% already inside: never narrowed
    assert out["median_ape"] == pytest.approx(1 - 1 / 1.05)  # 9 rows at 0, 9 at 4.8%, 9 at 5.3%, 3 at 50%


def test_a_fold_short_of_80_percent_learns_a_factor_above_one() -> None:
    """Ten sources of one row: six at 1.0, two slow (0.3, 0.5) and two fast (3, 5). Each row's band comes from the
    nine others (source-weighted quantiles interpolated at the midpoints (i + 1/2) / 9): the 0.5 row sees q10 =
    0.3 + 0.4 x 0.7 = 0.58, the 0.3 row 0.7, the 5 row q90 = 1 + 0.6 x 2 = 2.2: three outside, 70% inside. The least
    factors those rows need are 1.16, 2.33 and 2.27, so the fold's factor (80% of rows covered) is 1.16. Scored
    with the factor learned without its own source, the 0.5 row is inside (the others' 80% factor is 2.27) and the
    0.3 and 5 rows are not (1.16): 80%."""
    ratios = [1.0] * 6 + [0.3, 0.5, 3.0, 5.0]
    entries = [_entry(k, f"s{k}", r) for k, r in enumerate(ratios)]
    out = fold_summary(entries, entries)["source"]["train"]
    assert out["coverage_plain"] == pytest.approx(0.7)
    assert out["scale"] == pytest.approx(0.58 / 0.5)
    assert out["coverage"] == pytest.approx(0.8)


def test_a_fold_that_misses_gets_a_factor_and_bands_use_it(monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"novelty_scale": {"train": {"source": 1.2, "accelerator": 1.5, "stack": 1.3}}, "rows": []}
    monkeypatch.setattr(uncertainty, "accuracy_data", lambda: data)
    validated = EstimateClass(kind="train")
    assert novelty_factor(validated) == (1.2, ["source"])
    assert novelty_factor(validated, frozenset({"stack"})) == (1.3, ["stack"])
    assert novelty_factor(EstimateClass(kind="train", efficiency="default")) == (1.5, ["accelerator"])
    assert novelty_factor(EstimateClass(kind="serve")) == (1.0, [])  # no factor learned: the plain band
    with pytest.raises(ValueError, match="novelty"):
        novelty_factor(validated, frozenset({"weather"}))


def test_the_planner_band_widens_by_the_shipped_factor() -> None:
    cls = EstimateClass(kind="train")
    st = uncertainty.class_stats(cls)
    b = band(cls, 100.0, "rate")
    assert st is not None and b is not None
    f, _ = novelty_factor(cls)
    assert b.low == pytest.approx(100.0 * st.q10 / f) and b.high == pytest.approx(100.0 * st.q90 * f)
    assert (b.basis.get("novelty_factor") is not None) == (f > 1.0)
