"""Serving where the KV cache is tight: what an engine's start-up leaves to the KV cache, and its part defaults.

vLLM sizes its KV cache at start-up: gpu_memory_utilization x memory, minus the weights, minus the larger of a
dummy forward over max_num_batched_tokens and a sampler run over max_num_seqs rows of the whole vocabulary
(v1/worker/gpu_model_runner.py profile_run), minus non-torch memory; and it picks max_num_seqs by the part
(vllm/engine/arg_utils.py get_batch_defaults: 1024 on parts of 70 GiB or more whose name has no "a100",
else 256). With weights filling most of the device, that reserve is a large share of what is left.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.units import GIB
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.presets import get_preset

CAT = load_catalog()


def test_vllm_picks_max_num_seqs_by_part_and_version() -> None:
    v = engine("vllm")
    assert v.on_part(CAT.accelerator("h100-sxm5-80gb")).max_num_seqs == 1024
    assert v.on_part(CAT.accelerator("mi300x-192gb")).max_num_seqs == 1024
    assert v.on_part(CAT.accelerator("a100-sxm4-80gb")).max_num_seqs == 256  # 80 GB, but named A100
    assert v.on_part(CAT.accelerator("a800-sxm4-80gb")).max_num_seqs == 1024  # "a100" is not in its name
    assert v.on_part(CAT.accelerator("l40s-48gb")).max_num_seqs == 256  # under 70 GiB
    assert v.at_version("0.8.4").on_part(CAT.accelerator("h100-sxm5-80gb")).max_num_seqs == 256  # before the tier
    mine = engine("vllm", settings={"max_num_seqs": 512}).on_part(CAT.accelerator("h100-sxm5-80gb"))
    assert mine.max_num_seqs == 512  # a user's setting stays
    assert engine("sglang").on_part(CAT.accelerator("h100-sxm5-80gb")).max_num_seqs == 1024  # its own default


def test_vllm_serve_chunks_prompts_in_2048_token_steps_below_70_gib_and_on_a100s() -> None:
    """vllm/engine/arg_utils.py get_batch_defaults: OPENAI_API_SERVER's max_num_batched_tokens is 2048 on parts
    under 70 GiB and on every A100, 8192 on the others (before: 8192 everywhere, which let the 64 GB Ascend 910B
    rows of vllm-ascend 0.9.1 prefill four times the tokens per step that `vllm serve` runs)."""
    v = engine("vllm")
    assert v.on_part(CAT.accelerator("ascend-910b"), mla=True).max_batched_tokens == 2048  # 64 GB
    assert v.on_part(CAT.accelerator("a100-sxm4-80gb")).max_batched_tokens == 2048  # 80 GB, but named A100
    assert v.on_part(CAT.accelerator("l40s-48gb")).max_batched_tokens == 2048
    assert v.on_part(CAT.accelerator("h100-sxm5-80gb")).max_batched_tokens == 8192
    assert v.on_part(CAT.accelerator("mi300x-192gb")).max_batched_tokens == 8192
    assert v.at_version("0.8.4").on_part(CAT.accelerator("l40s-48gb")).max_batched_tokens == 8192  # before the rule
    mine = engine("vllm", settings={"max_batched_tokens": 4096}).on_part(CAT.accelerator("l40s-48gb"))
    assert mine.max_batched_tokens == 4096  # a user's setting stays


def test_vllm_profile_peak_of_a_small_model_matches_the_measured_torch_peak() -> None:
    # ovg-project/kvcached#448 (comment measured on an A100 40 GB, vLLM, util 0.92): Qwen2.5-0.5B profiles a torch
    # peak of 0.59 GiB. Qwen2.5-0.5B config.json: 24 layers, hidden 896, 14 heads, 2 KV heads, ffn 4864, vocab
    # 151,936, tied embeddings. 256 sequences x 151,936 x 14 B = 0.51 GiB sampler run, larger than the forward.
    spec = ModelSpec(name="qwen2.5-0.5b", num_layers=24, hidden_size=896, num_heads=14, num_kv_heads=2,
                     ffn_hidden_size=4864, vocab_size=151936, tie_word_embeddings=True)
    m = step_cost_model(spec, accelerator=CAT.accelerator("a100-sxm4-40gb"), layout=Layout(), weights="bf16",
                        kv_dtype="bf16", engine=engine("vllm"))
    assert m.assumptions["max_num_seqs"] == 256
    reserve = m.assumptions["profile_sampler_reserve_gib"]
    assert reserve == pytest.approx(256 * 151936 * 14 / GIB, rel=0.01)
    assert reserve == pytest.approx(0.59, rel=0.20)


def test_kv_tight_h100_deployment_keeps_the_start_up_profile_out_of_the_kv_cache() -> None:
    # vllm-project/vllm#21348: Qwen3-235B-A22B-FP8, `vllm serve --tensor-parallel-size 4` on 4 x H100 (defaults,
    # gpu_memory_utilization 0.9) logs "Available KV cache memory: 8.11 GiB / GPU KV cache size: 178,880 tokens".
    # The weights take about 55 GiB of the 72 GiB budget. That run also loaded the LMCache connector, which
    # holds some memory, so vLLM alone holds at least the measured figure. Before the start-up profile (1024
    # sampler rows x 151,936 x 14 B = 2.0 GiB per GPU) was modelled the estimate was 324k tokens (1.81x).
    spec = get_preset("qwen3-235b-a22b").spec
    m = step_cost_model(spec, accelerator=CAT.accelerator("h100-sxm5-80gb"), layout=Layout(tp=4), weights="fp8",
                        kv_dtype="bf16", engine=engine("vllm"))
    assert m.assumptions["profile_sampler_reserve_gib"] == pytest.approx(1024 * 151936 * 14 / GIB, rel=0.05)
    assert 178_880 <= m.kv_capacity_tokens <= 1.65 * 178_880
    # SGLang keeps activations in the headroom of mem_fraction_static: no start-up reserve
    s = step_cost_model(spec, accelerator=CAT.accelerator("h100-sxm5-80gb"), layout=Layout(tp=4), weights="fp8",
                        kv_dtype="bf16", engine=engine("sglang"))
    assert s.assumptions["profile_sampler_reserve_gib"] == 0.0


def test_vllm_ascend_schedules_whole_prompts_first_for_models_without_mla() -> None:
    """vllm-ascend v0.9.1 platform.py: 'Non-MLA LLMs forcibly disable the chunked prefill feature' and run the
    AscendScheduler (prefill-first), with max_num_batched_tokens raised to max_model_len (40,960 for Qwen3); MLA
    models keep vLLM's chunked V1 scheduler. Before: vLLM's decode-first chunked scheduler on every part."""
    asc = engine("vllm").on_part(CAT.accelerator("ascend-910b"))
    assert (asc.scheduling, asc.chunked_prefill, asc.max_batched_tokens) == ("prefill_first", False, 40960)
    mla = engine("vllm").on_part(CAT.accelerator("ascend-910b"), mla=True)
    assert (mla.scheduling, mla.chunked_prefill) == ("decode_first", True)
    cuda = engine("vllm").on_part(CAT.accelerator("h100-sxm5-80gb"))
    assert (cuda.scheduling, cuda.chunked_prefill) == ("decode_first", True)
    assert engine("mindie").on_part(CAT.accelerator("ascend-910b")).scheduling == engine("mindie").scheduling
    # platform.py: cache_config.block_size 128 on the NPU, for every model; vLLM's CUDA default stays 16
    assert (asc.kv_block_tokens, mla.kv_block_tokens, cuda.kv_block_tokens) == (128, 128, 16)
