"""Read catalog YAML files into validated records, collecting every problem with its line.

A catalog file is a mapping whose keys name record kinds, each holding a list:

    accelerators: [...]
    servers: [...]
    networks: [...]
    instances: [...]
    storage: [...]
    currency: {cny_per_usd: 7.1, source: ..., as_of: ...}   # one mapping, not a list
    pricing: {use_distressed: true}                          # optional: plan with distressed prices

Any file may hold any kinds, so a user's override file can carry a GPU, its server
and a price quote together. Top-level keys starting with `x-` are ignored: they hold
YAML anchors (`&cuda_fw`) that records reuse (`*cuda_fw`).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpuplan.hardware.issues import CatalogIssue
from gpuplan.hardware.schema_base import CurrencyRates, PricingPolicy, Sourced
from gpuplan.hardware.schema_devices import Accelerator, Server
from gpuplan.hardware.schema_offers import Instance, Network, Storage
from gpuplan.hardware.yaml_lines import LineMap, YamlProblem, load_yaml

__all__ = ["KINDS", "Entry", "ParsedFiles", "parse_dir", "parse_file"]

KINDS: dict[str, type[Sourced]] = {
    "accelerators": Accelerator,
    "servers": Server,
    "networks": Network,
    "instances": Instance,
    "storage": Storage,
}
TOP_KEYS = (*KINDS, "currency", "pricing")

# Unit suffixes of field names, for "write a plain number" hints.
_UNITS = {
    "_gib": "GiB",
    "_gbps": "GB/s",
    "_gbit_per_s": "Gbit/s",
    "_gbyte_per_s": "GB/s",
    "_tflops": "TFLOPS",
    "_tops": "TOPS",
    "_kw": "kW",
    "_w": "W",
    "_us": "microseconds",
    "_ms": "milliseconds",
    "_tb": "TB",
    "_mb_s_per_tib": "MB/s per TiB",
    "_gb_s": "GB/s",
}


@dataclass(frozen=True)
class Entry:
    """A validated record and where it was read."""

    kind: str
    record: Sourced
    path: str
    line: int
    key_lines: Mapping[str, int] = field(default_factory=dict)

    def line_of(self, key: str) -> int:
        """The line of `key` in this record, else the record's first line."""
        return self.key_lines.get(key, self.line)


@dataclass(frozen=True)
class RatesEntry:
    rates: CurrencyRates
    path: str
    line: int


