"""`gpuplan report` (re-render a saved report), `gpuplan compare`, and the advisor pieces of `plan train`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.advise.findings import load_thresholds
from gpuplan.advise.report_infer import inference_report, is_infer_run
from gpuplan.advise.report_train import compare_training
from gpuplan.bench.calibration_files import load_user_calibration
from gpuplan.cli.common import console, fail, flag, positives, print_json
from gpuplan.errors import GpuplanError, InputError
from gpuplan.hardware import load_catalog
from gpuplan.i18n import help_text, resolve_lang, tr
from gpuplan.render.report_io import load_report, write_report
from gpuplan.render.report_md import compare_infer_rows, compare_rows
from gpuplan.render.report_text import rule_line
from gpuplan.render.trust_text import confidence_text
from gpuplan.service.advice import compare_infer, requirements
from gpuplan.service.train_options import plan_constraints, training_job
from gpuplan.workload.frameworks import FrameworkId
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import load_model

__all__ = ["compare_cmd", "parse_pairs", "print_findings", "report_cmd", "requirements", "save_report",
           "save_report_quiet"]

SEV_STYLE = {"critical": "bold red", "warn": "yellow", "info": "cyan"}


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
    """The recommended plan's findings; nothing when there are none (no plan recommended: the line above says why)."""
    if not findings:
        return
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
    source: Path = typer.Argument(..., help=help_text("help.report.source")),
    out: Path = typer.Option(..., "--out", "-o", help=help_text("help.report.out")),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
    data_residency: str = typer.Option(None, help=help_text("help.report.data_residency")),
    compliance: list[str] = typer.Option(None, help=help_text("help.report.compliance")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog"),
    bench: list[Path] = typer.Option(None, "--bench", help=help_text("help.report.bench")),
) -> None:
    """Render a saved report (--report FILE.json) or a `plan infer --json` result as HTML or Markdown."""
    try:
        language = resolve_lang(lang)
        raw = load_report(source, accept_infer_run=True)
        if is_infer_run(raw):  # the JSON of `gpuplan plan infer --json`: findings and TCO are computed here
            raw = inference_report(raw, load_catalog(catalog_dir or ()),
                                   requirements=requirements(data_residency, compliance))
        if bench:  # measured results next to the plan (torch-free: records and report only)
            from gpuplan.bench.records import load_result
            from gpuplan.bench.report import bench_section

            raw = {**raw, "bench": [bench_section(load_result(p), p.name) for p in bench]}
        save_report(raw, out, language)
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)


