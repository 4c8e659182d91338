"""gpuplan: which GPU servers or cloud instances to rent or buy for LLM work, and why."""

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

__version__ = "0.1.0"

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
