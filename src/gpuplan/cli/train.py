"""`gpuplan estimate train` and `gpuplan plan train`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
import typer
from pydantic import ValidationError
from rich.table import Table

from gpuplan.advise.findings import load_thresholds
from gpuplan.advise.report_train import SCENARIO_MARK, blocked_finding, training_report
from gpuplan.bench.calibration_files import load_user_calibration
from gpuplan.cli.advise import parse_pairs, print_findings, requirements, save_report, save_report_quiet
from gpuplan.cli.common import console, fail, flag, note, positives, print_json, warn
from gpuplan.cli.emit import check_formats, pick_plan, write_train
from gpuplan.emit.formats import TRAIN_FORMATS
from gpuplan.errors import GpuplanError, InputError
from gpuplan.estimate.memory_fit import fit_text
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.hardware.query import alias_note
from gpuplan.i18n import help_text, not_recommended, resolve_lang, tr
from gpuplan.render.plan_json import compact_plans, ranked_rows
from gpuplan.render.report_text import bottleneck_text, cost_text, duration_text, layout_text, offer_text, rule_line
from gpuplan.render.trust_text import band_cost, band_duration, band_num, confidence_text, trust_lines
from gpuplan.search.candidates import RECOMPUTE_CODES, LayoutChoices, offered, offered_choice, why_no_layout
from gpuplan.search.cluster import cluster_hardware, default_gpus_per_node, usual_network
from gpuplan.search.estimate_trust import COST_KINDS, training_estimate_trust
from gpuplan.search.pricing import device_price
from gpuplan.search.train_planner import best_layout, plan_figures
from gpuplan.search.train_search import PlanConstraints, bottleneck, plan_training
from gpuplan.service.train_options import plan_constraints, training_job
from gpuplan.units import GIB
from gpuplan.workload.context import seq_len_warning
from gpuplan.workload.frameworks import FrameworkId
from gpuplan.workload.frameworks import framework as framework_profile
from gpuplan.workload.params import count_params
from gpuplan.workload.presets import load_model

estimate_app = typer.Typer(help=help_text("help.group.estimate"), no_args_is_help=True)
plan_app = typer.Typer(help=help_text("help.group.plan"), no_args_is_help=True)

Method = Literal["full", "pretrain", "full_ft", "lora", "qlora"]
Precision = Literal["bf16", "fp16", "fp32", "fp8", "nvfp4", "mxfp4"]


def _catalog(dirs: list[Path] | None) -> Catalog:
    return load_catalog(dirs or ())


Kernels = Literal["auto", "hf", "fused"]
DataLoading = Literal["pretokenized", "online"]


def _pin(v: int | None, default: list[int]) -> list[int]:
    return [v] if v is not None else default


@estimate_app.command("train", help=help_text("help.estimate_train"))
def estimate_train(
    model: str = typer.Option(..., "--model", "-m", help=help_text("help.common.model")),
    accelerator: str = typer.Option(..., help=help_text("help.common.accelerator")),
    num_accels: int = typer.Option(8, help=help_text("help.estimate_train.num_accels")),
    gpus_per_node: int = typer.Option(None, help=help_text("help.estimate_train.gpus_per_node")),
    network: str = typer.Option(None, help=help_text("help.estimate_train.network")),
    nics_per_node: float = typer.Option(None, help=help_text("help.estimate_train.nics_per_node")),
    tp: int = typer.Option(None), pp: int = typer.Option(None), dp: int = typer.Option(None),
    cp: int = typer.Option(None), ep: int = typer.Option(None), vpp: int = typer.Option(None),
    zero: int = typer.Option(None, min=0, max=3),
    recompute: Literal["none", "selective", "full"] | None = typer.Option(None),
    precision: Precision = typer.Option("bf16"),
    method: Method = typer.Option("full"),
    seq_len: int = typer.Option(4096),
    global_batch: int = typer.Option(None, help=help_text("help.common.global_batch")),
    micro_batch: int = typer.Option(None),
    tokens: float = typer.Option(None, help=help_text("help.estimate_train.tokens")),
    kernels: Kernels = typer.Option("auto", help=help_text("help.estimate_train.kernels")),
    framework: FrameworkId | None = typer.Option(None, help=help_text("help.estimate_train.framework")),
    tp_comm_overlap: bool | None = flag(None, "--tp-comm-overlap/--no-tp-comm-overlap",
                                                help=help_text("help.estimate_train.tp_comm_overlap")),
    seq_parallel: bool | None = flag(None, "--seq-parallel/--no-seq-parallel",
                                             help=help_text("help.estimate_train.seq_parallel")),
    data_loading: DataLoading = typer.Option("pretokenized", help=help_text("help.common.data_loading")),
    recipe: str = typer.Option("", help=help_text("help.common.recipe")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog", help=help_text("help.common.catalog_dir")),
    term: list[str] = typer.Option(None, "--term", help=help_text("help.train.term")),
    json_out: bool = flag(False, "--json"),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
    emit: str = typer.Option(None, "--emit", help=help_text("help.common.emit", formats=", ".join(TRAIN_FORMATS))),
    emit_out: Path = typer.Option(Path("gpuplan-emit"), "--out", help=help_text("help.common.emit_out")),
) -> None:
    """Step time, throughput, MFU, memory and cost of one configuration; unset layout flags are searched."""
    try:
        language = resolve_lang(lang)
        formats = check_formats(emit, "train")
        positives(language, ("num-accels", num_accels, True), ("gpus-per-node", gpus_per_node, True),
                  ("nics-per-node", nics_per_node, False), ("tp", tp, True), ("pp", pp, True), ("dp", dp, True),
                  ("cp", cp, True), ("ep", ep, True), ("vpp", vpp, True), ("seq-len", seq_len, True),
                  ("global-batch", global_batch, True), ("micro-batch", micro_batch, True),
                  ("tokens", tokens, False))
        spec = load_model(model)
        cat = _catalog(catalog_dir)
        acc = cat.accelerator(accelerator)
        note(alias_note(cat, accelerator, language))
        warn(seq_len_warning(spec, seq_len, language))
        gpn = gpus_per_node or default_gpus_per_node(acc, num_accels)
        job = training_job(method, seq_len, global_batch, precision, micro_batch, kernels=kernels,
                           data_loading=data_loading, framework=framework, recipe=recipe,
                           devices=num_accels).model_copy(
            update={"tp_comm_overlap": tp_comm_overlap, "sequence_parallel": seq_parallel})
        prof = framework_profile(framework) if framework else None
        fixed = [x for x in (tp, pp, dp, cp) if x is not None]
        if len(fixed) == 4 and tp * pp * dp * cp != num_accels:
            raise InputError(field="tp*pp*dp*cp", value=tp * pp * dp * cp,
                             allowed=f"the device count {num_accels}", hint="change a degree or --num-accels")
        if tp is not None and tp > gpn:
            raise InputError(field="tp", value=tp, allowed=f"at most {gpn} (devices per node)",
                             hint="tensor parallelism across the network is far slower; use pp or dp instead")
        net = network or (usual_network(cat, acc.id)[0] if num_accels > gpn else None)
        hw = cluster_hardware(cat, acc.id, net, gpus_per_node=gpn, nics_per_node=nics_per_node)
        choices = LayoutChoices(  # unset degrees: what the framework offers (every value without one)
            devices=[num_accels], tp=offered(prof, "tp", tp, [t for t in (1, 2, 4, 8) if t <= gpn]),
            pp=offered(prof, "pp", pp, [1, 2, 4, 8, 16, 32]), cp=offered(prof, "cp", cp, [1, 2, 4, 8]),
            ep=offered(prof, "ep", ep, [1, 2, 4, 8, 16, 32, 64]), vpp=offered(prof, "vpp", vpp, [1, 2, 4]),
            zero=offered_choice(prof, "zero", zero, list(prof.zero_stages) if prof else [], [0, 1, 3]),
            micro_batch=_pin(micro_batch, [1, 2, 4, 8]),
            recompute=offered_choice(prof, "recompute", recompute, list(prof.recompute) if prof else [],
                                     list(RECOMPUTE_CODES)), max_tp=gpn,
            dp=[dp] if dp is not None else None, zero3_with_pp=bool(prof and prof.zero3_with_pp))
        # measured terms written by `gpuplan calibrate`, if any, then the user's --term overrides
        cal = load_user_calibration().with_overrides(parse_pairs(term, "term"))
        c, ev, best, rejected = best_layout(spec, job, hw, choices, calibration=cal)
        if len(c) == 0:  # name the rule no layout meets (not a product the stated degrees may well have)
            rule = why_no_layout(spec, choices, seq_len=job.seq_len, global_batch=int(job.global_batch or 1),
                                 batch_fixed=job.global_batch_fixed)
            raise InputError(field="layout", value=f"tp={tp} pp={pp} dp={dp} cp={cp} ep={ep} zero={zero}",
                             allowed=f"a layout on {num_accels} devices where {rule}",
                             hint="leave a degree out to let gpuplan choose it"
                                  + (", or leave --global-batch out (a ~4M-token target)" if global_batch else ""))
        if best is None:
            least = int(np.argmin(ev.memory_bytes))
            raise InputError(field="memory", value=fit_text(float(ev.memory_bytes[least]),
                                                            float(acc.memory_gib or 0) * GIB, language, cal)
                             + f" per {acc.id} at best", allowed="a layout within the usable memory",
                             hint=f"nearest feasible: more devices, --recompute full, --method qlora, or a "
                                  f"larger-memory part (layout needing least: {c.row(least)})")
        price = device_price(cat, acc.id)
        fig = plan_figures(spec, job, hw, c, ev, best, catalog=cat, tokens=tokens, calibration=cal, price=price)
        fig["bottleneck"] = bottleneck(fig["breakdown_s"])
        fig["candidates_evaluated"] = len(c)
        fig["rejected"] = rejected
        fig.update(training_estimate_trust(  # how sure: the confidence and 80% bands a plan carries
            cat, cal, fig, accelerator=acc.id, precision=job.precision, price=price,
            moe=spec.moe is not None, nodes=-(-num_accels // gpn), framework_stated=framework is not None))
        if formats:
            given = {"tp": tp, "pp": pp, "dp": dp, "cp": cp, "ep": ep, "vpp": vpp, "zero_stage": zero,
                     "recompute": recompute, "micro_batch": micro_batch, "global_batch": global_batch}
            write_train(formats, emit_out, model_id=model, spec=spec, job=job,
                        plan={**fig, "accelerator": acc.id, "devices": num_accels}, tokens=tokens,
                        stated={k for k, v in given.items() if v is not None} | {"seq_len", "precision"},
                        lang=language, catalog=cat)
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    if json_out:
        print_json(fig)
        return
    _print_estimate(spec.name, acc.id, fig, language, job.seq_len)


def framework_text(fw: dict[str, Any], lay: dict[str, Any], lang: str) -> str:
    """The framework a step time assumed and what it decided for this layout: sequence parallelism and TP overlap
    (with TP), the ZeRO shard group (with a sharded optimizer)."""
    def on(v: object) -> str:
        return tr("cli.est.on" if v else "cli.est.off", lang)

    parts = []
    if int(lay.get("tp", 1)) > 1:
        parts.append(tr("cli.est.fw_tp", lang, sp=on(lay.get("seq_parallel", True)), ov=on(fw.get("tp_comm_overlap"))))
    if int(lay.get("zero_stage", 0)) >= 1:
        parts.append(tr("cli.est.fw_zero", lang, n=lay["zero_shard_ranks"]))
    name = fw.get("name") or tr("cli.est.fw_none", lang)
    colon, comma = ("：", "，") if lang == "zh" else (": ", ", ")
    return name + (colon + comma.join(parts) if parts else "")


def _print_estimate(model: str, acc: str, fig: dict[str, Any], lang: str = "en", seq_len: int = 4096) -> None:
    lay = fig["layout"]
    bands = fig.get("band") or {}

    def fmt(name: str, spec: str, scale: float = 1.0, unit: str = "") -> str:
        return band_num(fig[name], bands.get(name), spec, scale) + unit
    t = Table(title=tr("cli.est.title", lang, model=model, devices=lay["devices"], acc=acc),
              caption=tr("cli.est.caption", lang))
    t.add_column(tr("cli.est.figure", lang))
    t.add_column(tr("cli.est.value", lang), justify="right")
    t.add_row(tr("cli.est.layout", lang), f"tp{lay['tp']} pp{lay['pp']} dp{lay['dp']} cp{lay['cp']} ep{lay['ep']} "
              f"vpp{lay['vpp']} zero{lay['zero_stage']} mb{lay['micro_batch']} recompute={lay['recompute']}")
    t.add_row(tr("cli.est.step_time", lang), fmt("step_time_s", ".3f", unit=" s"))
    for k, v in fig["breakdown_s"].items():
        if v:
            t.add_row(f"  {tr('report.step.' + k, lang)}", f"{v:.3f} s ({v / fig['step_time_s']:.0%})")
    t.add_row(tr("cli.est.bottleneck", lang), bottleneck_text(fig["breakdown_s"], lang))
    t.add_row(tr("cli.est.tokens_s", lang), tr("cli.est.tokens_s_value", lang, total=fmt("tokens_per_s", ",.0f"),
                                                per=fmt("tokens_per_s_per_device", ",.0f")))
    t.add_row(tr("cli.est.tflops", lang), fmt("tflops_per_device", ".1f"))
    t.add_row(tr("cli.est.mfu", lang), f"{fmt('mfu', '.1%')} / {fig['hfu']:.1%}")
    t.add_row(tr("cli.est.memory", lang), band_num(fig["memory"]["total_bytes"], bands.get("memory.total_bytes"),
                                                 ".1f", 1 / GIB) + " GiB")
    t.add_row(tr("cli.est.global_batch", lang), tr("cli.est.global_batch_value", lang, n=lay["global_batch"],
                                                   tokens=lay["global_batch"] * seq_len))
    t.add_row(tr("cli.est.framework", lang), framework_text(fig["assumptions"].get("framework") or {}, lay, lang))
    net = fig["assumptions"].get("network")
    if net:
        t.add_row(tr("cli.est.network", lang), f"{net}, {fig['assumptions']['nics_per_node']:g} NIC(s) per node")
        if lay.get("pp_cross_node_hops"):
            t.add_row(tr("cli.est.pp_hops", lang), str(lay["pp_cross_node_hops"]))
    if fig["time_to_train_s"]:
        camp = fig["campaign_efficiency"]
        t.add_row(tr("cli.est.campaign", lang), f"{camp['value']:.0%} (calibration campaign_efficiency)")
        t.add_row(tr("cli.est.time", lang), tr("cli.est.time_value2", lang, time=band_duration(
            fig["time_to_train_s"], bands.get("time_to_train_s"), lang), goodput=fig["reliability"]["goodput"],
            campaign=camp["value"]))
        t.add_row(tr("cli.est.device_hours", lang), fmt("device_hours", ",.0f"))
        cost = fig["cost"]
        for k in COST_KINDS:
            if cost.get(k):
                kind = tr(f"report.tco.{k[4:].removesuffix('_commitment')}", lang)
                t.add_row(tr("cli.est.cost", lang, kind=kind), "$" + band_cost(cost[k], bands.get(f"cost.{k}"), "-"))
    for name, term in fig["assumptions"]["calibration"].items():
        if str(term["source"]).startswith("gpuplan calibrate"):  # measured on this hardware (gpuplan calibrate)
            t.add_row(tr("cli.est.calibrated", lang, name=name),
                      tr("cli.est.measured", lang, value=f"{term['value']:g}"))
    console.print(t)
    for line in trust_lines(fig, lang):  # how sure, and the classes the bands come from
        console.print(line, highlight=False)


@plan_app.command("train", help=help_text("help.plan_train"))
def plan_train(
    model: str = typer.Option(..., "--model", "-m"),
    tokens: float = typer.Option(..., help=help_text("help.plan_train.tokens")),
    seq_len: int = typer.Option(4096),
    global_batch: int = typer.Option(None, help=help_text("help.common.global_batch")),
    method: Method = typer.Option("full"),
    precision: Precision = typer.Option("bf16"),
    deadline: float = typer.Option(None, help=help_text("help.common.deadline")),
    budget: float = typer.Option(None, help=help_text("help.common.budget")),
    max_devices: int = typer.Option(4096),
    capacity: list[str] = typer.Option(None, "--capacity", help=help_text("help.plan_train.capacity")),
    term: list[str] = typer.Option(None, "--term", help=help_text("help.train.term")),
    network: str = typer.Option(None, help=help_text("help.plan_train.network")),
    nics_per_node: float = typer.Option(None, help=help_text("help.estimate_train.nics_per_node")),
    gpus_per_node: int = typer.Option(None, help=help_text("help.estimate_train.gpus_per_node")),
    market: Literal["cn", "global"] | None = typer.Option(None),
    trust: Literal["low", "medium", "high"] = typer.Option("low", help=help_text("help.common.trust")),
    vendor: str = typer.Option(None),
    provider: str = typer.Option(None),
    domestic_only: bool = flag(False, "--domestic-only"),
    framework: FrameworkId | None = typer.Option(None, help=help_text("help.plan_train.framework")),
    kernels: Kernels | None = typer.Option(None, help=help_text("help.plan_train.kernels")),
    data_loading: DataLoading = typer.Option("pretokenized", help=help_text("help.common.data_loading")),
    recipe: str = typer.Option("", help=help_text("help.common.recipe")),
    top: int = typer.Option(10, help=help_text("help.plan_train.top")),
    all_plans: bool = flag(False, "--all", help=help_text("help.plan_train.all")),
    catalog_dir: list[Path] = typer.Option(None, "--catalog"),
    json_out: bool = flag(False, "--json"),
    lang: str = typer.Option(None, "--lang", help=help_text("help.common.lang")),
    report: Path = typer.Option(None, "--report", help=help_text("help.common.report")),
    data_residency: str = typer.Option(None, help=help_text("help.common.data_residency")),
    compliance: list[str] = typer.Option(None, help=help_text("help.common.compliance")),
    server_price: float = typer.Option(None, help=help_text("help.plan_train.server_price")),
    threshold: list[str] = typer.Option(None, help=help_text("help.common.threshold")),
    tco_input: list[str] = typer.Option(None, "--tco", help=help_text("help.plan_train.tco_input")),
    emit: str = typer.Option(None, "--emit", help=help_text("help.common.emit", formats=", ".join(TRAIN_FORMATS))),
    emit_out: Path = typer.Option(Path("gpuplan-emit"), "--out", help=help_text("help.common.emit_out")),
    pick: int = typer.Option(None, "--pick", min=1, help=help_text("help.common.emit_pick")),
) -> None:
    """Rank hardware x cluster size x layout for a training job; show the Pareto front, findings and rejections."""
    try:
        language = resolve_lang(lang)
        formats = check_formats(emit, "train")
        positives(language, ("tokens", tokens, False), ("seq-len", seq_len, True),
                  ("global-batch", global_batch, True), ("top", top, True), ("server-price", server_price, False))
        spec = load_model(model)
        cat = _catalog(catalog_dir)
        warn(seq_len_warning(spec, seq_len, language))
        job = training_job(method, seq_len, global_batch, precision, kernels=kernels or "auto",
                           data_loading=data_loading,
                           framework=framework, recipe=recipe)
        cal = load_user_calibration().with_overrides(parse_pairs(term, "term"))
        cons = plan_constraints(cat, float(count_params(spec).total), cal, method=method, framework=framework,
                                deadline=deadline, budget=budget, max_devices=max_devices, market=market,
                                vendor=vendor, provider=provider, domestic_only=domestic_only, network=network,
                                nics_per_node=nics_per_node, gpus_per_node=gpus_per_node, trust=trust,
                                lang=language, capacity=parse_pairs(capacity, "capacity"))
        res = plan_training(spec, job, cat, cons, tokens=tokens, calibration=cal)
        if not res.plans:
            raise InputError(field="constraints", value=res.rejected, allowed="at least one feasible plan",
                             hint=(f"Nearest: {res.nearest}. " if res.nearest else "")
                             + "Relax --deadline/--budget, raise --max-devices, or allow more hardware")
        doc = training_report(spec, job, cat, cons, tokens=tokens, result=res, calibration=cal,
                              requirements=requirements(data_residency, compliance),
                              thresholds=load_thresholds(parse_pairs(threshold, "threshold")),
                              tco_overrides={**parse_pairs(tco_input, "tco"),
                                             **({"server_price_usd": server_price} if server_price else {})})
        if report is not None:
            (save_report_quiet if json_out else save_report)(doc, report, language)
        if formats:
            write_train(formats, emit_out, model_id=model, spec=spec, job=job, tokens=tokens, lang=language,
                        plan=pick_plan(res.plans, pick, doc["recommendation"], ("accelerator", "devices", "offer")),
                        stated={k for k, v in {"global_batch": global_batch}.items() if v is not None}
                        | {"seq_len", "precision"}, catalog=cat)
    except (GpuplanError, ValidationError) as exc:
        fail(exc, lang)
    best_per_hw: dict[str, dict[str, Any]] = {}
    for p in res.plans:
        best_per_hw.setdefault(p["accelerator"], p)
    if json_out:
        print_json({"candidates_evaluated": res.candidates_evaluated,
                    "plans": compact_plans(res.plans, top, all_plans),
                    "pareto": [{"accelerator": p["accelerator"], "devices": p["devices"],
                                "time_to_train_s": p["time_to_train_s"], "cost_usd": p["cost_usd"]}
                               for p in res.pareto],
                    "best_per_hardware": {k: {"devices": v["devices"], "cost_usd": v["cost_usd"],
                                              "time_to_train_s": v["time_to_train_s"],
                                              "device_hours": v["device_hours"],
                                              "offer": v["hardware_option"]["offer"]} for k, v in best_per_hw.items()},
                    "layout_family": {"family": cons.layout_family, "why": cons.layout_reason},
                    "rejected": res.rejected, "hardware_considered": res.hardware_considered,
                    "recommended": doc["recommendation"], "not_recommended": doc["not_recommended"],
                    "findings": doc["findings"], "tco": doc["tco"], "buy_option": doc.get("buy_option")})
        return
    _print_plans(spec.name, tokens, res, doc, cons, top, language, recipe)


def _print_plans(model: str, tokens: float, res: Any, doc: dict[str, Any], cons: PlanConstraints, top: int,
                 language: str, recipe: str = "") -> None:
    t = Table(title=tr("cli.plan.title_ranked", language, model=model, tokens=tokens),
              caption=tr("cli.plan.caption", language, candidates=res.candidates_evaluated, rejected=res.rejected)
              + "; " + tr("cli.plan.best_per_hw", language))
    for col in ("accelerator", "devices", "layout", "time", "cost", "mfu", "confidence", "bottleneck"):
        t.add_column(tr(f"report.col.{col}", language), overflow="fold",
                     min_width=10 if col == "accelerator" else None)
    blocked = doc.get("not_recommended") or {}
    rec = doc["recommendation"]

    def is_rec(p: dict[str, Any]) -> bool:
        return rec is not None and (p["accelerator"], p["devices"], (p.get("hardware_option") or {}).get("offer")) == (
            rec["accelerator"], rec["devices"], rec.get("offer"))

    rows = ranked_rows(res.plans, top)
    picked = [p for p in res.plans if is_rec(p)][:1]
    for p in picked + [p for p in rows if not is_rec(p)]:
        lay = p["layout"]
        where = offer_text(p, language)
        if is_rec(p):
            where += "; " + tr("cli.plan.recommended_mark", language)
        if (hit := blocked_finding(p, blocked)) is not None:
            where += "; " + not_recommended(hit, language)
        t.add_row(f"{p['accelerator']}\n({where})", str(p["devices"]),
                  layout_text(lay),
                  band_duration(p["time_to_train_s"], (p.get("band") or {}).get("time_to_train_s"), language),
                  cost_text(p, language, tr("cli.plan.no_price", language)),
                  f"{p['mfu']:.0%}", confidence_text(p.get("confidence"), language),
                  bottleneck_text(p["breakdown_s"], language))
    console.print(t)
    scenarios = sorted(k for k, v in blocked.items() if v == SCENARIO_MARK)
    if scenarios:  # offers priced at distressed rents only: planned and listed, never recommended
        console.print(tr("cli.plan.scenario_note", language, offers=", ".join(scenarios)), highlight=False)
    if res.pareto:  # priced plans only: nothing to draw when no plan has a price
        pt = Table(title=tr("cli.plan.pareto", language))
        for col in ("accelerator", "devices", "time", "cost"):
            pt.add_column(tr(f"report.col.{col}", language))
        for p in res.pareto:
            pt.add_row(f"{p['accelerator']} ({offer_text(p, language)})", str(p["devices"]),
                       duration_text(p["time_to_train_s"], language), cost_text(p, language, with_band=False))
        console.print(pt)
    console.print(tr("cli.plan.layouts", language, why=cons.layout_reason), highlight=False)
    named = {p["accelerator"]: p["layout_family"]["framework"] for p in res.plans
             if (p.get("layout_family") or {}).get("framework")}
    if named:  # the framework of the parts' stack (MindSpeed-LLM on Ascend), workload/data/frameworks.yaml
        fw = next(iter(named.values()))
        console.print(tr("cli.plan.stack_framework", language, parts=", ".join(sorted(named)), name=fw["name"],
                         id=fw["id"], source=fw["source"]), highlight=False)
    if recipe.strip():
        console.print(tr("cli.plan.recipe", language, facts=recipe.strip()), highlight=False)
    if rec is not None:
        console.print(tr("cli.plan.recommended_on", language, devices=rec["devices"], acc=rec["accelerator"],
                         offer=offer_text(rec, language), time=duration_text(rec["time_s"], language),
                         cost=cost_text(rec, language, with_band=False)),
                      highlight=False)
        buy = doc.get("buy_option")
        if buy is not None:  # owning instead of renting (advise/buy_option.py)
            console.print(tr("cli.plan.buy_option", language, devices=buy["devices"], acc=buy["accelerator"],
                             servers=buy["servers"], server=buy["server"], each=buy["price_per_server"],
                             total=buy["purchase_amount"], currency=buy["currency"], usd=buy["purchase_usd"],
                             days=buy["days"], source=buy["source"],
                             confidence=tr(f"price.confidence.{buy['confidence']}", language)),
                          highlight=False)
        opt = rec.get("hardware_option") or {}
        if opt:
            console.print(tr("cli.plan.option_basis", language, network=opt["network_basis"],
                             capacity=opt["capacity_basis"], price=opt["price_basis"]), highlight=False)
        console.print(rule_line(rec, language), highlight=False)
        for line in trust_lines(rec, language):
            console.print(line, highlight=False)
    else:
        console.print(rule_line({"rule": doc["rule"]}, language), highlight=False)
    print_findings(doc["findings"], language)
