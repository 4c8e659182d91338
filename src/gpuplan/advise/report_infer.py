"""The report document of an inference plan (`gpuplan plan infer --json`) and the inference comparison.

The inference planner ranks verified fleets cheapest first; the recommendation is its first plan,
the runners-up are the first plan of each other accelerator. Findings come from the inference
adapter (adapt_infer). TCO treats serving as running all year: device-hours = devices x 8760.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpuplan import __version__
from gpuplan.advise.adapt_infer import inference_facts
from gpuplan.advise.engine import advise
from gpuplan.advise.facts import PlanFacts, Requirements
from gpuplan.advise.findings import Thresholds, advise_data, default_thresholds
from gpuplan.advise.report_train import REPORT_SCHEMA
from gpuplan.advise.rules_market import node_power_kw
from gpuplan.advise.tco import HOURS_PER_YEAR, tco, tco_inputs
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import Catalog

__all__ = ["compare_inference", "infer_summary", "inference_report", "is_infer_run", "risk_of"]


def is_infer_run(obj: Mapping[str, Any]) -> bool:
    """Is this the JSON of `gpuplan plan infer --json`?"""
    return {"plans", "load", "slo", "model"} <= set(obj) and "schema" not in obj


def infer_summary(p: Mapping[str, Any]) -> dict[str, Any]:
    lay = p["layout"]
    layout = f"tp{lay['tp']} pp{lay['pp']} ep{lay['ep']}"
    return {"accelerator": p["accelerator"], "devices": p["devices"], "replicas": p["replicas"], "layout": layout,
            "weights": p["weights"], "instance": p["instance"], "instances": p["instances"],
            "usd_per_hour": p["cost_usd_per_hour"], "usd_per_million_tokens": p["cost_usd_per_million_tokens"],
            "ttft_p99_s": p["ttft_s"]["p99"], "tpot_p99_s": p["tpot_s"]["p99"], "utilization": p["utilization"],
            "tenancy": p["advice"]["tenancy"], "provenance": "estimated"}


def _tco(facts: PlanFacts, catalog: Catalog, th: Thresholds) -> dict[str, Any]:
    cal = default_calibration()
    kw, _ = node_power_kw(facts, th)
    billed = int(facts.serving.get("billed_devices", facts.devices))
    res = tco(catalog=catalog, accelerator=facts.accelerator.id, devices=billed,
              gpus_per_node=facts.gpus_per_node, device_hours=billed * HOURS_PER_YEAR,
              time_s=HOURS_PER_YEAR * 3600.0, prices=facts.price_usd_per_device_hour, checkpoint_write_s=0.0,
              mtbf_s=float("inf"), restart_s=cal.value("restart_overhead_s"), server=facts.server, node_power_kw=kw,
              inp=tco_inputs(facts.market, pue=cal.value("pue")), market=facts.market)
    return res.to_json()


def _sources(facts: PlanFacts, catalog: Catalog, instances: Sequence[str]) -> list[dict[str, str]]:
    acc = facts.accelerator
    out = [{"what": f"accelerator {acc.id}", "source": acc.source, "as_of": str(acc.as_of), "kind": "datasheet"}]
    if facts.server is not None:
        out.append({"what": f"server {facts.server.id}", "source": facts.server.source,
                    "as_of": str(facts.server.as_of), "kind": "datasheet"})
    for inst_id in dict.fromkeys(instances):
        inst = catalog.instances[inst_id]
        out.append({"what": f"price {inst_id}", "source": inst.source, "as_of": str(inst.as_of), "kind": "datasheet"})
    out.append({"what": "per-step cost model and discrete-event simulation", "source": "gpuplan plan infer",
                "as_of": "", "kind": "estimated"})
    out.append({"what": "advisor thresholds, ecosystem, compliance, TCO inputs",
                "source": "src/gpuplan/advise/data/*.yaml (each entry has its own source)", "as_of": "",
                "kind": "data"})
    return out


def inference_report(run: Mapping[str, Any], catalog: Catalog, *, thresholds: Thresholds | None = None,
                     requirements: Requirements | None = None, runners_up: int = 4) -> dict[str, Any]:
    """The report document (kind "infer") of a `plan infer --json` result."""
    th = thresholds or default_thresholds()
    plans = list(run["plans"])
    load, slo = run["load"], run["slo"]
    job = {"model": run["model"], "qps": load["qps"], "input_len": load.get("input_len"),
           "output_len": load.get("output_len"), "input_len_mean": load["input_len_mean"],
           "output_len_mean": load["output_len_mean"], "ttft_p99_s": slo["ttft_p99_s"],
           "tpot_p99_s": slo["tpot_p99_s"], "engine": run.get("engine")}
    doc: dict[str, Any] = {"schema": REPORT_SCHEMA, "kind": "infer", "generated": dt.date.today().isoformat(),
                           "gpuplan_version": __version__, "job": job,
                           "candidates_evaluated": run.get("candidates_evaluated", 0),
                           "simulated": run.get("simulated", 0), "rejected": run.get("rejected", {})}
    if not plans:
        doc.update(recommendation=None, runners_up=[], plans=[], findings=[])
        return doc
    best = plans[0]
    seen = {best["accelerator"]}
    runners = []
    for p in plans[1:]:
        if p["accelerator"] not in seen:
            seen.add(p["accelerator"])
            runners.append(p)
    facts = inference_facts(run, best, catalog=catalog, requirements=requirements)
    findings = advise(facts, th)
    doc.update(
        recommendation={**infer_summary(best), "advice": best["advice"]},
        runners_up=[infer_summary(p) for p in runners[:runners_up]],
        plans=[infer_summary(p) for p in plans],
        latency={k: best[k] for k in ("ttft_s", "tpot_s", "e2e_s")},
        at_headroom=best.get("at_headroom", {}),
        findings=[f.to_json() for f in findings],
        tco=_tco(facts, catalog, th),
        assumptions={"engine": run.get("engine"), "memory_fraction": facts.serving.get("memory_fraction"),
                     "server": facts.server.id if facts.server else None, "load": load, "slo": slo},
        calibration=[{"name": k, "value": v["value"], "unit": v.get("unit", ""), "source": v["source"],
                      "provenance": "data"} for k, v in run.get("terms", {}).items()],
        thresholds=th.used(*sorted({t for f in findings for t in f.thresholds})),
        sources=_sources(facts, catalog, [p["instance"] for p in [best, *runners]]),
    )
    return doc


def risk_of(catalog: Catalog, accelerator: str) -> str:
    stacks = advise_data("ecosystem")["stacks"]
    risk: str = stacks.get(catalog.accelerator(accelerator).software_stack, stacks["other"])["risk"]
    return risk


def compare_inference(run_for: Callable[[str], Mapping[str, Any]], accelerators: Sequence[str], catalog: Catalog,
                      job: Mapping[str, Any], *, thresholds: Thresholds | None = None,
                      requirements: Requirements | None = None) -> dict[str, Any]:
    """One cheapest verified fleet per accelerator. `run_for(acc)` returns the `plan infer --json` object of the
    inference planner restricted to that accelerator, or {"error": text} when it has no plan."""
    th = thresholds or default_thresholds()
    options: list[dict[str, Any]] = []
    for acc in accelerators:
        run = run_for(acc)
        risk = risk_of(catalog, acc)
        if "error" in run or not run.get("plans"):
            options.append({"accelerator": acc, "plan": None, "rejected": run.get("error", run.get("rejected")),
                            "ecosystem_risk": risk, "findings": []})
            continue
        best = run["plans"][0]
        facts = inference_facts(run, best, catalog=catalog, requirements=requirements)
        options.append({"accelerator": acc, "plan": infer_summary(best), "rejected": run.get("rejected", {}),
                        "memory_headroom": None, "ecosystem_risk": risk,
                        "findings": [f.to_json() for f in advise(facts, th)]})
    return {"schema": REPORT_SCHEMA, "kind": "compare_infer", "generated": dt.date.today().isoformat(),
            "gpuplan_version": __version__, "job": dict(job), "options": options}
