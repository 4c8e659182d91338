"""Run a case file through the estimators: per-row predicted vs measured, median and p90 APE."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.calibration import Calibration
from gpuplan.hardware import load_catalog
from gpuplan.validate.cases import read_rows
from gpuplan.validate.inference_cases import INFER_METRICS, evaluate_inference_row
from gpuplan.validate.memory_cases import METRICS as MEMORY_METRICS
from gpuplan.validate.memory_cases import CaseResult, evaluate_memory_row
from gpuplan.validate.training_cases import TRAIN_METRICS, evaluate_training_row

__all__ = ["ValidationReport", "validate_file"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    cases: list[CaseResult]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)

    @property
    def median_ape(self) -> float | None:
        return float(np.median([c.ape for c in self.cases])) if self.cases else None

    @property
    def p90_ape(self) -> float | None:
        return float(np.percentile([c.ape for c in self.cases], 90)) if self.cases else None

    def to_json(self) -> dict[str, object]:
        return {"cases": [{"id": c.id, "metric": c.metric, "measured": c.measured, "predicted": c.predicted,
                           "ape": c.ape, "detail": c.detail} for c in self.cases],
                "median_ape": self.median_ape, "p90_ape": self.p90_ape,
                "skipped": [{"id": i, "reason": r} for i, r in self.skipped]}


def validate_file(path: Path, *, calibration: Calibration | None = None,
                  include_low_confidence: bool = False) -> ValidationReport:
    """Evaluate every row of a ground-truth case file; rows that cannot be evaluated are listed with the reason."""
    if not path.exists():
        raise InputError(field="cases", value=str(path), allowed="an existing CSV file")
    rows = read_rows(path)
    catalog = load_catalog()
    cases: list[CaseResult] = []
    skipped: list[tuple[str, str]] = []
    for row in rows:
        rid = row.get("id", "?")
        if row.get("confidence") == "low" and not include_low_confidence:
            skipped.append((rid, "confidence low: an author's estimate, not a measurement"))
            continue
        metric = row.get("metric", "")
        try:
            if metric in MEMORY_METRICS and "optimizer" in row:
                cases.append(evaluate_memory_row(row, catalog))
            elif metric in TRAIN_METRICS:
                cases.append(evaluate_training_row(row, catalog, calibration))
            elif "engine" in row and metric in INFER_METRICS:
                cases.append(evaluate_inference_row(row, catalog))
            else:
                skipped.append((rid, f"unknown metric {metric!r}"))
        except (GpuplanError, ValueError) as exc:
            skipped.append((rid, str(exc)))
    return ValidationReport(cases=cases, skipped=skipped)
