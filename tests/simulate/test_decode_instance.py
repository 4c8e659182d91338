"""A decode instance's steps: admitting a request costs its KV transfer, not a prefill."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.simulate import EngineConfig, LengthDist, poisson_workload, simulate_engine, summarize
from gpuplan.simulate.decode_instance import DecodeInstanceCost
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)
BASE = step_cost_model(get_preset("llama3.1-8b").spec, accelerator=CAT.accelerator("h100-sxm5-80gb"), layout=Layout(),
                       weights="bf16", kv_dtype="bf16", engine=engine("vllm"))


def test_admission_costs_the_transfer_and_decodes_cost_what_they_cost() -> None:
    per_token = BASE.kv_bytes_per_token / 50e9  # one device's share of a 400 Gb/s NIC
    dec = DecodeInstanceCost(BASE, transfer_s_per_token=per_token)
    kw = {"decode_seqs": 32, "decode_kv_tokens": 32 * 1500}
    own = BASE.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, **kw)
    assert dec.step_s(prefill_tokens=0, prefill_attn_pairs=0.0, **kw) == own
    # a 2000-token prompt arriving while 32 sequences decode: its transfer overlaps their step
    assert dec.step_s(prefill_tokens=2000, prefill_attn_pairs=2e6, **kw) == pytest.approx(max(own, 2000 * per_token))
    assert dec.step_s(prefill_tokens=2000, prefill_attn_pairs=2e6, decode_seqs=0, decode_kv_tokens=0) == \
        pytest.approx(2000 * per_token)
    arr = dec.step_s_array(prefill_tokens=np.array([0, 2000, 2000]), prefill_attn_pairs=np.array([0.0, 2e6, 2e6]),
                           decode_seqs=np.array([32, 32, 0]), decode_kv_tokens=np.array([48000, 48000, 0]))
    assert arr == pytest.approx([own, max(own, 2000 * per_token), 2000 * per_token])


def test_a_decode_instance_serves_long_prompts_at_decode_pace() -> None:
    """Colocated, 8k-token prompts stretch the decode steps they join; on a decode instance they do not."""
    w = poisson_workload(qps=2.0, num_requests=300, input_len=LengthDist.fixed(8000), output_len=LengthDist.fixed(200))
    cfg = EngineConfig.from_profile(engine("vllm"))
    colocated = summarize(simulate_engine(w, BASE, cfg), warmup_fraction=0.1)
    dec = DecodeInstanceCost(BASE, transfer_s_per_token=BASE.kv_bytes_per_token / 50e9)
    decode_only = summarize(simulate_engine(w, dec, cfg), warmup_fraction=0.1)
    assert decode_only.tpot_s.p99 < 0.8 * colocated.tpot_s.p99
