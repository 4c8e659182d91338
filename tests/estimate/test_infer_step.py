"""The per-step inference cost model: hand-computed terms, rooflines, KV bytes, vector twin."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuplan.errors import InputError
from gpuplan.estimate.infer_step import CUSTOM_AR_STEPS, StepCostModel, step_cost_model
from gpuplan.estimate.infer_step_model import roofline, roofline_array
from gpuplan.estimate.kv_cache import kv_bytes_per_token
from gpuplan.estimate.links import node_link
from gpuplan.hardware import load_catalog
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import Layout
from gpuplan.workload.model_spec import ModelSpec
from gpuplan.workload.presets import get_preset

CAT = load_catalog()
H100 = CAT.accelerator("h100-sxm5-80gb")


def _model(name: str, *, tp: int = 1, ep: int = 1, weights: str = "bf16", kv: str = "bf16",
           eng: str = "vllm", **terms: float) -> StepCostModel:
    return step_cost_model(get_preset(name).spec, accelerator=H100, layout=Layout(tp=tp, ep=ep), weights=weights,
                           kv_dtype=kv, engine=engine(eng, terms=terms or None))


def test_tiny_dense_model_by_hand() -> None:
    # 2 layers, h=1024, 8 heads (MHA), SwiGLU ffn 4096, vocab 1000; no overheads, one GPU, bf16.
    spec = ModelSpec(name="tiny", num_layers=2, hidden_size=1024, num_heads=8, ffn_hidden_size=4096, vocab_size=1000)
    prof = engine("generic", terms={"step_overhead_s": 0.0, "layer_overhead_s": 0.0, "request_overhead_s": 0.0,
                                    "seq_overhead_s": 0.0})
    m = step_cost_model(spec, accelerator=H100, layout=Layout(), weights="bf16", kv_dtype="bf16", engine=prof)
    layer = 4 * 1024 * 1024 + 3 * 1024 * 4096  # q, k, v, o + gate, up, down
    peak, bw = 989.4e12 * 0.7, 3350e9 * 0.8  # bf16 dense peak x gemm_efficiency, HBM x memory_bw_efficiency
    assert m.dense_compute_per_token == pytest.approx(2 * 2 * layer / peak)
    assert m.dense_read == pytest.approx(2 * layer * 2 / bw)
    assert m.head_read == pytest.approx(1000 * 1024 * 2 / bw)
    # KV per token: 2 layers x K and V x 8 heads x 128 dims x 2 bytes, read at kv_read_efficiency
    assert m.kv_bytes_per_token == 2 * 2 * 8 * 128 * 2
    assert m.decode_kv_read_per_token == pytest.approx(m.kv_bytes_per_token / (3350e9 * 0.65))
    # one decode token over 100 cached tokens: GEMM groups combine as (c^p + m^p)^(1/p) (p the engine's
    # roofline_overlap_exponent), attention is the larger of its KV reads and its FLOPs
    # a one-token step streams 16-bit weights through GEMV kernels, capped by the SMs: 132 SMs x 1.98 GHz x
    # 9.5 bytes per SM-cycle = 2.48 TB/s, under the 0.8 x 3.35 TB/s a tiled GEMM reaches
    assert m.gemv_read_factor == pytest.approx(bw / (132 * 1.98e9 * 9.5))
    f = m.gemv_read_factor
    p = prof.terms["roofline_overlap_exponent"].value
    assert m.overlap_exponent == p

    def gm(c: float, r: float) -> float:
        return float((c ** p + r ** p) ** (1 / p))

    expect = (gm(m.dense_compute_per_token, m.dense_read * f)
              + gm(m.head_compute_per_row, m.head_read * f)
              + 100 * max(m.decode_kv_read_per_token, m.decode_attn_flops_per_token))
    step = m.step_s(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=1, decode_kv_tokens=100)
    assert step == pytest.approx(expect)
    assert m.step_s(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=0, decode_kv_tokens=0) == 0.0


def test_decode_is_memory_bound_at_batch_1_and_compute_bound_at_large_batch() -> None:
    m = _model("llama3.1-8b")
    one = m.breakdown(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=1, decode_kv_tokens=1024)
    big = m.breakdown(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=2048, decode_kv_tokens=2048 * 128)
    assert one.bound == "memory" and one.weight_read_s > 10 * one.gemm_compute_s
    assert big.bound == "compute" and big.gemm_compute_s > 3 * big.weight_read_s
    # memory-bound: doubling a small batch barely moves the step; compute-bound: time grows with the batch
    s = [m.step_s(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=b, decode_kv_tokens=b) for b in (1, 2, 4096,
                                                                                                        8192)]
    assert s[1] / s[0] < 1.01
    assert s[3] / s[2] > 1.8


def test_breakdown_sums_to_step_time() -> None:
    m = _model("llama3.1-70b", tp=4, weights="fp8", kv="fp8")
    kw: dict[str, Any] = {"prefill_tokens": 512, "prefill_attn_pairs": 512 * 513 / 2, "decode_seqs": 64,
                          "decode_kv_tokens": 64 * 900}
    bd = m.breakdown(**kw)
    assert bd.total_s == pytest.approx(m.step_s(**kw))
    assert bd.tp_comm_s > 0 and bd.pp_comm_s == 0 and bd.provenance == "estimated"


@pytest.mark.parametrize(("preset", "per_token"), [
    # Llama 3.1 70B (GQA): 80 layers x (K + V) x 8 KV heads x 128 dims x 2 bytes
    ("llama3.1-70b", 80 * 2 * 8 * 128 * 2),
    # DeepSeek-V3 (MLA): 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes, one latent for all heads
    ("deepseek-v3", 61 * (512 + 64) * 2),
])
def test_kv_bytes_per_token_match_the_configs(preset: str, per_token: int) -> None:
    spec = get_preset(preset).spec
    assert kv_bytes_per_token(spec, "bf16") == per_token
    m = _model(preset, weights="fp8", tp=8)
    if spec.mla is not None:  # the latent is replicated on every TP rank
        assert m.kv_bytes_per_token == per_token
    else:  # the 8 GQA KV heads split over the 8 TP ranks
        assert m.kv_bytes_per_token == per_token // 8


def test_fp8_kv_halves_kv_reads_and_grows_capacity() -> None:
    a = _model("llama3.1-8b", kv="bf16")
    b = _model("llama3.1-8b", kv="fp8")
    assert b.decode_kv_read_per_token == pytest.approx(a.decode_kv_read_per_token / 2)
    assert b.kv_capacity_tokens > 1.9 * a.kv_capacity_tokens


def test_int4_weights_read_less_and_pay_dequantization() -> None:
    bf = _model("llama3.1-70b", tp=4)
    q4 = _model("llama3.1-70b", tp=4, weights="int4")
    assert q4.dense_read < 0.3 * bf.dense_read
    assert q4.dense_dequant_per_token > 0 and bf.dense_dequant_per_token == 0
    assert "dequant_overhead" in q4.terms and "dequant_overhead" not in bf.terms


def test_moe_reads_only_touched_experts() -> None:
    m = _model("mixtral-8x7b", tp=2)
    s1 = m.breakdown(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=1, decode_kv_tokens=10)
    s64 = m.breakdown(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=64, decode_kv_tokens=640)
    # one token touches 2 of 8 experts, 64 tokens nearly all: expected distinct E(1 - (1 - k/E)^T)
    assert (1 - m.moe_untouched_base ** 1) == pytest.approx(2 / 8)
    assert s64.weight_read_s + s64.gemm_compute_s > 2.5 * (s1.weight_read_s + s1.gemm_compute_s)


def test_tensor_parallel_adds_latency_bound_all_reduces() -> None:
    m1, m8 = _model("llama3.1-8b"), _model("llama3.1-8b", tp=8)
    assert m1.tp_comm_fixed == 0
    # 2 all-reduces per layer x 32 layers; vLLM's one-shot kernel on a full NVLink group: CUSTOM_AR_STEPS steps of
    # the NVLink alpha (3.4 us) x the engine factor, whatever the group size
    steps = CUSTOM_AR_STEPS * engine("vllm").value("allreduce_latency_factor")
    assert m8.tp_comm_fixed == pytest.approx(64 * steps * 3.4e-6)
    assert _model("llama3.1-8b", tp=4).tp_comm_fixed == pytest.approx(m8.tp_comm_fixed)


def test_one_shot_all_reduce_needs_its_stack_and_a_full_link() -> None:
    """Regression: TP all-reduces were costed as NCCL rings (2(n-1) steps) scaled by a per-engine factor, and MI300X
    got a factor of its own set by its one batch-1 row (G2I043, 7.4 ms per token at TP8), which held out came out 36%
    slow. vLLM, SGLang and TensorRT-LLM all-reduce a TP group of 2, 4, 6 or 8 fully linked devices with a one-shot
    kernel over peer memory (vLLM CustomAllreduce): a fixed number of steps. PCIe-only groups, engines without such
    a kernel (LMDeploy's TurboMind: NCCL) and stacks it does not ship on (vllm-ascend: HCCL) keep the ring."""
    cat = CAT
    vllm = engine("vllm")
    assert vllm.custom_allreduce_on(cat.accelerator("mi300x-192gb"), 8)  # full xGMI mesh, ROCm
    assert vllm.custom_allreduce_on(cat.accelerator("h100-sxm5-80gb"), 4)
    assert not vllm.custom_allreduce_on(cat.accelerator("h100-sxm5-80gb"), 3)  # world sizes 2, 4, 6, 8 only
    assert not vllm.custom_allreduce_on(cat.accelerator("l40s-48gb"), 2)  # PCIe only
    assert not vllm.custom_allreduce_on(cat.accelerator("ascend-910b"), 8)  # HCCL on CANN
    assert not engine("lmdeploy").custom_allreduce_on(cat.accelerator("a100-sxm4-80gb"), 4)
    ring = _model("llama3.1-8b", tp=8, eng="lmdeploy")
    assert ring.tp_comm_fixed == pytest.approx(64 * 2 * 7 * 3.4e-6)
    l40s = cat.accelerator("l40s-48gb")
    l40 = step_cost_model(get_preset("llama3.1-8b").spec, accelerator=l40s, layout=Layout(tp=2), weights="bf16",
                          kv_dtype="bf16", engine=vllm)
    link = node_link(l40s, 2)
    assert link is not None and l40.tp_comm_fixed == pytest.approx(64 * 2 * float(link.latency_s))


def test_turbomind_all_reduces_at_nccl_ring_latency() -> None:
    """Regression: LMDeploy inherited the custom one-shot all-reduce of vLLM/TensorRT-LLM kernels, but TurboMind
    all-reduces over NCCL (enable_custom_all_reduce=0 before v0.7.2, communicator 'nccl' by default since): its TP4
    rows of Llama-2-70B (I071-I073) were all predicted too fast. Its TP step pays the ring's 2(n-1) steps, more
    than SGLang's one-shot kernel at TP8."""
    lm, sg = _model("llama3.1-8b", tp=8, eng="lmdeploy"), _model("llama3.1-8b", tp=8, eng="sglang")
    assert not engine("lmdeploy").custom_allreduce_stacks
    assert lm.tp_comm_fixed == pytest.approx(64 * 2 * 7 * 3.4e-6)
    assert sg.tp_comm_fixed == pytest.approx(64 * CUSTOM_AR_STEPS * engine("sglang").value("allreduce_latency_factor")
                                             * 3.4e-6)
    assert lm.tp_comm_fixed > sg.tp_comm_fixed


@settings(max_examples=40, deadline=None)
@given(p=st.integers(0, 4096), d=st.integers(0, 512), ctx=st.integers(1, 4096))
def test_array_twin_matches_scalar(p: int, d: int, ctx: int) -> None:
    m = _model("mixtral-8x7b", tp=2, weights="fp8")
    kw: dict[str, Any] = {"prefill_tokens": p, "prefill_attn_pairs": p * (p + 1) / 2, "decode_seqs": d,
                          "decode_kv_tokens": d * ctx}
    arr = m.step_s_array(**{k: np.array([v]) for k, v in kw.items()})
    assert arr[0] == pytest.approx(m.step_s(**kw), rel=1e-12, abs=1e-15)


WARM = _model("mixtral-8x7b", tp=2)  # bf16: a one-token step reads at GEMV speed; its rooflines fill up


@settings(max_examples=60, deadline=None)
@given(p=st.integers(0, 3), d=st.integers(0, 3), big=st.integers(0, 8192), ctx=st.integers(1, 4096))
def test_kept_rooflines_give_the_float_a_fresh_model_computes(p: int, d: int, big: int, ctx: int) -> None:
    # step_s_args keeps each roofline by tokens and rows; a step asked of the warm model must give exactly the float
    # of a model that computes it for the first time (a one-token step reads its weights as a GEMV: its own entry)
    for pre, dec in ((p, d), (big, d), (p, big // 16)):
        fresh = replace(WARM)  # the same coefficients, nothing kept yet
        args = (pre, pre * (pre + 1) / 2, dec, dec * ctx)
        assert WARM.step_s_args(*args) == fresh.step_s_args(*args)
        assert WARM.step_s(prefill_tokens=pre, prefill_attn_pairs=args[1], decode_seqs=dec,
                           decode_kv_tokens=args[3]) == fresh.step_s_args(*args)


def test_bad_inputs_raise_input_error() -> None:
    with pytest.raises(InputError) as e:
        _model("llama3.1-8b", weights="int3")
    assert e.value.field == "weights"
    with pytest.raises(InputError) as e:
        _model("llama3.1-8b", tp=3)
    assert e.value.field == "tp"
    with pytest.raises(InputError) as e:
        _model("mixtral-8x7b", tp=2, ep=4)
    assert e.value.field == "ep"


def test_a_replica_stays_inside_one_node() -> None:
    with pytest.raises(InputError) as e:
        step_cost_model(get_preset("llama3.1-70b").spec, accelerator=H100, layout=Layout(tp=8, pp=2),
                        weights="bf16", kv_dtype="bf16", engine=engine("vllm"))
    assert "one node" in e.value.allowed


def test_bridged_pairs_run_larger_tp_groups_over_pcie() -> None:
    pcie = CAT.accelerator("h100-pcie-80gb")
    spec = get_preset("llama3.1-8b").spec
    two = step_cost_model(spec, accelerator=pcie, layout=Layout(tp=2), weights="bf16", kv_dtype="bf16",
                          engine=engine("vllm"))
    four = step_cost_model(spec, accelerator=pcie, layout=Layout(tp=4), weights="bf16", kv_dtype="bf16",
                           engine=engine("vllm"))
    assert "nvlink_bridge" in str(two.assumptions["tp_link"])
    assert "PCIe" in str(four.assumptions["tp_link"])


def _stream(acc_id: str, weights: str = "bf16") -> StepCostModel:
    return step_cost_model(get_preset("qwen3-8b").spec, accelerator=CAT.accelerator(acc_id), layout=Layout(),
                           weights=weights, kv_dtype="bf16", engine=engine("sglang"))


def test_weight_streams_are_capped_by_the_bytes_each_sm_keeps_in_flight() -> None:
    """Little's law on the SMs: H20 pairs 4.0 TB/s with 78 SMs, so its weight streams stop well short of the
    HBM share; the Qwen3 speed benchmark's batch-1 decode on H20 ran at 1.3-1.6 TB/s (engines.yaml)."""
    h20 = _stream("h20-96gb")
    gemm, gemv = 78 * 1.98e9 * 14.0, 78 * 1.98e9 * 9.5  # both under 0.8 x 4.0 TB/s
    assert h20.assumptions["weight_stream_gbps"]["gemm"] == pytest.approx(gemm / 1e9)
    assert h20.assumptions["weight_stream_gbps"]["one_token"] == pytest.approx(gemv / 1e9)
    assert h20.gemv_read_factor == pytest.approx(gemm / gemv)
    one = h20.step_s(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=1, decode_kv_tokens=0)
    two = h20.step_s(prefill_tokens=0, prefill_attn_pairs=0, decode_seqs=2, decode_kv_tokens=0)
    assert one > two * 1.3  # the GEMV step is slower than a two-token GEMM step on the same weights
    arr = h20.step_s_array(prefill_tokens=[0, 0], prefill_attn_pairs=[0, 0], decode_seqs=[1, 2],
                           decode_kv_tokens=[0, 0])
    assert arr == pytest.approx([one, two])
    # A100: 108 SMs x 1.41 GHz x 14 = 2.13 TB/s is above 0.8 x 2.04 TB/s, so only the GEMV cap binds
    a100 = _stream("a100-sxm4-80gb")
    assert a100.assumptions["weight_stream_gbps"]["gemm"] == pytest.approx(2039 * 0.8)
    assert a100.gemv_read_factor == pytest.approx(2039e9 * 0.8 / (108 * 1.41e9 * 9.5))
    # fp8 weights run tiled (TMA) kernels even for one token; a part without SM data keeps the HBM share
    assert _stream("h20-96gb", "fp8").gemv_read_factor == 1.0
    mi = _stream("mi300x-192gb")
    assert mi.gemv_read_factor == 1.0 and mi.assumptions["weight_stream_gbps"]["gemm"] == pytest.approx(5300 * 0.8)
    assert "gemv_bytes_per_sm_cycle" not in mi.terms and "gemv_bytes_per_sm_cycle" in h20.terms


def test_narrow_experts_starve_fast_tensor_cores_not_slow_ones() -> None:
    """Regression: DeepSeek-V3 prefill on one H20 node at TP8 (LMSYS, 2025-09-26: 16.5k input tokens/s per node)
    was planned 3x slower than measured: each device holds 256 columns of every expert and the H100-read
    half-width (1024 columns) cut the expert GEMMs to a fifth of the dense efficiency. The H20 does a quarter of
    the H100's tensor FLOPs per SM-cycle, so its SMs keep up with narrow tiles at a quarter of the width."""
    from gpuplan.estimate.gemm_shape import expert_half_width

    h20, h800 = CAT.accelerator("h20-96gb"), CAT.accelerator("h800-sxm5-80gb")
    assert expert_half_width(H100, 1024) == pytest.approx(1024, rel=1e-3)
    assert expert_half_width(h800, 1024) == pytest.approx(1024, rel=1e-3)  # the same GH100 SMs
    hopper = 989.4e12 / (132 * 1.98e9)  # dense 16-bit FLOPs per SM-cycle of the H100 SXM5
    assert expert_half_width(h20, 1024) == pytest.approx(1024 * (148e12 / (78 * 1.98e9)) / hopper)
    a100 = CAT.accelerator("a100-sxm4-80gb")  # Ampere: half the Hopper tensor FLOPs per SM-cycle
    assert expert_half_width(a100, 1024) == pytest.approx(1024 * (312e12 / (108 * 1.41e9)) / hopper)
    assert expert_half_width(CAT.accelerator("mi300x-192gb"), 1024) == 1024  # no SM data: the value as read

    spec = get_preset("deepseek-v3").spec
    m = step_cost_model(spec, accelerator=h20, layout=Layout(tp=8), weights="fp8", kv_dtype="fp8",
                        engine=engine("sglang"), attention_fp8=True)
    assert m.assumptions["expert_half_width_columns"] == pytest.approx(expert_half_width(h20, 1024))
    eff8 = engine("sglang").for_accelerator(h20.id).value("gemm_efficiency_8bit")
    assert m.assumptions["expert_gemm_efficiency"] == pytest.approx(eff8 * 256 / (256 + expert_half_width(h20, 1024)))
    chunk = 8192  # two 4096-token prompts per prefill step
    per_node = chunk / m.step_s(prefill_tokens=chunk, prefill_attn_pairs=chunk * 4096 / 2, decode_seqs=0,
                                decode_kv_tokens=0)
    assert 16_500 / 2 < per_node < 16_500 * 1.2


def test_an_old_engines_per_head_decode_kernel_reads_each_kv_head_once_per_query_head() -> None:
    """Regression (issue 13): TensorRT-LLM 0.6.1's Llama-2-70B H100 row (TP4, batch 480, 128 in / 2048 out) was
    predicted 2.3x faster than measured: its masked multi-head attention runs one query head per thread block, so
    each KV head is read once per query head of its GQA group (8), until XQA in v0.8. TurboMind v0.2 serves four
    query heads per block (two reads for a group of 8), one with an int8 KV cache. A row states its engine version;
    plans use current engines, whose GQA-grouped kernels read each KV head once."""
    spec = get_preset("llama2-70b").spec
    assert spec.num_heads // spec.num_kv_heads == 8

    def reads(eng: str, version: str | None, kv: str, name: str = "llama2-70b") -> float:
        prof = engine(eng) if version is None else engine(eng).at_version(version)
        m = step_cost_model(get_preset(name).spec, accelerator=H100, layout=Layout(tp=4), weights="fp8",
                            kv_dtype=kv, engine=prof)
        assert m.assumptions["engine_version"] == version  # the plan JSON says which kernel it timed
        return float(m.decode_kv_read_per_token)

    base = reads("trtllm", None, "fp8")
    assert reads("trtllm", "0.6.1", "fp8") == pytest.approx(8 * base)
    old = step_cost_model(spec, accelerator=H100, layout=Layout(tp=4), weights="fp8", kv_dtype="fp8",
                          engine=engine("trtllm").at_version("0.6.1"))
    assert old.assumptions["decode_kv_reads_per_kv_head"] == 8
    assert reads("trtllm", "0.8.0", "fp8") == pytest.approx(base)  # XQA
    lm = reads("lmdeploy", None, "fp16")
    assert reads("lmdeploy", "0.2.0", "fp16") == pytest.approx(2 * lm)
    assert reads("lmdeploy", "0.2.0", "int8") == pytest.approx(8 * reads("lmdeploy", None, "int8"))
    assert reads("lmdeploy", "0.3.0", "fp16") == pytest.approx(lm)
    # multi-head attention (group of 1) is unchanged
    mha = reads("trtllm", None, "fp8", "llama2-7b")
    assert reads("trtllm", "0.6.1", "fp8", "llama2-7b") == pytest.approx(mha)
    with pytest.raises(InputError):
        engine("trtllm").at_version("latest")


@pytest.mark.parametrize("p", [1.0, 1.8, 2.0, 4.0])
def test_roofline_combines_compute_and_reads_by_its_exponent(p: float) -> None:
    c, r = 3e-3, 4e-3
    assert roofline(c, r, p) == pytest.approx((c ** p + r ** p) ** (1 / p))
    assert roofline(c, c, p) == pytest.approx(c * 2 ** (1 / p))  # at the ridge point: 2^(1/p) x max(c, m)
    assert max(c, r) <= roofline(c, r, p) <= c + r
    arr = roofline_array(np.array([c, 0.0, 0.0]), np.array([r, 5e-3, 0.0]), p)
    assert arr == pytest.approx([roofline(c, r, p), 5e-3, 0.0])
    assert roofline(0.0, 0.0, p) == 0.0


def test_roofline_exponent_two_is_the_hypot_and_a_lower_one_is_slower_near_the_ridge() -> None:
    assert roofline(3.0, 4.0, 2.0) == pytest.approx(5.0)
    assert roofline(3.0, 4.0, 1.0) == pytest.approx(7.0)
    assert roofline(1.0, 1.0, 1.8) > roofline(1.0, 1.0, 2.0)
    assert roofline(1.0, 100.0, 1.8) == pytest.approx(100.0, rel=1e-3)  # far from the ridge: the larger one


def test_the_step_models_notes_come_in_both_languages_and_only_where_they_apply() -> None:
    """Regression: a serving estimate's step-model notes were English only (under --lang zh too) and told every
    model about MoE routing and sliding windows: Llama 3 70B at TP4 was told 'MoE routing assumed uniform'. Notes
    now come as notes / notes_zh (i18n infer.note.*), each only where it applies."""
    dense = step_cost_model(get_preset("llama3-70b").spec, accelerator=H100, layout=Layout(tp=4), weights="bf16",
                            kv_dtype="bf16", engine=engine("vllm"))
    assert dense.assumptions["notes"] == [] and dense.assumptions["notes_zh"] == []
    windowed = get_preset("mixtral-8x7b").spec.model_copy(update={"sliding_window": 4096})  # Mixtral v0.1's window
    moe = step_cost_model(windowed, accelerator=H100, layout=Layout(tp=2, pp=2), weights="bf16", kv_dtype="bf16",
                          engine=engine("vllm"))
    assert len(moe.assumptions["notes"]) == len(moe.assumptions["notes_zh"]) == 3  # window, MoE, pp 2
    assert any("MoE" in n for n in moe.assumptions["notes"])
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in n) for n in moe.assumptions["notes_zh"])
