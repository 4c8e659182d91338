"""KV cache and inference memory: per-token sizes from the configs, weight formats, fitting."""

from __future__ import annotations

import pytest

from gpuplan.estimate.kv_cache import kv_bytes_per_token, kv_cache
from gpuplan.estimate.memory_infer import (
    estimate_inference_memory,
    matrix_bytes_per_param,
    max_batch_that_fits,
)
from gpuplan.workload.jobs import InferenceJob, Layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.presets import get_preset


@pytest.mark.parametrize(("preset", "expected"), [
    # layers x 2 (K,V) x kv_heads x head_dim x 2 bytes, from each config.json
    ("llama2-7b", 32 * 2 * 32 * 128 * 2),  # MHA
    ("llama3-8b", 32 * 2 * 8 * 128 * 2),  # GQA 8 KV heads: 128 KiB per token
    ("llama3.1-70b", 80 * 2 * 8 * 128 * 2),
    ("qwen3-32b", 64 * 2 * 8 * 128 * 2),  # explicit head_dim 128 (hidden/heads would be 80)
    ("chatglm3-6b", 28 * 2 * 2 * 128 * 2),  # multi_query_group_num 2
    # MLA caches kv_lora_rank + qk_rope_head_dim per layer (DeepSeek-V2 paper, sec. 2.1.2)
    ("deepseek-v3", 61 * (512 + 64) * 2),
    ("deepseek-v2-lite", 27 * (512 + 64) * 2),
])
def test_kv_bytes_per_token_from_config(preset: str, expected: int) -> None:
    assert kv_bytes_per_token(get_preset(preset).spec, "bf16") == expected


def test_kv_dtype_scales_the_cache() -> None:
    spec = get_preset("llama3-8b").spec
    assert kv_bytes_per_token(spec, "fp8") == kv_bytes_per_token(spec, "bf16") / 2


def test_tp_splits_kv_heads_but_replicates_beyond_them() -> None:
    spec = get_preset("llama3-8b").spec  # 8 KV heads
    full = kv_bytes_per_token(spec)
    assert kv_bytes_per_token(spec, tp=8) == full / 8
    assert kv_bytes_per_token(spec, tp=16) == full / 8  # one KV head per rank at least
    mla = get_preset("deepseek-v3").spec
    assert kv_bytes_per_token(mla, tp=8) == kv_bytes_per_token(mla)  # latent replicated


def test_sliding_window_caps_the_window_layers() -> None:
    spec = ModelSpec(name="swa", num_layers=4, hidden_size=256, num_heads=4, ffn_hidden_size=512,
                     vocab_size=100, sliding_window=1000, sliding_window_layers=2)
    per_layer_token = 2 * 4 * 64 * 2
    kv = kv_cache(spec, context=5000, batch=3)
    assert kv.bytes_per_request == per_layer_token * (2 * 5000 + 2 * 1000)
    assert kv.bytes_total == 3 * kv.bytes_per_request


def test_weight_formats_order_and_int4_overhead() -> None:
    spec = get_preset("llama3-8b").spec
    sizes = {w: estimate_inference_memory(spec, InferenceJob(weights=w)).weights_bytes  # type: ignore[arg-type]
             for w in ("bf16", "fp8", "int8", "int4")}
    assert sizes["bf16"] > sizes["fp8"] >= sizes["int8"] > sizes["int4"]
    # GPTQ/AWQ group 128: fp16 scale + 4-bit zero per 128 weights
    assert matrix_bytes_per_param(spec, InferenceJob(weights="int4")) == pytest.approx(0.5 + 2.5 / 128)
    assert sizes["bf16"] / 2**30 == pytest.approx(14.96, abs=0.01)  # vLLM reports 14.96 GiB


def test_max_batch_is_monotone_in_memory_and_context() -> None:
    spec = get_preset("llama3-8b").spec
    job = InferenceJob(context=8192)
    small = max_batch_that_fits(spec, job, 40 * 2**30)
    big = max_batch_that_fits(spec, job, 80 * 2**30)
    assert 0 < small.max_batch < big.max_batch
    longer = max_batch_that_fits(spec, InferenceJob(context=32768), 80 * 2**30)
    assert longer.max_batch < big.max_batch
    none = max_batch_that_fits(spec, job, 10 * 2**30)
    assert none.max_batch == 0 and none.kv_budget_bytes == 0


def test_tensor_parallel_inference_splits_weights() -> None:
    spec = get_preset("llama3.1-70b").spec
    one = estimate_inference_memory(spec, InferenceJob())
    eight = estimate_inference_memory(spec, InferenceJob(), Layout(tp=8))
    assert eight.weights_bytes == pytest.approx(one.weights_bytes / 8, rel=0.01)
    assert one.to_json()["kv_cache_bytes"] > 0


def test_expert_parallelism_inside_tp_keeps_every_expert_byte() -> None:
    """Regression: serving memory divided the routed experts by ep x tp, so DeepSeek-V3 in fp8 (about 680 GB)
    'fit' on four 80 GB devices at tp4 ep4 and plans offered it. Inside a TP group, ep only decides whether
    experts are whole or split: one device holds 1/tp of them either way."""
    spec = get_preset("deepseek-v3").spec
    job = InferenceJob(weights="fp8")
    split = estimate_inference_memory(spec, job, Layout(tp=8))
    whole = estimate_inference_memory(spec, job, Layout(tp=8, ep=8))
    assert whole.weights_bytes == pytest.approx(split.weights_bytes)
    assert 4 * estimate_inference_memory(spec, job, Layout(tp=4, ep=4)).weights_bytes > 671e9
    # attention data parallelism: experts over ep devices, attention and dense layers whole on each
    dp = estimate_inference_memory(spec, job, Layout(tp=1, ep=8, dp=8))
    assert dp.weights_bytes > whole.weights_bytes


def test_ep_and_tp_must_divide_one_another() -> None:
    from gpuplan.errors import InputError
    from gpuplan.estimate.memory_infer import check_serving_layout

    with pytest.raises(InputError) as err:
        check_serving_layout(Layout(tp=6, ep=4))
    assert err.value.field == "ep" and "multiple of tp=6" in str(err.value)
    check_serving_layout(Layout(tp=8, ep=2))
    check_serving_layout(Layout(tp=2, ep=16))
