"""Finding records, their figures and the threshold data the rules read.

A Finding has an id (`category.name`), a severity, a message and a fix in every catalog language
(rendered once through gpuplan.i18n), and the figures behind it, each with its provenance
(measured, estimated, datasheet or data) and source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, ClassVar, Literal

from gpuplan import yamlio
from gpuplan.i18n import both
from gpuplan.terms import Term, TermTable

__all__ = ["SEVERITIES", "Figure", "Finding", "Provenance", "Severity", "Threshold", "Thresholds", "advise_data",
           "default_thresholds", "load_thresholds", "make_finding"]

Severity = Literal["info", "warn", "critical"]
Provenance = Literal["measured", "estimated", "datasheet", "data"]
SEVERITIES: tuple[Severity, ...] = ("critical", "warn", "info")


@dataclass(frozen=True, slots=True, kw_only=True)
class Figure:
    """One number behind a finding."""

    name: str
    value: float | str | None
    unit: str
    provenance: Provenance
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "provenance": self.provenance,
                "source": self.source}


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One advisor finding: what, how bad, the fix, and the numbers behind it."""

    id: str
    severity: Severity
    message: Mapping[str, str]
    fix: Mapping[str, str]
    figures: tuple[Figure, ...] = ()
    thresholds: tuple[str, ...] = field(default=())

    @property
    def category(self) -> str:
        return self.id.split(".", 1)[0]

    def text(self, lang: str) -> str:
        return self.message[lang]

    def fix_text(self, lang: str) -> str:
        return self.fix[lang]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "category": self.category, "severity": self.severity, "message": dict(self.message),
                "fix": dict(self.fix), "figures": [f.to_json() for f in self.figures],
                "thresholds": list(self.thresholds)}


def make_finding(fid: str, severity: Severity, figures: tuple[Figure, ...] = (), thresholds: tuple[str, ...] = (),
                 **params: Any) -> Finding:
    """A finding whose message and fix come from `finding.<fid>.msg` / `.fix` in the message catalog."""
    return Finding(id=fid, severity=severity, message=both(f"finding.{fid}.msg", **params),
                   fix=both(f"finding.{fid}.fix", **params), figures=figures, thresholds=thresholds)


class Threshold(Term):
    """One advisor threshold (a Term: value, unit, source, note, overridden)."""


class Thresholds(TermTable):
    """The advisor's thresholds (advise/data/thresholds.yaml), user-overridable."""

    label: ClassVar[str] = "advisor threshold"
    terms: dict[str, Threshold]

    def used(self, *names: str) -> dict[str, dict[str, Any]]:
        return {n: {**self.terms[n].describe(), "as_of": self.as_of} for n in names}


@cache
def default_thresholds() -> Thresholds:
    return Thresholds.model_validate(advise_data("thresholds"))


def load_thresholds(overrides: Mapping[str, float] | None = None) -> Thresholds:
    """Default thresholds with `overrides` applied (unknown names raise InputError with close matches)."""
    return default_thresholds().with_overrides(overrides)


@cache
def advise_data(name: str) -> dict[str, Any]:
    """One YAML file of advise/data (thresholds, ecosystem, compliance, tco)."""
    path = resources.files("gpuplan.advise") / "data" / f"{name}.yaml"
    data: dict[str, Any] = yamlio.safe_load(path.read_text(encoding="utf-8"))
    from gpuplan.advise.data_schema import SCHEMAS

    if name in SCHEMAS:  # unknown keys are errors, not notes silently ignored
        SCHEMAS[name].model_validate(data)
    return data
