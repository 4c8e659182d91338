"""Requests as data: the checked inputs of `plan train`, `plan infer` and `memory train` as pydantic models,
and the functions that answer them with the same JSON the CLI's `--json` prints.

The web app (`gpuplan.web`) is a thin door onto these: it parses a request, calls `run_*`, stores and
renders the result. Nothing here reads a file-system path from the request: models are preset ids or the content
of an uploaded config.json, the catalog is the built-in one plus the user's own folder on the serving machine,
measured calibration comes with the request (an uploaded bench result's terms) and is never written.
"""

from gpuplan.service.exports import cli_command, plans_csv, request_of
from gpuplan.service.requests import (
    CompareRequest,
    InferPlanRequest,
    MemoryTrainRequest,
    TrainPlanRequest,
    canonical_json,
)
from gpuplan.service.run import (
    catalog_version,
    plan_infer_report,
    plan_train_report,
    run_compare,
    run_memory_train,
    run_plan_infer,
    run_plan_train,
)

__all__ = [
    "CompareRequest",
    "InferPlanRequest",
    "MemoryTrainRequest",
    "TrainPlanRequest",
    "canonical_json",
    "catalog_version",
    "cli_command",
    "plan_infer_report",
    "plan_train_report",
    "plans_csv",
    "request_of",
    "run_compare",
    "run_memory_train",
    "run_plan_infer",
    "run_plan_train",
]
