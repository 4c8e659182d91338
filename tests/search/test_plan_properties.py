"""Property tests (hypothesis) of the invariants a buyer relies on (issue 17 item 5).

Per-device training memory grows with sequence length and micro-batch and falls with TP, PP and ZeRO stage; a
step is never faster over a slower link; a plan never gets cheaper when a price rises; a serving fleet never
shrinks when the load grows; without prices, parts without a price never displace priced parts on the Pareto
front and are ranked by device-hours. Each property runs on a few examples (seconds in all).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpuplan.search.offers as offers_mod
from gpuplan.estimate.memory_train import estimate_training_memory
from gpuplan.hardware import load_catalog
from gpuplan.search.candidates import LayoutChoices, generate
from gpuplan.search.cluster import cluster_hardware
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.search.pricing import DevicePrice, device_price
from gpuplan.search.train_eval import evaluate_training
from gpuplan.search.train_search import PlanConstraints, plan_training
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
FAST = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DENSE = ["llama3-8b", "qwen2.5-7b", "llama3-70b"]
PRESETS = [*DENSE, "mixtral-8x7b"]


def _mem(preset: str, layout: Layout, **job: Any) -> float:
    spec = get_preset(preset).spec
    return float(estimate_training_memory(spec, TrainingJob(**job), layout).total_bytes)


# ---------------------------------------------------------------- memory

JOBS = st.fixed_dictionaries({"method": st.sampled_from(["full", "lora", "qlora"]),
                              "recompute": st.sampled_from(["none", "selective", "full"]),
                              "kernels": st.sampled_from(["hf", "fused"])})


@FAST
@given(preset=st.sampled_from(PRESETS), job=JOBS, tp=st.sampled_from([1, 2, 4]), zero=st.sampled_from([0, 1, 3]),
       mb=st.integers(1, 4), seq=st.sampled_from([512, 1024, 2048, 4096]), k=st.sampled_from([2, 4]))
def test_memory_grows_with_sequence_length_and_micro_batch(preset: str, job: dict[str, Any], tp: int, zero: int,
                                                          mb: int, seq: int, k: int) -> None:
    lay = Layout(tp=tp, dp=8 // tp, zero_stage=zero)
    base = _mem(preset, lay, seq_len=seq, micro_batch=mb, **job)
    assert _mem(preset, lay, seq_len=seq * k, micro_batch=mb, **job) >= base
    assert _mem(preset, lay, seq_len=seq, micro_batch=mb * k, **job) >= base


@FAST
@given(preset=st.sampled_from(PRESETS), job=JOBS, seq=st.sampled_from([1024, 4096]), mb=st.integers(1, 2),
       zero=st.sampled_from([0, 1, 3]))
def test_memory_falls_with_tensor_and_pipeline_parallelism(preset: str, job: dict[str, Any], seq: int, mb: int,
                                                          zero: int) -> None:
    """Same data-parallel degree (2), more TP or more PP stages: the most loaded rank never holds more."""
    heads = get_preset(preset).spec.num_heads
    tps = [_mem(preset, Layout(tp=t, dp=2, zero_stage=zero), seq_len=seq, micro_batch=mb, **job)
           for t in (1, 2, 4, 8) if heads % t == 0]
    assert all(a >= b for a, b in zip(tps, tps[1:], strict=False)), tps
    pps = [_mem(preset, Layout(pp=p, dp=2, zero_stage=zero), seq_len=seq, micro_batch=mb, **job) for p in (1, 2, 4)]
    assert all(a >= b for a, b in zip(pps, pps[1:], strict=False)), pps


@FAST
@given(preset=st.sampled_from(PRESETS), job=JOBS, dp=st.sampled_from([2, 8, 64]), tp=st.sampled_from([1, 2]),
       seq=st.sampled_from([1024, 4096]))
def test_memory_falls_with_zero_stage(preset: str, job: dict[str, Any], dp: int, tp: int, seq: int) -> None:
    stages = [_mem(preset, Layout(tp=tp, dp=dp, zero_stage=z), seq_len=seq, **job) for z in (0, 1, 2, 3)]
    assert all(a >= b for a, b in zip(stages, stages[1:], strict=False)), stages


# ---------------------------------------------------------------- links

ACCS = ["h100-sxm5-80gb", "a100-sxm4-80gb", "ascend-910b", "h20-96gb"]


@FAST
@given(acc=st.sampled_from(ACCS), preset=st.sampled_from(PRESETS), devices=st.sampled_from([8, 16, 32]),
       net=st.sampled_from(["ib-ndr-400", "roce-200", "eth-100-tcp"]), nics=st.sampled_from([1.0, 2.0, 8.0]),
       intra=st.floats(0.2, 1.0), inter=st.floats(0.1, 1.0))
def test_no_step_is_faster_over_a_slower_link(acc: str, preset: str, devices: int, net: str, nics: float,
                                              intra: float, inter: float) -> None:
    """Slower NVLink/HCCS (intra_bw_scale) or fewer NICs per node never make any layout's step faster."""
    spec = get_preset(preset).spec
    job = TrainingJob(seq_len=4096, global_batch=256)
    c = generate(spec, LayoutChoices(devices=[devices]), seq_len=4096, global_batch=256)
    if len(c) == 0:
        return
    fast = cluster_hardware(CAT, acc, net, nics_per_node=nics)
    slow_intra = cluster_hardware(CAT, acc, net, nics_per_node=nics)
    object.__setattr__(slow_intra, "intra_bw_scale", intra)
    slow_inter = cluster_hardware(CAT, acc, net, nics_per_node=nics * inter)
    base = evaluate_training(spec, job, fast, c).step_s
    for slow in (slow_intra, slow_inter):
        assert np.all(evaluate_training(spec, job, slow, c).step_s >= base * (1 - 1e-12))


