"""Run a case file through the estimators: per-row predicted vs measured, median and p90 APE."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.estimate.uncertainty import band
from gpuplan.hardware import load_catalog
from gpuplan.validate.cases import read_rows
from gpuplan.validate.ground_truth import FILES, case_files
from gpuplan.validate.inference_cases import INFER_METRICS, evaluate_inference_row
from gpuplan.validate.memory_cases import METRICS as MEMORY_METRICS
from gpuplan.validate.memory_cases import CaseResult, evaluate_memory_row
from gpuplan.validate.row_class import orientation, row_class
from gpuplan.validate.training_cases import TRAIN_METRICS, evaluate_training_row

__all__ = ["ValidationReport", "validate_file"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    cases: list[CaseResult]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    bands: list[tuple[float, float] | None] = field(default_factory=list)  # per case: the planner's 80% band

    @property
    def coverage(self) -> float | None:
        """Share of cases whose measured value lies inside the band the planner would show."""
        inside = [lo <= c.measured <= hi for c, b in zip(self.cases, self.bands, strict=False) if b is not None
                  for lo, hi in (b,)]
        return sum(inside) / len(inside) if inside else None

    @property
    def median_ape(self) -> float | None:
        return float(np.median([c.ape for c in self.cases])) if self.cases else None

    @property
    def p90_ape(self) -> float | None:
        return float(np.percentile([c.ape for c in self.cases], 90)) if self.cases else None

    def to_json(self) -> dict[str, object]:
        bands = self.bands or [None] * len(self.cases)
        return {"cases": [{"id": c.id, "metric": c.metric, "measured": c.measured, "predicted": c.predicted,
                           "ape": c.ape, "low": b[0] if b else None, "high": b[1] if b else None,
                           "detail": c.detail} for c, b in zip(self.cases, bands, strict=True)],
                "median_ape": self.median_ape, "p90_ape": self.p90_ape, "coverage": self.coverage,
                "skipped": [{"id": i, "reason": r} for i, r in self.skipped]}


def validate_file(path: Path, *, calibration: Calibration | None = None,
                  include_low_confidence: bool = False) -> ValidationReport:
    """Evaluate every row of a ground-truth case file; rows that cannot be evaluated are listed with the reason.

    `path` may also name a shipped family (`training`, `inference`, `memory`: validate.ground_truth): its dev and
    released rows together."""
    if not path.exists() and str(path) in FILES:
        rows = [r for p in case_files(str(path)) for r in read_rows(p)]
    elif not path.exists():
        raise InputError(field="cases", value=str(path),
                         allowed=f"an existing CSV file, or a shipped family: {', '.join(FILES)}")
    else:
        rows = read_rows(path)
    catalog = load_catalog()
    cases: list[CaseResult] = []
    skipped: list[tuple[str, str]] = []
    bands: list[tuple[float, float] | None] = []
    for row in rows:
        rid = row.get("id", "?")
        if row.get("confidence") == "low" and not include_low_confidence:
            skipped.append((rid, "confidence low: an author's estimate, not a measurement"))
            continue
        metric = row.get("metric", "")
        try:
            if metric in MEMORY_METRICS and "optimizer" in row:
                file, case = "memory", evaluate_memory_row(row, catalog)
            elif metric in TRAIN_METRICS:
                file, case = "training", evaluate_training_row(row, catalog, calibration)
            elif "engine" in row and metric in INFER_METRICS:
                file, case = "inference", evaluate_inference_row(row, catalog)
            else:
                skipped.append((rid, f"unknown metric {metric!r}"))
                continue
        except (GpuplanError, ValueError) as exc:
            skipped.append((rid, str(exc)))
            continue
        cases.append(case)
        b = band(row_class(file, row), case.predicted, orientation(metric))
        bands.append((b.low, b.high) if b is not None else None)
    return ValidationReport(cases=cases, skipped=skipped, bands=bands)
