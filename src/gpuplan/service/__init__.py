"""Requests as data: the checked inputs of `plan train`, `plan infer` and `memory train` as pydantic models,
and the functions that answer them with the same JSON the CLI's `--json` prints.

This is the one door both front ends use: the CLI (`gpuplan.cli`) and the web app (`gpuplan.web`) call the
checks, loaders and runners here and never import each other. Nothing here reads a file-system path from a
request: models are preset ids or the content of an uploaded config.json, length histograms come inline, the
catalog is the built-in one plus the user's own folder on the serving machine, measured calibration comes with
the request (an uploaded bench result's terms) and is never written.

The names below load on first use (PEP 562), so a CLI command that needs only `service.checks` does not import
the request models and runners.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real names for type checkers; at run time they load on first use (below)
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

_WHERE = {"cli_command": "exports", "plans_csv": "exports", "request_of": "exports",
          "CompareRequest": "requests", "InferPlanRequest": "requests", "MemoryTrainRequest": "requests",
          "TrainPlanRequest": "requests", "canonical_json": "requests", "catalog_version": "run",
          "plan_infer_report": "run", "plan_train_report": "run", "run_compare": "run", "run_memory_train": "run",
          "run_plan_infer": "run", "run_plan_train": "run"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gpuplan.service' has no attribute {name!r}")
    value = getattr(import_module(f"gpuplan.service.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
