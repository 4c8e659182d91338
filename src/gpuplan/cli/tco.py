"""`gpuplan tco`: rent vs buy for a cluster of one accelerator (formulas in advise/tco.py, the rest advise/tco_*.py)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.advise.findings import default_thresholds
from gpuplan.advise.rules_market import export_notes
from gpuplan.advise.tco import year_marks
from gpuplan.advise.tco_capital import depreciation_schedule
from gpuplan.advise.tco_fleet import FleetTco, TcoSetup, fleet_tco, tco_for
from gpuplan.advise.tco_inputs import Quantity
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
    wacc: float = typer.Option(None, "--wacc", help=help_text("help.tco.wacc")),
    tco_input: list[str] = typer.Option(None, "--tco", help=help_text("help.tco.tco_input")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help=help_text("help.common.catalog_dir")),
    json_out: bool = flag(False, "--json", help=help_text("help.common.json_out")),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
) -> None:
    """Rent vs buy for a cluster: the market's rents against owning, with the cost of capital and resale value."""
    try:
        language = resolve_lang(lang)
        positive("devices", devices, language, integer=True)
        positive("years", years, language)
        if not (math.isfinite(utilization) and 0 < utilization <= 1):
            raise InputError(field="utilization", value=utilization,
                             allowed=tr("cli.tco.allowed.utilization", language))
        if wacc is not None and not (math.isfinite(wacc) and 0 <= wacc <= 1):
            raise InputError(field="wacc", value=wacc, allowed=tr("cli.tco.allowed.wacc", language),
                             hint=tr("cli.tco.hint.wacc", language))
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
            setup = tco_for(
                cat, acc, devices=devices, years=years, utilization=utilization, market=market,
                pue=cal.value("pue"), node_power_per_tdp=default_thresholds().value("node_power_per_accelerator_tdp"),
                server_price_usd=server_price, rent_usd_per_device_hour=rent, wacc=wacc, overrides=overrides)
        except ValidationError as exc:
            raise input_error_from_validation(exc, prefix="tco.") from None
        choice = setup.choice
        per = choice.devices_per_server.value
        where = (tr("cli.tco.server_no_price", language, server=choice.server.id) if choice.server
                 else tr("cli.tco.no_server", language))
        # without a purchase price the answer is the market's rents; a quoted --rent asks for a comparison
        if choice.price_usd is None and (not setup.rates or rent is not None):
            raise InputError(field="server-price", value=None, allowed=tr("cli.tco.allowed.price", language),
                             hint=tr("cli.tco.no_price", language, acc=acc.id, where=where, per=per))
        if choice.price_usd is not None and choice.power_kw is None:
            raise InputError(field="tco.node_power_kw", value=None, allowed=tr("cli.tco.allowed.power", language),
                             hint=tr("cli.tco.no_power", language))
        res = (fleet_tco(accelerator=acc.id, devices=devices, utilization=utilization, setup=setup,
                         pue_source=f"calibration term pue: {cal.terms['pue'].source}")
               if choice.price_usd is not None else None)
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    notes = _export(acc.id, setup.market)
    if res is None:  # the market's rents, and what owning needs
        if json_out:
            print_json({**_rents_only_json(acc.id, devices, years, utilization, setup), "export_notes": notes})
            return
        print_rents(setup, acc.id, devices, language)
        console.print(tr("cli.tco.own_unpriced", language, acc=acc.id, where=where, per=per), highlight=False)
        _print_export(notes, language)
        return
    if json_out:
        print_json({**res.to_json(), "export_notes": notes})
        return
    _print(res, setup, language)
    _print_export(notes, language)


def _export(acc: str, market: str) -> list[dict[str, Any]]:
    """The export notes (advise/data/compliance.yaml) on buying the part new and on renting it, in the market."""
    out = []
    for how, rented in (("buy", False), ("rent", True)):
        for note, _, text in export_notes(acc, buyer=market, where=market, rented=rented):
            out.append({"how": how, "id": note["id"], "date": note["date"], "severity": text["severity"],
                        "message": {"en": text["en"], "zh": text["zh"]}, "source": note["source"]})
    return out


def _print_export(notes: list[dict[str, Any]], lang: str) -> None:
    for n in notes:
        key = "cli.tco.export_buy" if n["how"] == "buy" else "cli.tco.export_rent"
        console.print(tr(key, lang, severity=tr(f"report.sev.{n['severity']}", lang), date=n["date"],
                         text=n["message"][lang]), highlight=False)


