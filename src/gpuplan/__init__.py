"""gpuplan: which GPU servers or cloud instances to rent or buy for LLM work, and why.

The names below load on first use (PEP 562): `import gpuplan` and the command line pay only for
the parts they touch. The version is `gpuplan._version`, which the build also writes into the package metadata.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuplan.advise import Finding, PlanFacts
    from gpuplan.advise.engine import advise as advise_plan
    from gpuplan.errors import GpuplanError, InputError
    from gpuplan.estimate.calibration import Calibration, load_calibration
    from gpuplan.estimate.infer_estimate import estimate_inference
    from gpuplan.estimate.infer_step import step_cost_model
    from gpuplan.estimate.kv_cache import kv_bytes_per_token, kv_cache
    from gpuplan.estimate.memory_infer import estimate_inference_memory, max_batch_that_fits
    from gpuplan.estimate.memory_train import estimate_training_memory
    from gpuplan.estimate.records import MemoryBreakdown
    from gpuplan.hardware import Accelerator, Catalog, CatalogError, Instance, Network, Server, load_catalog
    from gpuplan.search.infer_search import plan_inference
    from gpuplan.simulate import simulate_engine
    from gpuplan.workload.engines import engine
    from gpuplan.workload.jobs import InferenceJob, Layout, TrainingJob
    from gpuplan.workload.model_spec import MLASpec, ModelSpec, MoESpec
    from gpuplan.workload.params import ParamCounts, count_params
    from gpuplan.workload.presets import get_preset, list_presets, load_model

from gpuplan._version import __version__

_LAZY: dict[str, tuple[str, str]] = {
    "Finding": ("gpuplan.advise", "Finding"),
    "PlanFacts": ("gpuplan.advise", "PlanFacts"),
    "advise_plan": ("gpuplan.advise.engine", "advise"),
    "GpuplanError": ("gpuplan.errors", "GpuplanError"),
    "InputError": ("gpuplan.errors", "InputError"),
    "Calibration": ("gpuplan.estimate.calibration", "Calibration"),
    "load_calibration": ("gpuplan.estimate.calibration", "load_calibration"),
    "estimate_inference": ("gpuplan.estimate.infer_estimate", "estimate_inference"),
    "step_cost_model": ("gpuplan.estimate.infer_step", "step_cost_model"),
    "kv_bytes_per_token": ("gpuplan.estimate.kv_cache", "kv_bytes_per_token"),
    "kv_cache": ("gpuplan.estimate.kv_cache", "kv_cache"),
    "estimate_inference_memory": ("gpuplan.estimate.memory_infer", "estimate_inference_memory"),
    "max_batch_that_fits": ("gpuplan.estimate.memory_infer", "max_batch_that_fits"),
    "estimate_training_memory": ("gpuplan.estimate.memory_train", "estimate_training_memory"),
    "MemoryBreakdown": ("gpuplan.estimate.records", "MemoryBreakdown"),
    "Accelerator": ("gpuplan.hardware", "Accelerator"),
    "Catalog": ("gpuplan.hardware", "Catalog"),
    "CatalogError": ("gpuplan.hardware", "CatalogError"),
    "Instance": ("gpuplan.hardware", "Instance"),
    "Network": ("gpuplan.hardware", "Network"),
    "Server": ("gpuplan.hardware", "Server"),
    "load_catalog": ("gpuplan.hardware", "load_catalog"),
    "plan_inference": ("gpuplan.search.infer_search", "plan_inference"),
    "simulate_engine": ("gpuplan.simulate", "simulate_engine"),
    "engine": ("gpuplan.workload.engines", "engine"),
    "InferenceJob": ("gpuplan.workload.jobs", "InferenceJob"),
    "Layout": ("gpuplan.workload.jobs", "Layout"),
    "TrainingJob": ("gpuplan.workload.jobs", "TrainingJob"),
    "MLASpec": ("gpuplan.workload.model_spec", "MLASpec"),
    "ModelSpec": ("gpuplan.workload.model_spec", "ModelSpec"),
    "MoESpec": ("gpuplan.workload.model_spec", "MoESpec"),
    "ParamCounts": ("gpuplan.workload.params", "ParamCounts"),
    "count_params": ("gpuplan.workload.params", "count_params"),
    "get_preset": ("gpuplan.workload.presets", "get_preset"),
    "list_presets": ("gpuplan.workload.presets", "list_presets"),
    "load_model": ("gpuplan.workload.presets", "load_model"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'gpuplan' has no attribute {name!r}")
    value = getattr(import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "Accelerator",
    "Calibration",
    "Catalog",
    "CatalogError",
    "Finding",
    "GpuplanError",
    "InferenceJob",
    "InputError",
    "Instance",
    "Layout",
    "MLASpec",
    "MemoryBreakdown",
    "MoESpec",
    "ModelSpec",
    "Network",
    "ParamCounts",
    "PlanFacts",
    "Server",
    "TrainingJob",
    "__version__",
    "advise_plan",
    "count_params",
    "engine",
    "estimate_inference",
    "estimate_inference_memory",
    "estimate_training_memory",
    "get_preset",
    "kv_bytes_per_token",
    "kv_cache",
    "list_presets",
    "load_calibration",
    "load_catalog",
    "load_model",
    "max_batch_that_fits",
    "plan_inference",
    "simulate_engine",
    "step_cost_model",
]
