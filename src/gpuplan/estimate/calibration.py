"""Calibration terms: named empirical factors loaded from data, replaceable by the user.

A term has a value, a unit, a source and a note; estimates list the terms they used so
that a user sees every factor that is not a plain formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuplan import yamlio
from gpuplan.terms import Term, TermTable

__all__ = ["Calibration", "CalibrationTerm", "TunedOn", "default_calibration", "load_calibration"]


class TunedOn(BaseModel):
    """The ground-truth rows a term was tuned on, so that cross-validation can refit it without some of them.

    Terms with equal `tuned_on` are one fitted value (benchmarks/cross_validate.py refits them
    together). `pooled`: fitted as if no part had a term of its own: the value for parts without rows. `stack`:
    only rows on parts of these software stacks (the GPU kernels a shared serving default describes). `prior`: the
    value another source gives (not these rows): a fold that holds out every row tuning the term takes it instead
    of the engine or shared default, which describes other hardware (validate.refit).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: Literal["training", "inference", "memory"]
    accelerator: tuple[str, ...] = ()
    precision: tuple[str, ...] = ()
    engine: tuple[str, ...] = ()
    moe: bool | None = None
    stack: tuple[str, ...] = Field(default=(), description="software stacks of the rows' parts (catalog "
                                   "software_stack; empty: every stack)")
    pooled: bool = False
    bounds: tuple[float, float] = Field(description="range the refit searches")
    prior: float | None = Field(default=None, ge=0, description="the value a source other than these rows "
                                "gives: what cross-validation uses when every row that tunes the term is held out")
    prior_source: str = Field(default="", description="that other source and the derivation (required with prior)")

    @model_validator(mode="after")
    def _ordered(self) -> TunedOn:
        if not 0 <= self.bounds[0] < self.bounds[1]:
            raise ValueError(f"tuned_on.bounds must be 0 <= low < high, got {self.bounds}")
        if (self.prior is None) != (not self.prior_source):
            raise ValueError("tuned_on.prior and tuned_on.prior_source go together: a prior names its source")
        return self


class CalibrationTerm(Term):
    value: float = Field(ge=0)
    applies_to: tuple[str, ...] = ()
    tuned_on: TunedOn | None = None


class Calibration(TermTable):
    """All calibration terms of a run."""

    label: ClassVar[str] = "calibration term"
    terms: dict[str, CalibrationTerm]


@cache
def default_calibration() -> Calibration:
    path = resources.files("gpuplan.estimate") / "data" / "calibration.yaml"
    return Calibration.model_validate(yamlio.safe_load(path.read_text(encoding="utf-8")))


def load_calibration(overrides: Mapping[str, float] | None = None) -> Calibration:
    """The shipped terms with `overrides` (name -> value) applied and marked as such."""
    return default_calibration().with_overrides(overrides)