def _print(res: FleetTco, setup: TcoSetup, lang: str) -> None:
    cur, money = res.currency, res.local
    console.print(tr("cli.tco.title", lang, devices=res.devices, acc=res.accelerator, years=res.years,
                     util=res.utilization), style="bold", highlight=False)
    span = res.price_range_usd
    console.print(tr("cli.tco.server", lang, nodes=res.nodes, server=res.server or tr("cli.tco.no_server_name", lang),
                     per=res.devices_per_server.value, price=money(res.price_usd.value), cur=cur,
                     price_prov=_prov(res.price_usd.provenance, lang),
                     range=tr("cli.tco.price_range", lang, lo=money(span[0]), hi=money(span[1])) if span else "",
                     kw=res.power_kw.value, kw_prov=_prov(res.power_kw.provenance, lang)), highlight=False)
    if cur == "CNY":
        console.print(tr("cli.tco.currency_note", lang, rate=res.cny_per_usd), highlight=False)
    print_rents(setup, res.accelerator, res.devices, lang)
    w = res.capital.wacc
    own = Table(title=tr("cli.tco.own_title", lang, util=res.utilization, cur=cur))
    for key in ("cli.tco.col.line", "cli.tco.col.usd_year", "cli.tco.col.capex", "cli.tco.col.provenance",
                "cli.tco.col.formula"):
        own.add_column(tr(key, lang, cur=cur), overflow="fold")
    charge = 0.0
    for ln in res.own:  # capex lines show their depreciation; the cost of capital is its own line
        dep = (ln.capex_usd - ln.resale_usd) / res.years if ln.capex_usd else 0.0
        charge += ln.capex_per_year(res.years, w) - dep
        own.add_row(_line(ln.name, lang), f"{money(dep + ln.running(res.utilization)):,.0f}",
                    f"{money(ln.capex_usd):,.0f}" if ln.capex_usd else "", _prov(ln.provenance, lang),
                    ln.formula_zh if lang == "zh" and ln.formula_zh else ln.formula)
    own.add_row(tr("cli.tco.line.capital", lang, wacc=w), f"{money(charge):,.0f}", "",
                _prov(res.inputs["wacc"].provenance, lang), tr("cli.tco.capital_formula", lang))
    own.add_row(tr("cli.tco.line.total", lang), f"{money(res.own_usd_per_year):,.0f}",
                f"{money(sum(ln.capex_usd for ln in res.own)):,.0f}", tr("cli.tco.prov.estimated", lang), "",
                style="bold")
    console.print(own)
    if res.rent:
        rent = Table(title=tr("cli.tco.rent_title", lang),
                     caption=tr("cli.tco.rent_caption", lang, devices=res.devices, util=res.utilization))
        for key in ("cli.tco.col.kind", "cli.tco.col.rate", "cli.tco.col.usd_year", "cli.tco.col.break_even",
                    "cli.tco.col.break_even_cheapest", "cli.tco.col.buy_wins", "cli.tco.col.provenance"):
            rent.add_column(tr(key, lang, cur=cur), overflow="fold")
        for case in res.rent:
            wins = (tr("cli.tco.never_within", lang, years=res.years) if case.buy_wins_year is None
                    else tr("cli.tco.year", lang, year=case.buy_wins_year))
            rent.add_row(_kind(case.kind, lang), f"{money(case.rate.value):.3f}", f"{money(case.usd_per_year):,.0f}",
                         _even(case.break_even_utilization, lang),
                         _even(case.break_even_at_cheapest, lang) if case.cheapest is not None else "", wins,
                         _prov(case.rate.provenance, lang))
        rent.add_row(tr("cli.tco.kind.own", lang), f"{money(res.own_usd_per_device_hour):.3f}",
                     f"{money(res.own_usd_per_year):,.0f}", "", "", "", tr("cli.tco.prov.estimated", lang),
                     style="bold")
        console.print(rent)
        cheapest = min(res.rent, key=lambda c: c.usd_per_year)
        key = "cli.tco.verdict_buy" if res.own_usd_per_year < cheapest.usd_per_year else "cli.tco.verdict_rent"
        console.print(tr(key, lang, util=res.utilization, own=money(res.own_usd_per_year), cur=cur,
                         own_h=money(res.own_usd_per_device_hour), kind=_kind(cheapest.kind, lang),
                         rent=money(cheapest.usd_per_year), years=res.years), highlight=False)
        weak = next((sp.weaknesses for sp in res.market_rents if sp.kind == cheapest.kind), ())
        if key == "cli.tco.verdict_rent" and weak:  # a rent verdict is only as good as the rate it rests on
            sep = "；" if lang == "zh" else "; "
            console.print(tr("cli.tco.verdict_caveat", lang, devices=res.devices,
                             reasons=sep.join(tr(f"cli.tco.weakness.{w}", lang) for w in weak)), highlight=False)
    else:
        console.print(tr("cli.tco.rent_unpriced", lang, acc=res.accelerator, market=res.market), highlight=False)
    if res.own_at_range is not None and span is not None:
        console.print(tr("cli.tco.range_line", lang, lo=money(span[0]), hi=money(span[1]), cur=cur,
                         olo=money(res.own_at_range[0]), ohi=money(res.own_at_range[1])), highlight=False)
    cap = res.capital
    book = ", ".join(tr("cli.tco.book", lang, year=t, value=money(b))
                     for t, _, b in depreciation_schedule(cap.capex_usd, cap.resale_usd, year_marks(res.years)))
    console.print(tr("cli.tco.capital_line", lang, wacc=w, src=res.inputs["wacc"].source, res=cap.resale_fraction,
                     years=res.years, resale=money(cap.resale_usd), cur=cur, dep=money(cap.depreciation_usd_per_year),
                     book=book), highlight=False)
    console.print(tr("cli.tco.sources", lang), style="bold", highlight=False)
    shown: list[tuple[str, Quantity]] = [("server_price_usd", res.price_usd), ("node_power_kw", res.power_kw),
                                         *[(f"rent.{c.kind}", c.rate) for c in res.rent],
                                         *[(f"rent.{c.kind}.cheapest", c.cheapest) for c in res.rent if c.cheapest],
                                         *res.inputs.items()]
    for name, q in shown:
        console.print("  " + tr("cli.tco.source_line", lang, name=name, value=f"{_num(q.value)} {q.unit}",
                                prov=_prov(q.provenance, lang), source=q.source), highlight=False, markup=False,
                      soft_wrap=True)


