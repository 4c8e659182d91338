"""Answer a request with the JSON the CLI's `--json` prints for the same options.

Each function follows its CLI command step by step (same checks, same library calls, same output keys);
tests/service/test_contract.py holds them to the CLI's output. Errors are the library's `InputError`
(field, value, allowed, hint), raised before any work is done where the CLI checks early.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from functools import cache
from typing import Any

from gpuplan.errors import InputError
from gpuplan.service.infer_inputs import serving_engines
from gpuplan.service.requests import CompareRequest, InferPlanRequest, MemoryTrainRequest, TrainPlanRequest
from gpuplan.service.user_catalog import catalog_for
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["catalog_version", "check_plan_infer", "check_plan_train", "traffic_of",
           "plan_infer_report", "plan_train_report", "run_compare", "run_memory_train",
           "run_plan_infer", "run_plan_train"]


def _spec(name: str) -> ModelSpec:
    """A preset by id or alias; never a file path (a request comes from a client)."""
    from gpuplan.workload.presets import get_preset

    return get_preset(name).spec


def catalog_version() -> str:
    """A short digest of the catalog files the server plans with (built-in and the user's folder)."""
    from gpuplan.hardware import builtin_data_dir, user_catalog_dir

    h = hashlib.sha256()
    for root in (builtin_data_dir(), user_catalog_dir()):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.y*ml")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


@cache
def _lang() -> str:
    return "en"  # stored results are language-neutral where the library allows; pages translate around them


def check_plan_train(req: TrainPlanRequest) -> ModelSpec:
    """The checks `plan train` makes before it searches (numbers, the model name, the user's records, the recipe,
    network and policy names): cheap, so a server answers a bad request at once instead of in a search or a
    failed job; the model's spec."""
    return _checked_train(req)[0]


def _checked_train(req: TrainPlanRequest) -> tuple[ModelSpec, Any, Any, Any, Any]:
    """The spec, catalog, job, calibration and constraints of a training request, each checked once (no search;
    the request's own catalog records are built into a catalog once)."""
    from gpuplan.service.checks import positives
    from gpuplan.service.train_options import plan_constraints, training_job
    from gpuplan.service.uploads import calibration_for, spec_from_config
    from gpuplan.workload.params import count_params

    positives(_lang(), ("tokens", req.tokens, False), ("seq-len", req.seq_len, True),
              ("global-batch", req.global_batch, True), ("top", req.top, True))
    # an uploaded config.json is read as `-m config.json` reads the file
    spec = spec_from_config(req.hf_config, req.model) if req.hf_config is not None else _spec(req.model)
    cat = catalog_for(req.user_catalog)
    job = training_job(req.method, req.seq_len, req.global_batch, req.precision, kernels=req.kernels or "auto",
                       data_loading=req.data_loading, framework=req.framework, recipe=req.recipe)
    cal = calibration_for(req.calibration)
    cons = plan_constraints(cat, float(count_params(spec).total), cal, method=req.method, framework=req.framework,
                            deadline=req.deadline, budget=req.budget, max_devices=req.max_devices,
                            market=req.market, vendor=req.vendor, provider=req.provider,
                            domestic_only=req.domestic_only, network=req.network, nics_per_node=req.nics_per_node,
                            gpus_per_node=req.gpus_per_node, trust=req.trust, lang=_lang(),
                            capacity=req.capacity)
    return spec, cat, job, cal, cons


def check_plan_infer(req: InferPlanRequest) -> tuple[ModelSpec, Any, Any]:
    """The checks `plan infer` makes before it searches (numbers, lengths, the model and engine names, the user's
    records, the vendor and provider filters); the model's spec, the load and the engines
    (service.infer_inputs.ServingEngines)."""
    return _checked_infer(req)[:3]


def traffic_of(req: InferPlanRequest) -> Any:
    """The request's traffic curve (search/infer_traffic.TrafficCurve), checked row by row; None without one."""
    from gpuplan.search.infer_traffic import traffic_from_rows

    if req.traffic is None:
        return None
    if req.qps is not None:
        raise InputError(field="qps", value=req.qps, allowed="left out with traffic (the curve sets the rates)",
                         hint="drop qps, or drop traffic to plan for one rate")
    return traffic_from_rows([r.model_dump(exclude_none=True) for r in req.traffic], label="traffic")


def _checked_infer(req: InferPlanRequest) -> tuple[ModelSpec, Any, Any, Any]:
    """check_plan_infer's answers and the catalog the request plans on (its own records built in once)."""
    from gpuplan.hardware.query import check_policy_names
    from gpuplan.service.checks import positives
    from gpuplan.service.infer_inputs import infer_load

    curve = traffic_of(req)
    qps = curve.peak_qps if curve is not None else req.qps
    positives(_lang(), ("qps", req.qps, False), ("input-len", req.input_len, True),
              ("output-len", req.output_len, True), ("ttft-p99", req.ttft_p99, False),
              ("tpot-p99", req.tpot_p99, False), ("max-devices", req.max_devices, True), ("top", req.top, True))
    # a client's lengths never name a server path (files=False: `hist:` fails before anything is opened)
    load = infer_load(qps, None, req.input_len, req.output_len, req.input_dist, req.output_dist, files=False)
    if req.prefix_hit or req.shared_prefix or req.prefix_set:
        load = replace(load, prefix_hit=req.prefix_hit, shared_prefix_tokens=req.shared_prefix,
                       prefix_set_tokens=req.prefix_set)
    spec = _spec(req.model)
    cat = catalog_for(req.user_catalog)
    check_policy_names(cat, vendor=req.vendor, provider=req.provider)
    return spec, load, serving_engines(cat, _infer_constraints(req), req.engine), cat


def _infer_constraints(req: InferPlanRequest) -> Any:
    from gpuplan.search.infer_search import WEIGHTS, InferConstraints

    return InferConstraints(market=req.market, vendor=req.vendor, provider=req.provider,
                            domestic_only=req.domestic_only, max_devices=req.max_devices,
                            weights=tuple(req.weights) if req.weights else WEIGHTS, kv_dtype=req.kv_dtype,
                            trust=req.trust, router=req.router, kv_offload=req.kv_offload,
                            context_parallel=req.context_parallel)


def run_plan_train(req: TrainPlanRequest) -> dict[str, Any]:
    """`gpuplan plan train ... --json`."""
    return plan_train_report(req)[0]


def plan_train_report(req: TrainPlanRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """`gpuplan plan train ... --json` and the report document `--report` renders (advise.report_train)."""
    from gpuplan.advise.findings import load_thresholds
    from gpuplan.advise.report_train import training_report
    from gpuplan.render.plan_json import compact_plans
    from gpuplan.search.train_search import plan_training
    from gpuplan.service.advice import requirements

    spec, cat, job, cal, cons = _checked_train(req)
    res = plan_training(spec, job, cat, cons, tokens=req.tokens, calibration=cal)
    if not res.plans:
        raise InputError(field="constraints", value=res.rejected, allowed="at least one feasible plan",
                         hint=(f"Nearest: {res.nearest}. " if res.nearest else "")
                         + "Relax --deadline/--budget, raise --max-devices, or allow more hardware")
    doc = training_report(spec, job, cat, cons, tokens=req.tokens, result=res, calibration=cal,
                          requirements=requirements(None, None), thresholds=load_thresholds({}), tco_overrides={})
    best_per_hw: dict[str, dict[str, Any]] = {}
    for p in res.plans:
        best_per_hw.setdefault(p["accelerator"], p)
    return {"candidates_evaluated": res.candidates_evaluated,
            "plans": compact_plans(res.plans, req.top, False),
            "pareto": [{"accelerator": p["accelerator"], "devices": p["devices"],
                        "time_to_train_s": p["time_to_train_s"], "cost_usd": p["cost_usd"]} for p in res.pareto],
            "best_per_hardware": {k: {"devices": v["devices"], "cost_usd": v["cost_usd"],
                                      "time_to_train_s": v["time_to_train_s"], "device_hours": v["device_hours"],
                                      "offer": v["hardware_option"]["offer"]} for k, v in best_per_hw.items()},
            "layout_family": {"family": cons.layout_family, "why": cons.layout_reason},
            "rejected": res.rejected, "hardware_considered": res.hardware_considered,
            "recommended": doc["recommendation"], "not_recommended": doc["not_recommended"],
            "findings": doc["findings"], "tco": doc["tco"], "buy_option": doc.get("buy_option")}, doc


def run_plan_infer(req: InferPlanRequest) -> dict[str, Any]:
    """`gpuplan plan infer ... --json` (rate and lengths; no trace)."""
    return _plan_infer(req, report=False)[0]


def plan_infer_report(req: InferPlanRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """`gpuplan plan infer ... --json` and the report document `--report` renders (advise.report_infer: findings,
    memory, TCO and the growth re-plan, one more planner run)."""
    run, doc = _plan_infer(req, report=True)
    assert doc is not None
    return {**run, "findings": doc["findings"]}, doc  # as a training plan's result: its page lists them


def _plan_infer(req: InferPlanRequest, report: bool) -> tuple[dict[str, Any], dict[str, Any] | None]:
    from gpuplan.advise.findings import load_thresholds
    from gpuplan.advise.infer_split import named_split
    from gpuplan.advise.report_infer import choose_fleet, inference_report, named_engine, named_pd, named_setting
    from gpuplan.advise.trust import eligible_fleets, serving_recommendation
    from gpuplan.search.infer_load import InferSlo, planner_terms
    from gpuplan.search.infer_pd_choice import disaggregated_recommendation
    from gpuplan.search.infer_search import plan_inference, plan_record
    from gpuplan.service.advice import requirements

    spec, load, engines, cat = _checked_infer(req)
    slo = InferSlo(ttft_p99_s=req.ttft_p99, tpot_p99_s=req.tpot_p99)
    cons = _infer_constraints(req)
    cal = planner_terms({})
    prof = engines.profile
    res = plan_inference(spec, load, slo, cat, cons, engine_profile=prof, terms=cal, stack_engines=engines.by_stack)
    run = plan_record(spec, load, slo, res, prof, req.kv_dtype, slo_names=("ttft_p99", "tpot_p99"))
    if engines.default is not None:  # as the CLI without --engine: the stacks' engines, named
        run["engine_default"] = engines.default
    # as the CLI: a part whose fleet draws a blocking finding (export, residency, compliance) is not recommended
    th, needs = load_thresholds({}), requirements(None, None)
    run["what_if_pd"] = named_pd(run, cat, th, needs)  # the disaggregated fleet the advisor would name
    run["what_if_engine"] = named_engine(run, cat, th, needs, load=load, constraints=cons)
    run["what_if_setting"] = named_setting(run, cat, th, needs, load=load, constraints=cons)  # as the CLI
    _, blocked = choose_fleet(run, res.plans, cat, th, needs, req.market)
    run.update(recommended=serving_recommendation(res.plans, cat, req.market, skip=tuple(blocked)),
               not_recommended=blocked)
    run["recommended_disaggregated"] = disaggregated_recommendation(  # as the CLI
        run, eligible_fleets(res.plans, cat, req.market, blocked))
    run["length_split"] = named_split(run, spec=spec, load=load, slo=slo, catalog=cat, constraints=cons,  # as the CLI
                                      engine_profile=prof, terms=cal, stack_engines=engines.by_stack, th=th,
                                      requirements=needs, blocked=blocked)
    curve = traffic_of(req)
    if curve is not None:  # as the CLI's --traffic: the recommended fleet's schedule and purchase mix
        from gpuplan.advise.report_traffic import traffic_answer

        run.update(traffic_answer(run, curve, catalog=cat, spec=spec, load=load, terms=cal, provider=req.provider,
                                  market=req.market, fleets=req.top))
    # as the CLI's --report: default requirements and thresholds, the planned load and constraints
    doc = inference_report(run, cat, thresholds=th, requirements=needs, infer_load=load,
                           max_devices=req.max_devices, constraints=cons) if report else None
    if doc is not None:
        doc["length_split"] = run["length_split"]
    if doc is not None and curve is not None:  # the HTML report's schedule chart and purchase mix
        doc["traffic"] = {k: run[k] for k in ("traffic", "schedule", "purchase_mix")}
    return run, doc


def run_memory_train(req: MemoryTrainRequest) -> dict[str, Any]:
    """`gpuplan memory train ... --json`."""
    from gpuplan.estimate.memory_fit import memory_fit, nearest_train_fix
    from gpuplan.estimate.memory_train import estimate_training_memory
    from gpuplan.service.checks import positives
    from gpuplan.service.memory_inputs import device_memory, fit_json
    from gpuplan.validate.memory_cases import recipe_job_fields
    from gpuplan.workload.jobs import Layout, TrainingJob

    language = _lang()
    positives(language, ("seq-len", req.seq_len, True), ("micro-batch", req.micro_batch, True),
              ("global-batch", req.global_batch, True), ("tp", req.tp, True), ("pp", req.pp, True),
              ("dp", req.dp, True), ("cp", req.cp, True), ("ep", req.ep, True), ("vpp", req.vpp, True),
              ("lora-rank", req.lora_rank, True), ("device-memory-gib", req.device_memory_gib, False))
    spec = _spec(req.model)
    method = "full" if req.method in ("pretrain", "full_ft") else req.method
    recipe = recipe_job_fields(req.recipe, method=method) if req.recipe.strip() else {}
    job = TrainingJob.model_validate({
        "method": method, "seq_len": req.seq_len, "micro_batch": req.micro_batch, "global_batch": req.global_batch,
        "precision": req.precision, "optimizer": req.optimizer, "recompute": req.recompute,
        "attention": req.attention, "lora_rank": req.lora_rank, "framework": req.framework, **recipe})
    layout = Layout(tp=req.tp, pp=req.pp, dp=req.dp, cp=req.cp, ep=req.ep, vpp=req.vpp, zero_stage=req.zero,
                    seq_parallel=job.sequence_parallel_on() if req.seq_parallel is None else req.seq_parallel)
    mem = estimate_training_memory(spec, job, layout)
    device, _ = device_memory(req.accelerator, req.device_memory_gib, language)
    fit = memory_fit(mem.total_bytes, device) if device is not None else None
    fix = nearest_train_fix(spec, job, layout, fit.device_bytes) if fit is not None and not fit.fits else None
    out: dict[str, Any] = mem.to_json()
    if fit is not None:
        out.update(fit_json(fit, fix))
    return out


def run_compare(req: CompareRequest) -> dict[str, Any]:
    """`gpuplan compare ... --json`: one best plan per accelerator, each with its band and confidence."""
    from gpuplan.advise.findings import load_thresholds
    from gpuplan.advise.report_train import compare_training
    from gpuplan.bench.calibrate import load_user_calibration
    from gpuplan.hardware import load_catalog
    from gpuplan.hardware.query import check_policy_names
    from gpuplan.service.advice import compare_infer, requirements
    from gpuplan.service.checks import positives
    from gpuplan.service.train_options import plan_constraints, training_job
    from gpuplan.workload.params import count_params

    language = _lang()
    positives(language, ("tokens", req.tokens, False), ("qps", req.qps, False), ("ttft-p99", req.ttft_p99, False),
              ("tpot-p99", req.tpot_p99, False), ("input-len", req.input_len, True),
              ("output-len", req.output_len, True), ("seq-len", req.seq_len, True),
              ("global-batch", req.global_batch, True))
    names = [a.strip() for a in req.accelerators if a.strip()]
    spec = _spec(req.model)
    cat = load_catalog()
    names = [cat.accelerator(name).id for name in names]
    check_policy_names(cat, provider=req.provider)
    if len(set(names)) != len(names):
        raise InputError(field="accelerators", value=",".join(req.accelerators), allowed="2-4 different accelerators")
    if req.qps is not None:
        if req.tokens is not None:
            raise InputError(field="tokens", value=req.tokens, allowed="left out with --qps (the inference form)")
        return compare_infer(spec, cat, names, qps=req.qps, ttft_p99=req.ttft_p99, tpot_p99=req.tpot_p99,
                              input_len=req.input_len, output_len=req.output_len, engine_id=req.engine,
                              market=req.market, provider=req.provider, max_devices=req.max_devices, trust=req.trust,
                              req=requirements(None, None), th=load_thresholds({}))
    if req.tokens is None:
        raise InputError(field="tokens", value=req.tokens, allowed="a positive number (or --qps for inference)")
    job = training_job(req.method, req.seq_len, req.global_batch, req.precision,
                       framework=req.framework, recipe=req.recipe)
    cal = load_user_calibration()
    cons = plan_constraints(cat, float(count_params(spec).total), cal, method=req.method, framework=req.framework,
                            deadline=req.deadline, budget=req.budget, max_devices=req.max_devices,
                            market=req.market, provider=req.provider, network=req.network,
                            nics_per_node=req.nics_per_node, gpus_per_node=req.gpus_per_node, trust=req.trust,
                            lang=language)
    return compare_training(spec, job, cat, names, cons, tokens=req.tokens, calibration=cal,
                            requirements=requirements(None, None), thresholds=load_thresholds({}))
