"""Prefill context parallelism (issue 36 item 2): a 128k-token prompt split over cp ranks of a replica reaches a
TTFT that no tensor-parallel layout of the node reaches; engines and parts that run it are data."""

from __future__ import annotations

import pytest

from gpuplan.errors import InputError
from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.estimate.links import intra_node_link
from gpuplan.hardware import load_catalog
from gpuplan.search.infer_capacity import prefill_s
from gpuplan.search.infer_cp import cp_cost, cp_degrees, cp_flag
from gpuplan.search.infer_load import InferLoad, InferSlo
from gpuplan.search.infer_search import InferConstraints, plan_inference
from gpuplan.simulate.engine_sim import EngineConfig
from gpuplan.simulate.lengths import parse_length_dist
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import serving_layout
from gpuplan.workload.presets import load_model

CAT = load_catalog(())
SPEC = load_model("llama3.1-8b")
H100 = CAT.accelerator("h100-sxm5-80gb")


def test_cp_step_is_the_tp_step_on_a_share_of_the_prompt_plus_the_ring() -> None:
    prof = engine("vllm")
    base = step_cost_model(SPEC, accelerator=H100, layout=serving_layout(tp=1), weights="bf16", kv_dtype="bf16",
                           engine=prof, catalog=CAT)
    cp = cp_cost(base, acc=H100, cp=4, layers=SPEC.num_layers)
    assert cp is not None and cp.kv_capacity_tokens == 4 * base.kv_capacity_tokens
    # KV of a prompt token (131,072 bytes) x 3/4 passed on over the part's NVLink (per direction, x its efficiency)
    link = intra_node_link(H100)
    assert link is not None and "nvlink" in link.label
    assert cp.ring_s_per_prompt_token == pytest.approx(131072 * 0.75 / (float(link.bandwidth_gbyte_s) * 1e9))
    one = cp.step_s(prefill_tokens=8192, prefill_attn_pairs=8192 * 8193 / 2, decode_seqs=0, decode_kv_tokens=0)
    want = base.step_s(prefill_tokens=2048, prefill_attn_pairs=8192 * 8193 / 8, decode_seqs=0, decode_kv_tokens=0)
    assert one == pytest.approx(want + 8192 * cp.ring_s_per_prompt_token)
    cfg = EngineConfig.from_profile(prof)
    assert prefill_s(cp, cfg, 128000) < 0.3 * prefill_s(base, cfg, 128000)


def test_which_engines_and_parts_run_it() -> None:
    assert cp_degrees("vllm", H100, tp=2, node=8, prompt_p99=128000) == (2, 4)
    assert cp_degrees("vllm", H100, tp=2, node=8, prompt_p99=8000) == ()  # short prompts: not tried
    assert cp_degrees("mindie", CAT.accelerator("ascend-910c"), tp=1, node=8, prompt_p99=128000) == ()
    assert cp_degrees("vllm", CAT.accelerator("ascend-910b2"), tp=1, node=8, prompt_p99=128000) == ()  # A3 only
    assert cp_flag("vllm", CAT.accelerator("ascend-910c"), 2) == "--prefill-context-parallel-size 2"


def _plan(context_parallel: bool) -> list[dict[str, object]]:
    load = InferLoad(qps=0.05, input_len=parse_length_dist(128000), output_len=parse_length_dist(256))
    cons = InferConstraints(accelerators=("h100-sxm5-80gb",), weights=("bf16",), context_parallel=context_parallel)
    return plan_inference(SPEC, load, InferSlo(ttft_p99_s=1.65, tpot_p99_s=0.05), CAT, cons,
                          engine_profile=engine("vllm"), alternatives=False).plans


def test_a_128k_prompt_meets_a_ttft_only_context_parallelism_reaches() -> None:
    """Llama 3.1 8B, 128,000-token prompts on H100: tensor parallelism alone prefills one in 1.72 s at best (tp8);
    split over cp ranks, about 1.5 s unloaded (tp1 cp8), so a 1.65 s p99 TTFT is met."""
    with pytest.raises(InputError) as no_cp:
        _plan(False)
    assert no_cp.value.field == "ttft-p99" and "tp8" in str(no_cp.value)
    plans = _plan(True)
    assert plans and all(int(p["layout"].get("cp", 1)) > 1 for p in plans)  # type: ignore[attr-defined]
    assert all(float(p["ttft_s"]["p99"]) <= 1.65 for p in plans)  # type: ignore[index]