@dataclass
class ParsedFiles:
    entries: list[Entry]
    rates: list[RatesEntry]
    issues: list[CatalogIssue]
    pricing: list[PricingPolicy] = field(default_factory=list)


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The pydantic model class that the location `loc` (field path) points into."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return None
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part)
        if field is None:
            return None
        current = _first_model(field.annotation)
    return current


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is not None or isinstance(annotation, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _first_model(arg)
            if found is not None:
                return found
    return None


def _line_of(raw: Any, loc: Sequence[str | int], default: int) -> int:
    """The line of the deepest key or item on `loc` inside `raw`."""
    line, node = default, raw
    for part in loc:
        if isinstance(node, LineMap) and isinstance(part, str) and part in node:
            line = node.key_lines.get(part, line)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            line = getattr(node, "line", line)
        else:
            break
    return line


def _unit_of(field: str) -> str:
    for suffix, unit in sorted(_UNITS.items(), key=lambda kv: -len(kv[0])):
        if field.endswith(suffix):
            return unit
    return ""


def _message(model: type[BaseModel], err: Any) -> str:
    kind, loc, value = err["type"], tuple(err["loc"]), err.get("input")
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        near = difflib.get_close_matches(str(loc[-1]), list(parent.model_fields) if parent else [], n=2)
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        return f"unknown key{hint} (units are part of field names, e.g. hbm_gib, hbm_bandwidth_gbps)"
    if kind == "missing":
        return "required field is missing"
    field = str(loc[-1]) if loc else ""
    if kind in ("float_parsing", "int_parsing", "float_type", "int_type") and isinstance(value, str):
        unit = _unit_of(field)
        where = f" ({field} is in {unit})" if unit else ""
        return f"{value!r} is not a number: write a plain number, the unit is in the field name{where}"
    return msg


def validation_issues(
    exc: ValidationError, model: type[BaseModel], raw: Any, path: str, line: int, kind: str, record: str
) -> list[CatalogIssue]:
    """One CatalogIssue per pydantic error, each with its line and field."""
    out = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        if not loc:  # a record-level rule: its message starts with the field it blames
            m = re.match(r"^(?:Value error, )?([a-z0-9_]+)=", str(err["msg"]))
            loc = (m.group(1),) if m and m.group(1) in model.model_fields else ()
        out.append(
            CatalogIssue(
                path=path,
                line=_line_of(raw, loc, line),
                kind=kind,
                record=record,
                field=".".join(str(p) for p in loc),
                message=_message(model, err),
            )
        )
    return out


def parse_file(path: Path, shown: str | None = None) -> ParsedFiles:
    """Validate one YAML file; problems are collected, never raised."""
    name = shown or str(path)
    out = ParsedFiles([], [], [])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        out.issues.append(CatalogIssue(name, None, f"cannot read file: {exc}"))
        return out
    try:
        data, duplicates = load_yaml(text)
    except YamlProblem as exc:
        out.issues.append(CatalogIssue(name, exc.line, exc.message))
        return out
    for dup_line, key in duplicates:
        out.issues.append(CatalogIssue(name, dup_line, f"key {key!r} appears twice in one mapping"))
    if data is None:
        return out
    if not isinstance(data, LineMap):
        out.issues.append(
            CatalogIssue(name, 1, f"top level must be a mapping with keys {', '.join(TOP_KEYS)}")
        )
        return out
    for key, value in data.items():
        key_line = data.key_lines.get(key, 1)
        if key.startswith("x-"):  # free section for YAML anchors shared by records
            continue
        if key == "currency":
            _parse_rates(value, name, key_line, out)
        elif key == "pricing":
            _parse_pricing(value, name, key_line, out)
        elif key in KINDS:
            _parse_kind(key, value, name, key_line, out)
        else:
            near = difflib.get_close_matches(key, TOP_KEYS, n=1)
            hint = f"; did you mean {near[0]}?" if near else f"; allowed: {', '.join(TOP_KEYS)}"
            out.issues.append(CatalogIssue(name, key_line, f"unknown section {key!r}{hint}"))
    return out


def _parse_rates(value: Any, name: str, line: int, out: ParsedFiles) -> None:
    try:
        rates = CurrencyRates.model_validate(value)
    except ValidationError as exc:
        out.issues.extend(validation_issues(exc, CurrencyRates, value, name, line, "currency", ""))
        return
    out.rates.append(RatesEntry(rates, name, getattr(value, "line", line)))


def _parse_pricing(value: Any, name: str, line: int, out: ParsedFiles) -> None:
    try:
        out.pricing.append(PricingPolicy.model_validate(value))
    except ValidationError as exc:
        out.issues.extend(validation_issues(exc, PricingPolicy, value, name, line, "pricing", ""))


def _parse_kind(kind: str, value: Any, name: str, line: int, out: ParsedFiles) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        out.issues.append(CatalogIssue(name, line, f"{kind} must be a list of records", kind=kind))
        return
    model = KINDS[kind]
    for item in value:
        item_line = getattr(item, "line", line)
        if not isinstance(item, dict):
            out.issues.append(CatalogIssue(name, item_line, "each record must be a mapping", kind=kind))
            continue
        record_id = str(item.get("id", "?"))
        try:
            record = model.model_validate(item)
        except ValidationError as exc:
            out.issues.extend(validation_issues(exc, model, item, name, item_line, kind, record_id))
            continue
        out.entries.append(Entry(kind, record, name, item_line, dict(getattr(item, "key_lines", {}))))


def parse_dir(directory: Path, label: str | None = None) -> ParsedFiles:
    """Every *.yaml / *.yml file directly in `directory`, in name order.

    Problems name files by path, or as `label/NAME` when a label is given.
    """
    out = ParsedFiles([], [], [])
    if not directory.is_dir():
        out.issues.append(CatalogIssue(str(directory), None, "not a directory"))
        return out
    files = sorted(
        p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith(".")
    )
    for path in files:
        part = parse_file(path, f"{label}/{path.name}" if label else None)
        out.entries.extend(part.entries)
        out.rates.extend(part.rates)
        out.issues.extend(part.issues)
        out.pricing.extend(part.pricing)
    return out
