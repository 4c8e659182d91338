"""KV offload to host memory (issue 36 item 2): a reused prefix set that outgrows a replica's HBM keeps its hit where
the engine runs a host tier (vLLM offloading, SGLang HiCache, TensorRT-LLM host cache), at the reload cost of the
part's host link; without one the hit is lost and the fleet grows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_load import InferLoad, InferSlo, planner_terms
from gpuplan.search.infer_offload import offload_engine, prefix_tiers
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import load_model

CAT = load_catalog(())
SPEC = load_model("llama3.1-8b")
LOAD = InferLoad(qps=4.0, input_len=parse_length_dist(16000), output_len=parse_length_dist(256), prefix_hit=0.8)
SLO = InferSlo(ttft_p99_s=3.0, tpot_p99_s=0.05)


def test_tiers_of_one_h100_from_the_catalog() -> None:
    """Llama 3.1 8B in bf16 keeps 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 131,072 bytes a token. One
    H100 of an HGX H100 (2,048 GiB RAM for 8 GPUs: 256 GiB a device, half for the tier) holds 128 GiB / 128 KiB =
    1,048,576 prefix tokens in host memory; PCIe Gen5 x16 at 64 GB/s x 0.75 reloads 1,000 tokens in 131 MB / 48 GB/s
    = 2.73 ms."""
    acc = CAT.accelerator("h100-sxm5-80gb")
    prof = engine("vllm")
    cm = step_cost_model(SPEC, accelerator=acc, layout=Layout(), weights="bf16", kv_dtype="bf16", engine=prof,
                         catalog=CAT)
    assert cm.kv_bytes_per_token == 131072
    t = prefix_tiers(cost=cm, cfg=EngineConfig.from_profile(prof), acc=acc, catalog=CAT,
                     instance="runpod-h100-sxm-community", devices=1, engine_id="vllm", mla=False, hit=0.8,
                     prefix_set=5_000_000, mode="auto", cal=planner_terms())
    assert t.host_tokens == 1_048_576 and t.host_gib_per_device == 128.0 and "hgx-h100-8" in t.host_basis
    assert t.reload_s_per_1k == pytest.approx(131072 * 1000 / 48e9)
    assert t.reload_s_per_1k is not None and t.reload_s_per_1k < 0.2 * t.recompute_s_per_1k
    assert t.offload == "--kv-offloading-backend native --kv-offloading-size 128" and t.why == "host+recompute"
    # hit x (HBM share + host share x (1 - reload / recompute))
    in_hbm, in_host = t.hbm_tokens / 5e6, 1_048_576 / 5e6
    assert t.hit_effective == pytest.approx(0.8 * (in_hbm + in_host * (1 - t.reload_s_per_1k / t.recompute_s_per_1k)))
    off = prefix_tiers(cost=cm, cfg=EngineConfig.from_profile(prof), acc=acc, catalog=CAT,
                       instance="runpod-h100-sxm-community", devices=1, engine_id="vllm", mla=False, hit=0.8,
                       prefix_set=5_000_000, mode="off", cal=planner_terms())
    assert off.offload is None and off.hit_effective == pytest.approx(0.8 * in_hbm)


def test_engines_without_a_host_tier_recompute() -> None:
    assert offload_engine("vllm") is not None and offload_engine("vllm", mla=True) is None  # not for MLA (DeepSeek)
    assert offload_engine("sglang", mla=True) is not None and offload_engine("mindie") is None


def _fleet(prefix_set: int, mode: str) -> dict[str, object]:
    cons = InferConstraints(accelerators=("h100-sxm5-80gb",), kv_offload=mode, weights=("bf16",))
    res = plan_inference(SPEC, replace(LOAD, prefix_set_tokens=prefix_set), SLO, CAT, cons,
                         engine_profile=engine("vllm"), alternatives=False)
    return res.plans[0]


def test_the_planner_keeps_the_hit_with_a_host_tier_and_says_so() -> None:
    """16k-token prompts at 4 req/s with 80% of each found in cache, over 5M distinct prefix tokens: HBM alone keeps
    a few percent of the set (5 x H100, 13.45 USD/h); with vLLM's host tier the hit stays at 75% (4 x H100 at tp4,
    10.76 USD/h, launched with --kv-offloading-size 512); a set that HBM holds plans as before (3 x H100, 8.07)."""
    held, off, auto = _fleet(0, "auto"), _fleet(5_000_000, "off"), _fleet(5_000_000, "auto")
    assert "prefix_tiers" not in held
    t_off, t_auto = off["prefix_tiers"], auto["prefix_tiers"]
    assert isinstance(t_off, dict) and isinstance(t_auto, dict)
    assert t_off["hit_effective"] < 0.1 and t_off["tier"] == "off" and t_off["offload"] is None
    assert t_auto["hit_effective"] > 0.7 and "--kv-offloading-size" in t_auto["offload"]
    costs = [float(p["cost_usd_per_hour"]) for p in (held, auto, off)]  # type: ignore[arg-type]
    assert costs[0] < costs[1] < costs[2]
