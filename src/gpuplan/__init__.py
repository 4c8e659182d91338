"""gpuplan: which GPU servers or cloud instances to rent or buy for LLM work, and why."""

from gpuplan.errors import GpuplanError, InputError
from gpuplan.workload.model_spec import MLASpec, ModelSpec, MoESpec
from gpuplan.workload.params import ParamCounts, count_params
from gpuplan.workload.presets import get_preset, list_presets, load_model

__version__ = "0.1.0"

__all__ = [
    "GpuplanError",
    "InputError",
    "MLASpec",
    "MoESpec",
    "ModelSpec",
    "ParamCounts",
    "__version__",
    "count_params",
    "get_preset",
    "list_presets",
    "load_model",
]
