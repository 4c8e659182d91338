"""plan_inference: cheaper hardware for looser SLOs, verified fleets, clear rejections; fleet pricing; advice."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.hardware import Catalog, load_catalog
from gpuplan.search.infer_capacity import capacity, length_moments
from gpuplan.search.infer_fleet import Offer, advice, price_fleet
from gpuplan.search.infer_load import InferLoad, InferSlo, planner_terms
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.search.infer_verify import min_replicas
from gpuplan.simulate import EngineConfig, LengthDist, SimMetrics, Workload
from gpuplan.workload.presets import load_model


@cache
def _catalog() -> Catalog:
    return load_catalog(())


def _load(qps: float = 8.0) -> InferLoad:
    return InferLoad(qps=qps, input_len=LengthDist.uniform(256, 1024), output_len=LengthDist.uniform(64, 256))


def test_loose_slo_picks_cheaper_hardware() -> None:
    spec = load_model("llama3.1-8b")
    loose = plan_inference(spec, _load(), InferSlo(ttft_p99_s=5.0, tpot_p99_s=0.2), _catalog())
    tight = plan_inference(spec, _load(), InferSlo(ttft_p99_s=0.3, tpot_p99_s=0.015), _catalog())
    assert loose.plans and tight.plans
    assert loose.plans[0]["cost_usd_per_hour"] < tight.plans[0]["cost_usd_per_hour"]
    # every plan was checked by simulation at the headroom load and meets the SLO there
    for res, slo in ((loose, (5.0, 0.2)), (tight, (0.3, 0.015))):
        for p in res.plans:
            assert p["at_headroom"]["ttft_p99_s"] <= slo[0] and p["at_headroom"]["tpot_p99_s"] <= slo[1]
            assert p["at_headroom"]["qps"] == pytest.approx(8.0 * 1.2)
        costs = [p["cost_usd_per_hour"] for p in res.plans]
        assert costs == sorted(costs)
    assert tight.rejected.get("tpot_slo", 0) > loose.rejected.get("tpot_slo", 0)


def test_plan_figures_are_consistent() -> None:
    spec = load_model("llama3.1-8b")
    res = plan_inference(spec, _load(), InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), _catalog(),
                         InferConstraints(market="global"))
    p = res.plans[0]
    lay = p["layout"]
    assert p["devices"] == p["replicas"] * lay["tp"] * lay["pp"]
    in_h, out_h = 8.0 * 640 * 3600, 8.0 * 160 * 3600  # uniform means 640 and 160 tokens
    blended = p["cost_usd_per_hour"] / (in_h + out_h) * 1e6
    assert p["cost_usd_per_million_tokens"] == pytest.approx(blended)
    split = p["cost_usd_per_million_input_tokens"] * in_h + p["cost_usd_per_million_output_tokens"] * out_h
    assert split / 1e6 == pytest.approx(p["cost_usd_per_hour"])
    assert 0 < p["utilization"] < 1.5
    assert p["advice"]["tenancy"] in ("shared", "dedicated") and p["advice"]["reason"]
    assert res.terms["load_headroom"]["value"] == 0.2
    assert all(_catalog().accelerator(q["accelerator"]).markets for q in res.plans)


def test_impossible_slo_names_the_best_achievable() -> None:
    spec = load_model("llama3.1-8b")
    with pytest.raises(InputError, match=r"best achievable p99 TTFT is [0-9.]+ s on \S+") as exc:
        plan_inference(spec, _load(), InferSlo(ttft_p99_s=1e-4, tpot_p99_s=0.05), _catalog())
    assert exc.value.field == "ttft-p99"
    with pytest.raises(InputError, match="best achievable TPOT") as exc:
        plan_inference(spec, _load(), InferSlo(ttft_p99_s=5.0, tpot_p99_s=1e-5), _catalog())
    assert exc.value.field == "tpot-p99"


def test_model_that_fits_nowhere_is_rejected_with_the_nearest_fleet() -> None:
    spec = load_model("llama3.1-405b")
    with pytest.raises(InputError, match=r"even at int4 .* nearest feasible: about \d+ x ") as exc:
        plan_inference(spec, _load(), InferSlo(ttft_p99_s=5.0, tpot_p99_s=0.2), _catalog(),
                       InferConstraints(max_devices=1))
    assert exc.value.field == "model"


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf])
def test_bad_load_and_slo(bad: float) -> None:
    with pytest.raises(InputError, match="qps"):
        _load(bad)
    with pytest.raises(InputError, match="ttft-p99"):
        InferSlo(ttft_p99_s=bad, tpot_p99_s=0.1)


def test_price_fleet_by_hand() -> None:
    eight = Offer(instance="x8", accelerator_count=8, usd_per_hour=16.0, kind="on_demand_hourly", tenancy="bare_metal")
    one = Offer(instance="x1", accelerator_count=1, usd_per_hour=2.5, kind="on_demand_hourly", tenancy="dedicated_vm")
    assert price_fleet([eight], 3, 4, 1) == (32.0, eight, 2)  # two TP4 replicas per 8-GPU instance
    assert price_fleet([eight], 2, 8, 2) == (64.0, eight, 4)  # a TP8 x PP2 replica spans two instances
    assert price_fleet([eight, one], 3, 1, 1) == (7.5, one, 3)  # 3 x 1-GPU beats one 8-GPU instance
    assert price_fleet([one], 1, 2, 1) is None  # TP2 needs two devices in one instance
    pod = Offer(instance="pod", accelerator_count=1, usd_per_hour=2.5, kind="on_demand_hourly",
                tenancy="dedicated_vm", cards_per_host=8)
    assert pod.host_devices == 8
    assert price_fleet([pod], 3, 4, 1) == (30.0, pod, 12)  # per-card pods: each TP4 replica's 4 cards on one host
    assert price_fleet([pod], 1, 16, 1) is None  # but no more than a host holds


def test_advice_thresholds() -> None:
    terms = planner_terms()
    off = Offer(instance="x", accelerator_count=8, usd_per_hour=1.0, kind="on_demand_hourly", tenancy="shared")
    assert advice(0.9, 0.0, off, terms)["tenancy"] == "dedicated"
    assert advice(0.5, 0.35, off, terms)["tenancy"] == "dedicated"
    calm = advice(0.5, 0.1, off, terms)
    assert calm["tenancy"] == "shared" and "85%" in str(calm["reason"])
    assert advice(0.9, 0.0, off, planner_terms({"dedicated_utilization": 0.95}))["tenancy"] == "shared"


@dataclass(frozen=True)
class _DecodeOnly:
    kv_capacity_tokens: int = 10**9

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        return 0.01 + 0.001 * decode_seqs  # prompts free, decode 10 ms + 1 ms per sequence


def test_capacity_closed_form_by_hand() -> None:
    m = length_moments(LengthDist.fixed(100), LengthDist.fixed(50))
    cfg = EngineConfig(max_num_seqs=256)
    cap = capacity(_DecodeOnly(), cfg, m, 0.03)
    # s(b) = 0.01 + 0.001 b <= 0.03 -> b = 20; lambda = b / (out s) = 20 / (50 x 0.03)
    assert cap.batch == 20
    assert cap.requests_per_s == pytest.approx(20 / (50 * 0.03))
    assert cap.limited_by == "tpot" and cap.prefill_share == pytest.approx(0.0)
    small = capacity(_DecodeOnly(kv_capacity_tokens=125 * 10), cfg, m, 0.03)  # 125 tokens per request in flight
    assert small.batch == 10 and small.limited_by == "kv_cache"
    assert capacity(_DecodeOnly(), cfg, m, 0.03, tpot_p99_over_mean=1.5).batch == 10


class _PrefillBound:
    kv_capacity_tokens: int = 10**9

    def step_s(self, *, prefill_tokens: int, prefill_attn_pairs: float, decode_seqs: int,
               decode_kv_tokens: int) -> float:
        return 0.01 + 1e-5 * prefill_tokens  # 10 ms a step + 10 us a prompt token; decoding is free


def test_capacity_counts_every_chunk_of_a_prompt_longer_than_the_budget() -> None:
    # 80k-token prompts in 8k chunks: a request takes 0.8 s of prompt tokens plus ten 10 ms steps, so a replica
    # serves at most 1 / 0.8 = 1.25 requests/s, about 1.1 with the steps. Counting one chunk per prompt (the
    # defect) gave several times that, and sized long-context fleets at a fraction of their load.
    m = length_moments(LengthDist.fixed(80_000), LengthDist.fixed(64))
    cap = capacity(_PrefillBound(), EngineConfig(max_num_seqs=64, max_batched_tokens=8192), m, 1.0)
    assert 0.9 < cap.requests_per_s < 1.25


def test_min_replicas_brackets_and_bisects() -> None:
    # a fake simulation that meets the SLO from 7 replicas up
    calls: list[int] = []

    def run(r: int) -> SimMetrics:
        calls.append(r)
        return _fake(0.5 if r >= 7 else 1.0 + 5.0 / r)

    for r0 in (1, 3, 7, 12, 40):
        calls.clear()
        found = min_replicas(run, r0, InferSlo(ttft_p99_s=1.0, tpot_p99_s=1.0), max_sims=12)
        assert found is not None and found[0] == 7, (r0, calls)
    # a latency floor above the SLO: more replicas barely help, so the search gives up early
    floor: list[int] = []

    def stuck(r: int) -> SimMetrics:
        floor.append(r)
        return _fake(1.2)

    assert min_replicas(stuck, 2, InferSlo(ttft_p99_s=1.0, tpot_p99_s=1.0)) is None
    assert floor == [2, 3]


def _fake(v: float) -> SimMetrics:
    from gpuplan.simulate.metrics import Percentiles, Slo

    pc = Percentiles(mean=v, p50=v, p90=v, p99=v)
    return SimMetrics(requests=1, requests_measured=1, makespan_s=1.0, ttft_s=pc, tpot_s=pc, e2e_s=pc, queue_s=pc,
                      requests_per_s=1.0, input_tokens_per_s=1.0, output_tokens_per_s=1.0, goodput_fraction=1.0,
                      goodput_requests_per_s=1.0, slo=Slo(), kv_used_mean_fraction=0.0, kv_peak_blocks=0,
                      kv_capacity_blocks=1, batch_mean=1.0, batch_max=1, iterations=1, preemptions=0,
                      busy_fraction=1.0)


def test_trace_load_is_split_round_robin() -> None:
    arr = np.arange(10, dtype=np.float64)
    tr = Workload(arrival_s=arr, input_len=np.arange(1, 11), output_len=np.full(10, 5), label="t")
    load = InferLoad.from_trace(tr)
    assert load.qps == pytest.approx(1.0)
    assert load.input_len.mean == pytest.approx(5.5)
    w = load.replica_workload(3, load_factor=2.0, num_requests=None)
    assert w.input_len.tolist() == [1, 4, 7, 10]
    assert w.arrival_s.tolist() == [0.0, 1.5, 3.0, 4.5]
    assert load.replica_workload(2, load_factor=1.0, num_requests=3).input_len.tolist() == [1, 3, 5]


def test_slo_met_unloaded_but_not_under_load_names_the_closest_fleet() -> None:
    spec = load_model("llama3.1-8b")
    cons = InferConstraints(accelerators=("h200-sxm-141gb",))
    loose = plan_inference(spec, _load(), InferSlo(ttft_p99_s=5.0, tpot_p99_s=0.2), _catalog(), cons)
    best = loose.best_unloaded["ttft_s"]
    # a TTFT limit 2% above the idle prompt time: no fleet keeps 99% of requests from waiting for a step
    with pytest.raises(InputError, match=r"closest simulated fleet, \d+ x h200-sxm-141gb .* reached p99 TTFT") as exc:
        plan_inference(spec, _load(), InferSlo(ttft_p99_s=best * 1.02, tpot_p99_s=0.2), _catalog(), cons)
    assert exc.value.field == "slo"


def test_no_plan_runs_over_100_percent_utilization() -> None:
    """A fleet over its SLO-bound capacity (utilization > 100%) is never listed as meeting the SLO, even where a
    finite simulation at that size meets the p99 limits (before: 1.52 on this load)."""
    spec = load_model("llama3.1-70b")
    load = InferLoad(qps=4.0, input_len=LengthDist.uniform(128, 512), output_len=LengthDist.uniform(256, 1024))
    res = plan_inference(spec, load, InferSlo(ttft_p99_s=1.0, tpot_p99_s=0.03), _catalog())
    assert res.plans
    for p in res.plans:
        assert p["utilization"] <= 1.0, (p["accelerator"], p["replicas"], p["utilization"])
        assert p["replicas"] >= math.ceil(4.0 / p["capacity_requests_per_s_per_replica"] - 1e-9)
    assert res.terms["queue_growth_max"]["value"] == 0.25


def test_min_replicas_respects_the_utilization_floor_and_a_draining_queue() -> None:
    slo = InferSlo(ttft_p99_s=1.0, tpot_p99_s=1.0)
    # latencies meet the SLO from 2 replicas, but under 5 replicas the fleet is over 100% utilization
    found = min_replicas(lambda r: _fake(0.5 if r >= 2 else 2.0), 8, slo, max_sims=12, floor=5)
    assert found is not None and found[0] == 5
    # the p99s meet the SLO at every size, but under 6 replicas the queue grows over the run (does not drain)
    from dataclasses import replace

    def growing(r: int) -> SimMetrics:
        return replace(_fake(0.5), queue_growth_s=0.0 if r >= 6 else 0.6)

    found = min_replicas(growing, 3, slo, max_sims=12)
    assert found is not None and found[0] == 6



def test_an_engine_is_planned_only_on_the_stacks_it_runs_on() -> None:
    """Regression: `plan infer --engine trtllm --market cn` recommended an Ascend 910B2 fleet (TensorRT-LLM is CUDA
    only), and SGLang on Ascend ran on the CUDA host overheads (about 8 ms per token for an 8B model, where the
    same part measures 47 ms with vllm-ascend)."""
    from gpuplan.workload.engines import engine

    spec = load_model("qwen3-8b")
    slo = InferSlo(ttft_p99_s=1.0, tpot_p99_s=0.03)
    load = InferLoad(qps=2.0, input_len=LengthDist.fixed(512), output_len=LengthDist.fixed(128))
    trt = plan_inference(spec, load, slo, _catalog(), InferConstraints(market="cn"), engine_profile=engine("trtllm"))
    assert trt.plans and all(_catalog().accelerator(p["accelerator"]).software_stack == "cuda" for p in trt.plans)
    assert trt.rejected["engine_unsupported"] >= 1
    with pytest.raises(InputError) as err:  # MindIE runs on Ascend only, which the global market does not rent
        plan_inference(spec, load, slo, _catalog(), InferConstraints(market="global"), engine_profile=engine("mindie"))
    assert err.value.field == "engine" and "cann" in str(err.value)
    # SGLang on Ascend pays torch_npu's per-layer launch time as vllm-ascend does: no 30 ms TPOT plan there
    sgl = plan_inference(spec, load, slo, _catalog(), InferConstraints(market="cn"), engine_profile=engine("sglang"))
    assert not any(p["accelerator"].startswith("ascend-") for p in sgl.plans)
    assert engine("sglang").for_accelerator("ascend-910b").value("layer_overhead_s") == 0.001


def test_sglang_and_tensorrt_llm_are_never_planned_below_compute_capability_8() -> None:
    """Regression: `plan infer -m qwen2.5-72b --market cn` named a prefill/decode-disaggregated fleet of 80 + 16 V100
    to launch with SGLang (--emit sglang --disaggregated), and `--engine sglang` could plan V100s: SGLang's kernels
    and TensorRT-LLM's engines need compute capability 8.0 (the V100 is 7.0). vLLM and TurboMind still run there."""
    from gpuplan.workload.engines import engine

    cat = _catalog()
    v100 = cat.accelerator("v100-sxm2-32gb")
    assert v100.cuda_compute_capability == 7.0
    assert not engine("sglang").runs_on(v100) and not engine("trtllm").runs_on(v100)
    assert engine("vllm").runs_on(v100) and engine("lmdeploy").runs_on(v100)
    assert all(engine("sglang").runs_on(cat.accelerator(a)) for a in ("a100-sxm4-80gb", "l40s-48gb", "h20-96gb"))
    with pytest.raises(InputError) as err:
        engine("sglang").check_runs_on(v100)
    assert err.value.field == "engine" and "compute capability 8.0" in str(err.value) and "vllm" in str(err.value)
    spec = load_model("qwen2.5-72b")
    load = InferLoad(qps=5.0, input_len=LengthDist.fixed(3000), output_len=LengthDist.fixed(500))
    slo = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.06)
    res = plan_inference(spec, load, slo, cat, InferConstraints(market="cn", accelerators=("v100-sxm2-32gb",
                                                                                           "a100-sxm4-80gb")))
    assert all(pd["accelerator"] != "v100-sxm2-32gb" for pd in res.what_if_pd_all)
    sgl = plan_inference(load_model("qwen2.5-7b"), load, slo, cat,
                         InferConstraints(market="cn", accelerators=("v100-sxm2-32gb", "a100-sxm4-80gb")),
                         engine_profile=engine("sglang"))
    assert sgl.plans and all(p["accelerator"] != "v100-sxm2-32gb" for p in sgl.plans)


