"""Print the planner's speed: whole `gpuplan` processes against their targets, and the search alone.

Part 1 (the user's view) runs the installed `gpuplan` command as a new process, the way a user
does, and reports the minimum and median wall time of --repeat runs after one warm-up run
(the warm-up writes Python's bytecode and gpuplan's catalog cache, as any first run does):

    plan train  -m llama3.1-70b --tokens 15e12                               target < 1 s
    plan train  -m llama3.1-70b --tokens 15e12 --json                        (compact JSON, --top 5)
    plan infer  (the README example)                                          target < 2 s
    plan infer  (long context: Qwen3-32B, 2 req/s of 32-64k-token prompts)    target < 10 s
    memory train -m qwen2.5-72b (the README example)                         target < 0.5 s

PYTHONDONTWRITEBYTECODE is dropped for the child processes (an installed wheel has its bytecode).
On a machine shared with other work the minimum is the figure to quote: other load only adds.

Part 2 times the training search in-process after one warm-up (catalog and presets cached):
full-catalog `plan train` of llama3.1-70b on 15T tokens and of deepseek-v3 (14.8T tokens), up to
4,096 devices.
Usage: python benchmarks/plan_speed.py [--repeat N] [--cli-only | --search-only]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLI_CASES: list[tuple[str, list[str], float | None]] = [
    ("plan train", ["plan", "train", "-m", "llama3.1-70b", "--tokens", "15e12"], 1.0),
    ("plan train --json", ["plan", "train", "-m", "llama3.1-70b", "--tokens", "15e12", "--json"], None),
    ("plan infer", ["plan", "infer", "-m", "llama3.1-70b", "--qps", "20", "--input-dist", "uniform:512-2048",
                    "--output-dist", "uniform:128-512", "--ttft-p99", "2", "--tpot-p99", "0.05"], 2.0),
    ("plan infer (long context)", ["plan", "infer", "-m", "qwen3-32b", "--qps", "2", "--input-dist",
                                   "uniform:32768-65536", "--output-len", "256", "--ttft-p99", "20", "--tpot-p99",
                                   "0.1", "--market", "global"], 10.0),
    ("memory train", ["memory", "train", "-m", "qwen2.5-72b", "--tp", "8", "--pp", "4", "--dp", "4", "--zero", "1",
                      "--seq-len", "8192", "--global-batch", "512"], 0.5),
]


def gpuplan_command() -> list[str]:
    """The installed `gpuplan` script of this interpreter's environment, else the one on PATH."""
    here = Path(sys.executable).parent / ("gpuplan.exe" if os.name == "nt" else "gpuplan")
    if here.exists():
        return [str(here)]
    found = shutil.which("gpuplan")
    if found is None:
        raise SystemExit("no installed `gpuplan` command: pip install . first")
    return [found]


def time_cli(repeat: int) -> None:
    exe = gpuplan_command()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    print(f"whole process, {exe[0]}; min and median of {repeat} runs after a warm-up; {os.cpu_count()} CPUs")
    probe = subprocess.run([str(Path(exe[0]).parent / "python"), "-c",
                            "from gpuplan.simulate.native import compiled; from gpuplan.search.parallel import "
                            "jobs_from_env; print(compiled(), jobs_from_env())"],
                           env=env, capture_output=True, text=True, check=False).stdout.split()
    if len(probe) == 2:  # the serving simulator compiled (hatch_build.py) or interpreted; plan infer's workers
        print(f"  serving simulator {'compiled (mypyc)' if probe[0] == 'True' else 'interpreted'}; "
              f"plan infer workers {probe[1]} (GPUPLAN_JOBS, GPUPLAN_PURE_PYTHON)")
    for name, args, target in CLI_CASES:
        times = []
        out_bytes = 0
        for i in range(repeat + 1):
            t = time.perf_counter()
            res = subprocess.run(exe + args, env=env, capture_output=True, check=False)
            wall = time.perf_counter() - t
            if res.returncode != 0:
                raise SystemExit(f"{name}: exit {res.returncode}\n{res.stderr.decode(errors='replace')}")
            out_bytes = len(res.stdout)
            if i:
                times.append(wall)
        best = min(times)
        verdict = "" if target is None else (f"  target < {target:g} s: " + ("met" if best < target else "MISSED"))
        print(f"  {name:18s} min {best:5.2f} s  median {statistics.median(times):5.2f} s  "
              f"stdout {out_bytes / 1024:8.1f} KiB{verdict}")


def time_search(repeat: int) -> None:
    from gpuplan.hardware import load_catalog
    from gpuplan.search.train_search import PlanConstraints, plan_training
    from gpuplan.workload.jobs import TrainingJob
    from gpuplan.workload.presets import get_preset

    cases = {
        "llama3.1-70b": (TrainingJob(seq_len=8192, global_batch=512), 15e12),
        "deepseek-v3": (TrainingJob(seq_len=4096, global_batch=7680, precision="fp8"), 14.8e12),
    }
    t0 = time.perf_counter()
    catalog = load_catalog(use_user_dir=False)
    print(f"in-process: catalog load {time.perf_counter() - t0:.2f} s")
    for model, (job, tokens) in cases.items():
        spec = get_preset(model).spec
        plan_training(spec, job, catalog, PlanConstraints(max_devices=64), tokens=tokens)  # warm-up
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            res = plan_training(spec, job, catalog, PlanConstraints(max_devices=4096), tokens=tokens)
            best = min(best, time.perf_counter() - t)
        print(f"  {model:14s} candidates {res.candidates_evaluated:>10,}  wall {best:.2f} s  "
              f"{res.candidates_evaluated / best:>12,.0f} candidates/s  plans {len(res.plans)}  "
              f"hardware {len(res.hardware_considered)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--cli-only", action="store_true", help="only the whole-process timings")
    which.add_argument("--search-only", action="store_true", help="only the in-process search timings")
    args = ap.parse_args()
    if not args.search_only:
        time_cli(args.repeat)
    if not args.cli_only:
        time_search(args.repeat)


if __name__ == "__main__":
    main()
