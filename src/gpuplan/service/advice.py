"""Advisor inputs both doors share: the team's requirements (data residency, compliance levels, checked against
the advisor's data) and the serving comparison of 2-4 parts (`gpuplan compare --qps`, POST /api/v1/compare)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuplan.advise.facts import Requirements
from gpuplan.advise.findings import Thresholds
from gpuplan.advise.report_infer import compare_inference
from gpuplan.errors import InputError
from gpuplan.hardware import Catalog
from gpuplan.workload.model_spec import ModelSpec

__all__ = ["compare_infer", "requirements"]


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


def compare_infer(spec: ModelSpec, cat: Catalog, names: list[str], *, qps: float, ttft_p99: float | None,
                   tpot_p99: float | None, input_len: int, output_len: int, engine_id: str | None,
                   market: str | None,
                   trust: str = "low",
                   provider: str | None, max_devices: int, req: Requirements, th: Thresholds) -> dict[str, Any]:
    from gpuplan.search.infer_load import InferLoad, InferSlo
    from gpuplan.search.infer_search import InferConstraints, plan_inference
    from gpuplan.simulate.lengths import parse_length_dist
    from gpuplan.workload.engines import default_engine, engine

    if ttft_p99 is None or tpot_p99 is None:
        raise InputError(field="ttft-p99/tpot-p99", value=f"{ttft_p99}/{tpot_p99}",
                         allowed="both SLO limits in seconds with --qps")
    load = InferLoad(qps=qps, input_len=parse_length_dist(input_len, field="input-len"),
                     output_len=parse_length_dist(output_len, field="output-len"))
    slo = InferSlo(ttft_p99_s=ttft_p99, tpot_p99_s=tpot_p99)
    # each part with the named engine, else with its stack's (engines.yaml stack_default_engines), as plan infer
    chosen = {a: (engine_id, None) if engine_id is not None else default_engine(cat.accelerator(a)) for a in names}
    profs = {a: engine(eid) for a, (eid, _) in chosen.items()}

    def run_for(acc: str) -> dict[str, Any]:
        prof = profs[acc]
        cons = InferConstraints(market=market, provider=provider, max_devices=max_devices, accelerators=(acc,),
                                trust=trust)
        try:
            res = plan_inference(spec, load, slo, cat, cons, engine_profile=prof, alternatives=False,
                                 suggest_engines=True)  # a part no fleet fits may fit another engine: say so
        except InputError as exc:
            return {"error": str(exc)}
        out = {"model": spec.name, "load": load.to_json(), "slo": {"ttft_p99_s": ttft_p99, "tpot_p99_s": tpot_p99},
               "engine": prof.id, "plans": res.plans, "rejected": res.rejected, "terms": res.terms}
        if engine_id is None:
            out["engine_default"] = {"engine": prof.id, "stack": cat.accelerator(acc).software_stack,
                                     "source": chosen[acc][1]}
        return out

    lj = load.to_json()
    job = {"model": spec.name, "engine": ", ".join(sorted({p.id for p in profs.values()})), "qps": qps,
           "input_len": lj.get("input_len"), "output_len": lj.get("output_len"), "input_len_mean": lj["input_len_mean"],
           "output_len_mean": lj["output_len_mean"], "ttft_p99_s": ttft_p99, "tpot_p99_s": tpot_p99}
    return compare_inference(run_for, names, cat, job, thresholds=th, requirements=req)
