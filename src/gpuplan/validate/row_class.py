"""The class of estimate a ground-truth row belongs to (estimate/uncertainty.EstimateClass dimensions).

kind: train, serve or memory (by file); family: throughput or campaign (device-hours, time to train)
for training, latency (TTFT, TPOT, end-to-end) or throughput for serving, train or infer for memory;
arch: moe when the model has experts; scale: multi when the run spans more than one node (training
rows without a device count are planned on 1,024 devices); stack: stated when the row names its training
framework (settings) or serving engine (not `generic`).
"""

from __future__ import annotations

from gpuplan.estimate.uncertainty import EstimateClass, part_accuracy
from gpuplan.validate.cases import Row
from gpuplan.validate.refit import TIME_METRICS, _is_moe
from gpuplan.validate.row_settings import resolve_row

__all__ = ["CAMPAIGN", "FILE_KIND", "LATENCY", "orientation", "row_class", "row_dims"]

CAMPAIGN = frozenset({"device_hours", "time_to_train_days"})
LATENCY = frozenset({"ttft_ms", "tpot_ms", "e2e_latency_s"})
FILE_KIND = {"training": "train", "memory": "memory", "inference": "serve"}


def row_dims(file: str, row: Row) -> dict[str, str]:
    n = int(float(row.get("num_accels") or 0) or (1024 if file == "training" else 1))
    gpn = int(float(row.get("gpus_per_node") or 8))
    metric = row.get("metric", "")
    if file == "training":
        family = "campaign" if metric in CAMPAIGN else "throughput"
    elif file == "inference":
        family = "latency" if metric in LATENCY else "throughput"
    else:
        family = "infer" if row.get("method") == "inference" else "train"
    _, st = resolve_row(row)
    if file == "inference":  # the engine column names it; `generic` is an unnamed serving stack
        stated = (row.get("engine") or "generic") != "generic" or st.framework is not None
    else:
        stated = st.framework is not None
    return {"kind": FILE_KIND[file], "family": family,
            "arch": "moe" if _is_moe(row.get("model", ""), row.get("moe_experts", "")) else "dense",
            "scale": "multi" if n > gpn else "single", "stack": "stated" if stated else "unstated"}


def row_class(file: str, row: Row) -> EstimateClass:
    """The class whose band the planner would show for this row's prediction."""
    d = row_dims(file, row)
    validated = d["kind"] == "memory" or part_accuracy(d["kind"], row.get("accelerator", "")) is not None
    return EstimateClass(kind=d["kind"], efficiency="validated" if validated else "default",  # type: ignore[arg-type]
                         family=d["family"], arch=d["arch"], scale=d["scale"],  # type: ignore[arg-type]
                         stack=d["stack"])  # type: ignore[arg-type]


def orientation(metric: str) -> str:
    return "time" if metric in TIME_METRICS else "rate"
