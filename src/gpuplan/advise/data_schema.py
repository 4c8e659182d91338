"""The schemas of advise/data/compliance.yaml (export-control notes, data-residency rules, compliance levels) and
advise/data/ecosystem.yaml (porting risk per software stack, consumer parts).

The rules read the files as plain data (`findings.advise_data`); each is checked against its model when it is
loaded, so a misspelt key (`rentd:`) is an error naming it instead of a note silently ignored.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SCHEMAS", "ComplianceFile", "EcosystemFile"]

_STRICT = ConfigDict(extra="forbid", frozen=True)
Market = Literal["cn", "global"]
Severity = Literal["info", "warn", "critical"]


class _Strict(BaseModel):
    model_config = _STRICT


class _Sourced(_Strict):
    source: str = Field(min_length=1)


class _Texts(_Strict):
    """The same statement in English and Chinese."""

    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)


class RentedNote(_Texts):
    """How a note reads for a plan that rents the part from a provider in the note's market."""

    severity: Severity


class ExportNote(_Texts, _Sourced):
    id: str = Field(min_length=1)
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    applies_to: tuple[str, ...] = Field(min_length=1)  # accelerator id prefixes
    markets: tuple[Market, ...] = Field(min_length=1)
    # whose market `markets` names: where the cards are (export controls) or the buyer's (who may use a part)
    applies_by: Literal["hosting", "buyer"] = "hosting"
    severity: Severity
    rented: RentedNote | None = None


class ResidencyRule(_Texts, _Sourced):
    markets: tuple[Market, ...] = Field(min_length=1)


class ComplianceLevel(_Sourced):
    name: str = Field(min_length=1)
    providers: tuple[str, ...] = Field(min_length=1)
    as_of: str = Field(min_length=1)


class _DataFile(_Strict):
    schema_version: Literal[1]
    as_of: str


class ComplianceFile(_DataFile):
    export_notes: tuple[ExportNote, ...]
    data_residency: dict[str, ResidencyRule]
    compliance_levels: dict[str, ComplianceLevel]


class Stack(_Sourced):
    """A software stack's porting risk, what runs on it, and QLoRA's 4-bit kernels there."""

    risk: Literal["low", "medium", "high"]
    poc_weeks: float = Field(ge=0)
    frameworks: str = Field(min_length=1)
    caveat: str
    fp8_framework: str | None = None
    qlora_4bit: Literal["official", "experimental", "none"]
    qlora_4bit_source: str = Field(min_length=1)


class ConsumerParts(_Sourced):
    ids: tuple[str, ...] = Field(min_length=1)


class EcosystemFile(_DataFile):
    stacks: dict[str, Stack]
    consumer_parts: ConsumerParts


SCHEMAS: dict[str, type[BaseModel]] = {"compliance": ComplianceFile, "ecosystem": EcosystemFile}
