"""The load simulator: queueing theory, conservation, KV-cache limits, preemption, exactness of the jumps."""

from __future__ import annotations

import numpy as np
import pytest
from sim_costs import AffineCost, RooflineCost

from gpuplan.errors import InputError
from gpuplan.simulate import EngineConfig, LengthDist, Slo, poisson_workload, simulate_engine, summarize

MODES = [EngineConfig(chunked_prefill=True, scheduling="decode_first"),
         EngineConfig(chunked_prefill=False, scheduling="prefill_first"),
         EngineConfig(chunked_prefill=True, scheduling="prefill_first", max_batched_tokens=512),
         EngineConfig(chunked_prefill=False, scheduling="fcfs")]


def _load(qps: float, n: int = 3000, seed: int = 3):
    return poisson_workload(qps=qps, num_requests=n, input_len=LengthDist.uniform(64, 1500),
                            output_len=LengthDist.uniform(1, 400), seed=seed)


def test_md1_mean_queueing_delay_matches_pollaczek_khinchine() -> None:
    # Batching off, fixed lengths: one request at a time with a deterministic service time D.
    cost = AffineCost()
    inp, out = 512, 64
    pre = cost.step_s(prefill_tokens=inp, prefill_attn_pairs=inp * (inp + 1) / 2, decode_seqs=0,
                      decode_kv_tokens=0)
    dec = sum(cost.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=1, decode_kv_tokens=inp + j)
              for j in range(1, out))
    d = pre + dec
    cfg = EngineConfig(batching=False)
    for rho in (0.5, 0.8):
        w = poisson_workload(qps=rho / d, num_requests=200_000, input_len=LengthDist.fixed(inp),
                             output_len=LengthDist.fixed(out), seed=11)
        run = simulate_engine(w, cost, cfg)
        m = summarize(run)
        wq = rho * d / (2.0 * (1.0 - rho))  # Pollaczek-Khinchine for M/D/1: rho / (2 mu (1 - rho))
        assert m.queue_s.mean == pytest.approx(wq, rel=0.05)
        # service itself is exactly D for every request
        assert np.allclose(run.finish_s - run.scheduled_s, d, rtol=1e-9)
        assert m.batch_max == 1


@pytest.mark.parametrize("cfg", MODES)
def test_jumps_equal_step_by_step(cfg: EngineConfig) -> None:
    # Summing pure-decode runs in closed form must give the same schedule as stepping one by one.
    cost = AffineCost(kv_capacity_tokens=60_000)
    w = _load(6.0, n=600)
    fast = simulate_engine(w, cost, cfg)
    slow = simulate_engine(w, cost, cfg, max_run_steps=1)
    assert fast.iterations == slow.iterations
    assert np.allclose(fast.finish_s, slow.finish_s, rtol=1e-9)
    assert np.allclose(fast.first_token_s, slow.first_token_s, rtol=1e-9)
    assert (fast.preemptions == slow.preemptions).all()
    assert fast.kv_peak_blocks == slow.kv_peak_blocks
    assert fast.kv_token_seconds == pytest.approx(slow.kv_token_seconds, rel=1e-9)


def test_non_affine_cost_stays_exact() -> None:
    cost = RooflineCost(kv_capacity_tokens=80_000)
    w = _load(5.0, n=500)
    fast = simulate_engine(w, cost)
    slow = simulate_engine(w, cost, max_run_steps=1)
    assert np.allclose(fast.finish_s, slow.finish_s, rtol=1e-9)
    assert fast.iterations == slow.iterations


@pytest.mark.parametrize("cfg", MODES)
def test_conservation_and_kv_limit(cfg: EngineConfig) -> None:
    cost = AffineCost(kv_capacity_tokens=30_000)
    w = _load(8.0)
    run = simulate_engine(w, cost, cfg)
    m = summarize(run)
    assert np.isfinite(run.finish_s).all() and np.isfinite(run.first_token_s).all()
    assert (run.scheduled_s >= w.arrival_s).all()
    assert (run.first_token_s > run.scheduled_s).all() and (run.finish_s >= run.first_token_s).all()
    # every output token comes out: tokens/s x makespan = sum of output lengths
    assert m.output_tokens_per_s * m.makespan_s == pytest.approx(float(w.output_len.sum()), rel=1e-12)
    assert run.kv_peak_blocks <= run.kv_capacity_blocks
    assert m.batch_max <= cfg.max_num_seqs
    assert 0.0 < m.kv_used_mean_fraction <= 1.0


