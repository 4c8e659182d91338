"""`gpuplan catalog`: list, show, compare and validate accelerators, servers, networks,
cloud instances and storage, each value with its source and confidence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from gpuplan.cli.common import LANG_OPT, console, fail, flag, positive, print_json, ui_lang
from gpuplan.errors import GpuplanError, unknown_name
from gpuplan.hardware.catalog import Catalog
from gpuplan.hardware.issues import CatalogError
from gpuplan.hardware.overrides import check_dir, load_catalog, user_catalog_dir
from gpuplan.hardware.parse import KINDS
from gpuplan.hardware.query import (
    accelerator_of,
    compare_rows,
    field_values,
    filter_records,
    fmt,
    headline,
    hourly_usd,
    price_text,
)
from gpuplan.hardware.schema_base import Sourced
from gpuplan.hardware.schema_devices import Accelerator, Server
from gpuplan.hardware.schema_offers import Instance, Network, Storage
from gpuplan.i18n import help_text, resolve_lang, tr

app = typer.Typer(
    help=help_text("help.group.catalog"),
    no_args_is_help=True,
)

_CONF_STYLE = {"high": "green", "medium": "", "low": "yellow", "none": "red"}
CATALOG_OPT = typer.Option(
    None,
    "--catalog",
    help=help_text("help.catalog.catalog_dir"),
)
JSON_OPT = flag(False, "--json", help=help_text("help.catalog.json"))


def _load(dirs: list[Path] | None, lang: str | None = None) -> Catalog:
    try:
        return load_catalog(dirs or ())
    except CatalogError as exc:
        fail(exc, lang)


def _conf(level: str) -> str:
    style = _CONF_STYLE.get(level, "")
    return f"[{style}]{level}[/]" if style else level


def _id_cell(cat: Catalog, record: Sourced, lang: str = "en") -> str:
    origin = cat.origin(record.id)
    if origin.layer != "user":
        return record.id
    tag = tr("cli.catalog.user_replaces" if origin.replaces_builtin else "cli.catalog.user", lang)
    return f"{record.id} [cyan]({tag})[/]"


def _v(record: Sourced, field: str, text: str | None = None) -> str:
    """A value as text, marked '?' when that value is individually low-confidence."""
    shown = escape(fmt(getattr(record, field)) if text is None else text)
    doubtful = record.confidence_of(field) == "low" and record.confidence != "low" and shown != "-"
    return f"{shown} [yellow]?[/]" if doubtful else shown


def _item_json(cat: Catalog, record: Sourced) -> dict[str, Any]:
    return {
        "id": record.id,
        "origin": cat.origin(record.id).to_dict(),
        "confidence": record.confidence,
        "as_of": record.as_of,
        "source": record.source,
        **headline(cat, record),
    }


def _row(cat: Catalog, r: Sourced) -> list[str]:
    if isinstance(r, Accelerator):
        link = r.intra_node_link.replace("nvlink_bridge", "bridge")
        return [
            escape(r.vendor),
            _v(r, "hbm_gib"),
            _v(r, "hbm_bandwidth_gbps"),
            _v(r, "bf16_dense_tflops"),
            _v(r, "fp8_dense_tflops"),
            f"{link} {_v(r, 'intra_node_link_gbps')}",
            _v(r, "fully_connected_domain"),
            _v(r, "tdp_w"),
            ", ".join(r.markets),
        ]
    if isinstance(r, Server):
        return [
            escape(f"{r.accelerators_per_node} x {r.accelerator}"),
            r.topology,
            f"{fmt(r.compute_gbit_per_s)} Gbit/s {r.network or ''}".strip(),
            _v(r, "cpu_cores"),
            _v(r, "ram_gib"),
        ]
    if isinstance(r, Network):
        return [
            r.kind,
            fmt(r.nic_gbit_per_s),
            _v(r, "latency_us"),
            fmt(r.term("alpha_us")),
            fmt(r.term("bw_efficiency")),
            fmt(round(r.achievable_gbyte_per_s, 2)),
        ]
    if isinstance(r, Instance):
        acc = accelerator_of(cat, r)
        usd, basis = hourly_usd(cat, r)
        od, spot, month = (r.price(k, distressed=True) for k in ("on_demand_hourly", "spot_hourly", "monthly"))
        return [
            r.provider,
            escape(f"{fmt(r.accelerator_count)} x {acc.id if acc else '?'}"),
            r.tenancy,
            r.rdma_network or "-",
            escape(price_text(od)) if od else "-",
            (f"{usd:,.2f}" + ("" if basis == "on_demand_hourly" else " (m)")) if usd is not None else "-",
            escape(price_text(spot)) if spot else "-",
            escape(price_text(month)) if month else "-",
            r.market,
            r.as_of,
        ]
    if isinstance(r, Storage):
        price = r.prices[0] if r.prices else None
        return [
            r.provider,
            r.kind,
            _v(r, "throughput_mb_s_per_tib"),
            _v(r, "max_throughput_gb_s"),
            escape(price_text(price)) if price else "-",
            r.market,
        ]
    return []


# column headers: message keys cli.catalog.col.<name> (technical units such as GiB, BF16, FP8 stay as written)
_HEADERS = {
    "accelerators": ["vendor", "gib", "mem_gbs", "bf16", "fp8", "link_gbs", "dom", "tdp", "market"],
    "servers": ["accelerators", "topology", "scale_out", "cpu_cores", "ram_gib"],
    "networks": ["kind", "nic_gbit", "latency_us", "alpha_us", "bw_efficiency", "achievable_gbs"],
    "instances": ["provider", "accelerators", "tenancy", "rdma", "on_demand", "usd_h", "spot", "monthly", "market",
                  "as_of"],
    "storage": ["provider", "kind", "mb_s_tib", "max_gbs", "price", "market"],
}


@app.command("list", help=help_text("help.catalog_list"))
def list_cmd(
    kind: str = typer.Argument(..., help=help_text("help.catalog_list.kind")),
    vendor: str | None = typer.Option(None, "--vendor", help=help_text("help.catalog_list.vendor")),
    market: str | None = typer.Option(None, "--market", help=help_text("help.catalog_list.market")),
    provider: str | None = typer.Option(
        None, "--provider", help=help_text("help.catalog_list.provider")
    ),
    min_memory_gib: float | None = typer.Option(
        None, "--min-memory-gib", help=help_text("help.catalog_list.min_memory_gib")
    ),
    catalog: list[Path] | None = CATALOG_OPT,
    json_out: bool = JSON_OPT,
    lang: str | None = LANG_OPT,
) -> None:
    """List catalog records of one kind, with filters."""
    try:
        language = resolve_lang(lang)
        if kind not in KINDS:
            raise unknown_name("kind", kind, KINDS)
        positive("min-memory-gib", min_memory_gib, language, zero_ok=True)
        cat = _load(catalog, lang)
        rows = filter_records(
            cat, kind, vendor=vendor, market=market, provider=provider, min_memory_gib=min_memory_gib
        )
    except GpuplanError as exc:
        fail(exc, lang)
    if json_out:
        print_json(
            {
                "kind": kind,
                "count": len(rows),
                "cny_per_usd": cat.rates.cny_per_usd,
                "items": [_item_json(cat, r) for r in rows],
            }
        )
        return
    t = Table(title=f"{tr(f'cli.catalog.kind.{kind}', language)} ({len(rows)})", caption=_caption(cat, kind, language))
    t.add_column("id", no_wrap=True)
    for col in (*_HEADERS[kind], "conf"):
        t.add_column(tr(f"cli.catalog.col.{col}", language))
    for r in rows:
        t.add_row(_id_cell(cat, r, language), *_row(cat, r), _conf(r.confidence))  # _row escapes data text
    console.print(t)


def _caption(cat: Catalog, kind: str, lang: str = "en") -> str:
    parts = [tr("cli.catalog.caption", lang)]
    if kind == "instances":
        parts.append(tr("cli.catalog.caption_instances", lang, rate=cat.rates.cny_per_usd, as_of=cat.rates.as_of))
    if kind == "accelerators":
        parts.append(tr("cli.catalog.caption_accelerators", lang))
    return "\n".join(parts)


@app.command("show", help=help_text("help.catalog_show"))
def show_cmd(
    record_id: str = typer.Argument(..., metavar="ID", help=help_text("help.catalog_show.record_id")),
    catalog: list[Path] | None = CATALOG_OPT,
    json_out: bool = JSON_OPT,
    lang: str | None = LANG_OPT,
) -> None:
    """Show one record: every value with its source, confidence and date."""
    cat = _load(catalog, lang)
    try:
        language = resolve_lang(lang)
        record = cat.get(record_id)
    except GpuplanError as exc:
        fail(exc, lang)
    kind = cat.kind_of(record.id)
    values = field_values(record)
    if json_out:
        print_json(
            {
                "kind": kind,
                "id": record.id,
                "origin": cat.origin(record.id).to_dict(),
                "record": record.model_dump(mode="json"),
                "derived": headline(cat, record),
                "values": [v.to_dict() for v in values],
            }
        )
        return
    origin = cat.origin(record.id)
    where = (tr("cli.catalog.user_override", language, path=origin.path, line=origin.line) if origin.layer == "user"
             else tr("cli.catalog.builtin", language))
    conf = _conf(record.confidence)
    t = Table(title=tr("cli.catalog.show_title", language, id=record.id, kind=tr(f"cli.catalog.one.{kind}", language),
                       where=where, conf=conf, as_of=record.as_of))
    for col in ("field", "value", "source", "conf"):
        t.add_column(tr(f"cli.catalog.col.{col}", language), overflow="fold")
    for v in values:
        t.add_row(
            v.field,
            escape(v.text),
            escape(v.source) if v.source != record.source else f"[dim]{tr('cli.catalog.record_source', language)}[/]",
            _conf(v.confidence),
        )
    console.print(t)
    console.print(f"[bold]{tr('cli.catalog.source', language)}[/] {escape(record.source)}", highlight=False)
    if record.notes:
        console.print(f"[bold]{tr('cli.catalog.notes', language)}[/] {escape(record.notes)}", highlight=False)


@app.command("compare", help=help_text("help.catalog_compare"))
def compare_cmd(
    record_ids: list[str] = typer.Argument(..., metavar="ID ID...", help=help_text("help.catalog_compare.record_ids")),
    catalog: list[Path] | None = CATALOG_OPT,
    json_out: bool = JSON_OPT,
    lang: str | None = LANG_OPT,
) -> None:
    """Compare records side by side, each value with its source."""
    cat = _load(catalog, lang)
    try:
        language = resolve_lang(lang)
        if len(record_ids) < 2:
            raise unknown_name("ids", " ".join(record_ids), ["at least two ids"])
        records = [cat.get(i) for i in record_ids]
        rows = compare_rows(records)
    except GpuplanError as exc:
        fail(exc, lang)
    kind = cat.kind_of(records[0].id)
    if json_out:
        print_json(
            {
                "kind": kind,
                "ids": [r.id for r in records],
                "origins": {r.id: cat.origin(r.id).to_dict() for r in records},
                "rows": [
                    {"field": f, "values": [v.to_dict() if v else None for v in vals]} for f, vals in rows
                ],
            }
        )
        return
    sources: list[str] = []

    def note(src: str) -> int:
        if src not in sources:
            sources.append(src)
        return sources.index(src) + 1

    t = Table(title=tr("cli.catalog.compare_title", language, kind=tr(f"cli.catalog.kind.{kind}", language)))
    t.add_column(tr("cli.catalog.col.field", language))
    for r in records:
        t.add_column(_id_cell(cat, r, language), overflow="fold")
    for field, vals in rows:
        cells = []
        for v in vals:
            if v is None:
                cells.append("-")
                continue
            mark = " [yellow]?[/]" if v.confidence in ("low", "none") else ""
            cells.append(f"{escape(v.text)}{mark} [dim]\\[{note(v.source)}][/]")
        t.add_row(field, *cells)
    t.add_row(tr("cli.catalog.confidence", language), *[_conf(r.confidence) for r in records])
    t.add_row(tr("cli.catalog.col.as_of", language), *[r.as_of for r in records])
    console.print(t)
    legend = Table(title=tr("cli.catalog.sources", language), show_header=False)
    legend.add_column("n")
    legend.add_column("source", overflow="fold")
    for i, src in enumerate(sources, 1):
        legend.add_row(f"\\[{i}]", escape(src))
    console.print(legend)


@app.command("validate", help=help_text("help.catalog_validate"))
def validate_cmd(
    directory: Path = typer.Argument(..., metavar="DIR", help=help_text("help.catalog_validate.directory")),
    json_out: bool = JSON_OPT,
    lang: str | None = LANG_OPT,
) -> None:
    """Check a catalog directory (as an override on the built-in data); list every problem.

    Exit code 0 when valid, 1 when problems were found. Nothing is loaded when any
    problem exists.
    """
    language = ui_lang(lang)
    if lang is not None:
        try:
            resolve_lang(lang)
        except GpuplanError as exc:
            fail(exc, lang)
    issues, cat = check_dir(directory)
    if json_out:
        payload: dict[str, Any] = {
            "directory": str(directory),
            "ok": not issues,
            "issues": [i.to_dict() for i in issues],
        }
        if cat is not None:
            payload["records"] = _user_records(cat)
        print_json(payload)
    elif issues:
        for i in issues:
            console.print(f"[red]{escape(str(i))}[/]", highlight=False, soft_wrap=True)
        console.print(tr("cli.catalog.problems", language, n=len(issues), dir=str(directory)), markup=False,
                      highlight=False)
    else:
        assert cat is not None
        recs = _user_records(cat)
        replaced = sum(1 for r in recs if r["replaces_builtin"])
        console.print(
            "[green]OK[/]: " + escape(tr("cli.catalog.ok", language, dir=str(directory), added=len(recs) - replaced,
                                         replaced=replaced)),
            highlight=False,
        )
        for r in recs:
            console.print(
                escape(f"  {r['kind']}: {r['id']}" + (tr("cli.catalog.replaces", language) if r["replaces_builtin"]
                                                      else "")),
                highlight=False,
            )
    if issues:
        raise typer.Exit(code=1)


def _user_records(cat: Catalog) -> list[dict[str, Any]]:
    out = []
    for kind in KINDS:
        for r in cat.records(kind):
            o = cat.origin(r.id)
            if o.layer == "user":
                out.append(
                    {
                        "kind": kind,
                        "id": r.id,
                        "path": o.path,
                        "line": o.line,
                        "replaces_builtin": o.replaces_builtin,
                    }
                )
    return out


@app.command("where", help=help_text("help.catalog_where"))
def where_cmd() -> None:
    """Print the user's override directory (read by every catalog command; never written)."""
    console.print(str(user_catalog_dir()), highlight=False)