# ---------------------------------------------------------------- prices

def _raised(target: str, factor: float) -> Callable[..., DevicePrice]:
    real = offers_mod.instance_price

    def price(catalog: Any, inst: Any) -> DevicePrice:
        p = real(catalog, inst)
        if inst.id != target:
            return p
        return DevicePrice(on_demand=p.on_demand and p.on_demand * factor, spot=p.spot and p.spot * factor,
                           monthly=p.monthly and p.monthly * factor, on_demand_instance=p.on_demand_instance,
                           spot_instance=p.spot_instance, monthly_instance=p.monthly_instance)

    return price


PRICED_OFFERS = sorted(i.id for i in CAT.instances.values()
                       if CAT.server(i.server).accelerator in ("h100-sxm5-80gb", "h20-96gb", "a100-sxm4-80gb"))


@FAST
@given(offer=st.sampled_from(PRICED_OFFERS), factor=st.floats(1.0, 5.0), preset=st.sampled_from(DENSE[:2]),
       max_devices=st.sampled_from([8, 16, 32]))
def test_a_plan_never_gets_cheaper_when_a_price_rises(offer: str, factor: float, preset: str,
                                                      max_devices: int) -> None:
    spec = get_preset(preset).spec
    job = TrainingJob(seq_len=4096, global_batch=256)
    cons = PlanConstraints(max_devices=max_devices, accelerators=("h100-sxm5-80gb", "h20-96gb", "a100-sxm4-80gb"))

    def costs() -> dict[tuple[str, int, str | None], float]:
        res = plan_training(spec, job, CAT, cons, tokens=1e11)
        return {(p["accelerator"], p["devices"], p["hardware_option"]["offer"]): p["cost_usd"]
                for p in res.plans if p["cost_usd"] is not None}

    before = costs()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(offers_mod, "instance_price", _raised(offer, factor))
        after = costs()
    assert set(after) == set(before)
    assert all(after[k] >= before[k] * (1 - 1e-9) for k in before)
    if factor > 1.01:  # the raised price reached the plans on that offer
        assert all(after[k] > before[k] for k in before if k[2] == offer)
    assert min(after.values()) >= min(before.values()) * (1 - 1e-9)


# ---------------------------------------------------------------- serving load

@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qps=st.sampled_from([0.5, 2.0, 8.0]), k=st.sampled_from([2.0, 4.0]), acc=st.sampled_from(["h100-sxm5-80gb",
                                                                                                 "l40s-48gb"]),
       weights=st.sampled_from(["bf16", "fp8"]))
def test_a_serving_fleet_never_shrinks_when_the_load_grows(qps: float, k: float, acc: str, weights: str) -> None:
    spec = get_preset("llama3-8b").spec
    slo = InferSlo(ttft_p99_s=2.0, tpot_p99_s=0.1)
    cons = InferConstraints(accelerators=(acc,), max_devices=256, weights=(weights,))

    def fleets(q: float) -> dict[tuple[Any, ...], int]:
        load = InferLoad(qps=q, input_len=parse_length_dist(1024, field="input-len"),
                         output_len=parse_length_dist(256, field="output-len"))
        res = plan_inference(spec, load, slo, CAT, cons, engine_profile=engine("vllm"))
        return {(p["accelerator"], p["weights"]): p["devices"] for p in res.plans}

    low, high = fleets(qps), fleets(qps * k)
    assert low and high
    for key, devices in low.items():
        assert high.get(key, devices) >= devices, (key, devices, high)


# ---------------------------------------------------------------- planner without prices

UNPRICED = ["ascend-910b", "rtx4090-24gb", "h100-pcie-80gb", "l4-24gb"]
PRICED = ["h100-sxm5-80gb", "h20-96gb", "a100-sxm4-80gb", "l40s-48gb"]


@FAST
@given(unpriced=st.lists(st.sampled_from(UNPRICED), min_size=1, max_size=2, unique=True),
       priced=st.lists(st.sampled_from(PRICED), min_size=0, max_size=2, unique=True),
       preset=st.sampled_from(DENSE[:2]), max_devices=st.sampled_from([4, 16, 32]),
       method=st.sampled_from(["full", "lora"]))
def test_unpriced_parts_never_displace_priced_ones_and_rank_by_device_hours(
        unpriced: list[str], priced: list[str], preset: str, max_devices: int, method: str) -> None:
    assert all(device_price(CAT, a).on_demand is None and device_price(CAT, a).monthly is None for a in unpriced)
    spec = get_preset(preset).spec
    job = TrainingJob(seq_len=4096, global_batch=256, method=method)
    both = plan_training(spec, job, CAT, PlanConstraints(max_devices=max_devices, accelerators=(*priced, *unpriced)),
                         tokens=1e10)
    alone = plan_training(spec, job, CAT, PlanConstraints(max_devices=max_devices, accelerators=tuple(priced)),
                          tokens=1e10) if priced else None
    front = [(p["accelerator"], p["devices"], p["cost_usd"]) for p in both.pareto]
    assert all(p["cost_usd"] is not None for p in both.pareto)
    assert front == ([(p["accelerator"], p["devices"], p["cost_usd"]) for p in alone.pareto] if alone else [])
    costs = [p["cost_usd"] for p in both.plans]
    first_unpriced = next((i for i, c in enumerate(costs) if c is None), len(costs))
    assert all(c is None for c in costs[first_unpriced:])  # every priced plan ranks first
    hours = [p["device_hours"] for p in both.plans[first_unpriced:]]
    assert hours == sorted(hours)
    if not priced:
        assert {p["accelerator"] for p in both.plans} <= set(unpriced)
