"""`gpuplan report` (re-render a saved report), `gpuplan compare`, and the advisor pieces of `plan train`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.advise.facts import Requirements
from gpuplan.advise.findings import load_thresholds
from gpuplan.advise.report_train import compare_training
from gpuplan.cli.common import console, fail, print_json
from gpuplan.errors import GpuplanError, InputError
from gpuplan.hardware import load_catalog
from gpuplan.i18n import resolve_lang, tr
from gpuplan.render.report_io import load_report, write_report
from gpuplan.render.report_md import compare_rows
from gpuplan.search.train_search import PlanConstraints
from gpuplan.workload.jobs import TrainingJob, default_global_batch
from gpuplan.workload.presets import load_model

__all__ = ["compare_cmd", "parse_pairs", "print_findings", "report_cmd", "requirements", "save_report",
           "save_report_quiet"]

SEV_STYLE = {"critical": "bold red", "warn": "yellow", "info": "cyan"}


def requirements(data_residency: str | None, compliance: Sequence[str] | None) -> Requirements:
    from gpuplan.advise.findings import advise_data

    levels = advise_data("compliance")["compliance_levels"]
    for level in compliance or ():
        if level not in levels:
            raise InputError(field="compliance", value=level, allowed=", ".join(levels))
    regions = advise_data("compliance")["data_residency"]
    if data_residency and data_residency not in regions:
        raise InputError(field="data-residency", value=data_residency, allowed=", ".join(regions))
    return Requirements(data_residency=data_residency, compliance=tuple(compliance or ()))


def parse_pairs(pairs: Sequence[str] | None, field: str) -> dict[str, float]:
    """NAME=VALUE options (repeatable) as a dict; InputError on a malformed pair."""
    out: dict[str, float] = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        try:
            if not sep:
                raise ValueError(pair)
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(field=field, value=pair, allowed="NAME=VALUE with a number") from None
    return out


def print_findings(findings: Sequence[Mapping[str, Any]], lang: str, limit: int = 8) -> None:
    shown = list(findings[:limit])
    t = Table(title=tr("cli.findings.title", lang, shown=len(shown), total=len(findings)), show_lines=False)
    t.add_column(tr("report.col.severity", lang))
    t.add_column(tr("report.col.finding", lang), ratio=3, overflow="fold")
    t.add_column(tr("report.col.fix", lang), ratio=2, overflow="fold")
    for f in shown:
        t.add_row(f"[{SEV_STYLE[f['severity']]}]{tr('report.sev.' + f['severity'], lang)}[/]", f["message"][lang],
                  f["fix"][lang])
    console.print(t)


def save_report(doc: Mapping[str, Any], path: Path, lang: str) -> None:
    out = write_report(doc, path, lang)
    console.print(tr("cli.report.written", lang, path=str(out)), highlight=False)


def save_report_quiet(doc: Mapping[str, Any], path: Path, lang: str) -> None:
    """Write the report without a console line (stdout carries --json)."""
    write_report(doc, path, lang)


def report_cmd(
    source: Path = typer.Argument(..., help="a report JSON saved with --report FILE.json"),
    out: Path = typer.Option(..., "--out", "-o", help="FILE.html (self-contained, charts) or FILE.md"),
    lang: str = typer.Option(None, "--lang", help="zh or en (default: from LANG/LC_ALL)"),
) -> None:
    """Render a saved plan or comparison (JSON) as HTML or Markdown, in Chinese or English."""
    try:
        language = resolve_lang(lang)
        save_report(load_report(source), out, language)
    except (GpuplanError, ValidationError) as exc:
        fail(exc)


def compare_cmd(
    model: str = typer.Option(..., "--model", "-m", help="preset id or config.json"),
    tokens: float = typer.Option(..., help="training tokens"),
    accelerators: str = typer.Option(..., help="comma-separated catalog ids, e.g. h200-sxm-141gb,ascend-910b"),
    seq_len: int = typer.Option(4096),
    global_batch: int = typer.Option(None, help="sequences per step (default: about 4M tokens)"),
    method: Literal["full", "lora", "qlora"] = typer.Option("full"),
    precision: Literal["bf16", "fp16", "fp32", "fp8"] = typer.Option("bf16"),
    deadline: float = typer.Option(None, help="days"),
    budget: float = typer.Option(None, help="USD"),
    max_devices: int = typer.Option(4096),
    market: Literal["cn", "global"] | None = typer.Option(None),
    provider: str = typer.Option(None),
    data_residency: str = typer.Option(None, help="region the data must stay in (cn)"),
    compliance: list[str] = typer.Option(None, help="required compliance level (mlps3); repeatable"),
    threshold: list[str] = typer.Option(None, help="override an advisor threshold, NAME=VALUE; repeatable"),
    lang: str = typer.Option(None, "--lang", help="zh or en (default: from LANG/LC_ALL)"),
    report: Path = typer.Option(None, "--report", help="also write FILE.html, FILE.md or FILE.json"),
    catalog_dir: list[Path] = typer.Option(None, "--catalog"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Side by side for one training job: time, cost, memory headroom, porting risk and findings per accelerator."""
    try:
        language = resolve_lang(lang)
        if tokens <= 0:
            raise InputError(field="tokens", value=tokens, allowed="a positive number")
        names = [a.strip() for a in accelerators.split(",") if a.strip()]
        if not names:
            raise InputError(field="accelerators", value=accelerators, allowed="comma-separated catalog ids")
        spec = load_model(model)
        cat = load_catalog(catalog_dir or ())
        for name in names:
            cat.accelerator(name)
        job = TrainingJob(method=method, seq_len=seq_len, global_batch=global_batch or default_global_batch(seq_len),
                          precision=precision)
        cons = PlanConstraints(deadline_days=deadline, budget_usd=budget, max_devices=max_devices, market=market,
                               provider=provider)
        doc = compare_training(spec, job, cat, names, cons, tokens=tokens,
                               requirements=requirements(data_residency, compliance),
                               thresholds=load_thresholds(parse_pairs(threshold, "threshold")))
        if report is not None:
            write_report(doc, report, language)
    except (GpuplanError, ValidationError) as exc:
        fail(exc)
    if json_out:
        print_json(doc)
        return
    head, rows = compare_rows(doc, language)
    t = Table(title=tr("cli.compare.title", language, model=spec.name, tokens=tokens),
              caption=tr("cli.compare.caption", language))
    for i, h in enumerate(head[:-1]):  # provenance is in the caption
        t.add_column(h, no_wrap=i == 0, overflow="fold")
    for row in rows:
        t.add_row(*row[:-1])
    console.print(t)
    for opt in doc["options"]:
        worst = next((f for f in opt["findings"] if f["severity"] != "info"), None)
        if worst:
            console.print(f"{opt['accelerator']} - {tr('cli.compare.top_finding', language)}: "
                          f"{worst['message'][language]}", highlight=False)
    if report is not None:
        console.print(tr("cli.report.written", language, path=str(report)), highlight=False)