def test_every_part_that_can_serve_shows_its_cheapest_fleet() -> None:
    """Buyer check: Llama-3.1-70B at 20 req/s worldwide listed ten fleets on five parts and said of the MI300X, the
    L40S and others only that they were 'fast enough alone, but ... or its fleets cost more than those listed': the
    search stopped at the plans wanted. Each part with a candidate fleet now has its cheapest ones tried, so the
    buyer sees its price, or that it failed under the load."""
    cat = load_catalog(use_user_dir=False)
    load = InferLoad(qps=20.0, input_len=LengthDist.fixed(2000), output_len=LengthDist.fixed(400))
    res = plan_inference(load_model("llama3.1-70b"), load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), cat,
                         InferConstraints(market="global"))
    parts = {p["accelerator"] for p in res.plans}
    assert {"mi300x-192gb", "l40s-48gb"} <= parts
    assert len(res.plans) > planner_terms().value("plans_wanted")
    missing = {m["accelerator"]: m["reason"] for m in res.parts_without_plan}
    assert not parts & set(missing)
    costs = [p["cost_usd_per_hour"] for p in res.plans]
    assert costs == sorted(costs)


def test_a_quantized_fleet_is_not_chosen_over_a_16_bit_one_at_the_same_price() -> None:
    """Regression: Qwen2.5-7B at 5 req/s in China was recommended on one A800 with int4 weights, while the same card
    at the same price serves it in bf16 within the SLO (the tie went to the faster int4 step, and bf16 was cut from
    the part's tries): quantizing that saves nothing only costs quality."""
    from gpuplan.units import DTYPE_BYTES

    load = InferLoad(qps=5.0, input_len=LengthDist.fixed(512), output_len=LengthDist.fixed(256))
    res = plan_inference(load_model("qwen2.5-7b"), load, InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), _catalog(),
                         InferConstraints(market="cn"))
    best = res.plans[0]
    assert best["weights"] == "bf16"
    for a, b in zip(res.plans, res.plans[1:], strict=False):
        if (a["cost_usd_per_hour"], a["devices"]) == (b["cost_usd_per_hour"], b["devices"]):
            assert DTYPE_BYTES[a["weights"]] >= DTYPE_BYTES[b["weights"]]


