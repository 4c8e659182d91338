"""Attention groups in lock-step: the other groups' prefills stretch a group's steps (simulate/lockstep.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.hardware import load_catalog
from gpuplan.simulate import EngineConfig, LengthDist, poisson_workload, simulate_engine, summarize
from gpuplan.simulate.decode_table import DecodeTable
from gpuplan.simulate.lockstep import LockstepCost, lockstep_cost
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import serving_layout
from gpuplan.workload.presets import get_preset

CAT = load_catalog(use_user_dir=False)


def _dp8():  # type: ignore[no-untyped-def]
    """DeepSeek-V3 in int4 on one H800 node: 8 attention groups of one device, EP8."""
    return step_cost_model(get_preset("deepseek-v3").spec, accelerator=CAT.accelerator("h800-sxm5-80gb"),
                           layout=serving_layout(tp=1, ep=8), weights="int4", kv_dtype="bf16", engine=engine("sglang"))


_BASE = _dp8()


def test_one_group_is_its_own_pace() -> None:
    base = _dp8()
    assert lockstep_cost(base, groups=1, group_qps=5.0, input_len_mean=1024, output_len_mean=256,
                         max_batched_tokens=8192, chunked_prefill=False) is base


def test_a_step_is_stretched_by_the_chance_of_a_foreign_prefill() -> None:
    base = _dp8()
    ls = lockstep_cost(base, groups=8, group_qps=2.0, input_len_mean=1024, output_len_mean=256,
                       max_batched_tokens=8192, chunked_prefill=False)
    assert isinstance(ls, LockstepCost) and ls.rate == pytest.approx(14.0)  # 7 other groups x 2 prompts/s
    kw = {"prefill_tokens": 0, "prefill_attn_pairs": 0.0, "decode_seqs": 16}
    own = base.step_s(**kw, decode_kv_tokens=16 * 1152)
    foreign = base.step_s(prefill_tokens=1024, prefill_attn_pairs=1024 * 1025 / 2, decode_seqs=16,
                          decode_kv_tokens=16 * 1152)
    p = 1.0 - math.exp(-14.0 * own)  # at the typical context, 1024 + 256 / 2 tokens per sequence
    assert ls.step_s(**kw, decode_kv_tokens=16 * 1152) == pytest.approx(own + p * (foreign - own))
    assert own < ls.step_s(**kw, decode_kv_tokens=16 * 1152) < foreign
    # pure decode steps stay affine in the cached tokens (the simulator's closed-form runs), and the numpy twin
    # agrees with the scalar form
    assert DecodeTable(ls, ls.kv_capacity_tokens).get(16) is not None
    kv = np.array([1000, 20000, 40000])
    arr = ls.step_s_array(prefill_tokens=np.array([0, 0, 512]), prefill_attn_pairs=np.array([0.0, 0.0, 1e5]),
                          decode_seqs=np.array([16, 16, 8]), decode_kv_tokens=kv)
    one = [ls.step_s(prefill_tokens=t, prefill_attn_pairs=a, decode_seqs=d, decode_kv_tokens=int(k))
           for t, a, d, k in ((0, 0.0, 16, 1000), (0, 0.0, 16, 20000), (512, 1e5, 8, 40000))]
    assert arr == pytest.approx(one)


def test_lockstep_raises_the_simulated_tpot_of_a_wide_ep_group() -> None:
    """Regression: wide-EP fleets were simulated one attention group at a time, as if the other groups' prefills
    never held up its decode steps, so their TPOT was optimistic (DeepSeek-V3 on H800 DP8: 53 ms p99 planned)."""
    base = _dp8()
    w = poisson_workload(qps=1.5, num_requests=400, input_len=LengthDist.fixed(1024), output_len=LengthDist.fixed(256))
    cfg = EngineConfig.from_profile(engine("sglang"))
    alone = summarize(simulate_engine(w, base, cfg), warmup_fraction=0.1)
    ls = lockstep_cost(base, groups=8, group_qps=1.5, input_len_mean=1024, output_len_mean=256,
                       max_batched_tokens=cfg.max_batched_tokens, chunked_prefill=cfg.chunked_prefill)
    together = summarize(simulate_engine(w, ls, cfg), warmup_fraction=0.1)
    assert together.tpot_s.mean > 1.2 * alone.tpot_s.mean


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(0.0, 200.0), decode=st.integers(1, 256), kv=st.integers(0, 400_000),
       prefill=st.sampled_from([0, 64, 2048]))
def test_a_stretched_step_lies_between_its_own_and_a_prompt_step(rate: float, decode: int, kv: int,
                                                                  prefill: int) -> None:
    base = _BASE
    ls = LockstepCost(base, foreign_rate_per_s=rate, prompt_tokens=1024, prompt_pairs=1024 * 1025 / 2,
                      typical_context=1152)
    kw = {"prefill_tokens": prefill, "prefill_attn_pairs": prefill * (prefill + 1) / 2, "decode_seqs": decode,
          "decode_kv_tokens": kv}
    own = base.step_s(**kw)
    foreign = base.step_s(prefill_tokens=1024, prefill_attn_pairs=1024 * 1025 / 2, decode_seqs=decode,
                          decode_kv_tokens=kv)
    got = ls.step_s(**kw)
    assert own - 1e-12 <= got <= max(own, foreign) + 1e-12
    if rate == 0.0:
        assert got == own
