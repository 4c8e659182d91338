"""Named, sourced, user-overridable terms: the record every data file of terms shares.

Calibration terms (estimate/data/calibration.yaml), link terms (estimate/data/links.yaml),
advisor thresholds (advise/data/thresholds.yaml) and planner terms (search/data/*.yaml) are
all a table of `Term`s with a schema version and a date. One base gives them the same
lookup (unknown names get close matches), the same `assumptions` view and the same override
rule. Lives at the package root so that workload data (engine profiles) and estimators can
both use it without an upward import.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from gpuplan.errors import InputError, unknown_name

__all__ = ["Term", "TermTable", "override_terms"]


class Term(BaseModel):
    """One named factor: its value and unit, where it comes from, and whether a user replaced it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    unit: str
    source: str = Field(min_length=1)
    note: str = ""
    overridden: bool = False

    def describe(self) -> dict[str, Any]:
        """The term as a plain dict, for an estimate's `assumptions`."""
        return {"value": self.value, "unit": self.unit, "source": self.source, "overridden": self.overridden}


T = TypeVar("T", bound=BaseModel)
TT = TypeVar("TT", bound="TermTable")


class TermTable(BaseModel):
    """A versioned, dated table of terms; subclasses narrow `terms` and name themselves in `label`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    label: ClassVar[str] = "term"

    schema_version: int
    as_of: str
    terms: Mapping[str, Term]

    def value(self, name: str) -> float:
        try:
            return self.terms[name].value
        except KeyError:
            raise unknown_name(self.label, name, self.terms) from None

    def used(self, *names: str) -> dict[str, dict[str, Any]]:
        """The named terms as plain dicts, for an estimate's `assumptions`."""
        return {n: self.terms[n].describe() for n in names}

    def with_overrides(self: TT, overrides: Mapping[str, float] | None,
                       check: Callable[[str, float], None] | None = None, source: str = "user override") -> TT:
        """This table with `overrides` (name -> value) applied and marked (see `override_terms`)."""
        if not overrides:
            return self
        return self.model_copy(update={"terms": override_terms(self.terms, overrides, label=self.label,
                                                               check=check, source=source)})


def override_terms(terms: Mapping[str, T], overrides: Mapping[str, float], *, label: str,
                   check: Callable[[str, float], None] | None = None, source: str = "user override") -> dict[str, T]:
    """`terms` with each override's value set and marked `overridden` (with `source`: a user's override, or a fact
    a validation row states).

    Shared by every table of terms; unknown names raise InputError with close matches;
    `check` may reject a value.
    """
    out = dict(terms)
    for name, value in overrides.items():
        if name not in out:
            raise unknown_name(label, name, out)
        if not math.isfinite(float(value)):
            raise InputError(field=name, value=value, allowed=f"a finite number ({label})")
        if check is not None:
            check(name, float(value))
        out[name] = out[name].model_copy(update={"value": float(value), "overridden": True, "source": source})
    return out
