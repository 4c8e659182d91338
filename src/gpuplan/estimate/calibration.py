"""Calibration terms: named empirical factors loaded from data, replaceable by the user.

A term has a value, a unit, a source and a note; estimates list the terms they used so
that a user sees every factor that is not a plain formula.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import ClassVar

import yaml
from pydantic import Field

from gpuplan.terms import Term, TermTable

__all__ = ["Calibration", "CalibrationTerm", "default_calibration", "load_calibration"]


class CalibrationTerm(Term):
    value: float = Field(ge=0)
    applies_to: tuple[str, ...] = ()


class Calibration(TermTable):
    """All calibration terms of a run."""

    label: ClassVar[str] = "calibration term"
    terms: dict[str, CalibrationTerm]


@cache
def default_calibration() -> Calibration:
    path = resources.files("gpuplan.estimate") / "data" / "calibration.yaml"
    return Calibration.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def load_calibration(overrides: Mapping[str, float] | None = None) -> Calibration:
    """The shipped terms with `overrides` (name -> value) applied and marked as such."""
    return default_calibration().with_overrides(overrides)
