"""The planner's call into the simulator: routers, stated prefix hits and shared prefixes (search/infer_route.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.search.infer_load import InferLoad, planner_terms
from gpuplan.search.infer_route import _hit, check_router, simulate_engines
from gpuplan.simulate import EngineConfig, LengthDist
from gpuplan.simulate.arrivals import Workload
from gpuplan.simulate.metrics import Slo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulate"))
from sim_costs import AffineCost  # noqa: E402


def test_a_shared_prefix_is_cached_up_to_the_prompt_less_one_token() -> None:
    w = Workload(arrival_s=np.array([0.0, 1.0, 2.0]), input_len=np.array([1000, 100, 5000]),
                 output_len=np.array([5, 5, 5]))
    assert _hit(w, 0.0, 300).cached_len.tolist() == [300, 99, 300]
    assert _hit(w, 0.5, 300).cached_len.tolist() == [500, 99, 2500]  # the larger of the two, per request
    assert _hit(w, 0.0, 0) is w
    load = InferLoad(qps=1.0, input_len=LengthDist.fixed(4000), output_len=LengthDist.fixed(10),
                     shared_prefix_tokens=1000)
    assert load.cached_share == pytest.approx(0.25)
    with pytest.raises(InputError, match="shared-prefix"):
        InferLoad(qps=1.0, input_len=LengthDist.fixed(10), output_len=LengthDist.fixed(10), shared_prefix_tokens=-1)
    with pytest.raises(InputError, match="router"):
        check_router("fastest")


def test_every_router_sees_the_shared_prefix_and_least_load_beats_random_on_long_prompts() -> None:
    cost = AffineCost(kv_capacity_tokens=400_000, per_token=2e-5, per_pair=2e-11)
    cfg = EngineConfig(max_batched_tokens=8192)
    slo = Slo(ttft_s=20.0, tpot_s=1.0)
    cal = planner_terms({"sim_requests": 600})
    base = InferLoad(qps=2.0, input_len=LengthDist.uniform(32768, 65536), output_len=LengthDist.fixed(64))
    shared = InferLoad(qps=2.0, input_len=LengthDist.uniform(32768, 65536), output_len=LengthDist.fixed(64),
                       shared_prefix_tokens=16384)
    p99 = {(router, load.shared_prefix_tokens): simulate_engines(load, cost, cfg, engines=6, load_factor=1.0,
                                                                 router=router, cal=cal, slo=slo).ttft_s.p99
           for router in ("random", "least-load") for load in (base, shared)}
    assert p99["least-load", 0] < 0.7 * p99["random", 0]
    for router in ("random", "least-load"):  # a third of each prompt cached: shorter prefills, shorter queues
        assert p99[router, 16384] < 0.9 * p99[router, 0]
