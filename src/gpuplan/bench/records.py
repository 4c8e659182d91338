"""The result of a `gpuplan bench` run: one JSON file, validated by these pydantic models.

Every measurement carries its unit, its spread over repeats, provenance "measured", and
gpuplan's prediction for the same hardware (or null with the reason). The JSON schema is
exported to docs/bench-result.schema.json (`result_schema`); `load_result` validates a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuplan.errors import InputError

__all__ = [
    "SCHEMA_VERSION",
    "BenchResult",
    "BenchmarkStatus",
    "Device",
    "Machine",
    "Measurement",
    "PlanRun",
    "Prediction",
    "Telemetry",
    "load_result",
    "result_schema",
    "write_result",
]

SCHEMA_VERSION = 1
_FROZEN = ConfigDict(extra="forbid", frozen=True)
Param = float | int | str | bool | None


class Prediction(BaseModel):
    """gpuplan's figure for the same measurement on the same hardware (estimated), or null with the reason."""

    model_config = _FROZEN

    value: float | None
    unit: str
    provenance: Literal["estimated"] = "estimated"
    basis: str = Field(default="", description="the formula and data the value comes from")
    terms: dict[str, float] = Field(default_factory=dict, description="calibration terms and catalog figures used")
    reason: str | None = Field(default=None, description="why there is no prediction (value null)")


class Measurement(BaseModel):
    """One measured figure: median over repeats after warm-up, with its spread."""

    model_config = _FROZEN

    benchmark: str = Field(description="gemm, memory, transfer, d2d, collectives, storage, dataloader, train, decode, "
                                       "plan (gpuplan bench --plan)")
    name: str = Field(min_length=1, description="unique within a result, e.g. gemm.bf16.4096x4096x4096")
    metric: str = Field(min_length=1, description="what value is, e.g. tflops, copy_bandwidth, busbw")
    value: float
    unit: str = Field(min_length=1)
    spread: float = Field(ge=0, description="relative interquartile range of the timed repeats (IQR / median)")
    repeats: int = Field(ge=1)
    median_s: float | None = Field(default=None, ge=0, description="median seconds of one timed operation")
    params: dict[str, Param] = Field(default_factory=dict)
    provenance: Literal["measured"] = "measured"
    predicted: Prediction
    ratio: float | None = Field(default=None, description="measured / predicted")


class BenchmarkStatus(BaseModel):
    """How one benchmark went; a failure keeps the error text and the measurements made before it."""

    model_config = _FROZEN

    name: str
    status: Literal["ok", "partial", "failed", "skipped"]
    seconds: float = Field(ge=0)
    error: str | None = None
    measurements: int = Field(default=0, ge=0)
    notes: tuple[str, ...] = Field(default=(), description="what was skipped inside the benchmark, and why")


class Device(BaseModel):
    model_config = _FROZEN

    index: int = Field(ge=0)
    name: str
    memory_bytes: int | None = None
    detail: dict[str, Param] = Field(default_factory=dict)


class Machine(BaseModel):
    """Where the run happened: devices, driver and library versions, topology where known."""

    model_config = _FROZEN

    hostname: str
    platform: str
    python: str
    backend: Literal["cuda", "npu", "cpu"]
    cpu: str
    cpu_count: int
    host_memory_bytes: int | None = None
    devices: tuple[Device, ...] = ()
    driver: str | None = None
    libraries: dict[str, str] = Field(default_factory=dict)
    topology: str | None = Field(default=None, description="e.g. `nvidia-smi topo -m` output")
    world_size: int = Field(default=1, ge=1, description="processes of a torchrun launch")


class Telemetry(BaseModel):
    """Device counters sampled while the suite ran (NVML on NVIDIA; host counters on CPU)."""

    model_config = _FROZEN

    source: str
    interval_s: float = Field(gt=0)
    samples: int = Field(ge=0)
    peak: dict[str, float] = Field(default_factory=dict)
    mean: dict[str, float] = Field(default_factory=dict)


class PlanRun(BaseModel):
    """What `gpuplan bench --plan` ran for one plan: the plan, the layout and model run, every difference."""

    model_config = _FROZEN

    source: str = Field(description="the plan file")
    document: Literal["plan train", "plan", "estimate train"] = Field(description="what the file held")
    pick: int | None = Field(default=None, description="--pick N (null: the recommended plan)")
    plan_id: str = Field(description="the id emitted files carry (gpuplan.emit plan_id)")
    model: str = Field(description="the plan's model")
    run_model: str = Field(description="the model run: the plan's, or a scaled-down copy (scaled)")
    scaled: bool = Field(description="true when this machine could not hold the plan's model")
    accelerator: str = Field(description="the plan's accelerator")
    devices: int = Field(ge=1, description="the plan's device count")
    planned_layout: str
    run_layout: dict[str, Param] = Field(description="dp, zero, micro_batch, microbatches, recompute")
    run_layout_label: str
    strategy: str = Field(description="DDP, DDP + ZeroRedundancyOptimizer or FSDP, and activation checkpointing")
    processes: int = Field(ge=1)
    implementation: str = ""
    seq_len: int = Field(ge=1)
    differences: tuple[str, ...] = Field(default=(), description="each way the run differs from the plan, and why")
    predicted_for: str = Field(description="what the predictions of the plan.* measurements are for (or why none)")
    plan_predicted: dict[str, float | None] = Field(
        default_factory=dict, description="the plan's own figures for its hardware, for reference; the "
        "measurements are compared with the prediction for what ran, never with these when they differ")


class BenchResult(BaseModel):
    """One run of `gpuplan bench`."""

    model_config = _FROZEN

    schema_version: Literal[1] = 1
    gpuplan_version: str
    created_at: str = Field(description="ISO 8601, UTC")
    command: str
    quick: bool
    complete: bool = Field(description="false when a benchmark failed or the run was interrupted")
    machine: Machine
    accelerator: str | None = Field(description="catalog id the predictions are for; null for a CPU")
    accelerator_note: str = ""
    benchmarks: tuple[BenchmarkStatus, ...]
    measurements: tuple[Measurement, ...]
    telemetry: Telemetry | None = None
    plan: PlanRun | None = Field(default=None, description="gpuplan bench --plan: the plan run (null for the suite)")


def result_schema() -> dict[str, object]:
    """The JSON schema of a result file (docs/bench-result.schema.json)."""
    schema = BenchResult.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://github.com/gpuplan/gpuplan/docs/bench-result.schema.json"
    return schema


def write_result(result: BenchResult, path: Path | str) -> Path:
    """Write `result` atomically (temp file + rename); InputError if the folder is not writable."""
    out = Path(path).expanduser()
    text = result.model_dump_json(indent=2) + "\n"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, out)
    except OSError as exc:
        raise InputError(field="out", value=str(out), allowed="a file in a writable folder",
                         hint=f"{exc.strerror or exc}") from None
    return out


def load_result(path: Path | str) -> BenchResult:
    """Read and validate a result file; InputError naming the file and the first problem."""
    from gpuplan.jsonio import read_json

    p = Path(path).expanduser()
    data = read_json(p, field="result", allowed="a readable gpuplan bench JSON file")
    try:
        return BenchResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise InputError(field=f"{p.name}:{loc}", value=first.get("input"),
                         allowed=str(first.get("msg", "a valid result")),
                         hint="the file does not follow docs/bench-result.schema.json") from None
