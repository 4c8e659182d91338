"""Print the router's effect on serving plans: the same questions sized behind a random and a least-load router.

For each question, `plan infer`'s search runs once per router (the recommended fleet: part, replicas, layout,
weights, USD/hour, utilization, simulated p99 TTFT at the requested load); then the fleet least-load recommends
is simulated behind each router at the requested load, so the same hardware shows what routing alone changes.
Figures are estimates (per-step cost model + discrete-event simulation), prices from the shipped catalog.

Usage: python benchmarks/router_effect.py [--markdown]   (about a minute of CPU on the development machine)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_load import InferLoad, InferSlo, planner_terms
from gpuplan.search.infer_route import simulate_engines
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.simulate.metrics import Slo
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import load_model


@dataclass(frozen=True)
class Question:
    name: str
    model: str
    qps: float
    input_dist: str
    output_dist: str
    ttft_s: float
    tpot_s: float
    market: str | None = None
    accelerators: tuple[str, ...] = ()


QUESTIONS = (
    Question("README: Llama-3.1-70B, 20 req/s, 512-2048 in, 128-512 out", "llama3.1-70b", 20.0,
             "uniform:512-2048", "uniform:128-512", 2.0, 0.05),
    Question("long context: Qwen3-32B, 2 req/s, 32-64k in, 256 out (global)", "qwen3-32b", 2.0,
             "uniform:32768-65536", "fixed:256", 20.0, 0.1, market="global"),
    Question("128k prompts on H100: Qwen3-32B, 2 req/s, 131072 in, 256 out", "qwen3-32b", 2.0, "fixed:131072",
             "fixed:256", 20.0, 0.1, market="global", accelerators=("h100-sxm5-80gb",)),
)
ROUTERS = ("random", "least-load")


def main() -> None:
    argparse.ArgumentParser(description=__doc__).parse_args()
    cat = load_catalog(())
    prof = engine("vllm")
    cfg = EngineConfig.from_profile(prof)
    cal = planner_terms()
    print("| question | router | recommended fleet | USD/h | utilization | p99 TTFT (s) | CPU s |")
    print("|---|---|---|---|---|---|---|")
    same: list[str] = []
    for q in QUESTIONS:
        load = InferLoad(qps=q.qps, input_len=parse_length_dist(q.input_dist, field="input-dist"),
                         output_len=parse_length_dist(q.output_dist, field="output-dist"))
        slo = InferSlo(ttft_p99_s=q.ttft_s, tpot_p99_s=q.tpot_s)
        spec = load_model(q.model)
        best = None
        for router in ROUTERS:
            t0 = time.process_time()
            res = plan_inference(spec, load, slo, cat, InferConstraints(market=q.market, router=router,
                                                                        accelerators=q.accelerators),
                                 alternatives=False)
            p = res.plans[0]
            lay = p["layout"]
            print(f"| {q.name} | {router} | {p['replicas']} x {p['accelerator']} tp{lay['tp']} {p['weights']} "
                  f"({p['devices']} devices) | {p['cost_usd_per_hour']:,.2f} | {p['utilization']:.0%} | "
                  f"{p['ttft_s']['p99']:.2f} | {time.process_time() - t0:.1f} |")
            if router == "least-load":
                best = p
        assert best is not None
        lay = best["layout"]
        cost = step_cost_model(spec, accelerator=cat.accelerators[best["accelerator"]],
                               layout=Layout(tp=lay["tp"], pp=lay["pp"], ep=lay["ep"]), weights=best["weights"],
                               kv_dtype="bf16", engine=prof, catalog=cat)
        cells = []
        for router in ROUTERS:
            m = simulate_engines(load, cost, cfg, engines=best["replicas"], load_factor=1.0, router=router, cal=cal,
                                 slo=Slo(ttft_s=q.ttft_s, tpot_s=q.tpot_s))
            cells.append(f"{m.ttft_s.p99:.2f} s / {m.tpot_s.p99 * 1e3:.0f} ms")
        same.append(f"| {q.name} | {best['replicas']} x {best['accelerator']} tp{lay['tp']} {best['weights']} | "
                    + " | ".join(cells) + " |")
    print()
    print("| question | the least-load fleet | p99 TTFT / TPOT, random | p99 TTFT / TPOT, least-load |")
    print("|---|---|---|---|")
    for row in same:
        print(row)


if __name__ == "__main__":
    main()
