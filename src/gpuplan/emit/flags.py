"""Flag lists of the tools gpuplan emits for, as data (data/flags/*.yaml) with source and version.

Each list was read from the tool's own code (its argument parser, config dataclasses or config
docs) at the version named; an emitted file may name only flags or keys on its tool's list
(`unknown` returns the names that are not).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["FlagList", "Schema", "flag_list", "schema", "unknown"]


class FlagList(BaseModel):
    """The flags (`--name`) or dotted config keys of one tool at one version."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str = Field(min_length=1)
    version: str = Field(min_length=1)
    source: str = Field(min_length=1)
    style: Literal["cli", "keys"]
    note: str = ""
    flags: tuple[str, ...] = Field(min_length=1)


class Schema(BaseModel):
    """Required dotted paths and allowed keys of an object format (Kubernetes, SkyPilot)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str
    version: str
    source: str
    required: tuple[str, ...]
    allowed: dict[str, tuple[str, ...]]
    constants: dict[str, str] = Field(default_factory=dict)


def _read(name: str) -> Any:
    return yaml.safe_load(resources.files("gpuplan.emit").joinpath(f"data/{name}").read_text(encoding="utf-8"))


@cache
def flag_list(tool: str) -> FlagList:
    """The recorded flag list of `tool` (a file name under data/flags)."""
    return FlagList.model_validate(_read(f"flags/{tool}.yaml"))


@cache
def schema(kind: str) -> Schema:
    """The recorded schema of `kind` (pytorchjob, deployment, skypilot)."""
    return Schema.model_validate(_read("schemas.yaml")["schemas"][kind])


def unknown(tools: Iterable[str], names: Iterable[str]) -> list[str]:
    """The names that none of `tools`' lists has (an empty list: every name is known)."""
    known: set[str] = set()
    for t in tools:
        known.update(flag_list(t).flags)
    return sorted({n for n in names if n not in known})
