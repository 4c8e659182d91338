"""Flag lists of the tools gpuplan emits for, as data (data/flags/*.yaml) with source and version.

Each list was read from the tool's own code (its argument parser, config dataclasses or config
docs) at the version named; an emitted file may name only flags or keys on its tool's list
(`unknown` returns the names that are not). Lists that record `types` (Megatron-LM, MindSpeed-LLM,
torchtitan) also check the values: `arg_problems` parses an emitted command with an argparse parser
built from the list (switches take no value, int/float values parse, choices hold), `key_problems`
does the same for a config file's keys. `stacks` names the software stacks a training tool runs on.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuplan.hardware.schema_devices import StackKind

__all__ = ["FlagList", "Schema", "arg_problems", "flag_list", "key_problems", "schema", "unknown"]

_BASE_TYPES = ("int", "float", "str", "bool", "switch", "list[str]")


class FlagList(BaseModel):
    """The flags (`--name`) or dotted config keys of one tool at one version."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tool: str = Field(min_length=1)
    version: str = Field(min_length=1)
    source: str = Field(min_length=1)
    repo: str = ""
    path: str = ""
    commit: str = ""
    as_of: str = Field(default="", pattern=r"^(\d{4}-\d{2}-\d{2})?$")
    style: Literal["cli", "keys"]
    note: str = ""
    stacks: tuple[StackKind, ...] = Field(default=(), description="software stacks the tool runs on (training "
                                          "tools; serving engines say it in workload/data/engines.yaml)")
    stacks_source: str = ""
    flags: tuple[str, ...] = Field(min_length=1)
    types: dict[str, str] = Field(default_factory=dict, description="flag -> int, float, str, bool, switch, "
                                  "list[str] or choice:a,b,...; ' nargs=+' (or *) where it takes several values")

    @model_validator(mode="after")
    def _check(self) -> FlagList:
        stray = sorted(set(self.types) - set(self.flags))
        if stray:
            raise ValueError(f"{self.tool}: types of flags not on the list: {stray[:5]}")
        for name, kind in self.types.items():
            base = kind.split(" nargs=")[0]
            if base not in _BASE_TYPES and not base.startswith("choice:"):
                raise ValueError(f"{self.tool}: {name} has type {kind!r}; allowed: {_BASE_TYPES} or choice:a,b")
        if self.stacks and not self.stacks_source:
            raise ValueError(f"{self.tool}: stacks need stacks_source")
        return self


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


class _Rejected(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits; a check reports instead
        raise _Rejected(message)


def _nargs(kind: str) -> str | None:
    return kind.split(" nargs=")[1] if " nargs=" in kind else None


@cache
def _parser(tool: str) -> _Parser:
    """An argparse parser of `tool`'s recorded flags and types: what the tool's own parser accepts."""
    fl = flag_list(tool)
    p = _Parser(prog=tool, allow_abbrev=False, add_help=False, exit_on_error=False)
    for name in fl.flags:
        kind = fl.types.get(name, "str")
        base = kind.split(" nargs=")[0]
        if base == "switch":
            p.add_argument(name, action="store_true")
            continue
        kw: dict[str, Any] = {"type": {"int": int, "float": float}.get(base, str)}
        if base.startswith("choice:"):
            kw["choices"] = base.removeprefix("choice:").split(",")
        if (n := _nargs(kind)) is not None:
            kw["nargs"] = int(n) if n.isdigit() else n
        p.add_argument(name, **kw)
    return p


def arg_problems(tool: str, args: Sequence[tuple[str, str | None]]) -> list[str]:
    """What `tool`'s parser would reject in `args` ((flag, value or None) pairs, in order): unknown flags, a value
    given to a switch, a missing value, a value of the wrong type or outside the choices. Shell expansions (${...})
    stand for strings. An empty list: the command parses."""
    fl = flag_list(tool)
    out = [f"{f}: not a flag of {fl.tool} {fl.version}" for f, _ in args if f not in fl.flags]
    words: list[str] = []
    for flag, value in args:
        if flag not in fl.flags:
            continue
        kind = fl.types.get(flag, "str")
        if kind == "switch" and value is not None:
            out.append(f"{flag}: a switch, given the value {value!r}")
            continue
        if kind != "switch" and value is None:
            out.append(f"{flag}: takes a value ({kind}), given none")
            continue
        words.append(flag)
        if value is not None:
            words += value.split() if _nargs(kind) in ("+", "*") else [value]
    if fl.types and not out:
        try:
            _parser(tool).parse_args(words)
        except (_Rejected, argparse.ArgumentError) as exc:
            out.append(str(exc))
    return out


def _leaves(doc: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in doc.items():
        if isinstance(v, Mapping):
            out += _leaves(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def _fits(kind: str, value: Any) -> bool:
    if kind.startswith("choice:"):
        return str(value) in kind.removeprefix("choice:").split(",")
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    return isinstance(value, str)


def key_problems(tool: str, doc: Mapping[str, Any]) -> list[str]:
    """What `tool`'s config classes would reject in the nested document `doc`: keys not on its list and values not of
    the recorded type (a TOML/YAML config is typed: 8 is an int, "8" a string)."""
    fl = flag_list(tool)
    out: list[str] = []
    for key, value in _leaves(doc):
        if key not in fl.flags:
            out.append(f"{key}: not a key of {fl.tool} {fl.version}")
        elif (kind := fl.types.get(key)) is not None and not _fits(kind, value):
            out.append(f"{key}: {value!r} is not {kind}")
    return out