def _even(u: float | None, lang: str) -> str:
    return (tr("cli.tco.never_rent_low", lang) if u is None else
            tr("cli.tco.never_above_full", lang, u=u) if u > 1 else f"{u:.0%}")


def print_rents(setup: TcoSetup, acc: str, devices: int, lang: str) -> None:
    """The market's rents of each kind: cheapest credible, median, range, offers; distressed ones as a scenario."""
    cur = setup.currency

    def money(usd: float) -> str:
        return f"{usd * setup.cny_per_usd if cur == 'CNY' else usd:.3f}"

    t = Table(title=tr("cli.tco.rents_title", lang, acc=acc, market=setup.market, cur=cur),
              caption=tr("cli.tco.rents_caption", lang, devices=devices))
    for key in ("cli.tco.col.kind", "cli.tco.col.cheapest", "cli.tco.col.median", "cli.tco.col.spread",
                "cli.tco.col.offers", "cli.tco.col.all_offers"):
        t.add_column(tr(key, lang), overflow="fold")
    distressed: list[str] = []
    for sp in setup.spreads:
        ref = sp.reference
        c = sp.cheapest
        basis = {"comparable": "cli.tco.basis.comparable", "all": "cli.tco.basis.all",
                 "distressed only": "cli.tco.basis.distressed"}[sp.basis]
        lo, hi = min(q.usd_per_device_hour for q in ref), max(q.usd_per_device_hour for q in ref)
        every = [q.usd_per_device_hour for q in sp.quotes if not q.distressed]
        t.add_row(_kind(sp.kind, lang), f"{money(c.usd_per_device_hour)} ({c.instance})" if c else "",
                  money(sp.median_usd_per_device_hour or 0.0), f"{money(lo)}-{money(hi)}",
                  tr(basis, lang, n=len(ref)),
                  tr("cli.tco.all_offers", lang, lo=money(min(every)), med=money(statistics.median(every)),
                     hi=money(max(every)), n=len(every)) if every else "-")
        if sp.basis != "distressed only":
            distressed += [f"{q.instance} {_kind(sp.kind, lang)} {money(q.usd_per_device_hour)}"
                           for q in sp.quotes if q.distressed and not q.derived]
    console.print(t)
    if distressed:
        console.print(tr("cli.tco.distressed", lang, items="; ".join(distressed)), highlight=False)


def _rents_only_json(accelerator: str, devices: int, years: float, utilization: float, setup: TcoSetup) -> dict[str,
                                                                                                              Any]:
    """`gpuplan tco --json` for a part without a purchase price: the market's rents and the cost of capital."""
    fin = setup.fin
    return {"kind": "tco", "accelerator": accelerator, "devices": devices, "years": years,
            "utilization": utilization, "market": setup.market,
            "currency": {"code": setup.currency, "cny_per_usd": setup.cny_per_usd}, "own": None,
            "own_missing": "no purchase price for the part in the catalog: pass --server-price",
            "rent": [{"kind": k, "usd_per_device_hour": q.to_json(),
                      "cheapest_usd_per_device_hour": c.to_json() if c else None} for k, q, c in setup.rates],
            "market_rents": {sp.kind: sp.to_json() for sp in setup.spreads},
            "cost_of_capital": {"wacc": fin.wacc, "wacc_source": "--wacc" if "wacc" in fin.overridden
                                else "advise/data/tco.yaml wacc", "capex_usd": None}}
