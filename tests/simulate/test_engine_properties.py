"""Property tests of the simulator over random engines, caches and loads (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_costs import AffineCost

from gpuplan.simulate import EngineConfig, LengthDist, poisson_workload, simulate_engine


@settings(max_examples=60, deadline=None)
@given(block=st.sampled_from([1, 4, 16, 64]), seqs=st.integers(1, 64), budget=st.integers(64, 4096),
       chunked=st.booleans(), sched=st.sampled_from(["fcfs", "prefill_first", "decode_first"]),
       cap_tokens=st.integers(3000, 60_000), qps=st.floats(0.5, 40.0), seed=st.integers(0, 10_000),
       per_kv=st.sampled_from([0.0, 2e-8, 1e-6]))
def test_invariants_and_exact_jumps(block: int, seqs: int, budget: int, chunked: bool, sched: str, cap_tokens: int,
                                    qps: float, seed: int, per_kv: float) -> None:
    cfg = EngineConfig(kv_block_tokens=block, max_num_seqs=seqs, max_batched_tokens=budget,
                       chunked_prefill=chunked, scheduling=sched)  # type: ignore[arg-type]
    cost = AffineCost(kv_capacity_tokens=cap_tokens, per_kv=per_kv)
    w = poisson_workload(qps=qps, num_requests=80, input_len=LengthDist.uniform(1, 1200),
                         output_len=LengthDist.uniform(1, 600), seed=seed)
    fast = simulate_engine(w, cost, cfg)
    # conservation: every request is scheduled, emits a first token and finishes, in that order
    assert np.isfinite(fast.finish_s).all()
    assert (w.arrival_s <= fast.scheduled_s).all()
    assert (fast.scheduled_s < fast.first_token_s).all()
    assert (fast.first_token_s <= fast.finish_s).all()
    assert fast.kv_peak_blocks <= fast.kv_capacity_blocks
    assert fast.batch_max <= seqs
    assert fast.busy_s <= fast.end_s + 1e-9
    # closed-form decode runs give the step-by-step schedule
    slow = simulate_engine(w, cost, cfg, max_run_steps=1)
    assert fast.iterations == slow.iterations
    assert np.allclose(fast.finish_s, slow.finish_s, rtol=1e-9, atol=1e-12)
    assert (fast.preemptions == slow.preemptions).all()
    assert fast.kv_peak_blocks == slow.kv_peak_blocks
