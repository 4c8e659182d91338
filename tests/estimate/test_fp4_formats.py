"""FP4 (NVFP4, MXFP4) as a weight, KV-cache and training format, on the parts whose tensor cores compute it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli_result import exited
from gpuplan.cli.main import app
from gpuplan.errors import InputError
from gpuplan.estimate.infer_step import step_cost_model
from gpuplan.estimate.memory_infer import matrix_bytes_per_param
from gpuplan.hardware import load_catalog
from gpuplan.search.cluster import cluster_hardware
from gpuplan.validate.inference_cases import evaluate_inference_row
from gpuplan.workload.engines import engine
from gpuplan.workload.jobs import InferenceJob, Layout
from gpuplan.workload.presets import get_preset

CAT = load_catalog()
LLAMA70 = get_preset("llama3.1-70b").spec


def test_block_scaled_fp4_weights_carry_their_scales() -> None:
    # NVFP4: 4-bit E2M1 values with one E4M3 scale per 16 (NVIDIA, "Introducing NVFP4", 2025: 4.5 bits per value);
    # MXFP4: one E8M0 scale per 32 (OCP Microscaling Formats v1.0): 4.25 bits
    assert matrix_bytes_per_param(LLAMA70, InferenceJob(weights="nvfp4")) == 4.5 / 8
    assert matrix_bytes_per_param(LLAMA70, InferenceJob(weights="mxfp4")) == 4.25 / 8


def test_fp4_gemms_run_at_the_fp4_peak_where_the_part_has_one() -> None:
    b200 = CAT.accelerator("b200-sxm-180gb")
    m = step_cost_model(LLAMA70, accelerator=b200, layout=Layout(), weights="nvfp4", kv_dtype="fp8",
                        engine=engine("trtllm"))
    assert m.assumptions["gemm_peak"] == "fp4" and m.assumptions["gemm_peak_tflops"] == 9000
    for part, fmt, field in (("h100-sxm5-80gb", "nvfp4", "weights"), ("mi325x-256gb", "mxfp4", "weights"),
                             ("mi355x-288gb", "nvfp4", "weights")):  # no FP4 cores; CDNA 4 takes MX formats only
        with pytest.raises(InputError) as e:
            step_cost_model(LLAMA70, accelerator=CAT.accelerator(part), layout=Layout(tp=2), weights=fmt,
                            kv_dtype="fp8", engine=engine("vllm"))
        assert e.value.field == field
    mi355 = step_cost_model(LLAMA70, accelerator=CAT.accelerator("mi355x-288gb"), layout=Layout(), weights="mxfp4",
                            kv_dtype="fp8", engine=engine("vllm"))
    assert mi355.assumptions["gemm_peak_tflops"] == pytest.approx(10066.3)
    with pytest.raises(InputError) as e:  # an NVFP4 KV cache is read by Blackwell attention kernels only
        step_cost_model(LLAMA70, accelerator=CAT.accelerator("h200-sxm-141gb"), layout=Layout(), weights="fp8",
                        kv_dtype="nvfp4", engine=engine("trtllm"))
    assert e.value.field == "kv_dtype"


def test_nvfp4_serving_on_b200_matches_the_published_throughput() -> None:
    # TensorRT-LLM perf-overview (v1.0, commit 00f37686): Llama-3.3-70B-Instruct FP4 on one B200, 1000/1000 tokens,
    # all requests queued: 7,007 output tokens/s (validate/data/added_rows/inference.csv, A35-FP4-01)
    row = {"id": "A35-FP4-01", "layers": "80", "hidden": "8192", "heads": "64", "kv_heads": "8", "ffn": "28672",
           "vocab": "128256", "accelerator": "b200-sxm-180gb", "num_accels": "1", "tp": "1", "pp": "1",
           "engine": "trtllm", "weight_precision": "nvfp4", "kv_precision": "fp8", "input_len": "1000",
           "output_len": "1000", "scenario": "offline", "metric": "output_tokens_per_s", "value": "7007",
           "settings": "engine_version=1.0", "confidence": "high"}
    case = evaluate_inference_row(row, CAT)
    assert case.predicted == pytest.approx(7007, rel=0.15)
    fp8 = evaluate_inference_row({**row, "weight_precision": "fp8"}, CAT)
    assert case.predicted > 1.1 * fp8.predicted  # FP4 halves the weight stream and doubles the GEMM peak


def test_fp4_training_on_fp4_parts_only() -> None:
    b200 = cluster_hardware(CAT, "b200-sxm-180gb", None)
    assert b200.fp4_peak_flops("nvfp4") == 9000e12
    with pytest.raises(InputError):
        cluster_hardware(CAT, "h100-sxm5-80gb", None).fp4_peak_flops("nvfp4")
    with pytest.raises(InputError):
        cluster_hardware(CAT, "mi355x-288gb", None).fp4_peak_flops("nvfp4")
    assert cluster_hardware(CAT, "mi355x-288gb", None).fp4_peak_flops("mxfp4") == pytest.approx(10066.3e12)
    args = ["estimate", "train", "-m", "llama3.1-8b", "--accelerator", "b200-sxm-180gb", "--num-accels", "8",
            "--seq-len", "4096", "--json", "--precision"]
    fp4 = CliRunner().invoke(app, [*args, "nvfp4"])
    fp8 = CliRunner().invoke(app, [*args, "fp8"])
    exited(fp4, 0)
    exited(fp8, 0)
    assert json.loads(fp4.output)["tokens_per_s"] > json.loads(fp8.output)["tokens_per_s"]
    refused = CliRunner().invoke(app, [*args[:5], "h100-sxm5-80gb", *args[6:], "nvfp4"])
    exited(refused, 2)
    assert "no FP4" in refused.output
