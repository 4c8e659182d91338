"""Predictions for a catalog part: datasheet figures x named terms, by hand; CPU gets null with a reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpuplan.bench.predict import Predictor, match_device, predictor_for, reference_terms
from gpuplan.estimate.calibration import default_calibration
from gpuplan.hardware import load_catalog


@pytest.fixture(scope="module")
def h100() -> Predictor:
    return Predictor(load_catalog(use_user_dir=False).accelerator("h100-sxm5-80gb"))


def test_gemm_prediction_by_hand(h100: Predictor) -> None:
    p = h100.gemm_tflops("bf16", 8192, 8192, 8192)
    w = default_calibration().value("gemm_half_width")  # 128 when written; retuned with the training model
    # 989.4 x 0.80 x 8192 / (8192 + w)
    assert p.value == pytest.approx(989.4 * 0.80 * 8192 / (8192 + w))
    assert p.terms["gemm_reference_efficiency.bf16"] == reference_terms()["gemm_reference_efficiency.bf16"].value
    assert h100.gemm_tflops("fp8", 4096, 4096, 4096).value == pytest.approx(1978.9 * 0.70 * 4096 / (4096 + w))


def test_memory_and_pcie_predictions_by_hand(h100: Predictor) -> None:
    assert h100.memory_gbyte_s("copy").value == pytest.approx(3350 * 0.85)
    assert h100.host_device_gbyte_s(pinned=True).value == pytest.approx(64 * 0.75)  # Gen5 x16 per direction
    pageable = h100.host_device_gbyte_s(pinned=False)
    assert pageable.value is None and pageable.reason


def test_collective_busbw_tends_to_the_link_bandwidth(h100: Predictor) -> None:
    link = 900 / 2 * 0.80  # NVLink 4 per direction x nvlink_bw_efficiency
    big = h100.collective("all_reduce", 1 << 32, 8, "busbw").value
    assert big is not None and big == pytest.approx(link, rel=0.01)
    # by hand at 1 MiB: t = 2*7/8 * 2^20 / (360e9) + 2*7 * 3.4e-6
    t = 1.75 * 2**20 / 360e9 + 14 * 3.4e-6
    assert h100.collective("all_reduce", 1 << 20, 8, "algbw").value == pytest.approx(2**20 / t / 1e9)
    assert h100.collective("send_recv", 1 << 20, 2, "busbw").value == pytest.approx(2**20 / (2**20 / 360e9 + 3.4e-6)
                                                                                    / 1e9)


def test_training_prediction_uses_the_part_term(h100: Predictor) -> None:
    p = h100.train_tokens_per_s(6e9, "bf16", 4096)
    assert "compute_efficiency.h100-sxm5-80gb.bf16" in p.terms
    cal = default_calibration()
    eff, w = cal.value("compute_efficiency.h100-sxm5-80gb.bf16"), cal.value("gemm_half_width")
    assert p.terms["compute_efficiency.h100-sxm5-80gb.bf16"] == eff
    assert p.value == pytest.approx(989.4e12 * eff * 4096 / (4096 + w) / 6e9)


def test_cpu_and_unknown_devices_get_null_predictions_with_reasons() -> None:
    pred, acc, note = predictor_for(None, "cpu", "Intel Xeon")
    assert acc is None and "CPU" in note
    p = pred.gemm_tflops("bf16", 512, 512, 512)
    assert p.value is None and "catalog" in (p.reason or "")
    cat = load_catalog(use_user_dir=False)
    _, acc, note = predictor_for(None, "cuda", "Some Future GPU 9000", catalog=cat)
    assert acc is None and "--accelerator" in note


@pytest.mark.parametrize(("name", "expected"), [
    ("NVIDIA H200", "h200-sxm-141gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA H100 PCIe", "h100-pcie-80gb"),
])
def test_device_names_match_catalog_parts(name: str, expected: str) -> None:
    assert match_device(name, load_catalog(use_user_dir=False).accelerators) == expected


def test_multi_node_collectives_use_the_scale_out_network() -> None:
    pred, acc, _ = predictor_for("h100-sxm5-80gb", "cuda", "x", catalog=load_catalog(use_user_dir=False))
    assert pred.network is not None and pred.network.id == "ib-ndr-400"
    two = pred.collective("all_reduce", 1 << 30, 16, "busbw", nodes=2)
    assert two.value is not None and "inter_gbyte_s" in two.terms and "2 nodes" in two.basis
    # one rank per node: the ring runs over the NICs only, one NDR 400 Gb/s NIC (50 GB/s) per GPU x bw_efficiency
    spread = pred.collective("all_reduce", 1 << 30, 16, "busbw", nodes=16)
    assert spread.value is not None and spread.value < 50 < spread.terms["link_gbyte_s"]


def test_dtypes_without_a_reference_get_null(h100: Predictor) -> None:
    p = h100.gemm_tflops("fp32", 512, 512, 512)  # a CPU run attributed to a GPU with --accelerator
    assert p.value is None and "fp32" in (p.reason or "")


def test_predictions_use_the_measured_terms_of_gpuplan_calibrate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  make_gpu_result: Any) -> None:
    from gpuplan.bench.calibrate import calibration_from_result, write_calibration

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    cat = load_catalog(use_user_dir=False)
    before, _, _ = predictor_for("h100-sxm5-80gb", "cuda", "x", catalog=cat)
    write_calibration(calibration_from_result(make_gpu_result(bf16_tflops=300.0), cat, result_path="r.json"))
    after, _, _ = predictor_for("h100-sxm5-80gb", "cuda", "x", catalog=cat)
    b, a = before.train_tokens_per_s(6e9, "bf16", 4096), after.train_tokens_per_s(6e9, "bf16", 4096)
    assert a.value is not None and b.value is not None
    assert a.value == pytest.approx(b.value * 300.0 / 989.4 / 0.80, rel=1e-3)  # the term scaled by measured/reference
