"""Optimizer state sizes, as data (`data/optimizers.yaml`)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from gpuplan import yamlio
from gpuplan.errors import unknown_name

__all__ = ["OptimizerSpec", "get_optimizer", "optimizer_names"]


class OptimizerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    state_bytes_per_param: float = Field(ge=0)
    fp32_master_weights: bool
    # temporaries live during the step, bytes per trainable parameter of the local optimizer shard
    step_temp_bytes_per_param: float = Field(ge=0)
    step_temp_source: str = Field(min_length=1)
    source: str = Field(min_length=1)
    note: str = ""


@cache
def _table() -> dict[str, OptimizerSpec]:
    raw = yamlio.safe_load((resources.files("gpuplan.estimate") / "data" / "optimizers.yaml").read_text("utf-8"))
    return {k: OptimizerSpec.model_validate(v) for k, v in raw["optimizers"].items()}


def optimizer_names() -> list[str]:
    return sorted(_table())


def get_optimizer(name: str) -> OptimizerSpec:
    try:
        return _table()[name]
    except KeyError:
        raise unknown_name("optimizer", name, _table()) from None
