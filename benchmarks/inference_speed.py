"""Print the load simulator's speed (simulated requests per second of wall time) and the wall time of
a full-catalog `plan infer` for llama3.1-70b.

Simulator: llama3.1-70b on one H200 replica (TP4, bf16, the real per-step cost model) under
Poisson arrivals, input uniform 512-2048 and output uniform 128-512 tokens, at 30%, 70% and
95% of the replica's closed-form capacity and in overload (150%), for the vLLM profile
(chunked prefill, decode_first) and the SGLang profile (prefill_first), plus batching off
(M/D/1). Planner: 20 req/s, same lengths, SLO p99 TTFT 2 s and TPOT 50 ms, every catalog
accelerator, timed in-process from catalog load to plans (and once through the CLI).
Usage: python benchmarks/inference_speed.py [--requests N] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_capacity import capacity, length_moments
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import plan_inference
from gpuplan.simulate import EngineConfig, LengthDist, Slo, poisson_workload, simulate_engine, summarize
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import load_model

INP = LengthDist.uniform(512, 2048)
OUT = LengthDist.uniform(128, 512)


def simulator(n: int, repeat: int) -> None:
    catalog = load_catalog(use_user_dir=False)
    spec = load_model("llama3.1-70b")
    acc = catalog.accelerator("h200-sxm-141gb")
    moments = length_moments(INP, OUT)
    print(f"simulator: llama3.1-70b, h200 tp4 bf16, in {INP.label}, out {OUT.label}, {n:,} requests per run")
    for eid in ("vllm", "sglang"):
        prof = engine(eid)
        cfg = EngineConfig.from_profile(prof)
        cost = step_cost_model(spec, accelerator=acc, layout=Layout(tp=4), weights="bf16", kv_dtype="bf16",
                               engine=prof, catalog=catalog)
        lam = capacity(cost, cfg, moments, 0.05).requests_per_s
        for frac in (0.3, 0.7, 0.95, 1.5):
            w = poisson_workload(qps=lam * frac, num_requests=n, input_len=INP, output_len=OUT, seed=1)
            best, best_cpu = float("inf"), float("inf")
            for _ in range(repeat):
                t, c = time.perf_counter(), time.process_time()
                run = simulate_engine(w, cost, cfg)
                best = min(best, time.perf_counter() - t)
                best_cpu = min(best_cpu, time.process_time() - c)
            m = summarize(run, Slo(ttft_s=2.0, tpot_s=0.05), warmup_fraction=0.1)
            print(f"  {eid:7s} {cfg.scheduling:13s} load {frac:4.0%} ({lam * frac:5.2f} req/s)  "
                  f"{n / best:>9,.0f} simulated req/s wall ({n / best_cpu:>9,.0f} per CPU-s)  "
                  f"iterations {run.iterations:>9,}  batch {m.batch_mean:6.1f}  "
                  f"ttft p99 {m.ttft_s.p99:7.3f} s  tpot p99 {m.tpot_s.p99 * 1e3:6.1f} ms  "
                  f"preemptions {m.preemptions}")
    prof = engine("vllm")
    cost = step_cost_model(spec, accelerator=acc, layout=Layout(tp=4), weights="bf16", kv_dtype="bf16",
                           engine=prof, catalog=catalog)
    w = poisson_workload(qps=0.5, num_requests=n, input_len=LengthDist.fixed(1024), output_len=LengthDist.fixed(256),
                         seed=1)
    t, c = time.perf_counter(), time.process_time()
    simulate_engine(w, cost, EngineConfig.from_profile(prof, batching=False))
    print(f"  batching off (M/D/1)                    {n / (time.perf_counter() - t):>9,.0f} simulated req/s wall "
          f"({n / (time.process_time() - c):>9,.0f} per CPU-s)")


def planner(repeat: int) -> None:
    spec = load_model("llama3.1-70b")
    load = InferLoad(qps=20.0, input_len=INP, output_len=OUT)
    slo = InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05)
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        res = plan_inference(spec, load, slo, load_catalog(use_user_dir=False))
        best = min(best, time.perf_counter() - t)
        best_cpu = min(best_cpu, time.process_time() - c)
    p = res.plans[0]
    print(f"plan infer llama3.1-70b, 20 req/s, full catalog: wall {best:.2f} s (CPU {best_cpu:.2f} s) in-process, "
          f"catalog load included; "
          f"{res.candidates_evaluated} candidates, {res.simulated} simulations, {len(res.plans)} plans; "
          f"cheapest {p['accelerator']} x{p['devices']} {p['weights']} ${p['cost_usd_per_hour']:.2f}/h")
    cmd = [sys.executable, "-m", "gpuplan.cli.main", "plan", "infer", "-m", "llama3.1-70b", "--qps", "20",
           "--input-dist", INP.label, "--output-dist", OUT.label, "--ttft-p99", "2", "--tpot-p99", "0.05", "--json"]
    t = time.perf_counter()
    before = os.times()
    subprocess.run(cmd, check=True, capture_output=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    print(f"plan infer through the CLI (new process, imports included): wall {time.perf_counter() - t:.2f} s "
          f"(CPU {cpu:.2f} s)")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(other jobs share the cores: wall figures then exceed CPU figures)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    simulator(args.requests, args.repeat)
    planner(args.repeat)


if __name__ == "__main__":
    main()
