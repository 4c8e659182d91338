"""benchmarks/sim_replay.py: another tree's simulator loads beside this one and the identity check can fail."""

from __future__ import annotations

import sys
from pathlib import Path

from sim_costs import AffineCost

from gpuplan.simulate import EngineConfig, LengthDist, poisson_workload
from gpuplan.simulate.fleet_sim import simulate_fleet

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import sim_replay  # noqa: E402


def test_a_tree_loaded_as_base_replays_identically_and_a_different_run_is_caught() -> None:
    base = sim_replay.base_fleet(ROOT / "src")
    assert base is not simulate_fleet  # a second copy of the simulator, not this tree's module
    w = poisson_workload(qps=30.0, num_requests=200, input_len=LengthDist.uniform(100, 2000),
                         output_len=LengthDist.uniform(10, 200), seed=3)
    cost, cfg = AffineCost(kv_capacity_tokens=40_000), EngineConfig(max_num_seqs=8, max_batched_tokens=2048)
    ours = simulate_fleet(w, cost, cfg, replicas=4)
    assert sim_replay.same(base(w, cost, cfg, replicas=4), ours)
    # one replica fewer: other routes and times, which the check must report
    assert not sim_replay.same(base(w, cost, cfg, replicas=3), ours)
