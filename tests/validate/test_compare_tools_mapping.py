"""The row -> aiconfigurator / Calculon configuration mapping of benchmarks/compare_tools.py (pure; no tool needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from gpuplan.validate.cases import model_for_row

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ct() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_tools", ROOT / "benchmarks" / "compare_tools.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["compare_tools"] = mod  # dataclasses resolve their module by name
    spec.loader.exec_module(mod)
    return mod


AVAILABLE = {"h100_sxm": {"trtllm", "vllm", "sglang"}, "a100_sxm": {"trtllm", "vllm"}}

# I001 of ground_truth/inference.csv: TensorRT-LLM 0.6.1 performance.md, LLaMA 7B, H100, FP8, 768 x 128/128
I001 = {"id": "I001", "model": "llama2-7b", "layers": "32", "hidden": "4096", "heads": "32", "kv_heads": "32",
        "ffn": "11008", "vocab": "32000", "accelerator": "h100-sxm5-80gb", "num_accels": "1", "tp": "1", "pp": "1",
        "engine": "trtllm", "weight_precision": "fp8", "kv_precision": "fp8", "input_len": "128", "output_len": "128",
        "batch": "768", "scenario": "fixed_batch", "metric": "output_tokens_per_s_per_device", "value": "19694"}


def test_fixed_batch_row_maps_to_one_static_job(ct: ModuleType) -> None:
    jobs = ct.aic_jobs(I001, model_for_row(I001), "/m", AVAILABLE)
    assert len(jobs) == 1
    j = jobs[0]
    assert (j["system"], j["backend"], j["mode"], j["batches"], j["tp"], j["gemm"], j["kv"]) == (
        "h100_sxm", "trtllm", "static", [768], 1, "fp8", "fp8")
    assert (j["isl"], j["osl"], j["replicas"], j["moe_ep"]) == (128, 128, 1, None)


def test_offline_row_without_tp_searches_tp_and_largest_batch(ct: ModuleType) -> None:
    row = {**I001, "num_accels": "8", "tp": "", "scenario": "offline", "batch": "", "metric": "output_tokens_per_s"}
    jobs = ct.aic_jobs(row, model_for_row(row), "/m", AVAILABLE)
    assert [j["tp"] for j in jobs] == [1, 2, 4, 8]
    assert [j["replicas"] for j in jobs] == [8, 4, 2, 1]
    assert jobs[0]["mode"] == "agg" and jobs[0]["batches"][0] == 2048 and jobs[0]["batches"][-1] == 1
    assert jobs[0]["ctx_tokens"] == 8192  # TensorRT-LLM's default max_num_tokens, not one 128-token prefill a step


def test_rows_the_tool_cannot_express_say_why(ct: ModuleType) -> None:
    spec = model_for_row(I001)
    assert "h20-96gb" in ct.aic_jobs({**I001, "accelerator": "h20-96gb"}, spec, "/m", AVAILABLE).reason
    assert "lmdeploy" in ct.aic_jobs({**I001, "engine": "lmdeploy"}, spec, "/m", AVAILABLE).reason
    assert "sglang" in ct.aic_jobs({**I001, "accelerator": "a100-sxm4-80gb", "engine": "sglang"}, spec, "/m",
                                   AVAILABLE).reason
    assert "server" in ct.aic_jobs({**I001, "scenario": "server"}, spec, "/m", AVAILABLE).reason
    assert "MoE" in ct.aic_jobs(I001, spec, None, AVAILABLE).reason


def test_aic_metric_conversions(ct: ModuleType) -> None:
    # aiconfigurator's static result for I001 per replica (figures in its result-dict keys)
    raw = {"isl": 128, "osl": 128, "tokens/s": 1000.0, "tokens/s/gpu": 500.0, "seq/s": 7.8125, "ttft": 40.0,
           "tpot": 9.0, "request_latency": 1200.0}
    assert ct.aic_metric("output_tokens_per_s", raw, 2) == 2000.0
    assert ct.aic_metric("output_tokens_per_s_per_device", raw, 2) == 500.0
    assert ct.aic_metric("total_tokens_per_s", raw, 2) == 4000.0  # (128 + 128) / 128 x output
    assert ct.aic_metric("requests_per_s", raw, 1) == 7.8125
    assert ct.aic_metric("e2e_latency_s", raw, 1) == 1.2
    assert ct.aic_metric("tpot_ms", raw, 3) == 9.0


def test_llama_config_keeps_weights_of_a_plain_mlp(ct: ModuleType) -> None:
    gpt = {"id": "g", "layers": "24", "hidden": "2304", "heads": "24", "vocab": "51200"}  # ffn unstated: 4 x hidden
    cfg = ct.llama_config(model_for_row(gpt))
    assert cfg["intermediate_size"] == 6144  # 2/3 x 9216: three SwiGLU matrices = two plain-MLP matrices
    assert cfg["num_key_value_heads"] == 24 and cfg["num_hidden_layers"] == 24


# megatron_a100_weak_1.7B of ground_truth/training.csv (Narayanan et al. 2021, Table 1)
M17 = {"id": "m", "layers": "24", "hidden": "2304", "heads": "24", "vocab": "51200", "seq_len": "2048",
       "accelerator": "a100-sxm4-80gb", "num_accels": "32", "tp": "1", "pp": "1", "dp": "32", "recompute": "full",
       "precision": "fp16", "method": "pretrain", "global_batch_seqs": "512", "metric": "hw_tflops_per_device",
       "value": "137"}
LAYOUT = {"tp": 1, "pp": 1, "dp": 32, "cp": 1, "ep": 1, "vpp": 1, "zero": 1, "mb": 1, "recompute": "full"}


def test_calculon_inputs_for_a_megatron_row(ct: ModuleType) -> None:
    app, exe, system = ct.calculon_inputs(M17, model_for_row(M17), LAYOUT)
    assert system == "systems/a100_80g.json"
    assert app == {"hidden": 2304, "feedforward": 9216, "seq_size": 2048, "attn_heads": 24, "attn_size": 96,
                   "num_blocks": 24}
    assert (exe["num_procs"], exe["data_par"], exe["batch_size"], exe["microbatch_size"]) == (32, 32, 512, 1)
    assert exe["activation_recompute"] == "full" and exe["optimizer_sharding"] is True
    assert exe["data_par_net"] == 1 and exe["tensor_par_net"] == 0 and exe["tensor_par_comm_type"] == "ar"


def test_calculon_swiglu_width_and_folded_cp(ct: ModuleType) -> None:
    row = {**M17, "ffn": "8192", "dp": "", "recompute": ""}
    app, exe, _ = ct.calculon_inputs(row, model_for_row(row), {**LAYOUT, "dp": 8, "cp": 4, "recompute": "selective"})
    assert app["feedforward"] == 12288  # 1.5 x 8192: SwiGLU's three matrices as Calculon's two
    assert exe["data_par"] == 32 and exe["activation_recompute"] == "attn_only"


def test_calculon_refuses_what_it_cannot_model(ct: ModuleType) -> None:
    spec = model_for_row(M17)
    assert "a100-sxm4-40gb" in ct.calculon_inputs({**M17, "accelerator": "a100-sxm4-40gb"}, spec, LAYOUT).reason
    assert "ZeRO-3" in ct.calculon_inputs({**M17, "zero_stage": "3"}, spec, LAYOUT).reason
    assert "lora" in ct.calculon_inputs({**M17, "method": "lora"}, spec, LAYOUT).reason
    assert "fp8" in ct.calculon_inputs({**M17, "precision": "fp8"}, spec, LAYOUT).reason


def test_training_metric_conversion_uses_gpuplans_ratio(ct: ModuleType) -> None:
    # gpuplan: 150 TFLOP/s at 3000 tok/s; the tool's 3300 tok/s -> 165 TFLOP/s; a time metric moves inversely
    assert ct.convert_training("tflops_per_device", 150.0, 3000.0, 3300.0) == pytest.approx(165.0)
    assert ct.convert_training("device_hours", 1000.0, 3000.0, 2000.0) == pytest.approx(1500.0)


def test_parse_layout(ct: ModuleType) -> None:
    got = ct.parse_layout("tp2 pp4 dp8 cp1 ep1 vpp2 z1 mb2 rc=selective memory model says out of memory")
    assert got == {"tp": 2, "pp": 4, "dp": 8, "cp": 1, "ep": 1, "vpp": 2, "zero": 1, "mb": 2, "recompute": "selective"}


def test_calculon_layouts_search_only_when_the_row_states_no_layout(ct: ModuleType) -> None:
    assert ct.calculon_layouts(M17, LAYOUT) == [LAYOUT]  # tp/pp/dp stated: the row's (and gpuplan's) layout
    open_row = {**M17, "tp": "", "pp": "", "dp": ""}
    got = ct.calculon_layouts(open_row, LAYOUT)
    assert got[0] == LAYOUT and len(got) > 1
    assert all(g["tp"] * g["pp"] * g["dp"] == 32 and g["zero"] == 1 for g in got[1:])  # the same 32 devices
    assert {g["recompute"] for g in got[1:]} == {"none", "selective", "full"}