def test_a_stated_prefix_hit_counts_only_the_prompt_past_it() -> None:
    # half of each 80k-token prompt cached: 40k tokens computed a request, so twice the requests/s of no hit
    # (the prompt-bound regime of the test above; attention is free in this cost)
    cfg = EngineConfig(max_num_seqs=64, max_batched_tokens=8192)
    cold = capacity(_PrefillBound(), cfg, length_moments(LengthDist.fixed(80_000), LengthDist.fixed(64)), 1.0)
    warm = capacity(_PrefillBound(), cfg, length_moments(LengthDist.fixed(80_000), LengthDist.fixed(64), hit=0.5), 1.0)
    assert warm.requests_per_s == pytest.approx(2.0 * cold.requests_per_s, rel=0.08)
    m = length_moments(LengthDist.fixed(1000), LengthDist.fixed(1), hit=0.25)
    # 750 tokens past 250 cached: 750 x 250 + 750 x 751 / 2 pairs
    assert m.in_compute_mean == 750.0
    assert m.in_compute_pairs_mean == pytest.approx(750 * 250 + 750 * 751 / 2)


def test_a_fleet_offered_in_two_markets_is_simulated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # the A100 80GB is rented in China and outside it: without --market each market's cheapest fleet is a
    # finalist, the same replicas priced twice; their simulations read the step cost and the load, never the
    # price, so each is run once and both plans carry its figures (`simulated` still counts every one asked for)
    import gpuplan.search.infer_finalists as finalists

    engines: list[int] = []
    real = finalists.simulate_engines

    def counted(*args: Any, **kwargs: Any) -> Any:
        engines.append(kwargs["engines"])
        return real(*args, **kwargs)

    monkeypatch.setattr(finalists, "simulate_engines", counted)
    res = plan_inference(load_model("llama3.1-8b"), _load(), InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.05), _catalog(),
                         InferConstraints(accelerators=("a100-sxm4-80gb",)), alternatives=False)
    by_market: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for p in res.plans:
        by_market.setdefault((p["replicas"], str(p["layout"]), p["weights"]), []).append(p)
    twice = [ps for ps in by_market.values() if len({p["instance"] for p in ps}) == 2]
    assert len(twice) == 2  # bf16 and int8, 1 x tp1 each, on runpod (1.79 USD/h) and a Chinese rental (4.79)
    for a, b in twice:
        assert a["cost_usd_per_hour"] != b["cost_usd_per_hour"]
        assert (a["ttft_s"], a["tpot_s"], a["at_headroom"]) == (b["ttft_s"], b["tpot_s"], b["at_headroom"])
    assert res.simulated == 8 and len(engines) == 4
