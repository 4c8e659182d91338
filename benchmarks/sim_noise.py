"""How much one simulation's p99 moves between seeds: the resolution of the planner's replica search.

Plans the README question (Llama-3.1-70B, 20 req/s, prompts uniform 512-2048, outputs 128-512, p99 TTFT 2 s,
TPOT 50 ms) in one process, keeps the first fleet simulated at each of a few sizes, and re-simulates each with
`--seeds` arrival seeds behind the least-load router. Prints the p99 TTFT and TPOT per seed and their coefficient of
variation. The term `replica_tolerance` (search/data/infer_plan.yaml) rests on these figures: fleets closer than the
p99's own spread are not told apart by one simulation.

Usage: python benchmarks/sim_noise.py [--seeds N]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import gpuplan.search.infer_finalists as finalists
from gpuplan.hardware import load_catalog
from gpuplan.search import parallel
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_route import simulate_engines
from gpuplan.search.infer_search import plan_inference
from gpuplan.simulate.fleet_sim import simulate_fleet
from gpuplan.simulate.lengths import LengthDist
from gpuplan.simulate.metrics import summarize
from gpuplan.workload.presets import load_model

SIZES = (4, 8, 34, 124, 143)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    args = ap.parse_args()
    parallel.set_jobs(1)  # the simulations are captured in this process
    seen: dict[int, tuple[Any, ...]] = {}

    def capture(load: InferLoad, cost: Any, cfg: Any, **kw: Any) -> Any:
        seen.setdefault(kw["engines"], (load, cost, cfg, kw))
        return simulate_engines(load, cost, cfg, **kw)

    finalists.simulate_engines = capture  # type: ignore[assignment]
    load = InferLoad(qps=20.0, input_len=LengthDist.uniform(512, 2048), output_len=LengthDist.uniform(128, 512))
    plan_inference(load_model("llama3.1-70b"), load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), load_catalog())
    print(f"{'engines':>8} {'p99 TTFT cv':>12} {'p99 TPOT cv':>12}  p99 TTFT (s) per seed")
    for engines in sorted(e for e in seen if e in SIZES):
        ld, cost, cfg, kw = seen[engines]
        k = min(engines, 32)  # the planner's fleet_sim_replicas_max
        ttft, tpot = [], []
        for seed in range(args.seeds):
            w = ld.fleet_workload(load_factor=kw["load_factor"] * k / engines, num_requests=max(3000, 100 * k),
                                  seed=seed)
            m = summarize(simulate_fleet(w, cost, cfg, replicas=k, router="least-load").merged, kw["slo"],
                          warmup_fraction=0.1)
            ttft.append(m.ttft_s.p99)
            tpot.append(m.tpot_s.p99)
        a, b = np.array(ttft), np.array(tpot)
        print(f"{engines:>8} {a.std() / a.mean():>12.3f} {b.std() / b.mean():>12.3f}  {np.round(a, 3).tolist()}")


if __name__ == "__main__":
    main()
