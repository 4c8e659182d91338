"""vLLM V0's start-up profile (before 0.8): its token budget from max_model_len and its top-k/top-p sampler run.

V0 worker/model_runner.py profile_run: max_num_seqs prompts sharing max_num_batched_tokens (max(max_model_len, 2048)
with chunked prefill off, vllm/config.py SchedulerConfig; 512 once chunked prefill turns on above 32K), sampled with
top_k = vocab - 1 and top_p = 0.99; the V0 sampler's sort path holds 32 B per logit (engines.yaml profile_eras).
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.engine_profile import engine_profile_peak
from gpuplan.hardware import load_catalog
from gpuplan.units import GIB
from gpuplan.validate.memory_cases import evaluate_memory_row
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import get_preset

CAT = load_catalog()
LLAMA3_8B = get_preset("llama3-8b").spec


def test_v0_budget_follows_max_model_len_with_chunked_prefill_off() -> None:
    v0 = engine("vllm").at_version("0.6.6")
    assert v0.profile_tokens(8192) == 8192
    assert v0.profile_tokens(1024) == 2048  # the 2048-token floor
    assert v0.profile_tokens(65536) == 512  # chunked prefill on above 32K
    assert engine("vllm").profile_tokens(65536) == 8192  # V1: its own max_num_batched_tokens
    assert engine("vllm", settings={"max_batched_tokens": 4096}).at_version("0.6").profile_tokens(8192) == 4096


def test_v0_profile_of_llama3_8b_at_the_defaults_matches_vllm_pr_10511() -> None:
    # vllm-project/vllm#10511 (Dec 2024, V0): `vllm serve meta-llama/Meta-Llama-3-8B` on an H100 (defaults:
    # max_model_len 8192, 256 sequences) logs "PyTorch activation peak memory 1.26GiB". The V0 sampler run is
    # 256 x 128,256 x 32 B = 0.98 GiB, above the 8192-token forward (0.88 GiB). Before the V0 era was modelled the
    # V1 sampler (14 B per logit) left the forward as the peak: 0.88 GiB, 31% low.
    peak = engine_profile_peak(LLAMA3_8B, Layout(), engine("vllm").at_version("0.6"), max_model_len=8192)
    assert peak.tokens == 8192 and peak.sampler_rows == 256
    assert peak.peak_from == "sampler"
    assert peak.sampler_bytes == pytest.approx(256 * 128256 * 32)
    assert peak.peak_bytes / GIB == pytest.approx(1.26, rel=0.25)


# vllm-project/vllm#12330 (Jan 2025, V0 ~0.6.6): Meta-Llama-3-8B on an A100 40 GB logs "PyTorch activation peak memory
# takes 9.37GiB; the rest of the memory reserved for KV Cache is 11.12GiB" (rows M070, M071). Flags not stated.
ROW = {"id": "log-act", "model": "llama3-8b", "seq_len": "8192", "method": "inference", "accelerator": "a100-sxm4-40gb",
       "num_accels": "1", "tp": "1", "pp": "1", "dp": "1", "precision": "bf16", "metric": "activations_gib",
       "value": "9.37", "settings": "framework=vllm;engine_version=0.6", "confidence": "high"}


def test_vllm_log_rows_predict_the_profile_peak_and_the_pool_it_leaves() -> None:
    act = evaluate_memory_row(dict(ROW), CAT)
    assert act.predicted == pytest.approx(256 * 128256 * 32 / GIB, rel=0.01)  # before: 0.22 GiB (one request)
    assert "sampler" in act.detail
    kv = evaluate_memory_row({**ROW, "id": "log-kv", "metric": "kv_cache_gib", "value": "11.12"}, CAT)
    plain = evaluate_memory_row({**ROW, "id": "log-kv-plain", "metric": "kv_cache_gib", "value": "11.12",
                                 "settings": ""}, CAT)
    # the pool loses the profile's peak beyond one request's activations: 20.07 -> 19.31 GiB
    assert plain.predicted - kv.predicted == pytest.approx(act.predicted - 0.22, abs=0.05)


def test_buyer_report_memory_keeps_the_start_up_profile_out_of_the_kv_pool() -> None:
    # vllm-project/vllm#21348: Qwen3-235B-A22B-FP8, TP4 on 4 x H100 (defaults, utilization 0.9): "Available KV cache
    # memory: 8.11 GiB" per GPU, with the LMCache connector also holding some. The report's memory breakdown
    # (advise/report_infer.serving_memory) now reserves the profile as the planner does: vLLM on an H100 samples
    # 1024 rows x 151,936 x 14 B = 2.03 GiB; before, it reserved one batch's workspace and showed a larger pool.
    from gpuplan.advise.report_infer import serving_memory

    run = {"model": "qwen3-235b-a22b", "engine": "vllm", "kv_dtype": "bf16",
           "load": {"input_len_mean": 1000, "output_len_mean": 1000}}
    plan = {"accelerator": "h100-sxm5-80gb", "layout": {"tp": 4, "pp": 1, "ep": 1}, "weights": "fp8",
            "batch_mean": 8, "kv_used_mean_fraction": 0.5}
    mem = serving_memory(run, plan, CAT)
    assert mem is not None
    parts = mem["parts_gib"]
    assert parts["workspace"] == pytest.approx(1024 * 151936 * 14 / GIB, rel=0.01)
    assert 8.11 <= parts["kv_cache"] + parts["kv_free"] <= 1.65 * 8.11
