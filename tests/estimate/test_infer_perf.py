"""Closed forms (fixed batch, offline) and the one-deployment estimate behind `estimate infer`."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan.errors import InputError
from gpuplan.estimate.infer_estimate import estimate_inference, smallest_fitting_layout
from gpuplan.estimate.infer_perf import fixed_batch_perf, offline_perf
from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import get_preset

CAT = load_catalog()
H100 = CAT.accelerator("h100-sxm5-80gb")
SPEC = get_preset("llama3.1-8b").spec
VLLM = engine("vllm")
MODEL = step_cost_model(SPEC, accelerator=H100, layout=Layout(), weights="bf16", kv_dtype="bf16", engine=VLLM)


def test_fixed_batch_closed_form_by_hand() -> None:
    b, i, o = 8, 512, 128
    perf = fixed_batch_perf(MODEL, batch=b, input_len=i, output_len=o)
    prefill = MODEL.step_s(prefill_tokens=b * i, prefill_attn_pairs=b * i * (i + 1) / 2, decode_seqs=0,
                           decode_kv_tokens=0)
    assert perf.ttft_s == pytest.approx(MODEL.request_overhead + prefill)
    # the decode step is affine in the cached tokens, so the mean over the output is the step at I + O/2
    steps = [MODEL.step_s(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=b, decode_kv_tokens=b * (i + j))
             for j in range(1, o)]
    assert perf.tpot_s == pytest.approx(sum(steps) / len(steps), rel=1e-3)
    assert perf.e2e_s == pytest.approx(perf.ttft_s + (o - 1) * perf.tpot_s)
    assert perf.output_tokens_per_s == pytest.approx(b * o / perf.e2e_s)
    assert perf.metric("ttft_ms") == pytest.approx(perf.ttft_s * 1e3)


def test_chunked_prefill_takes_budget_sized_steps() -> None:
    one = fixed_batch_perf(MODEL, batch=16, input_len=2048, output_len=2, max_batched_tokens=8192,
                           chunked_prefill=False)
    chunked = fixed_batch_perf(MODEL, batch=16, input_len=2048, output_len=2, max_batched_tokens=8192,
                               chunked_prefill=True)
    assert chunked.ttft_s > one.ttft_s  # four steps re-read the weights and pay the step overhead


def test_offline_throughput_grows_with_memory_and_respects_the_cap() -> None:
    kw: dict[str, Any] = {"input_len": 1024, "output_len": 256, "max_num_seqs": 256, "max_batched_tokens": 8192,
          "scheduling": "decode_first", "chunked_prefill": True, "kv_block_tokens": 16}
    full = offline_perf(MODEL, **kw)
    capped = offline_perf(MODEL, cap=8, **kw)
    assert capped.batch == 8 and full.batch > 8
    assert full.output_tokens_per_s > 3 * capped.output_tokens_per_s
    assert full.requests_per_s == pytest.approx(full.output_tokens_per_s / 256)


def test_estimate_picks_the_smallest_tp_that_fits_and_scales_replicas() -> None:
    spec = get_preset("llama3.1-70b").spec
    assert smallest_fitting_layout(spec, H100, "bf16", "bf16", VLLM, 2048) == Layout(tp=2)
    est = estimate_inference(spec, accelerator=H100, engine=VLLM, input_len=1024, output_len=256, num_accels=8,
                             batch=4)
    assert est.layout.tp == 2 and est.replicas == 4
    assert est.perf.output_tokens_per_s_per_device == pytest.approx(est.perf.output_tokens_per_s / 8)
    out = est.to_json()
    for key in ("ttft_s", "tpot_s", "e2e_s", "output_tokens_per_s", "output_tokens_per_s_per_device",
                "requests_per_s", "max_batch_fits", "memory", "assumptions"):
        assert key in out


def test_simulated_load_gives_ordered_percentiles() -> None:
    est = estimate_inference(SPEC, accelerator=H100, engine=VLLM, input_len=512, output_len=64, qps=5.0,
                             num_requests=300)
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        p = est.to_json()[key]
        assert 0 < p["p50"] <= p["p90"] <= p["p99"]


@pytest.mark.parametrize(("kwargs", "field", "hint"), [
    ({"input_len": 0, "output_len": 8}, "input_len", ""),
    ({"input_len": 8, "output_len": -1}, "output_len", ""),
    ({"input_len": 8, "output_len": 8, "batch": 0}, "batch", ""),
    ({"input_len": 8, "output_len": 8, "qps": -2.0}, "qps", ""),
    ({"input_len": 8, "output_len": 8, "tp": 2, "num_accels": 3}, "num_accels", "--num-accels 2 or 4"),
])
def test_bad_loads_raise_input_error(kwargs: dict[str, float], field: str, hint: str) -> None:
    with pytest.raises(InputError) as e:
        estimate_inference(SPEC, accelerator=H100, engine=VLLM, **kwargs)  # type: ignore[arg-type]
    assert e.value.field == field
    assert hint in e.value.hint


def test_model_too_big_names_the_nearest_deployment() -> None:
    spec = get_preset("llama3.1-70b").spec
    with pytest.raises(InputError) as e:
        estimate_inference(spec, accelerator=H100, engine=VLLM, input_len=512, output_len=64, tp=1)
    assert "--tp 2" in e.value.hint
    l40s = CAT.accelerator("l40s-48gb")
    with pytest.raises(InputError) as e:
        estimate_inference(get_preset("deepseek-v3").spec, accelerator=l40s, engine=VLLM, input_len=512,
                           output_len=64, num_accels=8, catalog=CAT)
    # int4 DeepSeek-V3 is 41.1 GiB per L40S at tp 8: with the runtime, NCCL buffers and vLLM's start-up profile
    # (0.46 GiB sampler run) nothing is left of the 0.9 x 48 GiB budget for a KV cache, so a larger part is named
    assert "nearest that fits: --accelerator" in e.value.hint and "--weights int4 --tp 8" in e.value.hint
