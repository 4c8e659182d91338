"""`gpuplan tco`: rent vs buy for a cluster of one accelerator (formulas in advise/tco.py, inputs in tco_fleet.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.advise.findings import default_thresholds
from gpuplan.advise.tco_fleet import FleetTco, Quantity, fleet_tco, tco_for
from gpuplan.cli.advise import parse_pairs
from gpuplan.cli.common import console, fail, flag, input_error_from_validation, positive, print_json
from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import load_catalog
from gpuplan.i18n import help_text, resolve_lang, tr

__all__ = ["tco_cmd"]


def _prov(label: str, lang: str) -> str:
    """Provenance labels ("catalog + default") in `lang`."""
    names = {"catalog": tr("cli.tco.prov.catalog", lang), "quoted": tr("cli.tco.prov.quoted", lang),
             "user input": tr("cli.tco.prov.user", lang), "default": tr("cli.tco.prov.default", lang)}
    return " + ".join(names.get(p, p) for p in label.split(" + "))


def _kind(kind: str, lang: str) -> str:
    return {"on_demand": tr("cli.tco.kind.on_demand", lang), "monthly": tr("cli.tco.kind.monthly", lang),
            "yearly": tr("cli.tco.kind.yearly", lang), "multi_year": tr("cli.tco.kind.multi_year", lang),
            "quoted": tr("cli.tco.kind.quoted", lang)}[kind]


def _line(name: str, lang: str) -> str:
    return {"servers": tr("cli.tco.line.servers", lang), "fabric": tr("cli.tco.line.fabric", lang),
            "power": tr("cli.tco.line.power", lang), "hosting": tr("cli.tco.line.hosting", lang),
            "operations": tr("cli.tco.line.operations", lang), "storage": tr("cli.tco.line.storage", lang),
            "staff": tr("cli.tco.line.staff", lang)}[name]


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"




def tco_cmd(
    accelerator: str = typer.Option(..., "--accelerator", help=help_text("help.tco.accelerator")),
    devices: int = typer.Option(..., "--devices", help=help_text("help.tco.devices")),
    years: float = typer.Option(..., "--years", help=help_text("help.tco.years")),
    utilization: float = typer.Option(..., "--utilization", help=help_text("help.tco.utilization")),
    server_price: float = typer.Option(None, "--server-price", help=help_text("help.tco.server_price")),
    rent: float = typer.Option(None, "--rent", help=help_text("help.tco.rent")),
    market: Literal["cn", "global"] | None = typer.Option(None, "--market", help=help_text("help.tco.market")),
    tco_input: list[str] = typer.Option(None, "--tco", help=help_text("help.tco.tco_input")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help=help_text("help.common.catalog_dir")),
    json_out: bool = flag(False, "--json", help=help_text("help.common.json_out")),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
) -> None:
    """Rent vs buy for a cluster: every rent kind against owning, break-even utilization, the year buying wins."""
    try:
        language = resolve_lang(lang)
        positive("devices", devices, language, integer=True)
        positive("years", years, language)
        if not (math.isfinite(utilization) and 0 < utilization <= 1):
            raise InputError(field="utilization", value=utilization,
                             allowed=tr("cli.tco.allowed.utilization", language))
        positive("server-price", server_price, language)
        positive("rent", rent, language)
        overrides = parse_pairs(tco_input, "tco")
        for name, value in overrides.items():
            if not math.isfinite(value):
                raise InputError(field=f"tco.{name}", value=value, allowed=tr("cli.tco.allowed.finite", language))
        cat = load_catalog(catalog_dir or ())
        acc = cat.accelerator(accelerator)
        cal = default_calibration()
        try:
            choice, rates, inp, fin = tco_for(
                cat, acc, devices=devices, years=years, utilization=utilization, market=market,
                pue=cal.value("pue"), node_power_per_tdp=default_thresholds().value("node_power_per_accelerator_tdp"),
                server_price_usd=server_price, rent_usd_per_device_hour=rent, overrides=overrides)
        except ValidationError as exc:
            raise input_error_from_validation(exc, prefix="tco.") from None
        per = choice.devices_per_server.value
        if choice.price_usd is None:
            where = (tr("cli.tco.server_no_price", language, server=choice.server.id) if choice.server
                     else tr("cli.tco.no_server", language))
            raise InputError(field="server-price", value=None, allowed=tr("cli.tco.allowed.price", language),
                             hint=tr("cli.tco.no_price", language, acc=acc.id, where=where, per=per))
        if choice.power_kw is None:
            raise InputError(field="tco.node_power_kw", value=None, allowed=tr("cli.tco.allowed.power", language),
                             hint=tr("cli.tco.no_power", language))
        if not rates:
            where = tr("cli.tco.in_market", language, market=market) if market else ""
            raise InputError(field="rent", value=None, allowed=tr("cli.tco.allowed.rent", language),
                             hint=tr("cli.tco.no_rent", language, acc=acc.id, market=where))
        res = fleet_tco(accelerator=acc.id, devices=devices, utilization=utilization, market=market, choice=choice,
                        rates=rates, inp=inp, fin=fin, pue_source=f"calibration term pue: {cal.terms['pue'].source}")
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    if json_out:
        print_json(res.to_json())
        return
    _print(res, language)


def _print(res: FleetTco, lang: str) -> None:
    console.print(tr("cli.tco.title", lang, devices=res.devices, acc=res.accelerator, years=res.years,
                     util=res.utilization), style="bold", highlight=False)
    console.print(tr("cli.tco.server", lang, nodes=res.nodes, server=res.server or tr("cli.tco.no_server_name", lang),
                     per=res.devices_per_server.value, price=res.price_usd.value,
                     price_prov=_prov(res.price_usd.provenance, lang), kw=res.power_kw.value,
                     kw_prov=_prov(res.power_kw.provenance, lang)), highlight=False)
    own = Table(title=tr("cli.tco.own_title", lang, util=res.utilization))
    for key in ("cli.tco.col.line", "cli.tco.col.usd_year", "cli.tco.col.capex", "cli.tco.col.provenance",
                "cli.tco.col.formula"):
        own.add_column(tr(key, lang), overflow="fold")
    for ln in res.own:
        own.add_row(_line(ln.name, lang), f"{ln.per_year(res.years, res.utilization):,.0f}",
                    f"{ln.capex_usd:,.0f}" if ln.capex_usd else "", _prov(ln.provenance, lang), ln.formula)
    own.add_row(tr("cli.tco.line.total", lang), f"{res.own_usd_per_year:,.0f}",
                f"{sum(ln.capex_usd for ln in res.own):,.0f}", tr("cli.tco.prov.estimated", lang), "", style="bold")
    console.print(own)
    rent = Table(title=tr("cli.tco.rent_title", lang),
                 caption=tr("cli.tco.rent_caption", lang, devices=res.devices, util=res.utilization))
    for key in ("cli.tco.col.kind", "cli.tco.col.rate", "cli.tco.col.usd_year", "cli.tco.col.break_even",
                "cli.tco.col.buy_wins", "cli.tco.col.provenance"):
        rent.add_column(tr(key, lang), overflow="fold")
    for case in res.rent:
        u = case.break_even_utilization
        even = (tr("cli.tco.never_rent_low", lang) if u is None else
                tr("cli.tco.never_above_full", lang, u=u) if u > 1 else f"{u:.0%}")
        wins = (tr("cli.tco.never_within", lang, years=res.years) if case.buy_wins_year is None
                else tr("cli.tco.year", lang, year=case.buy_wins_year))
        rent.add_row(_kind(case.kind, lang), f"{case.rate.value:.3f}", f"{case.usd_per_year:,.0f}", even, wins,
                     _prov(case.rate.provenance, lang))
    rent.add_row(tr("cli.tco.kind.own", lang), f"{res.own_usd_per_device_hour:.3f}", f"{res.own_usd_per_year:,.0f}",
                 "", "", tr("cli.tco.prov.estimated", lang), style="bold")
    console.print(rent)
    cheapest = min(res.rent, key=lambda c: c.usd_per_year)
    key = "cli.tco.verdict_buy" if res.own_usd_per_year < cheapest.usd_per_year else "cli.tco.verdict_rent"
    console.print(tr(key, lang, util=res.utilization, own=res.own_usd_per_year, own_h=res.own_usd_per_device_hour,
                     kind=_kind(cheapest.kind, lang), rent=cheapest.usd_per_year, years=res.years), highlight=False)
    console.print(tr("cli.tco.sources", lang), style="bold", highlight=False)
    shown: list[tuple[str, Quantity]] = [("server_price_usd", res.price_usd), ("node_power_kw", res.power_kw),
                                         *[(f"rent.{c.kind}", c.rate) for c in res.rent], *res.inputs.items()]
    for name, q in shown:
        console.print("  " + tr("cli.tco.source_line", lang, name=name, value=f"{_num(q.value)} {q.unit}",
                                prov=_prov(q.provenance, lang), source=q.source), highlight=False, markup=False,
                      soft_wrap=True)
