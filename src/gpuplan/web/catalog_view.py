"""Catalog and model listings as the CLI's `catalog list|show --json` and `model list` documents."""

from __future__ import annotations

from typing import Any

from gpuplan.errors import InputError, unknown_name

__all__ = ["list_json", "models_json", "public_origin", "show_json"]


def public_origin(origin: dict[str, Any]) -> dict[str, Any]:
    """Where a record comes from, as a client may see it: the layer and the file's name, never the server's folders
    (`<builtin>/accelerators.yaml`, `<user>/quotes.yaml`)."""
    path = str(origin.get("path") or "")
    if path and not path.startswith("<"):
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        origin = {**origin, "path": f"<{origin.get('layer') or 'user'}>/{name}"}
    return origin


def list_json(kind: str, *, vendor: str | None = None, market: str | None = None,
              min_memory_gib: float | None = None) -> dict[str, Any]:
    """`gpuplan catalog list KIND --json`."""
    from gpuplan.hardware import load_catalog
    from gpuplan.hardware.parse import KINDS
    from gpuplan.hardware.query import filter_records, headline
    from gpuplan.service.checks import positive

    if kind not in KINDS:
        raise unknown_name("kind", kind, KINDS)
    positive("min-memory-gib", min_memory_gib, zero_ok=True)
    cat = load_catalog()
    rows = filter_records(cat, kind, vendor=vendor or None, market=market or None, min_memory_gib=min_memory_gib)
    return {"kind": kind, "count": len(rows), "cny_per_usd": cat.rates.cny_per_usd,
            "items": [{"id": r.id, "origin": public_origin(cat.origin(r.id).to_dict()), "confidence": r.confidence,
                       "as_of": r.as_of, "source": r.source, **headline(cat, r)} for r in rows]}


def show_json(kind: str, record_id: str) -> dict[str, Any]:
    """`gpuplan catalog show ID --json`, for a record of `kind`."""
    from gpuplan.hardware import load_catalog
    from gpuplan.hardware.parse import KINDS
    from gpuplan.hardware.query import field_values, headline

    if kind not in KINDS:
        raise unknown_name("kind", kind, KINDS)
    cat = load_catalog()
    record = cat.get(record_id)
    found = cat.kind_of(record.id)
    if found != kind:
        raise InputError(field="id", value=record_id, allowed=f"an id of {kind}", hint=f"{record.id} is in {found}")
    return {"kind": found, "id": record.id, "origin": public_origin(cat.origin(record.id).to_dict()),
            "record": record.model_dump(mode="json"), "derived": headline(cat, record),
            "values": [v.to_dict() for v in field_values(record)]}


def models_json() -> dict[str, Any]:
    from gpuplan.workload.params import count_params
    from gpuplan.workload.presets import list_presets

    return {"models": [{"id": p.id, "name": p.spec.name, "aliases": list(p.aliases),
                        "params_b": round(count_params(p.spec).total / 1e9, 2)} for p in list_presets()]}
