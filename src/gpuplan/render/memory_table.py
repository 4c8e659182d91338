"""Rich tables for a memory breakdown: terms, their parts, assumptions and calibration terms."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.units import GIB

__all__ = ["memory_tables"]


def _gib(x: float) -> str:
    return f"{x / GIB:,.2f}"


def memory_tables(m: MemoryBreakdown, *, title: str, device_memory_bytes: float | None = None) -> Group:
    """Breakdown table (term, GiB, share, parts) and an assumptions table."""
    total = m.total_bytes
    t = Table(title=title, caption="GiB = 2^30 bytes; all figures estimated (docs/memory.md)")
    t.add_column("term")
    t.add_column("GiB", justify="right")
    t.add_column("share", justify="right")
    t.add_column("parts (GiB)")
    for name, value in m.terms().items():
        parts = m.details.get(name, {})
        if name == "kv_cache":
            parts = {}
        shown = ", ".join(f"{k} {_gib(v)}" for k, v in parts.items() if v)
        if value or name in ("weights", "activations"):
            t.add_row(name, _gib(value), f"{value / total:.1%}" if total else "-", shown)
    t.add_row("[bold]total per device[/]", f"[bold]{_gib(total)}[/]", "100%", "")
    if device_memory_bytes:
        free = device_memory_bytes - total
        verdict = "[green]fits[/]" if free >= 0 else "[red]does not fit[/]"
        t.add_row("device memory", _gib(device_memory_bytes), "", f"{verdict}: headroom {_gib(free)} GiB")
    a = Table(title="Assumptions", show_header=False)
    a.add_column("key")
    a.add_column("value")
    a.add_row("parameters", f"total {m.params_total:,}; active {m.params_active:,}; "
              f"trainable {m.params_trainable:,}")
    skip = {"calibration", "notes", "pipeline_rank_totals_bytes"}
    for k, v in m.assumptions.items():
        if k not in skip and v is not None:
            a.add_row(k, _fmt(v))
    for name, term in m.assumptions.get("calibration", {}).items():
        flag = " (user override)" if term["overridden"] else ""
        a.add_row(f"calibration: {name}", f"{term['value']} {term['unit']}{flag}")
    for note in m.assumptions.get("notes", []):
        a.add_row("note", note)
    return Group(t, a)


def _fmt(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)