def compare_cmd(
    model: str = typer.Option(..., "--model", "-m", help=help_text("help.common.model")),
    tokens: float = typer.Option(None, help=help_text("help.compare.tokens")),
    qps: float = typer.Option(None, help=help_text("help.compare.qps")),
    ttft_p99: float = typer.Option(None, help=help_text("help.compare.ttft_p99")),
    tpot_p99: float = typer.Option(None, help=help_text("help.compare.tpot_p99")),
    input_len: int = typer.Option(1024, help=help_text("help.compare.input_len")),
    output_len: int = typer.Option(256, help=help_text("help.compare.output_len")),
    engine_id: str = typer.Option(None, "--engine", help=help_text("help.compare.engine_id")),
    accelerators: str = typer.Option(..., help=help_text("help.compare.accelerators")),
    seq_len: int = typer.Option(4096),
    global_batch: int = typer.Option(None, help=help_text("help.common.global_batch")),
    method: Literal["full", "pretrain", "full_ft", "lora", "qlora"] = typer.Option("full"),
    precision: Literal["bf16", "fp16", "fp32", "fp8"] = typer.Option("bf16"),
    deadline: float = typer.Option(None, help=help_text("help.common.deadline")),
    budget: float = typer.Option(None, help=help_text("help.common.budget")),
    max_devices: int = typer.Option(4096),
    network: str = typer.Option(None, help=help_text("help.plan_train.network")),
    nics_per_node: float = typer.Option(None, help=help_text("help.estimate_train.nics_per_node")),
    gpus_per_node: int = typer.Option(None, help=help_text("help.estimate_train.gpus_per_node")),
    framework: FrameworkId | None = typer.Option(None, help=help_text("help.estimate_train.framework")),
    recipe: str = typer.Option("", help=help_text("help.common.recipe")),
    market: Literal["cn", "global"] | None = typer.Option(None),
    trust: Literal["low", "medium", "high"] = typer.Option("low", help=help_text("help.common.trust")),
    provider: str = typer.Option(None),
    data_residency: str = typer.Option(None, help=help_text("help.common.data_residency")),
    compliance: list[str] = typer.Option(None, help=help_text("help.common.compliance")),
    threshold: list[str] = typer.Option(None, help=help_text("help.common.threshold")),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
    report: Path = typer.Option(None, "--report", help=help_text("help.compare.report")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog"),
    json_out: bool = flag(False, "--json"),
) -> None:
    """Which of these, for this job: time (or latency), cost, memory headroom, porting risk and findings per part."""
    try:
        language = resolve_lang(lang)
        positives(language, ("tokens", tokens, False), ("qps", qps, False), ("ttft-p99", ttft_p99, False),
                  ("tpot-p99", tpot_p99, False), ("input-len", input_len, True), ("output-len", output_len, True),
                  ("seq-len", seq_len, True), ("global-batch", global_batch, True))
        names = [a.strip() for a in accelerators.split(",") if a.strip()]
        if not names:
            raise InputError(field="accelerators", value=accelerators, allowed="comma-separated catalog ids")
        spec = load_model(model)
        cat = load_catalog(catalog_dir or ())
        names = [cat.accelerator(name).id for name in names]
        if qps is not None:
            if tokens is not None:
                raise InputError(field="tokens", value=tokens, allowed="left out with --qps (the inference form)")
            doc = compare_infer(spec, cat, names, qps=qps, ttft_p99=ttft_p99, tpot_p99=tpot_p99,
                                 input_len=input_len, output_len=output_len, engine_id=engine_id, market=market,
                                 provider=provider, max_devices=max_devices, trust=trust,
                                 req=requirements(data_residency, compliance),
                                 th=load_thresholds(parse_pairs(threshold, "threshold")))
            if report is not None:
                write_report(doc, report, language)
            _print_compare(doc, language, spec.name, tr("cli.compare.what_qps", language, qps=qps), json_out,
                           report)
            return
        if tokens is None:  # a bad number was caught above
            raise InputError(field="tokens", value=tokens, allowed="a positive number (or --qps for inference)")
        job = training_job(method, seq_len, global_batch, precision,
                           framework=framework, recipe=recipe)
        cal = load_user_calibration()  # measured terms written by `gpuplan calibrate`, if any
        cons = plan_constraints(cat, float(count_params(spec).total), cal, method=method, framework=framework,
                                deadline=deadline, budget=budget, max_devices=max_devices, market=market,
                                provider=provider, network=network, nics_per_node=nics_per_node,
                                gpus_per_node=gpus_per_node, trust=trust, lang=language)
        doc = compare_training(spec, job, cat, names, cons, tokens=tokens, calibration=cal,
                               requirements=requirements(data_residency, compliance),
                               thresholds=load_thresholds(parse_pairs(threshold, "threshold")))
        if report is not None:
            write_report(doc, report, language)
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    notes = [tr("cli.plan.layouts", language, why=cons.layout_reason)]
    if recipe.strip():
        notes.append(tr("cli.plan.recipe", language, facts=recipe.strip()))
    _print_compare(doc, language, spec.name, tr("cli.compare.what_tokens", language, tokens=tokens), json_out,
                   report, notes)


def _print_compare(doc: Mapping[str, Any], language: str, model: str, what: str, json_out: bool,
                   report: Path | None, notes: Sequence[str] = ()) -> None:
    if json_out:
        print_json(doc)
        return
    head, rows = (compare_infer_rows if doc["kind"] == "compare_infer" else compare_rows)(doc, language)
    t = Table(title=tr("cli.compare.title", language, model=model, what=what),
              caption=tr("cli.compare.caption_infer" if doc["kind"] == "compare_infer" else "cli.compare.caption",
                         language))
    if doc["kind"] != "compare_infer":  # the offer goes under the accelerator, to keep the table narrow
        head = head[:1] + head[2:]
        rows = [[f"{r[0]}\n({r[1]})" if r[1] != "-" else r[0], *r[2:]] for r in rows]
    for i, h in enumerate(head[:-1]):  # provenance and confidence are printed per option below the table
        t.add_column(h, no_wrap=i == 0 and doc["kind"] == "compare_infer", overflow="fold")
    for row in rows:
        t.add_row(*row[:-1])
    console.print(t)
    for line in notes:  # what every option was planned under: the layouts searched, the recipe facts given
        console.print(line, highlight=False)
    for opt in doc["options"]:
        if opt["plan"] is not None and opt["plan"].get("confidence"):
            console.print(f"{opt['accelerator']}: "
                          + tr("trust.recommended_conf", language,
                               text=confidence_text(opt["plan"]["confidence"], language, short=False)),
                          highlight=False)
        if opt.get("rule") and opt["plan"] is not None:
            console.print(f"{opt['accelerator']}: {rule_line(opt['plan'] | {'rule': opt['rule']}, language)}",
                          highlight=False)
        if opt["plan"] is None:
            console.print(f"{opt['accelerator']}: {tr('report.rejected', language, rejected=opt['rejected'])}",
                          highlight=False)
        worst = next((f for f in opt["findings"] if f["severity"] != "info"), None)
        if worst:
            console.print(f"{opt['accelerator']} - {tr('cli.compare.top_finding', language)}: "
                          f"{worst['message'][language]}", highlight=False)
    if report is not None:
        console.print(tr("cli.report.written", language, path=str(report)), highlight=False)
