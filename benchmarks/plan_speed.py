"""Print the training planner's speed: candidates evaluated per second and wall time of a full plan.

Full-catalog `plan train` of llama3.1-70b on 15T tokens and of deepseek-v3 (14.8T tokens),
up to 4,096 devices. Timed in-process after one warm-up (catalog and presets cached).
Usage: python benchmarks/plan_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

from gpuplan.hardware import load_catalog
from gpuplan.search.train_search import PlanConstraints, plan_training
from gpuplan.workload.jobs import TrainingJob
from gpuplan.workload.presets import get_preset

CASES = {
    "llama3.1-70b": (TrainingJob(seq_len=8192, global_batch=512), 15e12),
    "deepseek-v3": (TrainingJob(seq_len=4096, global_batch=7680, precision="fp8"), 14.8e12),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t0 = time.perf_counter()
    catalog = load_catalog(use_user_dir=False)
    print(f"catalog load {time.perf_counter() - t0:.2f} s")
    for model, (job, tokens) in CASES.items():
        spec = get_preset(model).spec
        plan_training(spec, job, catalog, PlanConstraints(max_devices=64), tokens=tokens)  # warm-up
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            res = plan_training(spec, job, catalog, PlanConstraints(max_devices=4096), tokens=tokens)
            best = min(best, time.perf_counter() - t)
        print(f"{model:14s} candidates {res.candidates_evaluated:>10,}  wall {best:.2f} s  "
              f"{res.candidates_evaluated / best:>12,.0f} candidates/s  plans {len(res.plans)}  "
              f"hardware {len(res.hardware_considered)}")


if __name__ == "__main__":
    main()
