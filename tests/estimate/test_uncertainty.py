"""Bands from cross-validated errors (estimate/uncertainty.py) and the freshness of the shipped result."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.estimate.uncertainty import MIN_ROWS, ClassStats, EstimateClass, accuracy_data, band, class_stats
from gpuplan.hardware import load_catalog
from gpuplan.validate.cases import read_rows
from gpuplan.validate.ground_truth import case_files
from gpuplan.validate.memory_cases import evaluate_memory_row
from gpuplan.validate.refit import error_ratio
from gpuplan.validate.serving_terms import serving_calibration, serving_evaluator
from gpuplan.validate.training_cases import evaluate_training_row
from ground_truth import GROUND_TRUTH

GT = GROUND_TRUTH


def test_band_orientation_rates_scale_up_times_scale_down() -> None:
    st = ClassStats(key="k", n=50, q10=0.8, q50=1.0, q90=1.25, median_ape=0.1, sources=5)
    assert st.band(100.0, "rate") == pytest.approx((80.0, 125.0))
    # a run 1.25x faster than predicted takes 1/1.25 of the predicted time
    assert st.band(100.0, "time") == pytest.approx((80.0, 125.0))
    st2 = ClassStats(key="k", n=50, q10=0.5, q50=1.0, q90=1.1, median_ape=0.1, sources=5)
    lo, hi = st2.band(10.0, "time")
    assert lo == pytest.approx(10 / 1.1) and hi == pytest.approx(20.0)
    with pytest.raises(ValueError, match="orientation"):
        band(EstimateClass(kind="train"), 1.0, "sideways")


def test_a_small_class_borrows_the_next_coarser_one() -> None:
    rows = {k: v["n"] for k, v in accuracy_data()["classes"].items()}
    checked = 0
    for kind in ("train", "serve", "memory"):
        for cls in (EstimateClass(kind=kind, efficiency="default", family="latency", arch="moe", scale="multi"),  # type: ignore[arg-type]
                    EstimateClass(kind=kind, efficiency="validated", arch="moe", scale="multi")):  # type: ignore[arg-type]
            st = class_stats(cls)
            present = [k for k in cls.levels() if k in rows]
            if not present:
                assert st is None
                continue
            big = [k for k in present if rows[k] >= MIN_ROWS]
            assert st is not None and st.key == (big[0] if big else present[-1])
            checked += 1
    assert checked >= 3


def test_measured_parts_borrow_the_validated_errors() -> None:
    m = class_stats(EstimateClass(kind="train", efficiency="measured"))
    v = class_stats(EstimateClass(kind="train", efficiency="validated"))
    assert m == v and m is not None


@pytest.mark.ground_truth("training.csv", "inference.csv", "memory.csv", "released/training.csv",
                          "released/inference.csv", "released/memory.csv")
def test_shipped_cross_validation_matches_todays_estimates() -> None:
    """The in-sample predictions recorded in accuracy.json (dev and released rows) are today's: an estimator
    change that moves them must re-run benchmarks/cross_validate.py (the bands would describe another model)."""
    cat = load_catalog(use_user_dir=False)
    serve = serving_evaluator(cat)
    recorded: dict[tuple[str, str], float] = {}
    for e in accuracy_data()["entries"]:
        recorded[(e["file"], e["id"])] = e["in_sample"]
    drift: dict[str, list[float]] = {}
    for file in ("training", "inference", "memory"):
        for row in (r for path in case_files(file, GT) for r in read_rows(path)):
            key = (file, row["id"])
            if key not in recorded:
                continue
            if file == "training":
                res = evaluate_training_row(row, cat)
            elif file == "inference":
                res = serve(row, serving_calibration())
            else:
                res = evaluate_memory_row(row, cat)
            error_ratio(res.metric, res.measured, res.predicted)
            drift.setdefault(file, []).append(abs(res.predicted / recorded[key] - 1.0))
    assert set(drift) == {"training", "inference", "memory"}
    for file, d in drift.items():
        assert float(np.median(d)) < 0.01 and float(np.percentile(d, 90)) < 0.05, (
            f"{file}: estimates moved since accuracy.json was written; run python benchmarks/cross_validate.py")


# Regression guards on the shipped cross-validation (2026-12-05, issue 35: every term tuned on rows refitted in each
# fold; dev, released and the project's added rows), each the observed figure plus a small margin. They are NOT the
# project's targets, several of which these figures miss (docs/validation.md "At a glance" reports them against the
# targets): training <= 8% / 20%, serving <= 10% / 30%, memory <= 10% / 25%, serving held out by part p90 <= 40%.
# Observed on 7648e25 (training) and b7724b4 (serving, memory), 2026-12-06: LLM Foundry's pre-2024 tables read with
# the Triton attention they ran (a flat 1.22x A100 offset against the other A100 sources stays), and training fits
# weighing each source as one (refit.SOURCE_BALANCE; rows alike, training by source read 11.74% / 28.85%). Before
# (1193edd): training by source 9.52% / 26.59%, by part 11.62% / 29.51%, by framework 10.31% / 27.07%.
# On 2606ddc (Megatron-Core MoE layers keep no expert outputs): training by source 9.14% / 24.80% -> 9.16% / 24.14%,
# by framework 9.08% / 26.95% -> 8.81% / 25.05%, by part 12.69% / 29.71% -> 12.68% / 29.78%; serving and memory same.
#   source:      training 9.16% / 24.14%, serving 9.18% / 39.06%, memory 5.79% / 22.78%
#   part:        training 12.68% / 29.78%, serving 10.93% / 38.14%, memory 5.34% / 21.89%
#   engine version (serving) / framework: training 8.81% / 25.05%, serving 10.40% / 43.73%, memory 5.79% / 22.78%
# Held out by part, training moved 12.68% / 29.78% -> 13.00% / 30.89% (2026-12-07) when the B200/GB200 16-bit term
# stopped being fitted on FP8 rows: with the H100 rows held out, the rule-derived default takes the lowest part term
# left, no longer a B200 value pulled down by FP8 MoE rows (docs/validation.md); every other gate was tightened.
GATES = [
    ("source", "train", 0.09, 0.25), ("source", "serve", 0.097, 0.37), ("source", "memory", 0.065, 0.24),
    ("accelerator", "train", 0.132, 0.315), ("accelerator", "serve", 0.11, 0.38), ("accelerator", "memory", 0.06, 0.23),
    ("stack", "train", 0.092, 0.26), ("stack", "serve", 0.105, 0.38), ("stack", "memory", 0.065, 0.24),
]


@pytest.mark.parametrize(("fold", "kind", "median", "p90"), GATES)
def test_cross_validated_accuracy_does_not_regress(fold: str, kind: str, median: float, p90: float) -> None:
    errs = [abs(1.0 / e["cv_ratio"] - 1.0) for e in accuracy_data()["entries"]
            if e["kind"] == kind and e["fold"] == fold]
    assert len(errs) >= 25
    assert float(np.median(errs)) <= median and float(np.percentile(errs, 90)) <= p90


def test_every_fold_type_reports_coverage_and_band_width_in_the_target_range() -> None:
    """Issue 35 item 4: coverage of the 80% band (widened by the fold's novelty factor, each source scored with the
    factor learned without it) in [70%, 90%] for every fold type and family, and a median band width reported.
    Observed 75-85%."""
    folds = accuracy_data()["folds"]
    assert set(folds) >= {"source", "accelerator", "stack"}
    for fold, kinds in folds.items():
        for kind, f in kinds.items():
            assert 0.70 <= f["coverage"] <= 0.90, (fold, kind, f)
            assert f["scale"] >= 1.0 and f["median_band_width"] > 0, (fold, kind, f)


def test_the_released_rows_are_cross_validated_and_skips_say_why() -> None:
    """Issue 35 item 1: the released rows are held out like the others; rows that cannot be evaluated (no lengths,
    no request rate, an empty architecture field) are listed with their reason, not guessed."""
    data = accuracy_data()
    released = {(e["file"], e["id"]) for e in data["entries"] if e.get("released") and e["fold"] == "source"}
    assert len(released) >= 140  # 97 training, 35 serving, 13 memory
    reasons = {k["id"]: k["reason"] for k in data["skipped"]}
    assert "input/output lengths not stated" in reasons["I054"]
    assert all(reasons.values())


def _cross_validate_module():  # type: ignore[no-untyped-def]
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("cross_validate", root / "benchmarks" / "cross_validate.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, root


def test_the_docs_tables_are_what_the_cross_validation_script_writes() -> None:
    """docs/validation.md's generated tables (At a glance, every fold type, parts, sources, classes) are exactly
    what `python benchmarks/cross_validate.py` writes between their markers, from the shipped accuracy.json."""
    mod, root = _cross_validate_module()
    docs = (root / "docs" / "validation.md").read_text(encoding="utf-8")
    for name, table in mod.tables(accuracy_data()).items():
        start, end = f"<!-- cv:{name} -->", f"<!-- /cv:{name} -->"
        assert start in docs and end in docs, name
        shown = docs.split(start, 1)[1].split(end, 1)[0].strip("\n")
        assert shown == table, f"{name}: run python benchmarks/cross_validate.py --rebuild to rewrite the docs"
