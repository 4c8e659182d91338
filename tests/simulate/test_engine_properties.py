"""Property tests of the simulator over random engines, caches and loads (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sim_costs import AffineCost

from gpuplan.simulate import EngineConfig, LengthDist, poisson_workload, simulate_engine
from gpuplan.simulate.arrivals import Workload


@settings(max_examples=60, deadline=None)
@given(block=st.sampled_from([1, 4, 16, 64]), seqs=st.integers(1, 64), budget=st.integers(64, 4096),
       chunked=st.booleans(), sched=st.sampled_from(["fcfs", "prefill_first", "decode_first", "static"]),
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


def _offline(outputs: LengthDist, n: int = 64) -> Workload:
    """An offline run: every prompt queued at t = 0, as the offline rows of the ground truth."""
    out = outputs.sample(np.random.default_rng(3), n)
    return Workload(arrival_s=np.zeros(n), input_len=np.full(n, 256, dtype=np.int64), output_len=out)


def test_static_batching_admits_nobody_while_a_batch_decodes() -> None:
    """Static batching (a row's batching=static; FasterTransformer, TensorRT-LLM before in-flight
    batching): the next batch starts only after the last request of the previous one ends."""
    cfg = EngineConfig(max_num_seqs=16, max_batched_tokens=1 << 20, chunked_prefill=False, scheduling="static")
    run = simulate_engine(_offline(LengthDist.uniform(16, 512)), AffineCost(), cfg)
    starts = sorted(set(run.scheduled_s.tolist()))
    assert len(starts) >= 4  # 64 requests in batches of at most 16
    for s in starts[1:]:
        earlier = run.scheduled_s < s
        assert s >= run.finish_s[earlier].max() - 1e-12


def test_static_batching_loses_throughput_only_when_lengths_vary() -> None:
    cost = AffineCost()
    for outputs, slower in ((LengthDist.uniform(16, 512), True), (LengthDist.fixed(256), False)):
        w = _offline(outputs)
        times = {}
        for sched in ("fcfs", "static"):
            cfg = EngineConfig(max_num_seqs=16, max_batched_tokens=1 << 20, chunked_prefill=False,
                               scheduling=sched)  # type: ignore[arg-type]
            times[sched] = simulate_engine(w, cost, cfg).end_s
        if slower:
            assert times["static"] > 1.2 * times["fcfs"]
        else:
            assert times["static"] <= 1.01 * times["fcfs"]
