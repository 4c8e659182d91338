"""Calibration terms: named empirical factors loaded from data, replaceable by the user.

A term has a value, a unit, a source and a note; estimates list the terms they used so
that a user sees every factor that is not a plain formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field

from gpuplan.errors import unknown_name
from gpuplan.terms import override_terms

__all__ = ["Calibration", "CalibrationTerm", "default_calibration", "load_calibration", "override_terms"]


class CalibrationTerm(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float = Field(ge=0)
    unit: str
    applies_to: tuple[str, ...] = ()
    source: str = Field(min_length=1)
    note: str = ""
    overridden: bool = False


class Calibration(BaseModel):
    """All calibration terms of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    as_of: str
    terms: dict[str, CalibrationTerm]

    def value(self, name: str) -> float:
        try:
            return self.terms[name].value
        except KeyError:
            raise unknown_name("calibration term", name, self.terms) from None

    def used(self, *names: str) -> dict[str, dict[str, object]]:
        """The named terms as plain dicts, for an estimate's `assumptions`."""
        return {n: {"value": self.terms[n].value, "unit": self.terms[n].unit,
                    "source": self.terms[n].source, "overridden": self.terms[n].overridden}
                for n in names}


@cache
def default_calibration() -> Calibration:
    path = resources.files("gpuplan.estimate") / "data" / "calibration.yaml"
    return Calibration.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def load_calibration(overrides: Mapping[str, float] | None = None) -> Calibration:
    """The shipped terms with `overrides` (name -> value) applied and marked as such."""
    base = default_calibration()
    if not overrides:
        return base
    return base.model_copy(update={"terms": override_terms(base.terms, overrides, label="calibration term")})