def test_tiny_cache_preempts_and_still_finishes() -> None:
    cost = AffineCost(kv_capacity_tokens=4_000)
    w = poisson_workload(qps=20.0, num_requests=400, input_len=LengthDist.uniform(200, 1200),
                         output_len=LengthDist.uniform(200, 1500), seed=5)
    for cfg in MODES:
        run = simulate_engine(w, cost, cfg)
        assert run.preemptions.sum() > 0
        assert run.kv_peak_blocks <= run.kv_capacity_blocks
        assert np.isfinite(run.finish_s).all()
    big = simulate_engine(w, AffineCost(kv_capacity_tokens=10_000_000))
    assert big.preemptions.sum() == 0


def test_request_longer_than_cache_is_rejected() -> None:
    w = poisson_workload(qps=1.0, num_requests=10, input_len=LengthDist.fixed(3000),
                         output_len=LengthDist.fixed(2000), seed=1)
    with pytest.raises(InputError, match="request length"):
        simulate_engine(w, AffineCost(kv_capacity_tokens=4000))


def test_latency_percentiles_monotone_in_load() -> None:
    cost = AffineCost(kv_capacity_tokens=100_000)
    prev = None
    for qps in (0.5, 2.0, 5.0, 8.0, 11.0, 14.0):
        m = summarize(simulate_engine(_load(qps, n=4000, seed=7), cost))
        cur = [m.ttft_s.p50, m.ttft_s.p90, m.ttft_s.p99, m.e2e_s.p50, m.e2e_s.p90, m.e2e_s.p99, m.tpot_s.p50,
               m.tpot_s.p99, m.queue_s.mean]
        if prev is not None:
            assert all(c >= p for c, p in zip(cur, prev, strict=True)), (qps, cur, prev)
        prev = cur


def test_goodput_counts_requests_meeting_both_limits() -> None:
    run = simulate_engine(_load(6.0), AffineCost())
    loose = summarize(run, Slo(ttft_s=1e9, tpot_s=1e9))
    assert loose.goodput_fraction == 1.0
    tight = summarize(run, Slo(ttft_s=1e-6, tpot_s=1e9))
    assert tight.goodput_fraction == 0.0
    ttft = run.first_token_s - run.workload.arrival_s
    limit = float(np.median(ttft))
    mid = summarize(run, Slo(ttft_s=limit, tpot_s=1e9))
    assert mid.goodput_fraction == pytest.approx(float((ttft <= limit).mean()))
    assert mid.goodput_requests_per_s == pytest.approx(mid.goodput_fraction * mid.requests_per_s)


def test_config_rejects_bad_values() -> None:
    with pytest.raises(InputError, match="max_num_seqs"):
        EngineConfig(max_num_seqs=0)


def test_jumps_exact_with_the_real_step_cost_model() -> None:
    from gpuplan.estimate.infer_step import step_cost_model
    from gpuplan.hardware import load_catalog
    from gpuplan.workload.engines import engine
    from gpuplan.workload.jobs import Layout
    from gpuplan.workload.presets import load_model

    cat = load_catalog(use_user_dir=False)
    for eid in ("vllm", "sglang", "trtllm"):
        prof = engine(eid)
        cost = step_cost_model(load_model("llama3.1-8b"), accelerator=cat.accelerator("h100-sxm5-80gb"),
                               layout=Layout(tp=1), weights="bf16", kv_dtype="bf16", engine=prof, catalog=cat)
        cfg = EngineConfig.from_profile(prof)
        w = _load(12.0, n=400)
        fast = simulate_engine(w, cost, cfg)
        slow = simulate_engine(w, cost, cfg, max_run_steps=1)
        assert fast.iterations == slow.iterations
        assert np.allclose(fast.finish_s, slow.finish_s, rtol=1e-9)


def test_queue_growth_tells_an_overloaded_replica() -> None:
    """A replica that keeps up holds its queueing delay flat; one over 100% load grows it with the run."""
    cost = AffineCost()
    inp, out = 512, 64
    d = cost.step_s(prefill_tokens=inp, prefill_attn_pairs=inp * (inp + 1) / 2, decode_seqs=0,
                    decode_kv_tokens=0) + sum(
        cost.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, decode_seqs=1, decode_kv_tokens=inp + j)
        for j in range(1, out))
    growth = {}
    for rho in (0.7, 1.05):
        w = poisson_workload(qps=rho / d, num_requests=3000, input_len=LengthDist.fixed(inp),
                             output_len=LengthDist.fixed(out), seed=5)
        growth[rho] = summarize(simulate_engine(w, cost, EngineConfig(batching=False)),
                                warmup_fraction=0.1).queue_growth_s
    assert abs(growth[0.7]) < 5 * d
    assert growth[1.05] > 50 * d
