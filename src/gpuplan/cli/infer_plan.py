"""`gpuplan plan infer`: the cheapest fleet that meets a p99 TTFT/TPOT SLO under a load."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.advise.findings import load_thresholds
from gpuplan.advise.trust import eligible_fleets, fleet_block
from gpuplan.cli.advise import parse_pairs, print_findings, requirements, save_report, save_report_quiet
from gpuplan.cli.common import console, fail, flag, positives, print_json, warn
from gpuplan.cli.emit import check_disaggregated, check_formats, pick_plan, write_serve, write_serve_pd
from gpuplan.cli.train import plan_app
from gpuplan.emit.formats import SERVE_FORMATS
from gpuplan.errors import GpuplanError, InputError
from gpuplan.hardware import load_catalog
from gpuplan.hardware.query import check_policy_names
from gpuplan.i18n import help_text, not_recommended, resolve_lang, tr
from gpuplan.render.report_text import (
    engine_default_lines,
    fleet_text,
    fleet_units_text,
    prefix_tiers_line,
    recommended_rule_line,
)
from gpuplan.render.split_text import split_lines
from gpuplan.render.traffic_text import traffic_lines
from gpuplan.render.trust_text import band_num, confidence_text, misses_line, pd_line, trust_lines
from gpuplan.service.infer_inputs import infer_load, traffic_file
from gpuplan.units import sig
from gpuplan.workload.jobs import SERVED_WEIGHTS
from gpuplan.workload.presets import load_model

if TYPE_CHECKING:
    from gpuplan.hardware import Catalog
    from gpuplan.search.infer_load import InferLoad, InferSlo
    from gpuplan.search.infer_search import InferConstraints
    from gpuplan.service.infer_inputs import ServingEngines

# the serving planner's modules load only when `plan infer` runs, not for `plan train` (the same command group);
# the weight formats it searches come from the light workload module
WEIGHTS = SERVED_WEIGHTS

__all__ = ["COLS", "plan_infer"]

COLS = ("hardware", "fleet", "usd_h", "usd_m", "util", "latency", "confidence", "tenancy")  # cli.pinfer.col.<name>


def _terms(items: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(field="term", value=item, allowed="NAME=NUMBER, e.g. load_headroom=0.3") from None
        if not sep:
            raise InputError(field="term", value=item, allowed="NAME=NUMBER, e.g. load_headroom=0.3")
    return out


@plan_app.command("infer", help=help_text("help.plan_infer"))
def plan_infer(
    model: str = typer.Option(None, "--model", "-m", help=help_text("help.common.model")),
    qps: float = typer.Option(None, help=help_text("help.plan_infer.qps")),
    trace: Path = typer.Option(None, help=help_text("help.plan_infer.trace")),
    input_len: int = typer.Option(None, help=help_text("help.plan_infer.input_len")),
    output_len: int = typer.Option(None, help=help_text("help.plan_infer.output_len")),
    input_dist: str = typer.Option(None, help=help_text("help.plan_infer.input_dist")),
    output_dist: str = typer.Option(None, help=help_text("help.plan_infer.output_dist")),
    ttft_p99: float = typer.Option(None, help=help_text("help.plan_infer.ttft_p99")),
    tpot_p99: float = typer.Option(None, help=help_text("help.plan_infer.tpot_p99")),
    engine_id: str = typer.Option(None, "--engine", help=help_text("help.plan_infer.engine_id")),
    weights: list[str] = typer.Option(None, help=help_text("help.plan_infer.weights", formats=", ".join(WEIGHTS))),
    kv_dtype: Literal["bf16", "fp16", "fp8", "int8"] = typer.Option("bf16", help=help_text("help.plan_infer.kv_dtype")),
    market: Literal["cn", "global"] | None = typer.Option(None),
    trust: Literal["low", "medium", "high"] = typer.Option("low", help=help_text("help.common.trust")),
    vendor: str = typer.Option(None),
    provider: str = typer.Option(None),
    domestic_only: bool = flag(False, "--domestic-only"),
    max_devices: int = typer.Option(1024, help=help_text("help.plan_infer.max_devices")),
    term: list[str] = typer.Option(None, help=help_text("help.plan_infer.term")),
    top: int = typer.Option(10, help=help_text("help.common.top")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help=help_text("help.common.catalog_dir")),
    json_out: bool = flag(False, "--json"),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
    report: Path = typer.Option(None, "--report", help=help_text("help.common.report")),
    data_residency: str = typer.Option(None, help=help_text("help.common.data_residency")),
    compliance: list[str] = typer.Option(None, help=help_text("help.common.compliance")),
    threshold: list[str] = typer.Option(None, help=help_text("help.common.threshold")),
    emit: str = typer.Option(None, "--emit", help=help_text("help.common.emit", formats=", ".join(SERVE_FORMATS))),
    emit_out: Path = typer.Option(Path("gpuplan-emit"), "--out", help=help_text("help.common.emit_out")),
    pick: int = typer.Option(None, "--pick", min=1, help=help_text("help.common.emit_pick")),
    disaggregated: bool = flag(False, "--disaggregated", help=help_text("help.plan_infer.disaggregated")),
    router: str = typer.Option("least-load", "--router", help=help_text("help.plan_infer.router")),
    prefix_hit: float = typer.Option(0.0, "--prefix-hit", help=help_text("help.plan_infer.prefix_hit")),
    shared_prefix: int = typer.Option(0, "--shared-prefix", help=help_text("help.plan_infer.shared_prefix")),
    prefix_set: int = typer.Option(0, "--prefix-set", help=help_text("help.plan_infer.prefix_set")),
    kv_offload: str = typer.Option("auto", "--kv-offload", help=help_text("help.plan_infer.kv_offload")),
    context_parallel: bool = typer.Option(True, "--context-parallel/--no-context-parallel",
                                          help=help_text("help.plan_infer.context_parallel")),
    traffic: Path = typer.Option(None, "--traffic", help=help_text("help.plan_infer.traffic")),
    workload: Path = typer.Option(None, "--workload", help=help_text("help.plan_infer.workload")),
) -> None:
    """Search instances, TP/PP/EP, weight format and replicas for the cheapest fleet meeting the SLO."""
    from gpuplan.advise.infer_split import named_split
    from gpuplan.advise.report_infer import choose_fleet, inference_report, named_engine, named_pd, named_setting
    from gpuplan.advise.trust import serving_recommendation
    from gpuplan.search.infer_load import InferSlo, planner_terms
    from gpuplan.search.infer_pd_choice import disaggregated_recommendation
    from gpuplan.search.infer_search import plan_inference, plan_record

    try:
        language = resolve_lang(lang)
        if workload is not None:  # several models, each with its own rate and SLO (cli/infer_workload.py)
            from gpuplan.cli.infer_workload import check_workload_options, print_workload, read_workload_file
            from gpuplan.service.infer_workload import plan_workload

            check_workload_options({"model": model, "qps": qps, "trace": trace, "input-len": input_len,
                                    "output-len": output_len, "input-dist": input_dist, "output-dist": output_dist,
                                    "ttft-p99": ttft_p99, "tpot-p99": tpot_p99, "traffic": traffic, "emit": emit,
                                    "report": report, "disaggregated": disaggregated, "pick": pick,
                                    "prefix-hit": prefix_hit, "shared-prefix": shared_prefix})
            positives(language, ("max-devices", max_devices, True))
            mix = read_workload_file(workload)
            cat, cons, engines = _catalog_and_constraints(
                catalog_dir, engine_id, market=market, vendor=vendor, provider=provider, domestic_only=domestic_only,
                max_devices=max_devices, weights=tuple(weights) if weights else WEIGHTS, kv_dtype=kv_dtype,
                trust=trust, router=router)
            doc = plan_workload(mix, cat, cons, engine_profile=engines.profile, stack_engines=engines.by_stack,
                                terms=planner_terms(_terms(term)),
                                thresholds=load_thresholds(parse_pairs(threshold, "threshold")),
                                requirements=requirements(data_residency, compliance), residency=data_residency,
                                label=workload.name)
            print_workload(doc, language, json_out=json_out)
            return
        if model is None or ttft_p99 is None or tpot_p99 is None:
            missing = "model" if model is None else "ttft-p99" if ttft_p99 is None else "tpot-p99"
            raise InputError(field=missing, value=None, allowed=f"--{missing} (or --workload FILE.yaml for several "
                             "models)", hint=f"give --{missing}; `gpuplan plan infer --help` lists the options")
        formats = check_formats(emit, "serve")
        check_disaggregated(disaggregated, formats, pick)
        positives(language, ("qps", qps, False), ("input-len", input_len, True), ("output-len", output_len, True),
                  ("ttft-p99", ttft_p99, False), ("tpot-p99", tpot_p99, False), ("max-devices", max_devices, True),
                  ("top", top, True))
        req = requirements(data_residency, compliance)
        th = load_thresholds(parse_pairs(threshold, "threshold"))
        curve = traffic_file(traffic, qps, trace) if traffic is not None else None
        # with a traffic curve the fleet is planned at its peak hour's rate (advise/report_traffic.py)
        load = infer_load(curve.peak_qps if curve is not None else qps, trace, input_len, output_len, input_dist,
                          output_dist, files=True)
        if prefix_hit or shared_prefix or prefix_set:
            load = replace(load, prefix_hit=prefix_hit, shared_prefix_tokens=shared_prefix,
                           prefix_set_tokens=prefix_set)
        slo = InferSlo(ttft_p99_s=ttft_p99, tpot_p99_s=tpot_p99)
        spec = load_model(model)
        cat, cons, engines = _catalog_and_constraints(
            catalog_dir, engine_id, market=market, vendor=vendor, provider=provider, domestic_only=domestic_only,
            max_devices=max_devices, weights=tuple(weights) if weights else WEIGHTS, kv_dtype=kv_dtype, trust=trust,
            router=router, kv_offload=kv_offload, context_parallel=context_parallel)
        prof = engines.profile
        cal = planner_terms(_terms(term))
        res = plan_inference(spec, load, slo, cat, cons, engine_profile=prof, terms=cal,
                             stack_engines=engines.by_stack)
        run = plan_record(spec, load, slo, res, prof, kv_dtype)
        if engines.default is not None:
            run["engine_default"] = engines.default
        if run["slo"].get("warning"):
            warn(run["slo"]["warning"][language])
        run["what_if_pd"] = named_pd(run, cat, th, req)  # the disaggregated fleet the advisor would name
        # the recommended part with another engine of its stack, if one serves the load for less
        run["what_if_engine"] = named_engine(run, cat, th, req, load=load, constraints=cons)
        # a setting of that engine (MindIE SplitFuse) on the parts it runs on: its fleet, or why none met the SLO
        run["what_if_setting"] = named_setting(run, cat, th, req, load=load, constraints=cons)
        doc = None
        if report is not None or not json_out:  # findings, memory and the growth re-plan (one more planner run)
            doc = inference_report(run, cat, thresholds=th, requirements=req, infer_load=load,
                                   max_devices=max_devices, constraints=cons)
        # a part whose fleet draws a blocking finding (export, residency, compliance) is not recommended;
        # the report has chosen already, else choose here
        blocked = doc["not_recommended"] if doc is not None else choose_fleet(run, res.plans, cat, th, req, market)[1]
        recommended = serving_recommendation(res.plans, cat, market, skip=tuple(blocked), residency=data_residency)
        run.update(recommended=recommended, not_recommended=blocked)
        run["recommended_disaggregated"] = disaggregated_recommendation(
            run, eligible_fleets(res.plans, cat, market, blocked, data_residency))
        # short prompts on one fleet, long ones on another, where the prompt lengths spread (advise/infer_split.py)
        run["length_split"] = named_split(run, spec=spec, load=load, slo=slo, catalog=cat, constraints=cons,
                                          engine_profile=prof, terms=cal, stack_engines=engines.by_stack, th=th,
                                          requirements=req, blocked=blocked)
        if doc is not None:
            doc["length_split"] = run["length_split"]
        if curve is not None:  # the schedule and purchase mix of the recommended fleet
            from gpuplan.advise.report_traffic import traffic_answer

            run.update(traffic_answer(run, curve, catalog=cat, spec=spec, load=load, terms=cal, provider=provider,
                                      market=market, fleets=top))
            if doc is not None:
                doc["traffic"] = {k: run[k] for k in ("traffic", "schedule", "purchase_mix")}
        if doc is not None:  # computed for the table or --report: the JSON carries them, as plan train's does
            run["findings"] = doc["findings"]
        if report is not None and doc is not None:
            (save_report_quiet if json_out else save_report)(doc, report, language)
        max_len = min(spec.max_position_embeddings, load.input_len.max + load.output_len.max)
        if disaggregated and res.plans:
            write_serve_pd(emit_out, model_id=model, spec=spec, run=run, lang=language, max_model_len=max_len)
        elif formats and res.plans:
            write_serve(formats, emit_out, model_id=model, spec=spec, run=run, lang=language,
                        fleet=pick_plan(res.plans, pick, recommended,
                                        ("accelerator", "instance", "replicas", "layout", "weights")),
                        max_model_len=max_len, stated={"kv_dtype"} | ({"weights"} if weights else set()),
                        catalog=cat)
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    if json_out:
        print_json(run)
        return
    for line in engine_default_lines(run.get("engine_default"), language):  # when the parts' stack chose it
        console.print(line, highlight=False)
    _table(spec.name, load, slo, _shown(res.plans, top, recommended), res.candidates_evaluated, res.simulated,
           res.rejected, language, recommended, blocked, router=res.router)
    if recommended is not None and market is None and data_residency is None and (
            cat.instances[recommended["instance"]].market == recommended["buyer_market"]):
        console.print(tr("report.rec.buyer_market", language,
                         market=tr(f"trust.market.{recommended['buyer_market']}", language)), highlight=False)
    rec = recommended
    tiers = prefix_tiers_line(res.plans, rec, language)  # with --prefix-set: where the set is kept, the hit it leaves
    if load.prefix_hit and not tiers:
        console.print(tr("cli.pinfer.prefix_hit", language, share=load.prefix_hit), highlight=False)
    if load.shared_prefix_tokens:
        console.print(tr("cli.pinfer.shared_prefix", language, tokens=load.shared_prefix_tokens), highlight=False)
    if tiers:
        console.print(tiers, highlight=False)
    if rec is not None:
        for line in trust_lines(rec, language):
            console.print(line, highlight=False)
    pd_text = pd_line(run, language)
    if pd_text:
        console.print(pd_text, highlight=False)
    for line in split_lines(run, language):  # short prompts on one fleet, long ones on another
        console.print(line, highlight=False)
    missed = misses_line(run.get("parts_without_plan") or [], slo.ttft_p99_s, slo.tpot_p99_s, language)
    if missed:
        console.print(missed, highlight=False)
    if curve is not None:
        for line in traffic_lines(run, language):
            console.print(line, highlight=False)
    if doc is not None and doc.get("recommendation"):
        print_findings(doc["findings"], language)


def _catalog_and_constraints(catalog_dir: list[Path] | None, engine_id: str | None,
                             **constraints: Any) -> tuple[Catalog, InferConstraints, ServingEngines]:
    """(the catalog, the planner constraints, the engines: `--engine` on every part when named, else each part's
    stack's default engine, service.infer_inputs.serving_engines, as the API and the web form plan)."""
    from gpuplan.search.infer_search import InferConstraints
    from gpuplan.service.infer_inputs import serving_engines

    cat = load_catalog(catalog_dir or ())
    check_policy_names(cat, vendor=constraints.get("vendor"), provider=constraints.get("provider"))
    cons = InferConstraints(**constraints)
    return cat, cons, serving_engines(cat, cons, engine_id)


_FLEET_KEYS = ("accelerator", "instance", "replicas", "layout", "weights")


def _shown(plans: list[dict[str, Any]], top: int, recommended: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The table's rows: the `top` cheapest fleets, and the recommended one below them when it ranks lower (a
    cheaper fleet of another market, or a blocked one, sits above it)."""
    shown = plans[:top]
    if recommended is None or any(all(p.get(k) == recommended.get(k) for k in _FLEET_KEYS) for p in shown):
        return shown
    rec = next((p for p in plans if all(p.get(k) == recommended.get(k) for k in _FLEET_KEYS)), None)
    return shown + [rec] if rec is not None else shown


def _tenancy(value: str, lang: str) -> str:
    return tr(f"report.tenancy.{value}", lang) if value in ("dedicated", "shared") else value


def _table(name: str, load: InferLoad, slo: InferSlo, plans: list[dict[str, Any]], evaluated: int, simulated: int,
           rejected: dict[str, int], lang: str = "en", recommended: dict[str, Any] | None = None,
           blocked: dict[str, str] | None = None, *, router: str = "least-load") -> None:
    t = Table(title=tr("cli.pinfer.title", lang, model=name, qps=load.qps, input=load.input_len.label,
                       output=load.output_len.label, ttft=slo.ttft_p99_s, tpot=slo.tpot_p99_s),
              caption=tr("cli.pinfer.caption", lang, candidates=evaluated, simulated=simulated, rejected=rejected,
                         router=tr(f"cli.pinfer.router.{router}", lang)))
    for col in COLS:
        t.add_column(tr(f"cli.pinfer.col.{col}", lang), no_wrap=col == "usd_m", overflow="fold")
    blocked = blocked or {}
    mixed = len({p.get("engine") for p in plans}) > 1  # parts planned with their own stacks' engines: name each
    for p in plans:
        hit = fleet_block(p, blocked)
        mark = "\n(" + not_recommended(hit, lang) + ")" if hit is not None else ""
        t.add_row(fleet_text(p, lang) + (f" {p['engine']}" if mixed else "") + mark,
                  fleet_units_text(p, lang),
                  band_num(p["cost_usd_per_hour"], (p.get("band") or {}).get("cost_usd_per_hour"), ",.2f"),
                  f"{sig(p['cost_usd_per_million_input_tokens'])} | {sig(p['cost_usd_per_million_output_tokens'])}",
                  f"{p['utilization']:.0%}",
                  band_num(p["ttft_s"]["p99"], (p.get("band") or {}).get("ttft_s.p99"), ".2f") + " s | "
                  + band_num(p["tpot_s"]["p99"], (p.get("band") or {}).get("tpot_s.p99"), ".0f", 1e3) + " ms",
                  confidence_text(p.get("confidence"), lang), _tenancy(p["advice"]["tenancy"], lang))
    console.print(t)
    rule = recommended_rule_line(plans, recommended, lang)
    if rule and recommended is not None:
        console.print(tr("cli.pinfer.recommended", lang, acc=recommended["accelerator"], rule=rule), highlight=False)
