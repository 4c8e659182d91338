"""Rich tables for a memory breakdown: terms, their parts, assumptions and calibration terms."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table

from gpuplan.estimate.memory_fit import MemoryFit, memory_fit
from gpuplan.estimate.records import MemoryBreakdown
from gpuplan.i18n import messages, tr
from gpuplan.units import GIB

__all__ = ["memory_tables"]


def _gib(x: float) -> str:
    return f"{x / GIB:,.2f}"


def _term(name: str, lang: str) -> str:
    key = f"report.part.{name}"
    return tr(key, lang) if key in messages() else name


def memory_tables(m: MemoryBreakdown, *, title: str, device_memory_bytes: float | None = None,
                  lang: str = "en", fit: MemoryFit | None = None) -> Group:
    """Breakdown table (term, GiB, share, parts) and an assumptions table, labelled in `lang`.

    With a device (`fit`, or `device_memory_bytes` under the shipped usable-memory rule) a last row says
    whether the total fits its usable memory: 'fits: 23.7 GiB needed, 22.8 GiB usable (95% of 24)'."""
    total = m.total_bytes
    t = Table(title=title, caption=tr("cli.mem.caption", lang))
    t.add_column(tr("cli.mem.col.term", lang))
    t.add_column("GiB", justify="right")
    t.add_column(tr("cli.mem.col.share", lang), justify="right")
    t.add_column(tr("cli.mem.col.parts", lang))
    for name, value in m.terms().items():
        parts = m.details.get(name, {})
        if name == "kv_cache":
            parts = {}
        shown = ", ".join(f"{k} {_gib(v)}" for k, v in parts.items() if v)
        if value or name in ("weights", "activations"):
            t.add_row(_term(name, lang), _gib(value), f"{value / total:.1%}" if total else "-", shown)
    t.add_row(f"[bold]{tr('cli.mem.total', lang)}[/]", f"[bold]{_gib(total)}[/]", "100%", "")
    if fit is None and device_memory_bytes:
        fit = memory_fit(total, device_memory_bytes)
    if fit is not None:
        verdict = f"[{'green' if fit.fits else 'red'}]{fit.verdict(lang)}[/]"
        t.add_row(tr("report.chart.device_memory", lang), _gib(fit.device_bytes), "",
                  tr("cli.mem.headroom", lang, verdict=verdict, fit=fit.text(lang)))
    a = Table(title=tr("report.section.assumptions", lang), show_header=False)
    a.add_column("key")
    a.add_column("value")
    a.add_row(tr("cli.mem.params", lang), tr("cli.mem.params_value", lang, total=m.params_total,
                                             active=m.params_active, trainable=m.params_trainable))
    skip = {"calibration", "notes", "notes_zh", "pipeline_rank_totals_bytes"}
    for k, v in m.assumptions.items():
        if k not in skip and v is not None:
            a.add_row(k, _fmt(v))
    for name, term in m.assumptions.get("calibration", {}).items():
        flag = tr("cli.mem.overridden", lang) if term["overridden"] else ""
        a.add_row(tr("cli.mem.calibration", lang, name=name), f"{term['value']} {term['unit']}{flag}")
    notes = m.assumptions.get("notes_zh") if lang == "zh" else None
    for note in notes or m.assumptions.get("notes", []):
        a.add_row(tr("cli.mem.note", lang), note)
    return Group(t, a)


def _fmt(v: Any) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={x}" for k, x in v.items())
    return str(v)
